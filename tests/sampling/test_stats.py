"""sampling/stats.py: split R-hat and ESS against NumPyro's, ArviZ's and the SGLD diagnostics',
the ESS of AR(1) chains against its integrated autocorrelation, standard errors that cover the
truth at their nominal rate, and bad shapes refused."""

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from copyhead_jax.sampling import (
    ess,
    mcse_mean,
    split_rhat,
    susceptibility,
)
from copyhead_jax.sampling.sgld import diagnostics


def _ar1(rng, shape, phi):
    """Exact stationary AR(1) draws with unit variance along the last axis."""
    e = rng.normal(size=shape)
    e[..., 0] /= math.sqrt(1 - phi**2)  # x_0 ~ N(0, 1)
    return lfilter([math.sqrt(1 - phi**2)], [1, -phi], e, axis=-1)


# ---------------------------------------------------------------------------------------------
# R-hat, ESS, MCSE, susceptibility


def test_rhat_and_ess_match_numpyro_and_the_sgld_diagnostics_trace_by_trace():
    numpyro_diag = pytest.importorskip("numpyro.diagnostics")
    rng = np.random.default_rng(0)
    x = _ar1(rng, (3, 4, 301), 0.7) + rng.normal(size=(3, 4, 1))  # chains disagree a little
    got_r, got_e = split_rhat(x), ess(x)
    for i in range(3):  # same formulas (BDA3 §11.4-11.5, Geyer), vectorised: float64 round-off
        np.testing.assert_allclose(got_r[i], numpyro_diag.split_gelman_rubin(x[i]), rtol=1e-10)
        np.testing.assert_allclose(got_e[i], numpyro_diag.effective_sample_size(x[i]), rtol=1e-10)
        np.testing.assert_allclose(got_e[i], diagnostics.ess(x[i]), rtol=1e-10)
        np.testing.assert_allclose(got_r[i], diagnostics.split_rhat(x[i]), rtol=1e-10)
    np.testing.assert_allclose(ess(x[0, :1]), numpyro_diag.effective_sample_size(x[0, :1]))
    assert np.all(got_r > 1.05)  # offsets of sd 1 between chains of unit variance: flagged


def test_ess_of_ar1_is_its_integrated_autocorrelation():
    # ESS = M N (1 - phi) / (1 + phi) for AR(1); the ESS estimate of one 4 x 2000 trace has a
    # relative spread ~ 10%, so the mean over 200 traces is within ~1% (bias of the truncated
    # Geyer sum included: 4% is loose).
    rng = np.random.default_rng(1)
    phi, M, N = 0.6, 4, 2000
    e = ess(_ar1(rng, (200, M, N), phi))
    assert abs(e.mean() / (M * N * (1 - phi) / (1 + phi)) - 1) < 0.04


@pytest.mark.parametrize("phi", [0.0, 0.8])
def test_standard_errors_cover_the_truth_at_the_nominal_rate(phi):
    # R = 1000 exact AR(1) posteriors (unit variance, mean 0), 4 chains x 1000 draws each. A 95%
    # interval covers the truth in a Binomial(R, 0.95) number of them: sd sqrt(.95 .05 / R) =
    # 0.0069, so [0.925, 0.975] is +- 3.6 sd. The susceptibility n Var (n = 30) uses the
    # delta-method MCSE with the ESS of (x - mean)^2 (autocorrelation phi^2).
    rng = np.random.default_rng(2)
    R, n = 1000, 30.0
    x = _ar1(rng, (R, 4, 1000), phi)
    chi = susceptibility(x, n)
    cover_chi = np.mean(np.abs(chi.value - n) <= 1.96 * chi.mcse)
    m = x.mean((-2, -1))
    cover_mean = np.mean(np.abs(m) <= 1.96 * mcse_mean(x))
    assert 0.925 <= cover_chi <= 0.975, cover_chi
    assert 0.925 <= cover_mean <= 0.975, cover_mean
    # and the errors are the spread itself: sd of the estimates over reps / mean reported MCSE
    # = 1 within the sampling error of an sd over R reps (1 / sqrt(2 R) = 2.2%, +- 4.5 sd)
    assert abs(np.std(chi.value) / np.mean(chi.mcse) - 1) < 0.1
    assert abs(np.std(m) / np.mean(mcse_mean(x)) - 1) < 0.1


def test_stats_reject_bad_shapes_and_n():
    with pytest.raises(ValueError, match="draws must have shape"):
        susceptibility(np.zeros(10), 1.0)
    with pytest.raises(ValueError, match="x must have shape"):
        ess(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="n must be"):
        susceptibility(np.zeros((2, 10)), -1.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        susceptibility(np.zeros((3, 2, 10)), np.ones(2))


# ---------------------------------------------------------------------------------------------
# Bayesian linear regression: y = X w + N(0, 1), prior w ~ N(0, 1 / alpha)


def test_rhat_and_ess_match_arviz():
    """The one R-hat/ESS against ArviZ on AR(1) chains with an offset chain:
    split R-hat is the same formula as ``az.rhat(method="split")`` (float64 rounding: rtol
    1e-10); ESS is ``az.ess(method="mean")`` up to ArviZ's end term of the Geyer sum (one extra
    autocorrelation, a few percent at most here: rtol 5e-2)."""
    az = pytest.importorskip("arviz")
    from copyhead_jax.sampling import ess, split_rhat

    rng = np.random.default_rng(1)
    x = np.zeros((4, 500))
    for t in range(1, 500):
        x[:, t] = 0.7 * x[:, t - 1] + rng.normal(size=4)
    x[3] += 0.3
    np.testing.assert_allclose(split_rhat(x), az.rhat(x, method="split"), rtol=1e-10)
    np.testing.assert_allclose(ess(x), az.ess(x, method="mean"), rtol=5e-2)
    batch = np.stack([x, x[::-1]])  # leading run axes reduce per run
    np.testing.assert_allclose(split_rhat(batch), [split_rhat(x), split_rhat(x[::-1])])
