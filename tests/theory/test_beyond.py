"""The theory beyond the paper's limits (docs/theory.md §12): Markov statistics and the causal
mask in the general action, against brute force and the explicit network; today's numbers at
rho = 0 without mask.

Tolerances: float64 identities at 1e-10 (as tests/theory/test_action.py: O(D^3) Cholesky work
on condition numbers <~1e4 leaves three decades of margin); the ``rho = 0`` statistics equal
today's to 1e-15 (tests/theory/test_markov.py), so the actions agree to float64 rounding
(1e-13 relative, 10x the ~1e-14 accumulated over a D x D solve).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import TaskConfig
from copyhead_jax import theory as th
from copyhead_jax.models import causal_keys, target_weights
from copyhead_jax.sources import sample_task, sticky_transition
from copyhead_jax.theory.action import attention_of, dataset_stats, ek_stats, moments
from copyhead_jax.theory.beyond import beyond_points, source_stats
from copyhead_jax.theory.markov import markov_stats

TIGHT = 1e-10


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def params(L=5, V=3, **kw):
    return th.TheoryParams(L=L, V=V, sigma2=3.0, chi=5.0, sigma_e=0.8, sigma_p=1.3, **kw)


def rel(a, b):
    return abs(float(a) - float(b)) / max(abs(float(b)), 1e-300)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_rho_zero_without_mask_is_todays_action(attention):
    p = params(L=6, V=4)
    G = jnp.asarray(np.random.default_rng(0).normal(size=(6, 6)))
    today = th.ek_action(G, P=37.0, params=p, attention=attention, objective="post")
    same = th.ek_action(
        G, P=37.0, params=p, attention=attention, objective="post", causal=False, stats=None
    )
    assert float(same) == float(today)  # the unmasked path is today's code, op for op
    rho0 = th.ek_action(
        G,
        P=37.0,
        params=p,
        attention=attention,
        objective="post",
        stats=markov_stats(sticky_transition(4, 0.0), 6),
    )
    assert rel(rho0, today) < 1e-13


def test_theory_mask_is_the_models_mask():
    assert np.array_equal(np.asarray(th.heads.causal_keys(7)), np.asarray(causal_keys(7)))
    assert np.array_equal(
        np.asarray(th.action.causal_weights(7)), np.asarray(target_weights(7, True), np.float64)
    )


def test_weighted_moments_equal_brute_force_on_markov_tokens():
    """``M, m, |Y|^2`` with loss weights against the per-sequence sums they abbreviate."""
    L, V = 5, 3
    task = TaskConfig(L=L, V=V, source="markov", rho=0.6)
    tok = np.asarray(sample_task(jax.random.key(1), task, n=40))
    st = dataset_stats(jnp.asarray(tok), V)
    rng = np.random.default_rng(2)
    A = rng.normal(size=(L, L)) * np.tril(np.ones((L, L)))
    w = np.asarray(th.action.causal_weights(L))
    M, m, ysq = moments(jnp.asarray(A), st.S4, st.S2, jnp.asarray(w))
    X = np.eye(V)[tok]
    Z = np.concatenate([X, np.broadcast_to(np.eye(L), (len(tok), L, L))], axis=2)
    Y = np.roll(X, 1, axis=1)
    W = np.diag(w)
    M_b = np.mean([z.T @ A.T @ W @ A @ z for z in Z], axis=0)
    m_b = np.mean([z.T @ A.T @ W @ y for z, y in zip(Z, Y)], axis=0)
    y_b = np.mean([np.sum(w[:, None] * y**2) for y in Y])
    for a, b in ((M, M_b), (m, m_b)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=0, atol=1e-12)  # sums of O(1) terms
    assert abs(float(ysq) - y_b) < 1e-12 and abs(y_b - (L - 1)) < 1e-12


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_causal_action_is_the_networks_U_at_a_planted_point(attention):
    """Markov tokens, the mask, a planted token-independent ``G`` (where A1 holds exactly) and
    frozen embeddings of width N: the network's U minimised over its readout (ridge, closed
    form, positions ``a >= 1`` only, keys ``b <= a``) equals the theory's ``Q``."""
    rng = np.random.default_rng(3)
    L, V, N, P = 5, 3, 40, 9
    p = params(L, V, likelihood="per_position", linear_scale="none")
    task = TaskConfig(L=L, V=V, source="markov", rho=0.7)
    tok = np.asarray(sample_task(jax.random.key(4), task, n=P))
    W_E, b = rng.normal(0, p.sigma_e, (N, V)), rng.normal(0, p.sigma_p, (N, L))
    G = rng.normal(size=(L, L))
    A = np.zeros((L, L))  # the literal masked attention, row by row
    for a in range(L):
        s = G[a, : a + 1]
        A[a, : a + 1] = (
            s if attention == "linear" else np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        )
    X = np.eye(V)[tok]
    H = X @ W_E.T + b.T[None]
    F = np.einsum("ab,pbn->pan", A, H)[:, 1:].reshape(-1, N)  # position 0 has no target
    Y = np.roll(X, 1, axis=1)[:, 1:].reshape(-1, V)
    s2 = p.sigma2 * L
    reg = N * s2 / p.sigma_O**2
    Wo = np.linalg.solve(F.T @ F + reg * np.eye(N), F.T @ Y)
    U_min = p.chi / (2 * s2) * np.sum((F @ Wo - Y) ** 2) + p.chi * N * np.sum(Wo**2) / (
        2 * p.sigma_O**2
    )
    gram = th.embedding_gram(jnp.asarray(W_E), jnp.asarray(b))
    t = th.finite_terms(
        jnp.asarray(G),
        tokens=jnp.asarray(tok),
        params=p,
        gram=gram,
        attention=attention,
        causal=True,
    )
    assert rel(t["Q"], U_min) < 1e-9  # as identity 4 (tests/theory/test_action.py)
    assert np.allclose(np.asarray(attention_of(jnp.asarray(G), attention, True)), A, atol=1e-14)


