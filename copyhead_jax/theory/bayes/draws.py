r"""Draws of the attention weights from route B's Gaussian measure $q$ (docs/theory.md §13.2).

Used to check route B's mean-field readout against the exact collapsed action
(:mod:`.exact`): $E_q[\mathcal S(W)]$ by Monte Carlo over weight draws. The logit table
$s(a,x_a;b,x_b)=G_{ab}+H_{x_ab}+K_{ax_b}+T_{x_ax_b}$ is drawn sector by sector with the covariances
of §13.2 ($P_V=I_V-J_V/V$; the key-side projections are gauges and are dropped),
$$G=\beta G^*+\sigma_G\sigma_p\,\bar C^{1/2}Z_G,\ \
 H=\sqrt{\rho_H}\sigma_G\sigma_e\sigma_pP_VZ_H,\ \
K=\sqrt{\rho_K}\sigma_G\sigma_e\,\bar C^{1/2}Z_K,\ \ T=\sqrt{\rho_T}\sigma_G\sigma_e^2P_VZ_T,$$
$Z$ standard normal except the rows of $Z_G$, whose copy entry has variance $\rho_c$ and the others
$\rho_G$; the logit matrix $M$ holds $G,H,K,T$ in its four blocks and
$W=T_\Sigma^{-1}MT_\Sigma^{-1}$.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from copyhead_jax.theory.action import shift_matrix
from copyhead_jax.theory.params import TheoryParams

from .exact import weights_of_logits
from .variational import Spread


def cbar_root(params: TheoryParams, dtype=None):
    r"""$\bar C^{1/2}=\sigma_p(I-J/L)+\sqrt{\lambda_1}J/L$."""
    L, V = params.L, params.V
    dt = dtype or jnp.result_type(float)
    lam1 = params.sigma_p**2 + L * params.sigma_e**2 / V
    J = jnp.ones((L, L), dt) / L
    return params.sigma_p * (jnp.eye(L, dtype=dt) - J) + jnp.sqrt(lam1) * J


def draw_weights(key, beta, s: Spread, params: TheoryParams, n: int):
    """``n`` weight matrices ``[n, D, D]`` from $q(\\beta,\\rho)$ (module docstring)."""
    L, V = params.L, params.V
    se, sp, sG = params.sigma_e, params.sigma_p, params.sigma_G
    dt = jnp.result_type(float)
    kG, kH, kK, kT = jax.random.split(key, 4)
    Gs = shift_matrix(L).astype(dt)
    sd_G = jnp.sqrt(s.rho_G) * (1.0 - Gs) + jnp.sqrt(s.rho_c) * Gs  # copy entries: rho_c
    C12 = cbar_root(params, dt)
    PV = jnp.eye(V, dtype=dt) - jnp.ones((V, V), dt) / V
    ZG = jax.random.normal(kG, (n, L, L), dt) * sd_G[None]
    G = beta * Gs[None] + sG * sp * jnp.einsum("ac,ncb->nab", C12, ZG)
    H = (
        jnp.sqrt(s.rho_H)
        * sG
        * se
        * sp
        * jnp.einsum("uv,nvb->nub", PV, jax.random.normal(kH, (n, V, L), dt))
    )
    K = (
        jnp.sqrt(s.rho_K)
        * sG
        * se
        * jnp.einsum("ac,ncw->naw", C12, jax.random.normal(kK, (n, L, V), dt))
    )
    T = (
        jnp.sqrt(s.rho_T)
        * sG
        * se**2
        * jnp.einsum("uv,nvw->nuw", PV, jax.random.normal(kT, (n, V, V), dt))
    )
    M = jnp.concatenate([jnp.concatenate([T, H], axis=2), jnp.concatenate([K, G], axis=2)], axis=1)
    return jax.vmap(lambda m: weights_of_logits(m, params))(M)


def tables_linear(key, c1, cG, rho, params: TheoryParams, n: int):
    r"""``n`` logit tables ``(G [n, L, L], H [n, V, L], K [n, L, V], T [n, V, V])`` from the
    linear head's $q$ (:mod:`.linear`): mean logits $(c_1B_1+c_GB_2)/\ell$, and in
    $G=\sigma_G\bar C^{1/2}Z\bar C^{1/2}$ the blocks of $Z$ (``rr, col, row, perp, copy``) scaled
    by the square roots of their ratios; $H$, $K$, $T$ as for softmax but with the key-position
    side $\bar C^{1/2}$ (no gauge)."""
    import math

    from copyhead_jax import conventions as conv

    L, V = params.L, params.V
    se, sG = params.sigma_e, params.sigma_G
    rr, col, row, perp, cp, rH, rK, rT = (float(r) for r in rho)
    dt = jnp.result_type(float)
    k = jax.random.split(key, 4)
    u = jnp.ones((L, 1), dt) / math.sqrt(L)
    U, Pi = u @ u.T, jnp.eye(L, dtype=dt) - u @ u.T
    c = conv.shift_matrix(L, dt) @ Pi / math.sqrt(L - 1)
    Z0 = jax.random.normal(k[0], (n, L, L), dt)
    W0 = jnp.einsum("ab,nbc,cd->nad", Pi, Z0, Pi)
    wc = jnp.einsum("nab,ab->n", W0, c)[:, None, None] * c[None]
    Z = (
        math.sqrt(rr) * jnp.einsum("ab,nbc,cd->nad", U, Z0, U)
        + math.sqrt(col) * jnp.einsum("ab,nbc,cd->nad", U, Z0, Pi)
        + math.sqrt(row) * jnp.einsum("ab,nbc,cd->nad", Pi, Z0, U)
        + math.sqrt(perp) * (W0 - wc)
        + math.sqrt(cp) * wc
    )
    C12 = cbar_root(params, dt)
    B1, B2 = conv.basis(L, dt)
    ell = 1.0 / conv.linear_scale_divisor(L, params.linear_scale)
    G = ((c1 * B1 + cG * B2) / ell)[None] + sG * jnp.einsum("ab,nbc,cd->nad", C12, Z, C12)
    PV = jnp.eye(V, dtype=dt) - jnp.ones((V, V), dt) / V
    H = (
        math.sqrt(rH)
        * sG
        * se
        * jnp.einsum("uv,nvb,bc->nuc", PV, jax.random.normal(k[1], (n, V, L), dt), C12)
    )
    K = (
        math.sqrt(rK)
        * sG
        * se
        * jnp.einsum("ab,nbw,wv->nav", C12, jax.random.normal(k[2], (n, L, V), dt), PV)
    )
    T = (
        math.sqrt(rT)
        * sG
        * se**2
        * jnp.einsum("uv,nvw,wx->nux", PV, jax.random.normal(k[3], (n, V, V), dt), PV)
    )
    return G, H, K, T


def draw_weights_linear(key, c1, cG, rho, params: TheoryParams, n: int):
    """``n`` weight matrices from the linear head's $q$: the tables of :func:`tables_linear`
    assembled into the logit matrix and mapped to weights."""
    G, H, K, T = tables_linear(key, c1, cG, rho, params, n)
    M = jnp.concatenate([jnp.concatenate([T, H], axis=2), jnp.concatenate([K, G], axis=2)], axis=1)
    return jax.vmap(lambda m: weights_of_logits(m, params))(M)
