"""sampling/free_energy.py: thermodynamic integration and WBIC against closed forms.

Closed forms used: for a Gaussian target of precision A, SGLD with step eta has the exact
stationary covariance A^{-1} (I - eta A / 2)^{-1} (and the exact mean), so for Bayesian linear
regression every SGLD expectation below is known in closed form, step-size bias included.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.sampling import (
    beta_ladder,
    local_learning_coefficient,
    thermodynamic_integration,
    ti_quadrature,
    wbic,
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
        jax.random.key(2),
        _f32(w_map)[0],
        _nll,
        lambda w: 0.5 * alpha * jnp.sum(w**2),
        n=n,
        step_size=eta,
        n_steps=4000,
        burn_in=500,
        n_chains=8,
        betas=b,
        args=_f32(X, y),
    )
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
        jax.random.key(3),
        _f32(np.linalg.solve(A, beta0 * X.T @ y))[0],
        _nll,
        lambda w: 0.5 * alpha * jnp.sum(w**2),
        n=n,
        step_size=eta,
        n_steps=3000,
        burn_in=500,
        n_chains=8,
        args=_f32(X, y),
    )
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
        thermodynamic_integration(
            key, w, nll, nll, n=10, step_size=0.1, n_steps=10, betas=[0.0, 0.5, 0.4, 1.0]
        )
    with pytest.raises(ValueError, match="one value per beta"):
        thermodynamic_integration(
            key, w, nll, nll, n=10, step_size=[0.1, 0.1], n_steps=10, betas=[0.0, 0.5, 1.0]
        )
    with pytest.raises(ValueError, match="power must be"):
        beta_ladder(4, 0.5)
