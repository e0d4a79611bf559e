r"""Route B's Landau profile $F(a;P)$ and the basin variance of $a_G$ (docs/theory.md §13.4, §13.9).

$F(a;P)=\min\{\mathcal F_q(\beta,\rho): a_G(\beta,\rho)=a\}$ is route B's estimate of
$-\log p(a_G=a\mid\text{data})$ up to a $P$-dependent constant, in nats: the same units as a
measured profile. Near a basin's minimum its curvature gives the posterior variance of $a_G$.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as so

from ..params import TheoryParams
from .rows import RowDraws, p_of_aG
from .solve import BOUNDS, DEFAULT_SETTINGS, VariationalSettings
from .variational import free_energy_terms


@functools.lru_cache(maxsize=8)
def _hessian(params: TheoryParams, cv: bool):
    def F(x, P, draws):
        return free_energy_terms(x[0], x[1:], P, params, draws, cv).F

    return jax.jit(jax.hessian(F))


@functools.lru_cache(maxsize=8)
def _aG_grad(params: TheoryParams, cv: bool):
    def aG(x, P, draws):
        return free_energy_terms(x[0], x[1:], P, params, draws, cv).aG

    return jax.jit(jax.grad(aG))


def basin_variance(
    x,
    P: float,
    params: TheoryParams,
    draws: RowDraws,
    settings: VariationalSettings = DEFAULT_SETTINGS,
) -> dict:
    r"""Posterior variance of $a_G$ in a basin from the curvature of its profile (§13.9).

    Near the basin's minimum $x^*$,
    $\mathcal F_q\approx\mathcal F^*+\tfrac12\delta x^\top H\delta x$
    and $a_G\approx a^*+g^\top\delta x$; the profile $F(a)=\min\{\mathcal F_q: a_G=a\}$ is then
    $F^*+(a-a^*)^2/(2g^\top H^{-1}g)$, the free energy of a Gaussian law of $a_G$ with variance
    $\mathrm{Var}(a_G)=g^\top H^{-1}g$, and the susceptibility (docs/theory.md §9.7) is
    $\chi=P\,\mathrm{Var}(a_G)$. Returns both and the smallest Hessian eigenvalue."""
    hess = _hessian(params, settings.control_variate)
    with jax.enable_x64(True):
        xj, Pj = jnp.asarray(x, jnp.float64), jnp.asarray(P, jnp.float64)
        H = np.asarray(hess(xj, Pj, draws))
        g = np.asarray(_aG_grad(params, settings.control_variate)(xj, Pj, draws))
    H = 0.5 * (H + H.T)
    var = float(g @ np.linalg.solve(H, g))
    return {"var_aG": var, "chi_aG": P * var, "min_eig": float(np.linalg.eigvalsh(H)[0])}


@functools.lru_cache(maxsize=8)
def _profile_compiled(params: TheoryParams, cv: bool, n_inner: int = 10):
    """Value and gradient in ``y = log rho`` of $F(\\beta^*(y),y)$ with $\\beta^*$ solving
    $\\bar p(\\beta,y)=p_t$ (Newton on the log-odds, warm start ``b0``); the gradient by the
    implicit function theorem,
    $\\nabla_yF-\\partial_\\beta F\\,\\nabla_y\\bar p/\\partial_\\beta\\bar p$."""
    from .rows import row_attention
    from .variational import row_noise, spread_of

    def pbar(b, y, draws):
        return jnp.mean(row_attention(b, row_noise(spread_of(y), params), draws)[:, 0])

    def F(b, y, P, draws):
        return free_energy_terms(b, y, P, params, draws, cv).F

    def fun(y, b0, p_t, P, draws):
        lt = jnp.log(p_t) - jnp.log1p(-p_t)

        def body(_, b):
            pb, dpb = jax.jvp(lambda bb: pbar(bb, y, draws), (b,), (jnp.ones_like(b),))
            g = jnp.log(pb) - jnp.log1p(-pb) - lt
            return b - jnp.clip(g * pb * (1.0 - pb) / dpb, -2.0, 2.0)

        b = jax.lax.stop_gradient(jax.lax.fori_loop(0, n_inner, body, b0))
        Fv, (Fb, Fy) = jax.value_and_grad(F, argnums=(0, 1))(b, y, P, draws)
        pb_b, pb_y = jax.grad(pbar, argnums=(0, 1))(b, y, draws)
        return Fv, Fy - Fb * pb_y / pb_b, b, pbar(b, y, draws)

    return jax.jit(fun)


def profile(
    P: float,
    a_values,
    params: TheoryParams,
    draws: RowDraws,
    settings: VariationalSettings = DEFAULT_SETTINGS,
    y0=None,
) -> dict:
    r"""$F(a;P)=\min\{\mathcal F_q(\beta,\rho): a_G(\beta,\rho)=a\}$ on ``a_values`` (increasing),
    continued from the first value (``y0``: its start in log rho, default the prior's): the
    Landau free energy of route B in the units of $-\log p(a_G=a\mid\text{data})$ up to a
    constant (§13.5). Returns ``F``, ``beta``, ``log_rho`` per point and the attained ``aG``."""

    fun = _profile_compiled(params, settings.control_variate)
    L = params.L
    y = np.zeros(5) if y0 is None else np.asarray(y0, float)
    b = 0.0
    out = {"a": [], "F": [], "beta": [], "log_rho": [], "aG": []}
    with jax.enable_x64(True):
        Pj = jnp.asarray(P, jnp.float64)
        for a in a_values:
            p_t = jnp.asarray(float(p_of_aG(a, L)), jnp.float64)
            state = {"b": b}

            def f(yy):
                v, g, bb, _ = fun(
                    jnp.asarray(yy), jnp.asarray(state["b"], jnp.float64), p_t, Pj, draws
                )
                state["b"] = float(bb)
                return float(v), np.asarray(g, np.float64)

            r = so.minimize(
                f,
                y,
                jac=True,
                method="L-BFGS-B",
                bounds=BOUNDS[1:],
                options=dict(maxiter=500, ftol=1e-13, gtol=1e-7),
            )
            y, b = r.x, state["b"]
            _, _, _, pb = fun(jnp.asarray(y), jnp.asarray(b, jnp.float64), p_t, Pj, draws)
            out["a"].append(float(a))
            out["F"].append(float(r.fun))
            out["beta"].append(b)
            out["log_rho"].append(y.tolist())
            out["aG"].append(float(math.sqrt(L) * (L * float(pb) - 1.0) / (L - 1.0)))
    return {k: np.asarray(v) for k, v in out.items()}