def test_markov_ek_action_is_the_finite_action_on_the_exact_statistics():
    """The EK form with the chain's exact moments is the finite form (i) evaluated on them."""
    p = params(L=5, V=3)
    task = TaskConfig(L=5, V=3, source="markov", rho=0.5)
    S4, S2 = source_stats(task)
    G = jnp.asarray(np.random.default_rng(5).normal(size=(5, 5)))
    st = th.action.DatasetStats(S4, S2, jnp.asarray(50.0))
    for causal in (False, True):
        ek = th.ek_action(G, P=50.0, params=p, stats=(S4, S2), causal=causal)
        fin = th.finite_action(G, tokens=st, params=p, causal=causal)
        assert rel(ek, fin) < TIGHT
    # and the chain's moments move the action away from the i.i.d. one
    assert (
        rel(th.ek_action(G, P=50.0, params=p, stats=(S4, S2)), th.ek_action(G, P=50.0, params=p))
        > 1e-3
    )


@pytest.mark.heavy  # ~2 min on a loaded 2-core machine (41 P points of L-BFGS)
def test_full_minimiser_reproduces_the_closed_forms_without_mask():
    """i.i.d. tokens, no mask: the ansatz is exact, so the full-space continuation must give
    today's P*: P_c1 to the bisection's 2^-40 of 14 e-folds, P_cG within one grid step (the
    argmax of a sampled slope; 0.1 decade here), P_cG_half by interpolation to 3%."""
    p = th.TheoryParams.preset("paper", L=6, V=3)
    today = th.transition_points(p, "linear")
    r = beyond_points(p, attention="linear", space="full", P_range=(3.0, 3e4), n_P=41, n_steps=60)
    assert rel(r["P_c1"], today["P_c1"]) < 1e-8
    assert abs(np.log10(r["P_cG"] / today["P_cG"])) <= 0.1
    assert rel(r["P_cG_half"], today["P_cG_half"]) < 0.03
    assert r["coverage_min"] > 1 - 1e-8  # the minimiser stays in the span


