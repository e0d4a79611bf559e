"""Barrier, split and weights of constructed profiles; whitening identities."""

import math

import numpy as np

from copyhead_jax.transition.profile.basins import (
    barrier_at,
    basins,
    copy_weight,
    d_of,
    log_odds,
    sd_of,
    se_of,
    split,
)
from copyhead_jax.transition.profile.landscape import restrain, root_of_inverse


def test_split_finds_the_barrier_between_two_minima():
    a = np.linspace(-2, 2, 81)
    F = 3.0 * (a**2 - 1) ** 2 + 0.5 * a  # minima near -1 and 1, top near 0
    j, B = split(F)
    assert abs(a[j]) < 0.1
    assert math.isclose(B, F[j] - F[np.argmin(np.where(a > 0, F, np.inf))], rel_tol=1e-12)
    assert barrier_at(F, j) == B


def test_unimodal_profile_has_no_positive_barrier():
    a = np.linspace(-2, 2, 81)
    _, B = split((a - 0.3) ** 2)
    assert B <= 0


def test_d_is_minus_log_odds_and_widened_error_is_the_sd():
    assert math.isclose(d_of(0.25), math.log(3.0))
    assert d_of(0.0) == math.inf and d_of(1.0) == -math.inf
    x = np.array([1.0, 2.0, 4.0, 7.0])
    assert math.isclose(sd_of(x), x.std(ddof=1)) and math.isclose(se_of(x), x.std(ddof=1) / 2)


def test_restrain_is_the_root_of_the_restrained_inverse():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 7))
    H = A @ A.T + 0.5 * np.eye(7)
    g = rng.standard_normal(7)
    C = root_of_inverse(H, floor=0.1)
    Ck = restrain(C, g, 37.0)
    # exact identity: C_k C_k^T = (H + kappa g g^T)^{-1} (float64 rounding only)
    np.testing.assert_allclose(
        Ck @ Ck.T, np.linalg.inv(H + 37.0 * np.outer(g, g)), rtol=1e-9, atol=1e-12
    )


def test_root_of_inverse_floors_negative_curvature():
    C = root_of_inverse(np.diag([4.0, -2.0, 0.01]), floor=1.0)
    # eigenvalues max(lam, 1): 4, 1, 1 -> C C^T = diag(1/4, 1, 1)
    np.testing.assert_allclose(C @ C.T, np.diag([0.25, 1.0, 1.0]), atol=1e-12)


def test_log_odds_is_d_of_the_copy_weight_and_stays_finite_far_from_the_transition():
    """Two draws with normalised weights w and 1 - w on either side of a*: d = log((1 - w)/w)
    exactly; at w = 1 - e^-45 the copy weight rounds to 1 (d_of: -inf) while the log-masses
    still give -45 (a probe past the transition keeps its place in the root search)."""
    a = np.array([0.1, 2.0])
    for d in (-3.0, 0.5, 20.0):
        log_w = np.array([-np.logaddexp(0.0, -d), -np.logaddexp(0.0, d)])  # pool, copy
        assert math.isclose(log_odds(a, log_w, 1.0), d, rel_tol=1e-12)
        assert math.isclose(d_of(copy_weight(a, log_w, 1.0)), d, rel_tol=1e-9)
    far = np.array([-45.0, 0.0])
    assert d_of(copy_weight(a, far, 1.0)) == -math.inf
    assert math.isclose(log_odds(a, far, 1.0), -45.0)
    assert log_odds(a, far, 5.0) == math.inf  # no draw past a*: all pooling


def test_a_barrier_is_judged_by_the_replicas_that_define_it():
    """Replicas without draws in the split bin do not define its barrier: with one left, its
    barrier's error is unknown (NaN) and the profile is not called bimodal; with all three
    (small scatter) the same 3-nat barrier is."""
    edges = np.linspace(-2, 2, 41)
    mid = 0.5 * (edges[1:] + edges[:-1])
    F = 3.0 * (mid**2 - 1) ** 2
    log_w = -F - np.log(np.sum(np.exp(-F)))
    j, B = split(F)
    reps = [(mid, log_w)] * 3
    scatter = [F + 0.05 * k for k in (-1, 0, 1)]
    gapped = [F] + [np.where(np.arange(F.size) == j, np.inf, F) for _ in range(2)]
    known = basins(edges, F, mid, log_w, np.array(scatter), reps)
    unknown = basins(edges, F, mid, log_w, np.array(gapped), reps)
    assert B > 2.5 and known.bimodal and math.isfinite(known.barrier_se)
    assert not unknown.bimodal and math.isnan(unknown.barrier_se)
    assert unknown.barrier == known.barrier == B
    # two replicas define it (B +- 0.5, se 0.5): B / se = 6 passes t(2 dof) = 4.30 of the three
    # replicas but not t(1 dof) = 12.71 of the two that measured it
    two = [np.where(np.arange(F.size) == j, F[j] + s, F) for s in (-0.5, 0.5)] + [gapped[1]]
    by_two = basins(edges, F, mid, log_w, np.array(two), reps)
    assert math.isclose(by_two.barrier_se, 0.5, rel_tol=1e-9) and not by_two.bimodal
