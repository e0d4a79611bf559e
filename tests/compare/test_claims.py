"""The claims rule, the one early-warning definition and the Bayesian P* interval, on small
synthetic inputs (numpy only: no JAX program is compiled here)."""

import math

import numpy as np
import pytest

from copyhead_jax.compare import EXPONENT_TOL, as_predicted, early_warning, judge
from copyhead_jax.compare.claims import across_readings, order_of, relative_band, verdict_text
from copyhead_jax.compare.crossing import bayesian_interval, flagged_runs
from copyhead_jax.compare.warning import signal_of


def test_relative_band():
    assert relative_band(300.0) == pytest.approx((225.0, 375.0), rel=1e-15)
    assert relative_band(23.0, 0.5) == pytest.approx((11.5, 34.5), rel=1e-15)
    for bad in (0.0, -3.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="value must be"):
            relative_band(bad)
    with pytest.raises(ValueError, match="tol must be"):
        relative_band(23.0, 1.0)


def test_judge_needs_the_whole_interval_inside_the_band():
    """Reproduced iff [lo, hi] lies inside the band, off iff wholly outside, else not resolved:
    widening an interval can turn 'reproduced' or 'off' into 'not resolved', never into
    'reproduced'. The deviation is the distance from the target to the nearest end (0 inside)."""
    band = (16.0, 32.0)
    inside = judge(20.0, 25.0, 23.0, band)
    assert inside["reproduced"] and inside["outcome"] == "reproduced" and inside["off"] == 0.0
    near = judge(17.0, 17.5, 23.0, band)  # 17.5 / 23 - 1 = -23.9%
    assert near["reproduced"] and near["off"] == pytest.approx(17.5 / 23.0 - 1.0, rel=1e-12)
    far = judge(100.0, 104.0, 23.0, band)
    assert far["reproduced"] is False and far["outcome"] == "off"
    assert far["off"] == pytest.approx(100.0 / 23.0 - 1.0, rel=1e-12)
    edge = judge(32.0, 40.0, 23.0, band)  # across the band's upper edge
    assert edge["reproduced"] is None and edge["outcome"] == "not resolved"
    wide = judge(1.0, 1000.0, 23.0, band)  # contains the target, but says nothing
    assert wide["reproduced"] is None and wide["outcome"] == "not resolved"
    for lo, hi in ((20.0, 25.0), (17.0, 17.5), (100.0, 104.0)):  # widening never reproduces
        for w in (1.0, 10.0, 100.0):
            before = judge(lo, hi, 23.0, band)["outcome"]
            after = judge(lo / (1 + w), hi * (1 + w), 23.0, band)["outcome"]
            assert after in ("not resolved", "off" if before == "off" else "not resolved")
    ex = judge(1.43, 1.49, 1.5, (1.5 - EXPONENT_TOL, 1.5 + EXPONENT_TOL), relative=False)
    assert ex["reproduced"] and ex["off"] == pytest.approx(-0.01, abs=1e-12)
    assert judge(None, None, 23.0, band)["outcome"] == "not measured"
    assert "not reproduced" in verdict_text(far) and "band 16-32" in verdict_text(far)
    assert verdict_text(near) == "reproduced within 24%"
    assert verdict_text(wide).startswith("not resolved")
    with pytest.raises(ValueError, match="band must contain target"):
        judge(1.0, 2.0, 23.0, (30.0, 40.0))


def test_order_of():
    assert order_of([(1, 2), (3, 4), (5, 6)]) == "ordered"
    assert order_of([(1, 2), (5, 6), (3, 4)]) == "reversed"
    assert order_of([(1, 3), (2, 4), (5, 6)]) == "overlapping"
    assert order_of([(1, 2), None]) is None


def test_across_readings_says_not_reproduced_only_where_no_reading_does():
    assert across_readings({"a": False, "b": True, "c": None}) == "reproduced under `b`"
    assert across_readings({"a": True, "b": True}) == "reproduced under `a`, `b`"
    assert across_readings({"a": False, "b": None}) == "not reproduced under the readings tried"
    assert across_readings({"a": None, "b": None}) == "not measured"
    assert (
        across_readings({"a": False, "b": None}, {"a": "off", "b": "not resolved"})
        == "not resolved under `b`"
    )


P = np.array([4.0, 6.0, 8.0, 10.0, 12.0, 16.0])


