"""sampling/llc.py: the local learning coefficient against known answers: d/2 for a regular
model (Bayesian linear regression), 1/4 for w^4 at large n."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.sampling import (
    default_nbeta,
    local_learning_coefficient,
)

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
        jax.random.key(0),
        _f32(w_star)[0],
        _nll,
        n=n,
        step_size=eta,
        n_steps=4000,
        burn_in=500,
        n_chains=8,
        gamma=gamma,
        args=_f32(X, y),
    )
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
        jax.random.key(1),
        jnp.zeros(()),
        lambda w: w**4,
        n=n,
        step_size=0.003 / math.sqrt(a),
        n_steps=20_000,
        burn_in=2_000,
        n_chains=16,
        gamma=0.0,
        prior_fn=lambda w: 0.5 * w**2,
    )
    u = np.linspace(-3, 3, 600_001)  # the tempered posterior by quadrature, in u
    p = np.exp(-(u**4) - u**2 / (2 * math.sqrt(a)))
    assert abs(np.sum(u**4 * p) / np.sum(p) - 0.25) < 1e-3
    assert r.mcse < 0.012
    assert abs(r.llc - 0.25) < 4 * r.mcse, (r.llc, r.mcse)