@pytest.mark.heavy  # four compiled continuation scans
def test_mask_takes_the_minimiser_out_of_the_span():
    """With the mask the full minimum lies below the ansatz minimum (a superset is searched)
    and leaves the span (coverage < 1); without mask they coincide."""
    p = th.TheoryParams.preset("paper", L=6, V=3)
    out = {}
    for causal in (False, True):
        for sp in ("full", "ansatz"):
            out[causal, sp] = beyond_points(
                p,
                causal=causal,
                attention="linear",
                space=sp,
                P_range=(300.0, 3000.0),
                n_P=5,
                n_steps=80,
            )
    v = {k: r["linear"]["up"]["value"] for k, r in out.items()}
    assert np.all(v[True, "full"] <= v[True, "ansatz"] * (1 + 1e-12))
    assert np.max(v[True, "ansatz"] - v[True, "full"]) > 1e-6 * np.max(v[True, "full"])
    np.testing.assert_allclose(v[False, "full"], v[False, "ansatz"], rtol=1e-9)
    assert out[True, "full"]["coverage_min"] < 0.999


def test_beyond_points_reads_a_dirichlet_chain():
    """A Dirichlet(alpha) chain (``TaskConfig.alpha``, the markov artefact's ``alpha`` axis):
    ``beyond_points`` takes the drawn matrix's exact statistics, so it gives the P* of that
    matrix given explicitly (``transition=``), to the last bit, and other P* than i.i.d. tokens
    (the chain's statistics differ); linear attention, 7 P, small L and V."""
    from copyhead_jax.sources import transition_matrix

    p = th.TheoryParams.preset("paper", L=5, V=3)
    task = TaskConfig(L=5, V=3, source="markov", alpha=0.5, chain_seed=3)
    given = TaskConfig(
        L=5, V=3, source="markov", transition=tuple(map(tuple, transition_matrix(task).tolist()))
    )
    kw = dict(attention="linear", P_range=(3.0, 3e4), n_P=7, n_steps=40)
    r, r_given, r_iid = (beyond_points(p, t, **kw) for t in (task, given, None))
    assert not r["inputs"]["iid"] and r["P_c1"] is not None and np.isfinite(r["P_c1"])
    assert r["P_c1"] == r_given["P_c1"]
    np.testing.assert_array_equal(r["linear"]["up"]["value"], r_given["linear"]["up"]["value"])
    assert rel(r["P_c1"], r_iid["P_c1"]) > 1e-6


def test_bad_inputs():
    p = params()
    with pytest.raises(ValueError, match="space"):
        beyond_points(p, space="half")
    with pytest.raises(ValueError, match="P_range"):
        beyond_points(p, P_range=(10.0, 1.0))
    with pytest.raises(ValueError, match="task"):
        beyond_points(p, TaskConfig(L=6, V=3))
    assert ek_stats(5, 3)[0].shape == (5, 3, 5, 3)


@pytest.mark.heavy  # compiles the continuation and the Hessian kernels (~20 s idle, minutes loaded)
def test_theory_points_cli_prints_the_full_minimisers_pstar(capsys):
    from copyhead_jax.cli.theory import main

    res = main(
        (
            "points --L 4 --V 2 --source markov --rho 0.5 --causal --attention "
            "linear --n-P 7 --space full"
        ).split()
    )
    text = capsys.readouterr().out
    assert "Markov rho=0.5 tokens, causal mask" in text and "full" in text
    assert res["full"]["P_c1"] is not None and "P_c1" in text


def test_theory_points_cli_refuses_a_chain_parameter_without_the_chain():
    from copyhead_jax.cli.theory import main

    with pytest.raises(SystemExit):  # --rho without --source markov: a usage error
        main(["points", "--rho", "0.5", "--attention", "linear"])


