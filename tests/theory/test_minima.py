"""Local minima of the reduced potentials, curves, full-matrix and finite-width minimisers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import theory as th


@pytest.fixture(autouse=True)
def _strict():
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


PAPER = th.TheoryParams.preset("paper")
# plain, L=10, V=3: P_c1 = 0.33, P_cG = 5.3, P_aG = 19.77 with spinodals (19.62, 19.99)
SMALL = th.TheoryParams.preset("plain", L=10, V=3)
N_CURVE = 24  # theory_curve pads grids of <= 32 points: one compiled program per attention


@pytest.mark.slow
def test_reported_minima_are_minima_and_the_global_one_beats_a_dense_grid():
    P = np.geomspace(50.0, 20000.0, N_CURVE)
    cur = th.theory_curve(PAPER, P, "linear")
    c = np.linspace(-3.0, 3.0, 601)
    C1, CG = np.meshgrid(c, c, indexing="ij")
    with jax.enable_x64(True):
        for i in (0, 9, 14, 17, 23):  # G = 0, pooling, crossover, copying
            p = P[i]
            dense = np.asarray(
                th.linear_potential(jnp.asarray(C1), jnp.asarray(CG), P=p, params=PAPER)
            )
            ok = cur["minima_valid"][i]
            assert ok[0] and cur["action"][i] <= dense.min() * (1 + 1e-12)
            for c1, cG in zip(cur["minima_c1"][i][ok], cur["minima_cG"][i][ok]):
                x = jnp.array([c1, cG])
                f = lambda z, p=p: th.linear_potential(z[0], z[1], P=p, params=PAPER)  # noqa: E731
                g = np.asarray(jax.grad(f)(x))
                H = np.asarray(jax.hessian(f)(x))
                # Newton converges quadratically: the remaining step is at rounding level
                assert np.linalg.norm(np.linalg.solve(H, g)) < 1e-9 * (1 + np.linalg.norm(x))
                assert np.linalg.eigvalsh(H)[0] > -1e-8 * np.abs(H).max()

    P = np.geomspace(300.0, 2000.0, N_CURVE)
    cur = th.theory_curve(PAPER, P, "softmax")
    beta = np.linspace(-10.0, 30.0, 40001)
    with jax.enable_x64(True):
        for i in range(0, N_CURVE, 3):
            v = np.asarray(th.softmax_potential(jnp.asarray(beta), P=P[i], params=PAPER))
            interior = (v[1:-1] < v[:-2]) & (v[1:-1] < v[2:])
            found = np.sort(cur["minima_beta"][i][cur["minima_valid"][i]])
            # the dense grid's discrete minima are the reported ones, to its spacing (1e-3)
            np.testing.assert_allclose(found, beta[1:-1][interior], atol=2e-3)
            assert cur["action"][i] <= v.min() * (1 + 1e-12)


def test_keyword_minimisers_agree_with_the_curves():
    with jax.enable_x64(True):
        lin = th.linear_minima(3.0, params=SMALL)
        soft = th.softmax_minima(19.8, params=SMALL)
    cl = th.theory_curve(SMALL, np.full(N_CURVE, 3.0), "linear")
    cs = th.theory_curve(SMALL, np.full(N_CURVE, 19.8), "softmax")
    assert abs(float(lin["cG"][0]) - cl["cG"][0]) < 1e-9 * abs(cl["cG"][0])
    assert int(soft["n_min"]) == 2 and cs["n_min"][0] == 2
    np.testing.assert_allclose(
        np.sort(np.asarray(soft["beta"])[np.asarray(soft["valid"])]),
        np.sort(cs["minima_beta"][0][cs["minima_valid"][0]]),
        rtol=1e-9,
    )


@pytest.mark.slow
def test_global_minimiser_of_the_coarse_points_grid_matches_the_fine_grid():
    """P* and phase diagrams use a 16 x 33 grid: it must find the fine grid's global minimum."""
    P = np.geomspace(1e-2, 1e6, N_CURVE)
    for params in (PAPER, SMALL, th.TheoryParams.preset("plain", L=40, V=12, sigma_p=0.6)):
        coarse = th.phase_diagram(params, P, L_values=[params.L, 4], attention="linear")
        for j, L in enumerate((params.L, 4)):
            fine = th.theory_curve(params.replace(L=L), P, "linear")
            np.testing.assert_allclose(coarse["cG"][j], fine["cG"], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    "attention,P",
    [("linear", 20.0), ("linear", 2.0), ("softmax", 40.0), ("softmax", 19.8)],
)
def test_identity7_full_matrix_minimiser_lies_in_the_span(attention, P):
    """Random starts of the full ``L x L`` EK action end in span{B1, B2}, on a reduced minimum.

    At ``P = 19.8`` (inside the coexistence window) starts may settle in the metastable branch,
    so each is matched with the nearest local minimum of the reduced potential.
    """
    full = th.full_minimum(SMALL, P, attention, key=jax.random.key(1), n_starts=4, n_steps=300)
    red = th.theory_curve(SMALL, np.full(N_CURVE, P), attention)
    ok = red["minima_valid"][0]
    if attention == "linear":
        ref = np.stack([red["minima_c1"][0][ok], red["minima_cG"][0][ok]], axis=1)
    else:
        aG = red["minima_aG"][0][ok]
        ref = np.stack([1.0 - aG / np.sqrt(SMALL.L), aG], axis=1)
    assert np.all(full["cosine"] > 1 - 1e-10)  # in the span to rounding (identity 7: > 0.99)
    assert np.all(full["grad_norm"] < 1e-6)
    for c in np.stack([full["c1"], full["cG"]], axis=1):
        d = np.min(np.linalg.norm(ref - c[None], axis=1))
        assert d < 1e-6 * (1 + np.linalg.norm(c))


