"""``copyhead_jax.embeddings.joint_map``: the scale-gauge start of the joint MAP keeps the function
and minimises the prior energy along the gauge (docs/theory.md §2d)."""

import numpy as np

from copyhead_jax.embeddings import rebalance
from copyhead_jax.objective import Objective


def _prior(w, obj, width):
    D = w["W_G"].shape[0]
    emb = (
        (np.sum(w["W_E"] ** 2) / obj.sigma_e**2 + np.sum(w["b"] ** 2) / obj.sigma_p**2) * width / D
    )
    return 0.5 * (
        emb + np.sum(w["W_G"] ** 2) / obj.sigma_G**2 + np.sum(w["W_O_hat"] ** 2) / obj.sigma_O**2
    )


def test_rebalance_keeps_the_function_and_minimises_the_prior_energy():
    rng = np.random.default_rng(0)
    D, V, L, width = 9, 3, 6, 1000.0
    w = dict(
        W_E=rng.normal(size=(D, V)),
        b=rng.normal(size=(D, L)),
        W_G=rng.normal(size=(D, D)),
        W_O_hat=rng.normal(size=(V, D)),
    )
    obj = Objective(likelihood_weight=1.0, sigma_e=1.0, sigma_p=0.7, sigma_G=1.3, sigma_O=0.5)
    r = rebalance(w, obj, width)
    U0 = np.concatenate([w["W_E"].T, w["b"].T])
    U1 = np.concatenate([r["W_E"].T, r["b"].T])
    # logits U A U^T and readout B U^T are unchanged (float64 rounding)
    np.testing.assert_allclose(U1 @ r["W_G"] @ U1.T, U0 @ w["W_G"] @ U0.T, rtol=1e-12)
    np.testing.assert_allclose(r["W_O_hat"] @ U1.T, w["W_O_hat"] @ U0.T, rtol=1e-12)
    # the chosen scale is the minimum along the gauge: moving it by 1% either way costs more
    e = _prior(r, obj, width)
    assert e <= _prior(w, obj, width)
    for f in (0.99, 1.01):
        moved = dict(W_E=r["W_E"] * f, b=r["b"] * f, W_G=r["W_G"] / f**2, W_O_hat=r["W_O_hat"] / f)
        assert e < _prior(moved, obj, width)


def test_lowest_start_keeps_the_lowest_converged_U_per_run():
    """Per run the start of lowest U wins, a non-converged or non-finite start never does."""
    from copyhead_jax.embeddings.joint_map import KEYS, lowest_start

    def start(U, conv, tag):
        r = {k: np.full((2, 2), tag) for k in KEYS}
        r.update(U=np.asarray(U, float), converged=np.asarray(conv, float))
        return r

    a = start([[1.0, 5.0], [2.0, np.nan]], [[1, 1], [1, 1]], 0.0)
    b = start([[0.5, 6.0], [1.0, 3.0]], [[1, 1], [0, 1]], 1.0)
    best, pick = lowest_start(a, b)
    np.testing.assert_array_equal(pick, [[1, 0], [0, 1]])  # b's U = 1 at (1, 0) did not converge
    np.testing.assert_array_equal(best["U"], [[0.5, 5.0], [2.0, 3.0]])
    np.testing.assert_array_equal(best["cG"], pick.astype(float))
