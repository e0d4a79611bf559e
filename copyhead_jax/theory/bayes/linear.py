r"""Route B for linear attention: the variational free energy and the posterior copy fraction.

docs/theory.md §13.8. Linear attention $A=\ell s$ is linear in the weights, so under a Gaussian
$q$ every moment the readout needs is a closed form (no Monte Carlo). The logit table
$s=G_{ab}+H_{x_ab}+K_{ax_b}+T_{x_ax_b}$ has no gauge here (row sums matter); $q$ has mean
$\bar s=(c_1B_1+c_GB_2)/\ell$ and, in the prior-whitened coordinates
$G=\sigma_G\bar C^{1/2}Z\bar C^{1/2}$,
variance ratios on the blocks of $Z$ split by $u=\mathbf 1/\sqrt L$ and $\Pi=I-uu^\top$ on each
side: the mean direction $uu^\top$ (``rr``), the column pattern $uu^\top\!\otimes\Pi$ (``col``),
the row-sum pattern $\Pi\otimes uu^\top$ (``row``), the copy direction $c=G^*\Pi/\sqrt{L-1}$
(``copy``) and the rest of $\Pi\otimes\Pi$ (``perp``); then $H$, $K$, $T$ as for softmax.
Summed over query rows, the logit noise of one row has key covariance
$$\kappa(b,b')=K_{\rm pos}(b,b')+\kappa_t\,(\delta_{x_bx_{b'}}-1/V),\qquad
K_{\rm pos}=\alpha_u\,uu^\top+\alpha_\Pi\,\Pi+L\rho_H\sigma_G^2\sigma_e^2(1-\tfrac1V)\bar C,$$
$\alpha_u=\sigma_G^2[\rho_{rr}\lambda_1^2+(L-1)\rho_{row}\sigma_p^2\lambda_1]$,
$\alpha_\Pi=\sigma_G^2[\rho_{col}\lambda_1\sigma_p^2+\rho_{perp}\sigma_p^4(L-1-\tfrac1{L-1})+\rho_{copy}\sigma_p^4/(L-1)]$,
$\kappa_t=L\sigma_G^2\sigma_e^2[\rho_K\bar C_{aa}+\rho_T\sigma_e^2(1-\tfrac1V)]$, and the readout's
moments are those of the mean attention (docs/theory.md §3) plus $\ell^2$ times the token average
of $\sum_{bb'}\kappa(b,b')\psi_b\psi_{b'}^\top$ (mean-field readout, as for softmax).

The posterior copy fraction is $E_q[\psi(\bar A)]$ of the mean attention over the data, whose
token-dependent parts average out (EK): $\bar A=\ell G$, with $(\langle\bar A,B_1\rangle,
\langle\bar A,B_2\rangle)$ Gaussian (:func:`projection_law`) and $\psi$ averaged by fixed-point
quadrature (:func:`mean_psi`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as so

from copyhead_jax import conventions as conv
from copyhead_jax.theory.action import ek_stats, moments, solve_QD
from copyhead_jax.theory.params import TheoryParams
from copyhead_jax.theory.potentials import R_lin_of

LIN_SECTORS = ("rr", "col", "row", "perp", "copy", "H", "K", "T")


def lin_sector_sizes(L, V) -> dict:
    """Directions per sector; they sum to $(L+V-1)^2=(D-1)^2$ (the null directions excluded)."""
    return {
        "rr": 1.0,
        "col": L - 1.0,
        "row": L - 1.0,
        "perp": (L - 1.0) ** 2 - 1.0,
        "copy": 1.0,
        "H": (V - 1.0) * L,
        "K": L * (V - 1.0),
        "T": (V - 1.0) ** 2,
    }


def _ell(params: TheoryParams):
    return 1.0 / conv.linear_scale_divisor(params.L, params.linear_scale)


def noise_moments(rho, params: TheoryParams):
    r"""$\ell^2$-free token average of $\sum_a\sum_{bb'}\kappa\,\psi_b\psi_{b'}^\top$ (module
    docstring), ``[D, D]``; ``rho`` in the order of :data:`LIN_SECTORS`."""
    L, V = params.L, params.V
    se, sp, sG = params.sigma_e, params.sigma_p, params.sigma_G
    rr, col, row, perp, cp, rH, rK, rT = rho
    lam1 = sp**2 + L * se**2 / V
    cbar_aa = sp**2 + se**2 / V
    dt = jnp.result_type(rho)
    u = jnp.ones((L, 1), dt) / math.sqrt(L)
    Pi = jnp.eye(L, dtype=dt) - u @ u.T
    Cbar = sp**2 * jnp.eye(L, dtype=dt) + se**2 / V * jnp.ones((L, L), dt)
    a_u = sG**2 * (rr * lam1**2 + (L - 1.0) * row * sp**2 * lam1)
    a_P = sG**2 * (
        col * lam1 * sp**2 + perp * sp**4 * (L - 1.0 - 1.0 / (L - 1.0)) + cp * sp**4 / (L - 1.0)
    )
    Kp = a_u * (u @ u.T) + a_P * Pi + L * rH * sG**2 * se**2 * (1.0 - 1.0 / V) * Cbar
    kt = L * sG**2 * se**2 * (rK * cbar_aa + rT * se**2 * (1.0 - 1.0 / V))
    eye_V, J_V = jnp.eye(V, dtype=dt), jnp.ones((V, V), dt)
    one_V, one_L = jnp.ones((V, 1), dt), jnp.ones((L, 1), dt)
    # positional noise (constant in the tokens)
    tok = jnp.trace(Kp) * (eye_V / V - J_V / V**2) + jnp.sum(Kp) * J_V / V**2
    cross = one_V / V @ (one_L.T @ Kp)
    # token-collision noise: E[(delta_{x_b x_b'} - 1/V) psi_b psi_b'^T]
    tok = tok + kt * (L * (1.0 - 1.0 / V) * eye_V / V + L * (L - 1.0) * (eye_V / V**2 - J_V / V**3))
    cross = cross + kt * (1.0 - 1.0 / V) * (one_V / V) @ one_L.T
    pos = Kp + kt * (1.0 - 1.0 / V) * jnp.eye(L, dtype=dt)
    return jnp.block([[se**2 * tok, se * sp * cross], [se * sp * cross.T, sp**2 * pos]])


def kl_linear(rho, params: TheoryParams):
    n = lin_sector_sizes(params.L, params.V)
    return 0.5 * sum(n[k] * (r - 1.0 - jnp.log(r)) for k, r in zip(LIN_SECTORS, rho))


def free_energy_linear(x, P, params: TheoryParams):
    r"""$\mathcal F_q$ at ``x = (c1, cG, log rho[8])`` (module docstring)."""
    L, V = params.L, params.V
    c1, cG, rho = x[0], x[1], jnp.exp(x[2:])
    ell = _ell(params)
    B1, B2 = conv.basis(L, x.dtype)
    A = c1 * B1 + cG * B2  # mean attention (A units)
    S4, S2 = ek_stats(L, V)
    M, m, ysq = moments(A, S4.astype(x.dtype), S2.astype(x.dtype))
    r = jnp.concatenate([jnp.full((V,), params.sigma_e), jnp.full((L,), params.sigma_p)])
    calA = r[:, None] * M * r[None, :] + ell**2 * noise_moments(rho, params)
    Q, D = solve_QD(calA, r[:, None] * m, ysq, P=P, params=params)
    R = R_lin_of(c1, cG, params)
    return Q + D + R + kl_linear(rho, params)


def projection_law(x, params: TheoryParams):
    r"""Mean and covariance of $y=(\langle\bar A,B_1\rangle,\langle\bar A,B_2\rangle)$ under $q$:
    $\mathrm{Var}\,y_1=\ell^2\sigma_G^2\rho_{rr}\lambda_1^2$,
    $\mathrm{Cov}(y_1,y_2)=\ell^2\sigma_G^2\rho_{rr}\lambda_1^2/\sqrt L$,
    $\mathrm{Var}\,y_2=\ell^2\sigma_G^2[\rho_{rr}\lambda_1^2/L+\rho_{copy}\sigma_p^4(L-1)/L]$."""
    L, V = params.L, params.V
    sp, sG = params.sigma_p, params.sigma_G
    lam1 = sp**2 + L * params.sigma_e**2 / V
    c1, cG, rho = x[0], x[1], jnp.exp(x[2:])
    ell2 = _ell(params) ** 2
    g = 1.0 / math.sqrt(L)
    mean = jnp.stack([c1 + g * cG, g * c1 + cG])
    v11 = ell2 * sG**2 * rho[0] * lam1**2
    cov = jnp.array(
        [[v11, v11 * g], [v11 * g, v11 / L + ell2 * sG**2 * rho[4] * sp**4 * (L - 1.0) / L]]
    )
    return mean, cov


def mean_psi(x, params: TheoryParams, normals):
    r"""$E_q[\psi]$: $\psi$ of $c=\mathrm{Gram}^{-1}y$ averaged over ``normals`` ``[n, 2]``."""
    L = params.L
    mean, cov = projection_law(x, params)
    y = mean[None] + normals @ jnp.linalg.cholesky(cov).T
    g = 1.0 / math.sqrt(L)
    det = 1.0 - g**2
    c1 = (y[:, 0] - g * y[:, 1]) / det
    cG = (y[:, 1] - g * y[:, 0]) / det
    return jnp.mean(conv.copy_fraction(c1, cG, L))


@functools.lru_cache(maxsize=8)
def _compiled(params: TheoryParams):
    f = functools.partial(free_energy_linear, params=params)
    return jax.jit(jax.value_and_grad(lambda x, P: f(x, P)))


def minimise_linear(x0, P, params: TheoryParams):
    """Local minimum of the linear $\\mathcal F_q$ from ``x0`` (L-BFGS-B, float64)."""
    vg = _compiled(params)
    bounds = [(-50.0, 50.0)] * 2 + [(-14.0, 4.0)] * 8
    with jax.enable_x64(True):

        def fun(x):
            v, g = vg(jnp.asarray(x), jnp.asarray(P, jnp.float64))
            return float(v), np.asarray(g, np.float64)

        r = so.minimize(
            fun,
            np.asarray(x0, float),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options=dict(maxiter=2000, ftol=1e-14, gtol=1e-8),
        )
    return r.x, float(r.fun), bool(r.success)


@dataclasses.dataclass(frozen=True)
class LinearSettings:
    n_quad: int = 1 << 14  # normals for E_q[psi]
    seed: int = 0


def linear_curve(params: TheoryParams, P_values, settings: LinearSettings = LinearSettings()):
    r"""The global minimum of $\mathcal F_q$ along ``P_values`` (continuation from several
    starts: pooling, copying, both, none) and $E_q[\psi]$ there."""
    with jax.enable_x64(True):
        normals = jax.random.normal(jax.random.PRNGKey(settings.seed), (settings.n_quad, 2))
    starts = [
        np.r_[0.0, 0.0, np.zeros(8)],
        np.r_[2.0, 0.0, np.zeros(8)],
        np.r_[0.0, 2.0, np.zeros(8)],
        np.r_[2.0, 2.0, np.zeros(8)],
    ]
    rows, prev = [], None
    for P in P_values:
        cands = starts + ([prev] if prev is not None else [])
        best = min((minimise_linear(z, P, params) for z in cands), key=lambda t: t[1])
        x = best[0]
        prev = x
        with jax.enable_x64(True):
            psi = float(mean_psi(jnp.asarray(x), params, normals))
        c1, cG = float(x[0]), float(x[1])
        rows.append(
            {
                "P": float(P),
                "F": best[1],
                "c1": c1,
                "cG": cG,
                "psi_mean": psi,
                "psi_of_mean": float(conv.copy_fraction(c1, cG, params.L)),
                "rho": dict(zip(LIN_SECTORS, np.exp(x[2:]).tolist())),
            }
        )
    return rows


def linear_half_point(rows, key: str = "psi_mean") -> float | None:
    """First ``P`` where ``key`` passes 1/2 (linear in log P between grid points)."""
    P = np.array([r["P"] for r in rows])
    v = np.array([r[key] for r in rows])
    j = np.flatnonzero((v[:-1] < 0.5) & (v[1:] >= 0.5))
    if not j.size:
        return None
    k = int(j[0])
    t = np.log(P[k]) + (0.5 - v[k]) * (np.log(P[k + 1]) - np.log(P[k])) / (v[k + 1] - v[k])
    return float(np.exp(t))