def test_early_warning_planted_growth():
    """Var = P^(a +- e) over 6 seeds (3 with +e, 3 with -e): the ratio from 0.5 P* to 0.9 P* is
    1.8^(a +- e) exactly per seed (log-log interpolation is exact on a power law), so the mean
    log ratio is a log 1.8 exactly and its t-interval is symmetric about it. Against the null 1
    (a basin that only sharpens cannot grow its variance): a = 0.5 (x1.34) is a signal, a = 0
    (flat) is inconclusive, a = -0.5 (x0.75, a sharpening basin) is none."""
    e = np.array([0.05, -0.05] * 3)
    var = lambda a: P[:, None] ** (a + e[None, :])  # noqa: E731
    up = early_warning(P, var(0.5), 16.0)
    assert up["signal"] == "signal" and up["verdict"] == "grows"
    assert up["var_ratio"] == pytest.approx(1.8**0.5, rel=1e-9)
    flat = early_warning(P, var(0.0), 16.0)
    assert flat["signal"] == "inconclusive" and flat["verdict"] == "flat"
    assert flat["var_ratio"] == pytest.approx(1.0, abs=1e-12)
    down = early_warning(P, var(-0.5), 16.0)
    assert down["signal"] == "no signal" and down["verdict"] == "shrinks"
    # beside it, whether the measured growth has the size route B predicts
    assert as_predicted(up["var_ratio_ci"], 1.8**0.5) == "as predicted"
    assert as_predicted(up["var_ratio_ci"], 1.0) == "above the prediction"
    assert as_predicted(down["var_ratio_ci"], 1.0) == "below the prediction"
    assert as_predicted(None, 1.0) is None
    noise = var(0.0)
    off = early_warning(P, noise, 4.0)  # 0.5 P* = 2 is below the grid: no extrapolation
    assert off["signal"] == "undetermined" and "not on the sampled grid" in off["reason"]
    assert early_warning(P, noise, None)["signal"] == "undetermined"
    assert signal_of([0.9, 1.7]) == "inconclusive" and signal_of(None) == "undetermined"
    with pytest.raises(ValueError, match="window must be"):
        early_warning(P, noise, 16.0, window=(0.9, 0.5))


def _branches(dF, se, qc, rhat=1.0, ess=500.0, P=(10.0, 20.0, 40.0)):
    nP, nS = dF.shape
    runs = [
        {"P": int(P[i]), "seed": s, "branch": b, "rhat_max": rhat, "ess_min": ess}
        for i in range(nP)
        for s in range(nS)
        for b in ("pool", "copy")
    ]
    h = {"quad_corr": np.full((nP, nS), qc).tolist()}
    return {
        "P": list(P),
        "dF": dF.tolist(),
        "dF_mcse": np.full((nP, nS), se).tolist(),
        "health": {"pool": h, "copy": h},
        "runs": runs,
        "n_seeds": nS,
        "crossing_F": {"per_seed_ci": {"lo": None, "hi": None}},
    }


def test_bayesian_interval_parts():
    """dF / P linear in log P with its root at P = 25: the one crossing rule on the seed mean is
    exact; zero MC and quadrature errors give a zero-width interval (the quadratic through the
    third point is the same line); each error widens it; two points give the rule's two-point
    interpolation error, the bracket; a flagged run is named."""

    Pg = np.array([10.0, 20.0, 40.0])
    y = -np.log(Pg / 25.0)  # dF / P: root at 25, linear in log P
    dF = np.repeat((y * Pg)[:, None], 3, axis=1)
    exact = bayesian_interval(_branches(dF, 0.0, 0.0, P=Pg))
    assert exact["P_star"] == pytest.approx(25.0, rel=1e-12)
    assert exact["parts"]["crossing"] == pytest.approx([25.0, 25.0], rel=1e-9)
    assert exact["flagged"] == [] and exact["crossing"]["err_mc"] == 0
    noisy = bayesian_interval(_branches(dF, 1.0, 2.0, P=Pg))
    c = noisy["crossing"]
    assert c["err_mc"] > 0 and c["err_quad"] > 0
    assert noisy["lo"] < 25.0 < noisy["hi"]
    half = 1.959964 * c["err_mc"] + c["err_sys"]
    assert noisy["hi"] == pytest.approx(25.0 * math.exp(half), rel=1e-6)
    two = _branches(dF[1:], 0.0, 0.0, P=Pg[1:])
    half2 = math.log(40.0 / 25.0)  # the root lies nearer P = 20: the far end, 40, bounds it
    assert bayesian_interval(two)["parts"]["crossing"] == pytest.approx(
        [25.0 * math.exp(-half2), 25.0 * math.exp(half2)], rel=1e-9
    )
    bad = _branches(dF, 0.0, 0.0, rhat=1.2, P=Pg)
    assert len(flagged_runs(bad)) == 18 and bayesian_interval(bad)["seeds_flagged_at_bracket"]
