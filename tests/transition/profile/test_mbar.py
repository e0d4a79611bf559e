"""MBAR over exactly sampled windows of a known 1-d density reproduces it (no HMC involved)."""

import numpy as np

from copyhead_jax.transition.profile.basins import copy_weight, profile_on_bins
from copyhead_jax.transition.profile.mbar import join

GRID = np.linspace(-3.0, 3.0, 6001)


def log_p(a):  # an asymmetric double well, 5 nats of barrier
    return -(5.0 * (a**2 - 1) ** 2 + 0.7 * a)


def window_draws(rng, c, kappa, n):
    """Exact i.i.d. draws of p(a) exp(-kappa/2 (a - c)^2) by inverse CDF on GRID."""
    lw = log_p(GRID) - 0.5 * kappa * (GRID - c) ** 2
    w = np.exp(lw - lw.max())
    cdf = np.cumsum(w) / w.sum()
    return np.interp(rng.random(n), cdf, GRID)


def test_join_reproduces_the_density_and_weights():
    rng = np.random.default_rng(1)
    centers, kappa = np.linspace(-1.6, 1.6, 17), 40.0
    j = join([window_draws(rng, c, kappa, 2000) for c in centers], centers, kappa)
    edges = np.linspace(-1.5, 1.5, 31)
    F = profile_on_bins(j.a, j.log_w, edges)
    lp = log_p(GRID)
    p = np.exp(lp - lp.max())
    p /= p.sum() * (GRID[1] - GRID[0])
    F_exact = np.array(
        [-np.log(p[(GRID >= lo) & (GRID < hi)].mean()) for lo, hi in zip(edges[:-1], edges[1:])]
    )
    keep = F_exact - F_exact.min() < 5
    # 2000 i.i.d. draws a window: each bin holds >= ~150 effective draws where F < min + 5,
    # so a binned F is good to ~0.1 nat; 0.2 is about 2-3 sigma at the worst bin
    np.testing.assert_allclose(F[keep], F_exact[keep], atol=0.2)
    w_exact = p[GRID >= 0].sum() / p.sum()
    assert abs(copy_weight(j.a, j.log_w, 0.0) - w_exact) < 0.02  # ~4 sigma of binomial noise
    # the test can fail: ignoring the biases (plain histogram of all draws) is far off
    assert abs(np.mean(j.a >= 0) - w_exact) > 0.05
