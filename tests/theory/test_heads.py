"""The theory classes' hooks (copyhead_jax.theory.heads), here sigmoid attention's
(docs/theory.md §4b): its ansatz, its reduced potential against the full ``L x L`` EK action,
its minima and its first-order window."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import conventions as conv
from copyhead_jax import theory as th
from copyhead_jax.theory.heads import SigmoidTheory
from tests.helpers import check_coexistence_window

PLAIN = th.TheoryParams.preset("plain", L=10, V=3)
WINDOW = th.TheoryParams.preset("plain", L=25, V=5)  # first order: docs/reports/sigmoid.md
N_CURVE = 24  # theory_curve pads grids of <= 32 points: one compiled program
# float64: the reduced potential and the full action are the same quantity, computed once by
# the closed forms of §4 and once by a Cholesky solve of the (V+L)-dimensional ridge problem of
# §3 with condition number <= (lam + |calA|) / lam ~ 1e3 here, so they agree to ~1e3 eps ~ 1e-13
# relative; 1e-10 leaves margin and is far below any wrong term (each is O(1) relative).
RTOL_64 = 1e-10


def _coords(key, n):
    """Random ``(r, beta)``: pooling, copying and suppressed rows alike."""
    return jax.random.uniform(key, (n, 2), jnp.float64, -8.0, 8.0)


@pytest.mark.parametrize("likelihood", ["per_sequence", "per_position"])
def test_sigmoid_potential_equals_the_full_EK_action_on_the_ansatz(likelihood):
    """``V_sig(r, beta) = Q + R [+ D] [+ J]`` equals ``theory.action.ek_action`` at the ansatz's
    logit matrix ``u J + beta G*`` (which knows nothing of the ansatz): every objective, with and
    without the pushforward term, at random coordinates and two lengths."""
    with jax.enable_x64(True):
        for L in (5, 9):
            # linear_scale is linear attention's switch: the sigmoid prior must ignore it
            p = PLAIN.replace(
                L=L, likelihood=likelihood, sigma_p=0.8, sigma_G=1.3, linear_scale="inv_L"
            )
            pa = p.arrays()
            for x in _coords(jax.random.key(L), 4):
                G = SigmoidTheory.logits(x, L)
                for obj in ("map", "post"):
                    for pf in (False, True):
                        full = th.ek_action(
                            G, P=37.0, params=p, attention="sigmoid", objective=obj, pushforward=pf
                        )
                        red = SigmoidTheory.potential(x, 37.0, pa, obj, pf)
                        assert abs(float(red - full)) <= RTOL_64 * abs(float(full)), (x, obj, pf)


def test_sigmoid_ansatz_lies_in_the_span_with_its_named_fields():
    """``sigmoid(u J + beta G* - log L) = a1 B1 + aG B2`` exactly, ``p = A_{a,a-1}``, the row sum
    of the logits is ``r``; and the attention is the definition, entry by entry."""
    with jax.enable_x64(True):
        L = 7
        B1, B2 = conv.basis(L, jnp.float64)
        for x in _coords(jax.random.key(3), 5):
            G = SigmoidTheory.logits(x, L)
            A = SigmoidTheory.attention(G)
            np.testing.assert_allclose(A, 1.0 / (1.0 + L * np.exp(-np.asarray(G))), rtol=1e-13)
            a1, aG = SigmoidTheory.span(x, L)
            np.testing.assert_allclose(A, a1 * B1 + aG * B2, rtol=1e-13, atol=1e-15)
            named = SigmoidTheory.named(x, L)
            np.testing.assert_allclose(named["p"], A[1, 0], rtol=1e-13)
            np.testing.assert_allclose(G.sum(1), x[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(G[1, 0] - G[2, 0], x[1], rtol=1e-12, atol=1e-12)
        # causal: keys b > a get weight 0, the others keep theirs; J sums the seen entries only
        G = jax.random.normal(jax.random.key(4), (L, L), jnp.float64)
        A, Ac = SigmoidTheory.attention(G), SigmoidTheory.attention(G, causal=True)
        keep = np.tril(np.ones((L, L), bool))
        assert np.all(np.asarray(Ac)[~keep] == 0.0)
        np.testing.assert_array_equal(np.asarray(Ac)[keep], np.asarray(A)[keep])
        cbar = jnp.eye(L)
        J = SigmoidTheory.prior(G, cbar=cbar, params=PLAIN.replace(L=L))["J"]
        Jc = SigmoidTheory.prior(G, cbar=cbar, params=PLAIN.replace(L=L), causal=True)["J"]
        np.testing.assert_allclose(J, np.sum(np.log(A * (1 - A))), rtol=1e-12)
        np.testing.assert_allclose(Jc, np.sum(np.log(A * (1 - A))[keep]), rtol=1e-12)


@pytest.mark.parametrize("P", [5.0, 40.0])
def test_sigmoid_full_matrix_minimiser_lies_in_the_span(P):
    """Random starts of the full ``L x L`` EK action (sigmoid logits) end in span{B1, B2}, on a
    minimum of the reduced potential: the two-parameter ansatz is closed at a pooling and a
    copying ``P``."""
    full = th.full_minimum(PLAIN, P, "sigmoid", key=jax.random.key(1), n_starts=3, n_steps=400)
    red = th.theory_curve(PLAIN, np.full(N_CURVE, P), "sigmoid")
    ok = red["minima_valid"][0]
    aG = red["minima_aG"][0][ok]
    with jax.enable_x64(True):
        x = np.stack([red["minima_r"][0][ok], red["minima_beta"][0][ok]], axis=1)
        a1 = np.asarray(SigmoidTheory.span(jnp.asarray(x), PLAIN.L)[0])
    assert np.all(full["cosine"] > 1 - 1e-10)
    assert np.all(full["grad_norm"] < 1e-6)
    ref = np.stack([a1, aG], axis=1)
    for c, v in zip(np.stack([full["c1"], full["cG"]], axis=1), full["value"]):
        d = np.min(np.linalg.norm(ref - c[None], axis=1))
        assert d < 1e-6 * (1 + np.linalg.norm(c))
        assert abs(v - red["action"][0]) <= 1e-9 * abs(v)


def test_sigmoid_minima_are_minima_and_the_global_one_beats_a_dense_grid():
    """Every reported minimum is stationary with a PSD Hessian, and none of a dense grid's
    values lies below the global one (at P below, at and above the window)."""
    P = np.array([10.0, 19.0, 20.1, 21.0, 200.0])
    cur = th.theory_curve(WINDOW, P, "sigmoid")
    r = np.linspace(-60.0, 60.0, 481)
    b = np.linspace(-4.0, 10.0, 281)
    X = np.stack(np.meshgrid(r, b, indexing="ij"), axis=-1)
    with jax.enable_x64(True):
        pa = WINDOW.arrays()
        for i, p in enumerate(P):
            f = lambda z, p=p: SigmoidTheory.potential(z, p, pa)  # noqa: E731
            dense = np.asarray(f(jnp.asarray(X)))
            assert cur["action"][i] <= dense.min() * (1 + 1e-12)
            ok = cur["minima_valid"][i]
            for x in np.stack([cur["minima_r"][i], cur["minima_beta"][i]], axis=1)[ok]:
                g = np.asarray(jax.grad(f)(jnp.asarray(x)))
                H = np.asarray(jax.hessian(f)(jnp.asarray(x)))
                assert np.linalg.norm(np.linalg.solve(H, g)) < 1e-9 * (1 + np.linalg.norm(x))
                assert np.linalg.eigvalsh(H)[0] > -1e-8 * np.abs(H).max()


def test_sigmoid_window_two_minima_inside_one_outside():
    """At ``L = 25, V = 5`` (plain) the transition is first order: two minima between the
    spinodals, one outside, equal depths at ``P_aG``; the coarse grid of the points agrees
    with the fine grid of the curve."""
    r = check_coexistence_window(WINDOW, "sigmoid", n_inside=6, n_below=8, n_above=6)
    assert r["beta_strong"] > r["beta_weak"]
