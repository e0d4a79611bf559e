"""Posterior-science estimators (issue 12) against known answers.

Closed forms used: for a Gaussian target of precision A, SGLD with step eta has the exact
stationary covariance A^{-1} (I - eta A / 2)^{-1} (and the exact mean), so for Bayesian linear
regression every SGLD expectation below is known in closed form, step-size bias included.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.signal import lfilter

from copyhead_jax.bayes import (
    beta_ladder,
    default_nbeta,
    ess,
    local_learning_coefficient,
    mcse_mean,
    split_rhat,
    susceptibility,
    thermodynamic_integration,
    ti_quadrature,
    wbic,
)
from copyhead_jax.sgld import diagnostics


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


def test_per_run_estimators_use_p_and_only_the_finite_chains():
    import copyhead_jax as ch
    from copyhead_jax.bayes import run_mean, run_susceptibility
    from copyhead_jax.results import DRAW_FIELDS, PosteriorResult

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


def _blr(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    return X, y


def _nll(w, X, y):
    """Per-sample negative log-likelihood of unit-variance Gaussian noise, normalised."""
    return 0.5 * jnp.mean(jnp.square(y - X @ w)) + 0.5 * math.log(2 * math.pi)


def _f32(*a):
    return tuple(jnp.asarray(x, jnp.float32) for x in a)


def test_llc_of_a_regular_model_is_half_its_dimension():
    n, d, gamma = 400, 3, 1.0
    X, y = _blr(n, d, 3)
    w_star = np.linalg.lstsq(X, y, rcond=None)[0]
    nbeta = default_nbeta(n)
    A = nbeta * X.T @ X / n + gamma * np.eye(d)  # precision of the localised tempered posterior
    eta = 0.05 / np.linalg.eigvalsh(A).max()
    r = local_learning_coefficient(
        jax.random.key(0), _f32(w_star)[0], _nll, n=n, step_size=eta, n_steps=4000,
        burn_in=500, n_chains=8, gamma=gamma, args=_f32(X, y),
    )  # fmt: skip
    # E[lambda-hat] = 1/2 tr(n beta H Sigma_eta) exactly, Sigma_eta the SGLD covariance
    sigma = np.linalg.inv(A) @ np.linalg.inv(np.eye(d) - eta * A / 2)
    expected = 0.5 * np.trace(nbeta * X.T @ X / n @ sigma)
    assert abs(expected - d / 2) < 0.03 * d / 2  # gamma and eta move d/2 by < 3% here
    assert r.mcse < 0.05  # ~ sqrt(Var / ESS), Var = d/2 (a Gamma(d/2) variable), ESS ~ 1000
    assert abs(r.llc - expected) < 4 * r.mcse, (r.llc, expected, r.mcse)
    assert r.health.finite.all() and r.health.rhat < 1.05 and r.health.accept > 0.95
    assert r.nbeta == pytest.approx(n / math.log(n))
    assert r.loss.shape == (8, 3500)


def test_llc_of_w4_is_one_quarter_at_large_n():
    # K(w) = w^4, prior N(0, 1), no localisation. With a = n beta and u = a^{1/4} w the tempered
    # posterior is exp(-u^4 - u^2 / (2 sqrt a)): E[a w^4] = 1/4 + O(a^{-1/2}) (5e-4 at n = 1e6),
    # and SGLD is the same chain in u with step h = eta sqrt(a); at h = 0.003 its bias is ~0.002
    # (measured with 64 chains x 40k steps: +0.0029 +- 0.0024), well below the MCSE (~0.008).
    n = 10**6
    a = default_nbeta(n)
    r = local_learning_coefficient(
        jax.random.key(1), jnp.zeros(()), lambda w: w**4, n=n, step_size=0.003 / math.sqrt(a),
        n_steps=20_000, burn_in=2_000, n_chains=16, gamma=0.0, prior_fn=lambda w: 0.5 * w**2,
    )  # fmt: skip
    u = np.linspace(-3, 3, 600_001)  # the tempered posterior by quadrature, in u
    p = np.exp(-(u**4) - u**2 / (2 * math.sqrt(a)))
    assert abs(np.sum(u**4 * p) / np.sum(p) - 0.25) < 1e-3
    assert r.mcse < 0.012
    assert abs(r.llc - 0.25) < 4 * r.mcse, (r.llc, r.mcse)


def _blr_closed_forms(X, y, alpha):
    """log Z and beta -> (E_beta[ell], Var_beta[ell], precision A_beta) of the BLR."""
    n, d = X.shape
    C = np.eye(n) + X @ X.T / alpha
    log_z = -0.5 * (n * math.log(2 * math.pi) + np.linalg.slogdet(C)[1] + y @ np.linalg.solve(C, y))
    G = X.T @ X

    def at(beta, eta=0.0):
        A = alpha * np.eye(d) + beta * G
        m = np.linalg.solve(A, beta * X.T @ y)
        S = np.linalg.inv(A) @ np.linalg.inv(np.eye(d) - eta * A / 2)  # SGLD covariance
        r = y - X @ m
        mean = -n / 2 * math.log(2 * math.pi) - 0.5 * (r @ r + np.trace(G @ S))
        var = 0.5 * np.trace(G @ S @ G @ S) + (X.T @ r) @ S @ (X.T @ r)  # Var of a quadratic
        return mean, var, A

    return log_z, at


def test_ti_quadrature_of_exact_rungs_reproduces_the_evidence():
    X, y = _blr(20, 2, 4)
    log_z, at = _blr_closed_forms(X, y, 1.0)
    b = beta_ladder(16, 5.0)
    m, v = np.array([at(x)[:2] for x in b]).T
    plain, _ = ti_quadrature(b, m)
    corrected, se = ti_quadrature(b, m, v)
    assert abs(corrected - log_z) < 5e-3 < abs(plain - log_z)  # O(h^4) vs O(h^2) (0.002, 0.08)
    assert se == 0.0
    _, se = ti_quadrature(b, m, v, mean_se=np.ones_like(b), var_se=np.zeros_like(b))
    weights = (np.diff(b, prepend=0) + np.diff(b, append=1)) / 2  # trapezoid weights
    assert se == pytest.approx(math.sqrt(np.sum(weights**2)))


def test_thermodynamic_integration_reproduces_the_closed_form_evidence():
    n, d, alpha, c = 20, 2, 1.0, 0.02
    X, y = _blr(n, d, 4)
    log_z, at = _blr_closed_forms(X, y, alpha)
    b = beta_ladder(16, 5.0)

    def eta(beta):  # eta lambda_max(A_beta) = c on every rung: variance inflated <= 1%
        return c / np.linalg.eigvalsh(at(beta)[2]).max()

    w_map = np.linalg.solve(at(1.0)[2], X.T @ y)
    r = thermodynamic_integration(
        jax.random.key(2), _f32(w_map)[0], _nll, lambda w: 0.5 * alpha * jnp.sum(w**2), n=n,
        step_size=eta, n_steps=4000, burn_in=500, n_chains=8, betas=b, args=_f32(X, y),
    )  # fmt: skip
    # the same quadrature on the exact SGLD expectations: quadrature error + step-size bias
    m, v = np.array([at(x, eta(x))[:2] for x in b]).T
    biased, _ = ti_quadrature(b, m, v)
    assert abs(biased - log_z) < 0.04  # the part of the error that is not Monte Carlo
    assert r.mcse < 0.08
    assert abs(r.log_evidence - log_z) < 4 * r.mcse + abs(biased - log_z), (r, log_z)
    assert r.free_energy == -r.log_evidence and r.finite.all()


def test_wbic_matches_its_closed_form_for_linear_regression():
    n, d, alpha = 50, 2, 1.0
    X, y = _blr(n, d, 5)
    _, at = _blr_closed_forms(X, y, alpha)
    beta0 = 1 / math.log(n)
    A = at(beta0)[2]
    eta = 0.05 / np.linalg.eigvalsh(A).max()
    r = wbic(
        jax.random.key(3), _f32(np.linalg.solve(A, beta0 * X.T @ y))[0], _nll,
        lambda w: 0.5 * alpha * jnp.sum(w**2), n=n, step_size=eta, n_steps=3000, burn_in=500,
        n_chains=8, args=_f32(X, y),
    )  # fmt: skip
    expected = -at(beta0, eta)[0]  # E_beta0[n L_n] = -E_beta0[ell] under the SGLD law
    assert r.nbeta == pytest.approx(n / math.log(n))
    assert r.mcse < 0.2
    assert abs(r.wbic - expected) < 4 * r.mcse, (r.wbic, expected, r.mcse)


def test_samplers_reject_bad_arguments():
    nll = lambda w: jnp.sum(w**2)
    w = jnp.zeros(2)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="gamma must be"):
        local_learning_coefficient(key, w, nll, n=10, step_size=0.1, n_steps=10, gamma=-1.0)
    with pytest.raises(ValueError, match="n must be an int >= 2"):
        local_learning_coefficient(key, w, nll, n=1, step_size=0.1, n_steps=10)
    with pytest.raises(ValueError, match="step_size must be"):
        local_learning_coefficient(key, w, nll, n=10, step_size=0.0, n_steps=10)
    with pytest.raises(ValueError, match="betas must increase"):
        thermodynamic_integration(key, w, nll, nll, n=10, step_size=0.1, n_steps=10,
                                  betas=[0.0, 0.5, 0.4, 1.0])  # fmt: skip
    with pytest.raises(ValueError, match="one value per beta"):
        thermodynamic_integration(key, w, nll, nll, n=10, step_size=[0.1, 0.1], n_steps=10,
                                  betas=[0.0, 0.5, 1.0])  # fmt: skip
    with pytest.raises(ValueError, match="power must be"):
        beta_ladder(4, 0.5)