def test_markov_rho_zero_locates_the_iid_points_by_root_finding():
    """A Markov chain at rho = 0 is i.i.d., so the general action's points must equal the closed
    forms' once located by root-finding rather than read off the scan (0.2-decade steps here):
    P_c1 (bisection to 2^-40 of 14 e-folds) and P_cG_half (Brent on minimisers converged to
    ~1e-13) to 1e-9; P_cG, a maximum located on both sides as the root of a
    Richardson-extrapolated central difference of the slope (~1e-12), to 1e-9."""
    p = th.TheoryParams.preset("paper", L=6, V=3)
    today = th.transition_points(p, "linear")
    task = TaskConfig(L=6, V=3, source="markov", rho=0.0)
    r = beyond_points(
        p, task, attention="linear", space="ansatz", P_range=(3.0, 3e4), n_P=21, n_steps=60
    )
    assert rel(r["P_c1"], today["P_c1"]) < 1e-9
    assert rel(r["P_cG_half"], today["P_cG_half"]) < 1e-9
    assert rel(r["P_cG"], today["P_cG"]) < 1e-9


def test_a_point_outside_the_scan_is_not_found_never_the_scan_edge():
    """A scan that stops below the crossover (P <= 60 here, P_cG ~ 260) holds no maximum of the
    psi slope and no psi = 1/2: both are None with a note, not the scan's edge."""
    p = th.TheoryParams.preset("paper", L=6, V=3)
    r = beyond_points(p, attention="linear", space="ansatz", P_range=(3.0, 60.0), n_P=9, n_steps=60)
    assert r["P_cG"] is None and r["P_cG_half"] is None
    assert {"P_cG", "P_cG_half"} <= set(r["not_found"])
    assert any("P_cG not found" in n for n in r["notes"])
    assert any("P_cG_half not found" in n for n in r["notes"])
    assert r["P_c1"] is not None and 3.0 < r["P_c1"] < 60.0


@pytest.mark.heavy  # both softmax branches, a 41-point scan and the spinodals' bisections
def test_markov_rho_zero_softmax_window_by_root_finding():
    """The first-order window at rho = 0 (plain, L = 12, V = 4): P_aG (Brent on the branches'
    action difference) to 1e-9; the spinodals (Brent on the softest curvature, which falls like
    a square root at the fold, so the minimiser is resolved to ~1e-8 there) to 1e-7."""
    p = th.TheoryParams.preset("plain", L=12, V=4)
    today = th.transition_points(p, "softmax")
    task = TaskConfig(L=12, V=4, source="markov", rho=0.0)
    r = beyond_points(p, task, attention="softmax", space="ansatz", P_range=(3.0, 3e4), n_P=41)
    assert r["first_order"] and rel(r["P_aG"], today["P_aG"]) < 1e-9
    for a, b in zip(r["spinodals"], today["spinodals"]):
        assert rel(a, b) < 1e-7


def test_solve_refuses_a_saddle_and_reaches_the_minimum():
    """Newton on ``grad S = 0`` stops at any stationary point: from ``G = 0`` above ``P_c1`` (a
    saddle of the linear action, Z2-symmetric) it stays there with a negative curvature. The
    warm-started solve behind every root must see that and descend to the minimum, which at
    rho = 0 is the closed forms' minimiser (L-BFGS then Newton: to ~1e-12; held to 1e-9)."""
    from copyhead_jax.theory import beyond

    # the size, preset and L-BFGS steps of the root-finding test above: its programs serve
    p = th.TheoryParams.preset("paper", L=6, V=3)
    S4, S2 = source_stats(TaskConfig(L=6, V=3, source="markov", rho=0.0))
    t = np.log(200.0)  # P_c1 ~ 26, P_cG ~ 260 at this size
    kw = dict(params=p, attention="linear", space="ansatz", causal=False)
    with jax.numpy_dtype_promotion("standard"):
        stuck = beyond.newton_minimiser(jnp.zeros(2), t, S4, S2, **kw)
        assert float(stuck["grad_norm"]) == 0.0 and float(stuck["lam_min_rel"]) < 0
        prob = beyond.Problem(S4, S2, jax.random.key(0), n_steps=60, **kw)
        m = prob.solve(t, np.zeros(2))
    ref = th.linear_minima(jnp.asarray(200.0), params=p)
    assert m["ok"] and float(m["lam_min_rel"]) > 0
    assert abs(float(m["c1"]) - float(ref["c1"][0])) < 1e-9
    assert abs(float(m["cG"]) - float(ref["cG"][0])) < 1e-9


