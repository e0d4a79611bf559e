"""The profile's range rule (windows.tail_rise): an end must rise ``tail_rise`` nats above the
minimum unless it reaches the order parameter's bound, by its bins or by its windows (no
further centre fits before the bound, so the range cannot grow there)."""

import math

import numpy as np
import pytest

from copyhead_jax.transition.profile.settings import default_profile_settings
from copyhead_jax.transition.profile.windows import tail_rise


def profile(s, centers, a_first):
    """A parabola F = 2 (a - 1)^2 on the bins of ``centers``, finite from ``a_first`` up."""
    edges = s.edges(centers)
    mid = 0.5 * (edges[1:] + edges[:-1])
    return np.where(mid >= a_first, 2.0 * (mid - 1.0) ** 2, np.inf), edges, mid


def test_an_end_whose_windows_reach_the_bound_is_not_short():
    """L = 25: the lowest centre -0.19 lies within a spacing of the bound -sqrt(L)/(L-1), so
    the low end counts as reached even where the draws stop 0.2 above it (F there 2 nats
    above the minimum); the same draws from windows that start higher are short by exactly
    the profile's rise; the high end (bound 5, centres to 3.75) is measured."""
    s = default_profile_settings(25)
    lo, hi = s.a_bounds
    c = s.centers
    assert c.min() - s.spacing <= lo < c.min() and c.max() + s.spacing < hi
    F, edges, mid = profile(s, c, lo + 0.2)
    rise = tail_rise(F, edges, s, c)
    j = np.flatnonzero(np.isfinite(F))
    assert rise["low"] == math.inf
    assert rise["high"] == F[j[-1]] - F[j].min()
    higher = c[c > 0.0]  # windows from 0.01 up: one more centre below would still fit
    F, edges, mid = profile(s, higher, lo + 0.2)
    j = np.flatnonzero(np.isfinite(F))
    assert tail_rise(F, edges, s, higher)["low"] == F[j[0]] - F[j].min() < s.tail_rise


def test_unreached_tail_is_the_continued_profiles_weight_over_its_basins():
    """A profile rising with slope 5 towards a lower bound 0.3 below its first bin edge: the
    strip's weight is the integral of exp(-F) of the continued line (quadrature), over the
    weight of the bins left of the dividing surface; the mirror image at an upper bound gives
    the same; bins that reach the bound miss nothing."""
    from scipy.integrate import quad

    from copyhead_jax.transition.profile.basins import unreached_tail

    edges = np.linspace(0.0, 2.0, 21)
    mid = 0.5 * (edges[1:] + edges[:-1])
    F = np.where(mid < 1.0, 5.0 * (0.5 - mid) ** 2 - 2.5 * (mid < 0.15), 3.0 + (mid - 1.5) ** 2)
    F[:2] = 5.0 * (0.2 - mid[:2])  # slope 5 over the two lowest bins
    k, Fm = 5.0, F.min()
    strip = quad(lambda a: np.exp(-(F[0] + k * (edges[0] - a) - Fm)), -0.3, edges[0])[0]
    pool = np.sum(np.exp(-(F[mid < 1.0] - Fm)) * 0.1)
    got = unreached_tail(F, edges, -0.3, 1.0)
    assert got == pytest.approx(strip / pool, rel=1e-9)
    mirrored = unreached_tail(F[::-1], 2.0 - edges[::-1], 2.3, 1.0)
    assert mirrored == pytest.approx(got, rel=1e-9)
    assert unreached_tail(F, edges, edges[0], 1.0) == 0.0
