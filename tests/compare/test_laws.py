"""``compare.laws.measured_law``: the joint law of measured points recovers an exact power law,
and its bootstrap interval equals the closed-form propagation of the points' errors."""

import numpy as np
import pytest

from copyhead_jax.compare.laws import Z95, measured_law

L = np.array([8, 12, 15, 25, 8, 12, 15, 25, 12, 40], float)
V = np.array([3, 3, 3, 3, 5, 5, 5, 5, 7, 7], float)


def test_an_exact_power_law_is_recovered_with_the_fit_interval_collapsed():
    P = 21.0 * L**0.12 * V**0.31
    law = measured_law(L, V, P, P / 1.05, P * 1.05)
    assert law["fit"]["k_L"] == pytest.approx(0.12, abs=1e-12)
    assert law["fit"]["k_V"] == pytest.approx(0.31, abs=1e-12)
    assert law["fit"]["C"] == pytest.approx(21.0, rel=1e-12)
    # no residual: the Student-t interval is a point, the quoted interval is the bootstrap's
    assert np.ptp(law["fit"]["k_L_ci"]) < 1e-10
    assert law["k_L_ci"] == law["bootstrap"]["k_L_ci"]
    assert sorted(law["per_V"]) == [3, 5]  # V = 7 has two L only
    assert law["per_V"][3]["exponent"] == pytest.approx(0.12, abs=1e-12)
    # the paper's ln^2 L has the local exponent 2 / ln L: between 2 / ln 40 and 2 / ln 8
    assert 2 / np.log(40) < law["paper_law"]["k_L"] < 2 / np.log(8)
    assert law["paper_law"]["k_V"] == pytest.approx(0.0, abs=0.1)


def test_the_bootstrap_interval_is_the_propagated_error_of_symmetric_log_intervals():
    """Intervals symmetric in log P with sd s give the exponents the covariance s^2 (X'X)^-1,
    so the bootstrap's 95% width is 2 x 1.96 s sqrt((X'X)^-1_ii). 4,000 draws: the percentile
    width's Monte-Carlo error is ~2%; 6% leaves three of them."""
    rng = np.random.default_rng(1)
    P = 30.0 * L**0.1 * V**0.2 * np.exp(0.02 * rng.standard_normal(L.size))
    s = 0.04
    law = measured_law(L, V, P, P * np.exp(-Z95 * s), P * np.exp(Z95 * s), seed=3)
    X = np.stack([np.ones_like(L), np.log(L), np.log(V)], axis=1)
    cov = s**2 * np.linalg.inv(X.T @ X)
    for k, i in (("k_L", 1), ("k_V", 2)):
        lo, hi = law["bootstrap"][f"{k}_ci"]
        assert hi - lo == pytest.approx(2 * Z95 * np.sqrt(cov[i, i]), rel=0.06)
        assert lo < law["fit"][k] < hi
        q = law[f"{k}_ci"]
        assert q[0] <= min(lo, law["fit"][f"{k}_ci"][0]) and q[1] >= hi


def test_an_interval_that_excludes_its_point_is_refused():
    P = 20.0 * L**0.1
    with pytest.raises(ValueError):
        measured_law(L, V, P, P * 1.01, P * 1.1)