def test_theory_curve_tracks_both_branches_in_the_window():
    P = np.geomspace(15.0, 30.0, N_CURVE)
    c = th.theory_curve(SMALL, P, "softmax")
    inside = (P > 19.62) & (P < 19.99)
    assert inside.any()
    assert np.all(c["n_min"][inside] >= 2)
    assert np.all(c["n_min"][(P < 19.5) | (P > 20.1)] == 1)
    assert np.all(np.diff(c["aG"]) > 0)  # more data, more copying (global branch)
    assert c["beta"].shape == (N_CURVE,) and c["minima_beta"].shape == (N_CURVE, 4)
    lin = th.theory_curve(SMALL, np.geomspace(0.1, 100.0, N_CURVE), "linear")
    assert np.all(lin["c1"][lin["P"] < 0.33] == 0.0)  # G = 0 below P_c1
    assert lin["psi"][-1] > 0.5 and np.all(np.diff(lin["psi"]) > -1e-12)
    assert jax.config.jax_enable_x64 is False and jnp.ones(1).dtype == jnp.float32


@pytest.mark.slow
def test_finite_theory_minimum_tends_to_EK_and_full_space_refines_span():
    rng = np.random.default_rng(3)
    P = 20000
    tokens = rng.integers(0, SMALL.V, size=(P, SMALL.L))
    with jax.enable_x64(True):
        prior = np.asarray(th.prior_gram(SMALL))
    fin = th.finite_theory_minimum(tokens=tokens, gram=prior, params=SMALL, attention="softmax")
    ek = th.theory_curve(SMALL, np.full(N_CURVE, float(P)), "softmax")
    # LLN: O(D/P) + O(P^-1/2) ~ 1% at P = 2e4
    assert abs(fin["aG"] - ek["aG"][0]) < 0.03 * abs(ek["aG"][0])
    # a small realised run: finite width, few sequences; full space can only lower the action
    N = 64
    W_E, b = rng.normal(size=(N, SMALL.V)), rng.normal(size=(N, SMALL.L))
    gram = np.asarray(th.embedding_gram(jnp.asarray(W_E), jnp.asarray(b)))
    out = th.finite_theory_minimum(
        tokens=tokens[:12],
        gram=gram,
        params=SMALL,
        attention="softmax",
        space="full",
        n_steps=300,
    )
    assert out["full"]["value"] <= out["action"] + 1e-9 * abs(out["action"])
    assert 0.0 < out["full"]["cosine"] <= 1.0 and np.isfinite(out["aG"])


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="attention"):
        th.theory_curve(SMALL, [1.0], "relu")
    with pytest.raises(ValueError, match="P_grid"):
        th.theory_curve(SMALL, [-1.0], "linear")
    with pytest.raises(ValueError, match="tokens must"):
        th.finite_theory_minimum(tokens=np.zeros((3, 4), int), params=SMALL)
    with pytest.raises(ValueError, match="tokens must lie"):
        th.finite_theory_minimum(tokens=np.full((3, SMALL.L), 7), params=SMALL)
