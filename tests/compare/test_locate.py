"""The measured-P* locators find planted features in synthetic data to the stated precision."""

import math

import numpy as np
import pytest

from copyhead_jax.compare import locate as loc


def _refine_until_resolved(P, fn, locate, *, rounds=12, n_new=3):
    """Measure ``fn`` on the grid, locate, add points inside the bracket, repeat."""
    P = np.asarray(sorted(P), float)
    found = locate(P, fn(P))
    for _ in range(rounds):
        if not found.bracketed:
            break
        new = loc.refine_grid(found.bracket, n_new=n_new, existing=P)
        if new.size == 0:
            break
        P = np.union1d(P, new)
        found = locate(P, fn(P))
    return found, P


@pytest.mark.parametrize("P0", [3.5, 24.6, 612.6, 2124.9])
def test_planted_jump_is_resolved_to_neighbouring_integers(P0):
    # a first-order jump between P0's neighbouring integers, seen with 3 noisy seeds
    rng = np.random.default_rng(0)

    def aG(P):
        step = np.where(P[:, None] > P0, 2.5, 0.1)
        return step + 0.01 * rng.standard_normal((P.size, 3))

    found, P = _refine_until_resolved([1, 4, 16, 64, 256, 1024, 4096], aG, loc.locate_jump)
    assert found.bracketed
    assert found.bracket == (math.floor(P0), math.floor(P0) + 1)
    assert found.bracket[0] < P0 < found.bracket[1]
    # stated precision: half the bracket over P*
    assert found.precision == pytest.approx(0.5 / found.P_star)
    assert found.detail["sharpness"] > 0.9  # a resolved jump carries the whole rise
    assert P.size < 7 + 12 * 3


def test_jump_interpolates_mid_value_inside_an_unresolved_bracket():
    P = np.array([10.0, 100.0])
    found = loc.locate_jump(P, np.array([0.0, 2.0]))
    assert found.bracket == (10.0, 100.0)
    assert found.P_star == pytest.approx(math.sqrt(1000.0))  # mid-value at the log midpoint


def test_smooth_rise_has_small_sharpness_and_min_jump_rejects_noise():
    P = np.geomspace(1, 1000, 25)
    psi = 1 / (1 + (30.0 / P) ** 2)
    assert loc.locate_jump(P, psi).detail["sharpness"] < 0.2
    noise = 0.01 * np.random.default_rng(1).standard_normal(P.size)
    assert loc.locate_jump(P, noise, min_jump=0.1).P_star is None


@pytest.mark.parametrize("P0,width", [(3.4, 0.5), (322.0, 1.0), (2124.9, 0.7)])
def test_planted_crossover_max_slope_within_one_percent(P0, width):
    # psi rises like a logistic in log P: its steepest point is exactly P0
    def psi(P):
        return 1.0 / (1.0 + np.exp(-(np.log(P) - math.log(P0)) / width))

    P = np.geomspace(P0 / 50, P0 * 50, 9)
    found, _ = _refine_until_resolved(P, psi, loc.locate_max_slope, rounds=4, n_new=4)
    assert found.bracketed and found.bracket[0] < P0 < found.bracket[1]
    assert found.P_star == pytest.approx(P0, rel=0.01)


def test_max_slope_at_the_grid_edge_is_not_bracketed():
    P = np.array([1.0, 2.0, 4.0, 8.0])
    up = loc.locate_max_slope(P, np.array([0.0, 0.1, 0.2, 0.9]))
    assert not up.bracketed and up.side == "above" and up.detail["edge"] == 8.0
    down = loc.locate_max_slope(P, np.array([0.0, 0.8, 0.9, 0.95]))
    assert not down.bracketed and down.side == "below"
    ext = loc.extend_grid(up, factor=2.0, P_max=100)
    assert ext.tolist() == [16.0]
    assert loc.extend_grid(up, factor=2.0, P_max=10).size == 0  # beyond the reach cap
    assert loc.extend_grid(down, factor=2.0).size == 0  # below P = 1


def test_max_slope_refuses_a_curve_that_does_not_rise():
    # the linear head's posterior psi under paper-chi-lik on its early-warning grid: psi falls,
    # one interval rises by 0.003 (noise); the locator used to report P_cG = 13.5 from it
    P = np.array([9.0, 10.0, 17.0, 18.0, 193.0, 350.0])
    slopes = np.array([-0.0587, 0.00275, -0.0301, -0.0237, -0.0443])
    psi = 0.2 + np.r_[0.0, np.cumsum(slopes * np.diff(np.log(P)))]
    got = loc.locate_max_slope(P, psi)
    assert got.P_star is None and not got.bracketed
    assert got.detail["reason"] == "rise under half the curve's range"
    # the same wiggle on a curve that does rise across the grid is still located
    rising = psi + np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.5]
    assert loc.locate_max_slope(P, rising).side == "above"