def test_brent_reports_none_where_the_function_is_undefined():
    """A root-finder that meets a point with no minimum (NaN) reports not found, never a root
    read off the garbage."""
    from copyhead_jax.theory import beyond_roots as roots

    assert roots.brent(lambda x: x - 0.3, 0.0, 1.0) == pytest.approx(0.3, abs=1e-12)
    assert roots.brent(lambda x: np.nan if 0.2 < x < 0.6 else x - 0.3, 0.0, 1.0) is None
    assert roots.brent(lambda x: np.nan if x > 0.9 else x - 0.3, 0.0, 1.0) is None


@pytest.mark.slow  # the size where the scan's neighbours straddle the crossover (~1-2 min)
def test_markov_rho_zero_locates_the_iid_points_at_L25():
    """At L = 25 (paper) psi rises from 0.13 to 0.56 between two 0.13-decade grid points, and
    Newton warm-started a grid step away lands on a saddle of the action: the roots must still
    give the i.i.d. closed forms, P_c1, P_cG (the root of the slope's derivative on both sides)
    and P_cG_half to 1e-9."""
    p = th.TheoryParams.preset("paper", L=25, V=5)
    today = th.transition_points(p, "linear")
    task = TaskConfig(L=25, V=5, source="markov", rho=0.0)
    r = beyond_points(
        p, task, attention="linear", space="ansatz", P_range=(3.0, 3e4), n_P=31, n_steps=200
    )
    for k in ("P_c1", "P_cG", "P_cG_half"):
        assert r[k] is not None and rel(r[k], today[k]) < 1e-9, (k, r[k], today[k])


def test_newton_step_is_lstsqs_minimum_norm_solution():
    # a symmetric matrix with exact null directions (as the softmax rows' shifts give the
    # action's Hessian): the eigh pseudo-inverse solve equals lstsq's SVD solution, and a
    # right-hand side with a null component is solved in the non-null directions only
    from copyhead_jax.theory.beyond_problem import sym_lstsq

    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        Q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
        lam = np.r_[np.zeros(3), rng.uniform(0.5, 5.0, 9) * rng.choice([-1, 1], 9)]
        H = jnp.asarray((Q * lam) @ Q.T)
        b = jnp.asarray(rng.normal(size=12))
        want = jnp.linalg.lstsq(H, b)[0]
        np.testing.assert_allclose(sym_lstsq(H, b), want, atol=1e-12)
        B = jnp.stack([b, 2 * b], axis=1)  # several right-hand sides at once
        np.testing.assert_allclose(sym_lstsq(H, B)[:, 1], 2 * want, atol=1e-12)


def test_slope_argmax_skips_a_failed_slope():
    # a NaN slope (a solve that failed) at one grid point is not the maximum: the root of the
    # derivative is found between the finite maximum's neighbours
    from copyhead_jax.theory.beyond_roots import slope_argmax

    t = np.linspace(0.0, 4.0, 9)
    f = lambda x, _: -((x - 2.1) ** 2)  # noqa: E731
    slope = np.array([f(x, 0) for x in t])
    slope[2] = np.nan
    assert slope_argmax(t, slope, f) == pytest.approx(2.1, abs=1e-8)
    assert slope_argmax(t, np.full(9, np.nan), f) is None
