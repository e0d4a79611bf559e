"""compare/root.py: the one crossing rule against closed forms: a difference linear in log P
(root, Monte-Carlo and quadrature errors from the probes' known errors), and a bracket end whose
own error straddles zero, which must widen the interval, never narrow it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from copyhead_jax.compare.root import Crossing, crossing

Z = 1.959963984540054  # the two-sided 95% normal quantile


def test_linear_difference_root_and_interval_from_known_errors():
    """d = a (t* - log P): the root is exp(t*) exactly; moving one bracketing probe's d by e
    moves the root by e (t_other - t*) / (a dt), so the errors are those sums (independent
    probes: in quadrature for MC, linearly for the quadrature bound); the quadratic through a
    third probe is the same line (no interpolation error)."""
    a, ts = 3.0, math.log(37.0)
    P = np.array([20.0, 30.0, 45.0, 70.0])
    d = a * (ts - np.log(P))
    se, sys = np.array([0.05, 0.1, 0.08, 0.05]), np.array([0.0, 0.02, 0.03, 0.0])
    c = crossing(P, d, se, sys)
    t0, t1 = math.log(30.0), math.log(45.0)
    dt = t1 - t0
    mc = math.hypot((t1 - ts) * se[1], (ts - t0) * se[2]) / (a * dt)
    quad = ((t1 - ts) * sys[1] + (ts - t0) * sys[2]) / (a * dt)
    assert c.P_star == pytest.approx(37.0, rel=1e-12) and c.bracket == (30.0, 45.0)
    assert c.err_mc == pytest.approx(mc, rel=1e-9) and c.err_quad == pytest.approx(quad, rel=1e-9)
    assert c.err_interp < 1e-9 and not c.straddles
    half = Z * mc + quad
    assert c.lo == pytest.approx(37.0 * math.exp(-half), rel=1e-7)
    assert c.hi == pytest.approx(37.0 * math.exp(half), rel=1e-7)
    # the order of the probes does not matter; a probe with no value is left out
    shuffled = crossing(P[::-1], d[::-1], se[::-1], sys[::-1])
    assert shuffled.lo == pytest.approx(c.lo, rel=1e-12)
    with_nan = crossing([*P, 100.0], [*d, math.nan], [*se, 0.1], [*sys, 0.0])
    assert with_nan.P_star == pytest.approx(37.0, rel=1e-12)


def test_a_bracket_end_straddling_zero_widens_the_interval_to_the_followed_root():
    """d = (1, 0.5, -2) at P = (10, 20, 40). With se = 0.1 everywhere the lower end's 1.96 se
    stays above zero and the linear propagation holds. With se = 1 at P = 20, d - 1.96 se there
    is below zero: the root may lie in [10, 20], where d is shallower; the lower edge is the
    root of d - 1.96 se followed there (closed form below), wider than the linear one."""
    P = [10.0, 20.0, 40.0]
    d = np.array([1.0, 0.5, -2.0])
    narrow = crossing(P, d, [0.1, 0.1, 0.1])
    wide = crossing(P, d, [0.1, 1.0, 0.1])
    assert not narrow.straddles and wide.straddles
    assert narrow.P_star == wide.P_star == pytest.approx(20 * 2 ** (0.5 / 2.5))
    y0, y1 = 1.0 - Z * 0.1, 0.5 - Z * 1.0  # d - 1.96 se at P = 10, 20
    followed = math.log(10.0) + math.log(2.0) * y0 / (y0 - y1)
    assert math.log(wide.P_star) - Z * wide.err_mc == pytest.approx(followed, rel=1e-9)
    # the linear propagation alone, which would have narrowed it
    g0 = math.log(2.0) * 2.0 / 2.5**2
    g1 = math.log(2.0) * 0.5 / 2.5**2
    linear_lo = math.log(wide.P_star) - Z * math.hypot(g0 * 1.0, g1 * 0.1)
    assert followed < linear_lo - 0.1
    assert wide.lo < narrow.lo and wide.hi >= narrow.hi
    assert wide.lo < math.exp(followed) < 20.0


def test_an_end_straddling_zero_with_no_probe_beyond_is_unbounded():
    c = crossing([20.0, 40.0], [0.5, -2.0], [1.0, 0.1])
    assert c.P_star is not None and c.straddles
    assert math.isinf(c.err_mc) and c.lo == 0.0 and math.isinf(c.hi)
    assert c.to_dict()["err_sys"] == c.err_sys and c.to_dict()["bracket"] == [20.0, 40.0]


def test_unbracketed_says_on_which_side():
    assert crossing([10.0, 20.0], [2.0, 1.0]) == Crossing(None, side="above")
    assert crossing([10.0, 20.0], [-2.0, -1.0]).side == "below"
    assert crossing([10.0, 20.0], [-2.0, -1.0]).err_sys is None


def test_interpolation_error_is_the_locators_grid_error():
    # one rule for both: on a curved psi crossing 1/2 between P = 4 and 8 with a neighbour on
    # each side, the crossing rule's interpolation error (in log P) is the larger distance from
    # its root to an end of the level locator's grid interval (the same three-point roots)
    from copyhead_jax.compare.locate import locate_level

    P = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    psi = np.array([0.02, 0.1, 0.3, 0.8, 0.95])
    cr = crossing(P, 0.5 - psi)
    lev = locate_level(P, psi, 0.5)
    assert cr.P_star == pytest.approx(lev.P_star, rel=1e-12)
    lo, hi = np.log(lev.grid)
    assert cr.err_interp == pytest.approx(max(cr.log_P - lo, hi - cr.log_P), rel=1e-12)
    assert lo < cr.log_P < hi  # both neighbours' parabolas put the root elsewhere