def test_max_slope_locates_a_crossover_after_an_initial_fall():
    # a plain seed's copy fraction: 0.98 at P = 1 (attention off, the readout alone), falls to
    # ~0 and rises to 0.92 through its crossover; the rise (0.92) is most of the range (0.98),
    # so the steepest rise is located, between the two probes around it
    P = np.array([1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0])
    psi = np.array([0.98, 0.2, 3e-4, 0.01, 0.3, 0.7, 0.85, 0.92])
    got = loc.locate_max_slope(P, psi)
    assert got.bracketed and 6.0 < got.P_star < 12.0


@pytest.mark.parametrize("P0", [17.3, 613.0])
def test_planted_crossing_of_two_branches(P0):
    # U_a - U_b = P * k * log(P / P0): the per-sequence gap is linear in log P, so the
    # interpolation is exact; a merged-branch point (gap 0) is masked out by `valid`
    P = np.array([P0 / 8, P0 / 2.5, P0 / 1.3, P0 * 1.2, P0 * 3, P0 * 9])
    gap = 0.7 * np.log(P / P0)
    U_b = 1000.0 + 3.0 * P
    U_a = U_b + P * gap
    valid = np.array([False, True, True, True, True, False])
    U_a[0] = U_b[0] + 5.0  # a spurious sign change where the branches merged
    found = loc.locate_crossing(P, U_a, U_b, valid=valid)
    assert found.bracketed and found.detail["n_crossings"] == 1
    assert found.P_star == pytest.approx(P0, rel=1e-9)
    assert found.bracket == (P0 / 1.3, P0 * 1.2)


def test_crossing_outside_the_grid_and_seed_axis():
    P = np.array([1.0, 2.0, 3.0])
    below = loc.locate_crossing(P, np.zeros((3, 2)), np.ones((3, 2)))
    assert below.side == "above"  # a is lower everywhere: the crossing lies above the grid
    above = loc.locate_crossing(P, np.ones(3), np.zeros(3))
    assert above.side == "below"


@pytest.mark.parametrize("P0", [0.4, 103.9])
def test_planted_second_order_onset(P0):
    # Landau pitchfork r ~ sqrt(P - P0) above P0, 0 below
    def r(P):
        return np.sqrt(np.clip(P - P0, 0.0, None)) / 10.0

    onset = lambda P, y: loc.locate_onset(P, y, tol=1e-3)  # noqa: E731 - noise level of r
    found, _ = _refine_until_resolved([1, 2, 4, 16, 64, 256, 1024], r, onset)
    if P0 < 1:
        assert not found.bracketed and found.side == "below"
        return
    assert found.bracket == (math.floor(P0), math.floor(P0) + 1)
    assert found.precision == pytest.approx(0.5 / found.P_star)


def test_onset_landau_extrapolation_inside_a_coarse_bracket():
    P = np.array([50.0, 100.0, 120.0, 140.0])
    r = np.sqrt(np.clip(P - 103.9, 0.0, None))
    found = loc.locate_onset(P, r, tol=1e-3)
    assert found.bracket == (100.0, 120.0)
    assert found.detail["P_landau"] == pytest.approx(103.9, rel=1e-9)


def test_level_crossing():
    P = np.array([1.0, 2.0, 4.0, 8.0])
    psi = np.array([0.1, 0.3, 0.7, 0.9])
    found = loc.locate_level(P, psi, 0.5)
    assert found.bracket == (2.0, 4.0) and found.P_star == pytest.approx(2.0 * math.sqrt(2.0))
    assert loc.locate_level(P, psi, 0.95).side == "above"
    assert loc.locate_level(P, psi, 0.05).side == "below"


def test_refine_grid_fills_narrow_brackets_and_skips_existing():
    assert loc.refine_grid((10, 14), n_new=3, existing=[12]).tolist() == [11.0, 13.0]
    assert loc.refine_grid((10, 11), n_new=3).size == 0  # resolved
    wide = loc.refine_grid((100, 1000), n_new=3)
    assert wide.size == 3 and np.all(np.diff(np.log(wide)) > 0)
    assert np.allclose(np.diff(np.log([100, *wide, 1000])), np.log(10) / 4, atol=0.02)


def test_unsorted_input_and_seed_means():
    P = np.array([8.0, 1.0, 4.0, 2.0])
    y = np.array([[1.0, 1.2], [0.0, 0.1], [1.0, 0.8], [0.1, 0.0]])
    found = loc.locate_jump(P, y)
    assert found.bracket == (2.0, 4.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: loc.locate_jump([1.0], [0.0]), "P must be a 1-d array of at least 2"),
        (lambda: loc.locate_jump([1.0, -2.0], [0.0, 1.0]), "P must hold finite values > 0"),
        (lambda: loc.locate_jump([1.0, 1.0], [0.0, 1.0]), "P must not repeat"),
        (lambda: loc.locate_jump([1.0, 2.0], [0.0, 1.0, 2.0]), r"y must have shape \[nP\]"),
        (lambda: loc.locate_jump([1.0, 2.0], [0.0, 1.0], min_jump=-1), "min_jump"),
        (lambda: loc.locate_jump([1.0, 2.0], [0.0, 1.0], direction=0), "direction"),
        (lambda: loc.locate_onset([1.0, 2.0], [0.0, 1.0], tol=0.0), "tol"),
        (lambda: loc.locate_level([1.0, 2.0], [0.0, 1.0], float("nan")), "level"),
        (lambda: loc.locate_crossing([1.0, 2.0], [0.0, 1.0], [1.0, 0.0], valid=[True]), "valid"),
        (lambda: loc.refine_grid((5, 2)), "bracket"),
        (lambda: loc.refine_grid((1, 9), n_new=0), "n_new"),
        (lambda: loc.extend_grid(loc.Located("x", None, None, False), factor=1.0), "factor"),
    ],
)
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_located_json_round_trip():
    found = loc.locate_jump([1.0, 2.0, 3.0], [0.0, 0.0, 1.0])
    d = found.to_dict()
    assert d["bracket"] == [2.0, 3.0] and d["precision"] == pytest.approx(0.5 / d["P_star"])


