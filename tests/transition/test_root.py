"""transition/root.py: the root of a free-energy difference and its error budget on closed
forms (crossing, next probe, the two-probe interpolation error, the anchored root, seeds
combined)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from copyhead_jax.transition import combine_seeds, crossing, next_probe

# --- the root and its error budget (closed forms) ---------------------------------------------


def test_crossing_of_a_linear_difference_is_exact_with_no_interpolation_error():
    """d = 3 (t0 - log P) is linear in log P: the root is exp(t0) exactly, and the quadratic
    through a third probe has the same root (interpolation error 0 up to rounding)."""
    t0 = math.log(37.0)
    P = np.array([20.0, 30.0, 45.0, 70.0])
    d = 3 * (t0 - np.log(P))
    c = crossing(P, d, np.zeros(4), np.zeros(4))
    assert c.P_star == pytest.approx(37.0, rel=1e-12)
    assert c.bracket == (30.0, 45.0) and c.err_interp < 1e-9 and c.err_mc == 0


def test_crossing_error_propagation_matches_a_finite_difference():
    """err_mc is |dt*/dd| se propagated: compare with moving each d by se (linear map)."""
    P, d, se = np.array([30.0, 45.0]), np.array([2.0, -1.0]), np.array([0.1, 0.2])
    base = crossing(P, d, se).log_P
    g = [(crossing(P, d + np.eye(2)[i] * 1e-6, se).log_P - base) / 1e-6 for i in range(2)]
    assert crossing(P, d, se).err_mc == pytest.approx(math.hypot(g[0] * 0.1, g[1] * 0.2), rel=1e-4)
    assert crossing(P, np.array([2.0, 1.0]), se).P_star is None


def test_next_probe_widens_then_refines_to_the_bracket_ratio():
    d = lambda P: 2.0 * (math.log(55.0) - math.log(P))  # noqa: E731  (root at 55)
    Ps = [24, 30]
    while (nxt := next_probe(Ps, [d(p) for p in Ps], refine_ratio=1.1)) is not None:
        assert nxt not in Ps
        Ps.append(nxt)
        assert len(Ps) < 12
    c = crossing(Ps, [d(p) for p in Ps], np.zeros(len(Ps)))
    assert c.bracket[1] / c.bracket[0] <= 1.1 and c.P_star == pytest.approx(55.0)


def test_next_probe_with_slopes_brackets_in_fewer_probes_and_moves_no_root():
    """A curved d (quadratic in log P, root at 1,248) with its exact slope: Newton widening and
    Hermite refinement reach a bracket within the ratio in fewer probes than the secant rule;
    the root of :func:`crossing` is the same function of the probes either way (slopes only
    place probes). A cubic Hermite with exact slopes of a cubic is exact."""
    u = lambda P: math.log(P / 1248.0)  # noqa: E731
    d = lambda P: -240 * u(P) - 100 * u(P) ** 2  # noqa: E731
    s = lambda P: -240 - 200 * u(P)  # noqa: E731
    runs = {}
    for with_slope in (False, True):
        Ps = [660]
        while (
            nxt := next_probe(
                Ps, [d(p) for p in Ps], slope=[s(p) for p in Ps] if with_slope else None
            )
        ) is not None:
            assert nxt not in Ps and len(Ps) < 10
            Ps.append(nxt)
        c = crossing(Ps, [d(p) for p in Ps], np.zeros(len(Ps)))
        assert c.bracket[1] / c.bracket[0] <= 1.25
        assert c.P_star == pytest.approx(1248.0, rel=0.01)
        runs[with_slope] = Ps
    assert len(runs[True]) < len(runs[False]), runs
    # slopes of the wrong sign (or NaN) fall back to the secant rule
    assert next_probe([660], [d(660)], slope=[+5.0]) == next_probe([660], [d(660)])
    assert next_probe([660], [d(660)], slope=[math.nan]) == next_probe([660], [d(660)])
    from copyhead_jax.transition.root import hermite_root

    cubic = lambda t: (t - 0.3) * (t + 2.0) * (t - 3.0)  # noqa: E731
    dcub = lambda t: 3 * t**2 - 2.6 * t - 5.7  # noqa: E731
    assert hermite_root(0.0, 1.0, cubic(0), cubic(1), dcub(0), dcub(1), 0.5) == pytest.approx(
        0.3, abs=1e-9
    )


def test_two_probe_interpolation_error_from_the_slopes_is_the_linear_roots_error():
    """With no third probe, exact slopes of a d quadratic in log P (which the cubic Hermite
    reproduces) make err_interp the linear root's true error; without slopes it is the grid
    bracket (the larger distance from the root to a bracket end), and slopes never move the
    root itself."""
    u = lambda P: math.log(P / 1248.0)  # noqa: E731
    d = lambda P: -240 * u(P) - 100 * u(P) ** 2  # noqa: E731
    s = lambda P: -240 - 200 * u(P)  # noqa: E731
    P = [1150.0, 1300.0]
    c = crossing(P, [d(p) for p in P], [0.0, 0.0], slope=[s(p) for p in P])
    plain = crossing(P, [d(p) for p in P], [0.0, 0.0])
    assert c.P_star == plain.P_star
    true_err = abs(c.log_P - math.log(1248.0))
    assert true_err > 1e-4 and c.err_interp == pytest.approx(true_err, rel=1e-6)
    t = plain.log_P
    assert plain.err_interp == pytest.approx(max(t - math.log(1150.0), math.log(1300.0) - t))
    # a third probe: the quadratic through it decides (exact here), whatever the slopes say
    three = crossing([*P, 1500.0], [d(p) for p in (*P, 1500.0)], [0.0] * 3, slope=[-1.0, -1e4, 0.0])
    assert three.err_interp == pytest.approx(true_err, rel=1e-6)


def test_anchored_root_from_one_probe_and_an_earlier_seeds_slope():
    """Seeds whose d differ by a shift of the root (d quadratic in log P): the slope of seed 0's
    bracket places seed 1's root from one probe within the error budget (the true error is
    below err_interp, the borrowed slope's allowance); MC error is se / |s| and |d| se_s / s^2
    in quadrature; a probe farther than ``max_step`` from its root gives None."""
    from copyhead_jax.transition import anchored_root, bracket_slope, pooled_slope

    def d(P, root):
        u = math.log(P / root)
        return -240 * u - 100 * u**2

    P0 = [1150.0, 1300.0]
    s0 = bracket_slope(P0, [d(p, 1248.0) for p in P0], [0.3, 0.4])
    assert s0[0] == pytest.approx((d(1300.0, 1248.0) - d(1150.0, 1248.0)) / math.log(1300 / 1150))
    assert s0[1] == pytest.approx(0.5 / math.log(1300 / 1150))
    assert bracket_slope([10.0, 20.0], [1.0, 2.0], [0.1, 0.1]) is None  # no sign change
    pooled = pooled_slope([s0, None])
    assert pooled[2] == 1 and pooled_slope([(5.0, 0.1)]) is None  # d must fall with P
    r = anchored_root(1248.0, d(1248.0, 1262.0), 0.5, 0.2, pooled, max_step=math.log(1.04))
    true_err = abs(r.log_P - math.log(1262.0))
    assert r.bracket is None and r.anchor["P"] == 1248.0
    assert 1e-5 < true_err < r.err_interp
    step = -d(1248.0, 1262.0) / pooled[0]
    assert r.err_mc == pytest.approx(math.hypot(0.5 / pooled[0], step * pooled[1] / pooled[0]))
    assert r.err_quad == pytest.approx(0.2 / abs(pooled[0]))
    assert anchored_root(1248.0, d(1248.0, 1400.0), 0.5, 0.2, pooled, math.log(1.04)) is None


def test_combine_seeds_interval_adds_spread_mc_and_systematic_parts():
    one = combine_seeds([math.log(50.0)], [0.02], [0.05])
    assert one["P_star"] == pytest.approx(50.0)
    # one seed: normal quantile times the MC error, plus the systematic part linearly
    assert one["half_width_log"] == pytest.approx(1.959964 * 0.02 + 0.05, rel=1e-5)
    many = combine_seeds(np.log([40.0, 50.0, 60.0]), [0.0] * 3, [0.0] * 3)
    assert many["lo"] < 40.0 * 1.1 and many["hi"] > 60.0 / 1.1  # t quantile, 2 dof: wide
    assert combine_seeds([math.nan, math.log(5.0)], [0, 0], [0, 0])["n_missing"] == 1


# --- the command on a tiny configuration ------------------------------------------------------

# --- bad input --------------------------------------------------------------------------------


def test_edge_guard_closes_a_step_from_both_ends():
    """A step-like d (the posterior mean's gap across a sharp crossover at 1,000, d clipped at
    the far end): regula falsi creeps in from the upper end a few per cent per probe (seen on a
    paper-preset seed: 1,241, 1,193, 1,164 after 864 and 1,350); with the guard every probe
    shrinks the bracket by a quarter at least, so it reaches the ratio in fewer probes, and it
    still brackets the step."""
    d = lambda P: 1.0 if P < 1000 else -0.05 * (1 + math.log(P / 1000))  # noqa: E731
    runs = {}
    for guard in (0.0, 0.25):
        Ps = [864, 1350]
        while (
            nxt := next_probe(Ps, [d(p) for p in Ps], refine_ratio=1.04, edge_guard=guard)
        ) is not None and len(Ps) < 30:
            assert nxt not in Ps
            Ps.append(nxt)
        lo = max(p for p in Ps if p < 1000)
        hi = min(p for p in Ps if p >= 1000)
        assert hi / lo <= 1.04
        runs[guard] = len(Ps)
    assert runs[0.25] < runs[0.0] and runs[0.25] <= 2 + 8, runs  # 0.446 * 0.75^n <= log 1.04
    with pytest.raises(ValueError, match="edge_guard"):
        next_probe([10, 20], [1.0, -1.0], edge_guard=0.5)
