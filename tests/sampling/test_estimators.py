"""sampling/estimators.py: per-run posterior means and susceptibilities scale with P and use
only the finite chains."""

import math

import numpy as np
import pytest
from scipy.signal import lfilter

from copyhead_jax.sampling import (
    ess,
    mcse_mean,
    susceptibility,
)


def _ar1(rng, shape, phi):
    """Exact stationary AR(1) draws with unit variance along the last axis."""
    e = rng.normal(size=shape)
    e[..., 0] /= math.sqrt(1 - phi**2)  # x_0 ~ N(0, 1)
    return lfilter([math.sqrt(1 - phi**2)], [1, -phi], e, axis=-1)


def test_per_run_estimators_use_p_and_only_the_finite_chains():
    import copyhead_jax as ch
    from copyhead_jax.results import DRAW_FIELDS, PosteriorResult
    from copyhead_jax.sampling import run_mean, run_susceptibility

    rng = np.random.default_rng(5)
    cfg = ch.TINY.replace(sweep=dict(P=(2, 8), n_seeds=2))
    draws = np.stack([_ar1(rng, (2, 2, 3, 50), 0.5)] * len(DRAW_FIELDS), -1)
    finite = np.ones((2, 2, 3), bool)
    finite[0, 1, 1] = False  # one diverged chain: left out
    finite[1, 0] = False  # a run with none: NaN
    draws[0, 1, 1] = np.nan
    post = PosteriorResult(cfg, ch.SGLDConfig(), dict(draws=draws, finite=finite))
    chi = run_susceptibility(post, "cG")
    ok = draws[0, 1, [0, 2], :, DRAW_FIELDS.index("cG")]
    np.testing.assert_allclose(chi.value[0, 1], 2 * ok.var(ddof=1), rtol=1e-12)
    np.testing.assert_allclose(chi.mcse[0, 1], susceptibility(ok, 2).mcse, rtol=1e-12)
    x = draws[1, 1, ..., DRAW_FIELDS.index("cG")]
    np.testing.assert_allclose(chi.value[1, 1], 8 * x.var(ddof=1), rtol=1e-12)  # n = P = 8
    assert np.isnan(chi.value[1, 0]) and np.isfinite(chi.value).sum() == 3
    mean, se, n_eff = run_mean(post, "cG")
    np.testing.assert_allclose(mean[0, 1], ok.mean(), rtol=1e-12)
    np.testing.assert_allclose(se[0, 1], mcse_mean(ok), rtol=1e-12)
    assert np.isnan(mean[1, 0]) and n_eff[1, 1] == pytest.approx(ess(x))
    # an array n broadcasts against the leading axes: the same as P per row
    both = susceptibility(draws[..., 0][:, 1:], np.array([2.0, 8.0])[:, None])
    np.testing.assert_allclose(both.value[1, 0], 8 * x.var(ddof=1), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Bayesian linear regression: y = X w + N(0, 1), prior w ~ N(0, 1 / alpha)