def test_integer_grid_is_distinct_log_spaced_integers_from_one():
    assert loc.integer_grid(0.2, 10.0, 4).tolist() == [1, 2, 5, 10]
    assert loc.integer_grid(1, 10, 30).tolist() == list(range(1, 11))  # rounding merges: distinct


# --- the grid error (Located.grid) -----------------------------------------------------------


def test_a_step_on_the_grid_has_its_bracket_as_grid_error():
    # the onset (first point past a threshold) and the jump (a step between two grid points)
    # say nothing about where inside the bracket the feature lies: the grid error is the bracket
    P = np.array([10.0, 20, 40, 80, 160])
    y = np.where(P > 50, 1.0, 0.0)
    for found in (loc.locate_onset(P, y, tol=0.1), loc.locate_jump(P, y)):
        assert found.bracket == (40.0, 80.0) and found.grid == found.bracket
        assert found.to_dict()["grid"] == [40.0, 80.0]


def test_a_level_crossing_linear_in_log_P_has_no_interpolation_error_in_log_P():
    # y = log(P / 55) crosses 0 at 55 inside (40, 80). Linear in log P, the two-point rule and
    # both three-point interpolants (in log P) are exact: zero width. Linear in P, the rule
    # gives 40 + 40 w (w = log(55/40) / log 2) and the parabolas in P through (20, 40, 80) and
    # (40, 80, 160) cross elsewhere: the interval is their hull (roots found here by brentq on
    # scipy's Lagrange polynomials, independently of the locator's polyfit)
    from scipy.interpolate import lagrange
    from scipy.optimize import brentq

    P = np.array([10.0, 20, 40, 80, 160, 320])
    y = np.log(P / 55.0)
    found = loc.locate_level(P, y, 0.0)
    assert found.P_star == pytest.approx(55.0, rel=1e-12)
    assert found.grid == pytest.approx((55.0, 55.0), rel=1e-12)
    lin = loc.locate_level(P, y, 0.0, scale="linear")
    w = math.log(55 / 40) / math.log(2)
    roots = [brentq(lagrange(P[i], y[i]), 40, 80) for i in ([1, 2, 3], [2, 3, 4])]
    assert lin.P_star == pytest.approx(40 + 40 * w, rel=1e-12)
    want = (min(roots + [lin.P_star]), max(roots + [lin.P_star]))
    assert lin.grid == pytest.approx(want, rel=1e-9)
    assert 40 < lin.grid[0] < 55 < lin.grid[1] < 80  # the linear rule's error covers the truth


def test_a_crossing_with_no_neighbours_spans_the_two_variables_and_stays_in_the_bracket():
    # two points only: no three-point interpolant, so the other variable's rule stands in
    P = np.array([40.0, 80.0])
    found = loc.locate_level(P, np.log(P / 55.0), 0.0)
    w = math.log(55 / 40) / math.log(2)
    assert found.grid == pytest.approx((55.0, 40 + 40 * w), rel=1e-12)
    # a crossing of U's: dU / P linear in log P is exact, whatever the neighbours
    P = np.array([10.0, 20, 40, 80, 160])
    U_a = P * np.log(P / 55.0)
    c = loc.locate_crossing(P, U_a, np.zeros_like(U_a))
    assert c.grid == pytest.approx((55.0, 55.0), rel=1e-12)
    # a sharp kink: the three-point interpolants miss it, the error never leaves the bracket
    y = np.array([-1.0, -1, -1, 1, 1])
    g = loc.locate_level(P, y, 0.0).grid
    assert 40.0 <= g[0] <= g[1] <= 80.0


@pytest.mark.parametrize("P0", [70.0, 100.0, 130.0])
def test_max_slope_grid_error_covers_the_true_steepest_point(P0):
    # psi = sigmoid(2 log(P / P0)) is steepest in log P at P0; a coarse factor-2 grid misplaces
    # the parabola's vertex by a few percent, and the grid error (hull with the four-slope
    # cubics' maxima) covers P0 while staying inside the bracket
    P = 10.0 * 2.0 ** np.arange(8)
    y = 1 / (1 + (P0 / P) ** 2)
    found = loc.locate_max_slope(P, y)
    lo, hi = found.grid
    assert found.bracket[0] <= lo <= found.P_star <= hi <= found.bracket[1]
    assert lo <= P0 <= hi
