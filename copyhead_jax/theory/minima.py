r"""Every local minimum of the reduced potentials, the theory curves, and full-matrix minimisers.

* :func:`linear_minima` / :func:`softmax_minima`: all local minima of ``V_lin(c1, cG)`` /
  ``V_soft(beta)`` at one ``P`` (dense grid, then Newton; pure JAX, vmappable over ``P`` and every
  scale). The grids cover every minimum whose value is below ``V(G=0)``: since ``Q, D >= 0``, such
  a minimum has ``R(c) <= V(0)``, which bounds ``|r|``, ``|s|``, ``|beta|`` (docs/theory.md §4).
* :func:`theory_curve`: global minimiser, action and all local minima versus ``P`` (float64),
  with each metastable branch continued along ``P``.
* :func:`landscape`: the reduced potential on a grid at a few ``P`` (the two wells).

The full ``L x L`` minimiser :func:`~.full.full_minimum` lives in :mod:`.full` (re-exported here).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice, check_int
from ._common import ATTENTIONS, Scales, sigma_G_lin, x64
from ._solvers import asinh_grid, minima_1d, minima_2d, refine_minima
from .full import full_minimum as full_minimum  # moved to full.py; re-exported
from .params import TheoryParams
from .potentials import (
    J_of,
    ansatz,
    c0_lam,
    invariants,
    keyword_scales,
    lam1_of,
    lin_V,
    q_bracket,
    soft_cost,
    soft_V,
)

N_KEEP = 4  # local-minimum slots returned per P
N_R, N_S = 48, 97  # linear grid in (r, s): r >= 0 (Z2), s symmetric
N_BETA = 513  # softmax grid in beta


# ---------------------------------------------------------------------------------------------
# Linear attention: (r, s) coordinates, r = c1 + cG/sqrt(L) (row sum), s = sqrt(1-1/L) cG.


def to_c(r, s, L):
    """``(c1, cG)`` from the linear coordinates ``(r, s)``."""
    cG = s / jnp.sqrt(1.0 - 1.0 / L)
    return r - cG / jnp.sqrt(L), cG


def _lin_f(P, sc: Scales):
    def f(x):
        c1, cG = to_c(x[0], x[1], sc.L)
        return lin_V(c1, cG, P, sc)

    return f


def _lin_grids(P, sc: Scales, *, n_r: int, n_s: int):
    gam = sigma_G_lin(sc) ** 2
    c0, _ = c0_lam(P, sc)
    V0 = c0 * sc.L  # V_lin(0) = Q(0) (D(0) = 0)
    lam1 = lam1_of(sc)
    r_max = 1.05 * lam1 * jnp.sqrt(2.0 * gam * V0)
    s_max = 1.05 * sc.sigma_p**2 * jnp.sqrt(2.0 * gam * V0)
    # natural amplitudes of the pooled and copying states (large-P balance of Q against R)
    r_nat = (gam * lam1 * sc.chi * sc.L / (sc.sigma_O**2 * sc.V)) ** 0.25
    s_nat = (
        sc.chi * (sc.L - 1.0) * sc.V * gam * sc.sigma_p**4 / (2.0 * sc.sigma_O**2 * sc.sigma_e**2)
    ) ** 0.25
    r_grid = asinh_grid(0.0, r_max, 0.5 * jnp.minimum(r_max, r_nat), n_r)
    s_grid = asinh_grid(-s_max, s_max, 0.5 * jnp.minimum(s_max, s_nat), n_s)
    return r_grid, s_grid


@functools.partial(jax.jit, static_argnames=("n_keep", "n_r", "n_s", "n_iter"))
def lin_minima_core(
    P, sc: Scales, *, n_keep=N_KEEP, n_r=N_R, n_s=N_S, n_iter=30
) -> dict[str, jax.Array]:
    """All local minima of ``V_lin`` at one ``P``: ``c1, cG, value, valid [n_keep]``, ``n_min``."""
    r_grid, s_grid = _lin_grids(P, sc, n_r=n_r, n_s=n_s)
    x, fx, valid, n_min = minima_2d(_lin_f(P, sc), r_grid, s_grid, n_keep=n_keep, n_iter=n_iter)
    c1, cG = to_c(x[:, 0], x[:, 1], sc.L)
    return {"c1": c1, "cG": cG, "value": fx, "valid": valid, "n_min": n_min}


# ---------------------------------------------------------------------------------------------
# Softmax attention: logits beta G*


def _soft_f(P, sc: Scales):
    return lambda x: soft_V(x[0], P, sc)


def _beta_grid(P, sc: Scales, n: int):
    V0 = soft_V(jnp.zeros_like(P), P, sc) - sc.w_J * J_of(0.0, sc.L)
    b_max = 1.05 * jnp.sqrt(jnp.maximum(V0, 0.0) / soft_cost(sc)) + 1.0
    # J <= 0 falls like -L (L-1) beta: its mode sits at beta = O(L sigma_G^2 sigma_p^4)
    b_max = b_max + sc.w_J * (2.0 * sc.L * sc.sigma_G**2 * sc.sigma_p**4 + 2.0 * jnp.log(sc.L))
    return asinh_grid(-b_max, b_max, 2.0, n)


@functools.partial(jax.jit, static_argnames=("n_keep", "n_grid", "n_iter"))
def soft_minima_core(
    P, sc: Scales, *, n_keep=N_KEEP, n_grid=N_BETA, n_iter=40
) -> dict[str, jax.Array]:
    """All local minima of ``V_soft(beta)`` at one ``P`` (``beta, value, valid``, ``n_min``)."""
    beta, fx, valid, n_min = minima_1d(
        lambda b: soft_V(b, P, sc), _beta_grid(P, sc, n_grid), n_keep=n_keep, n_iter=n_iter
    )
    return {"beta": beta, "value": fx, "valid": valid, "n_min": n_min}


# ---------------------------------------------------------------------------------------------
# Public keyword API (pure JAX; vmappable over P and the scales; dtype of the inputs).


def linear_minima(
    P,
    *,
    L,
    V,
    objective: str = "map",
    likelihood: str = "per_position",
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    linear_scale: str = "inv_L",
    n_keep: int = N_KEEP,
    **scales,
) -> dict[str, jax.Array]:
    r"""Every local minimum of ``V_lin(c1, cG)`` at ``P`` (docs/theory.md §4-5), sorted by value.

    Returns ``c1, cG, value, valid`` (``[n_keep]``; slot 0 is the global minimiser, gauge
    ``r >= 0``) and ``n_min``. Pass float64 inputs (or run under ``jax.enable_x64``) for accuracy.
    """
    sc = keyword_scales(
        L, V, scales, likelihood=likelihood, linear_scale=linear_scale, objective=objective,
        chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
    )  # fmt: skip
    return lin_minima_core(jnp.asarray(P, dtype=sc.L.dtype), sc, n_keep=n_keep)


def softmax_minima(
    P,
    *,
    L,
    V,
    objective: str = "map",
    likelihood: str = "per_position",
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    pushforward: bool = False,
    n_keep: int = N_KEEP,
    **scales,
) -> dict[str, jax.Array]:
    r"""Every local minimum of ``V_soft(beta)`` at ``P`` (docs/theory.md §4-5), sorted by value."""
    sc = keyword_scales(
        L, V, scales, likelihood=likelihood, objective=objective, pushforward=pushforward,
        chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
    )  # fmt: skip
    return soft_minima_core(jnp.asarray(P, dtype=sc.L.dtype), sc, n_keep=n_keep)


# ---------------------------------------------------------------------------------------------
# Theory curves


copy_fraction = conv.copy_fraction  # docs/theory.md §5 (one implementation)


@functools.partial(jax.jit, static_argnames=("attention", "n_keep"))
def _curve_minima(P, sc, *, attention, n_keep=N_KEEP):
    """Minima at every ``P`` (sorted 1-d), then continuation of each branch to the neighbours.

    A grid can miss a metastable minimum whose basin is narrow at some ``P``; Newton from the
    minima of ``P[i-1]`` (forward sweep) and ``P[i+1]`` (backward sweep) recovers it. Both sweeps
    run in one scan (one copy of the Newton body in the compiled program).
    """
    if attention == "linear":
        m = jax.vmap(lambda p: lin_minima_core(p, sc, n_keep=n_keep))(P)
        r, _, _ = invariants(m["c1"], m["cG"], sc.L)
        x = jnp.stack([r, jnp.sqrt(1.0 - 1.0 / sc.L) * m["cG"]], axis=-1)
        f_of, z2 = _lin_f, True
    else:
        m = jax.vmap(lambda p: soft_minima_core(p, sc, n_keep=n_keep))(P)
        x = m["beta"][..., None]
        f_of, z2 = _soft_f, False

    n = P.shape[0]
    steps = jnp.concatenate([jnp.arange(n), jnp.arange(n - 1, -1, -1)])  # forward, then back

    def sweep(carry, i):
        x_all, v_all, x_prev, v_prev = carry
        xn, _, vn = refine_minima(
            f_of(P[i], sc),
            jnp.concatenate([x_all[i], x_prev]),
            jnp.concatenate([v_all[i], v_prev]),
            1e-2,
            n_keep=n_keep,
            z2=z2,
        )
        return (x_all.at[i].set(xn), v_all.at[i].set(vn), xn, vn), None

    (x, valid, _, _), _ = jax.lax.scan(sweep, (x, m["valid"], x[0], m["valid"][0]), steps)
    fx = jax.vmap(lambda p, xs: jax.vmap(f_of(p, sc))(xs))(P, x)  # rows sorted by refine_minima
    return x, fx, valid, jnp.maximum(m["n_min"], jnp.sum(valid, axis=-1))


def _mse(c1, cG, P, sc):
    _, lam = c0_lam(P, sc)
    return q_bracket(c1, cG, L=sc.L, V=sc.V, lam=lam, sigma_e=sc.sigma_e, sigma_p=sc.sigma_p)


@x64
def theory_curve(
    params: TheoryParams,
    P_grid,
    attention: str = "linear",
    objective: str = "map",
    *,
    pushforward: bool = False,
    n_keep: int = N_KEEP,
) -> dict[str, Any]:
    r"""Global minimiser, action and every local minimum versus ``P`` (float64, NumPy out).

    Linear: ``c1, cG, r, psi`` (copy fraction), ``action``, ``mse`` (population MSE per sequence
    of the best readout, the bracket of Q), ``n_min`` and ``minima_{c1,cG,value,valid}[P, k]``.
    Softmax: ``beta, aG, a1, p, action, mse, n_min, minima_{beta,aG,value,valid}``. Slot 0 of
    ``minima_*`` is the global minimiser; the others are metastable branches (found on the grid
    at each ``P`` and continued along ``P``).
    """
    check_choice("attention", attention, ATTENTIONS)
    check_int("n_keep", n_keep, lo=1, hi=64)
    P_in = np.atleast_1d(np.asarray(P_grid, dtype=np.float64))
    if P_in.ndim != 1 or not np.all(P_in > 0):
        raise ValueError("P_grid must be a 1-d array of numbers > 0")
    order = np.argsort(P_in)
    sc = params.scales(objective, pushforward)
    # pad to a bucket (32, 64, 128, ...) by repeating the largest P: one compile serves many grids
    n = P_in.size
    bucket = max(32, 1 << (n - 1).bit_length())
    P_pad = np.concatenate([P_in[order], np.full(bucket - n, P_in[order][-1])])
    out = _curve_minima(jnp.asarray(P_pad), sc, attention=attention, n_keep=n_keep)
    undo = np.argsort(order)
    x, fx, valid, n_min = (np.asarray(a)[:n][undo] for a in out)
    P = jnp.asarray(P_in)
    res: dict[str, Any] = {}
    if attention == "linear":
        cG = x[..., 1] / np.sqrt(1.0 - 1.0 / params.L)
        c1 = x[..., 0] - cG / np.sqrt(params.L)
        res.update(
            c1=c1[:, 0],
            cG=cG[:, 0],
            r=x[:, 0, 0],
            psi=np.asarray(copy_fraction(c1[:, 0], cG[:, 0], sc.L)),
            mse=np.asarray(_mse(c1[:, 0], cG[:, 0], P, sc)),
            minima_c1=c1,
            minima_cG=cG,
        )
    else:
        beta = x[..., 0]
        p, a1, aG = (np.asarray(a) for a in ansatz(jnp.asarray(beta), sc.L))
        res.update(
            beta=beta[:, 0],
            aG=aG[:, 0],
            a1=a1[:, 0],
            p=p[:, 0],
            mse=np.asarray(_mse(a1[:, 0], aG[:, 0], P, sc)),
            minima_beta=beta,
            minima_aG=aG,
        )
    res.update(
        action=fx[:, 0],
        n_min=n_min,
        minima_value=fx,
        minima_valid=valid,
        P=P_in,
        attention=attention,
        objective=objective,
        params=params.to_dict(),
    )
    return res


@x64
def landscape(
    params: TheoryParams,
    P_values,
    attention: str = "softmax",
    objective: str = "map",
    *,
    n: int = 161,
    beta_range: tuple[float, float] = (-2.0, 8.0),
    c_range: tuple[float, float] | None = None,
) -> dict[str, Any]:
    r"""The reduced potential on a grid at each of ``P_values``, with its local minima.

    Softmax: ``beta[n]`` and ``V[nP, n]`` (``V_soft(beta) - V_soft(0)``, so the wells compare).
    Linear: ``c1[n], cG[n]`` and ``V[nP, n, n]`` (``V_lin - V_lin(0)``) on ``[-c, c]^2``, ``c`` from
    the minima unless ``c_range`` is given. ``minima`` is :func:`theory_curve` at ``P_values``.
    """
    check_choice("attention", attention, ATTENTIONS)
    P = np.atleast_1d(np.asarray(P_values, dtype=np.float64))
    sc = params.scales(objective)
    curve = theory_curve(params, P, attention, objective)
    out: dict[str, Any] = {"P": P, "attention": attention, "minima": curve}
    if attention == "softmax":
        beta = jnp.linspace(*beta_range, n)
        Vg = jax.vmap(lambda p: soft_V(beta, p, sc) - soft_V(0.0, p, sc))(jnp.asarray(P))
        out.update(beta=np.asarray(beta), V=np.asarray(Vg))
        return out
    if c_range is None:
        ok = curve["minima_valid"]
        c = 1.5 * max(
            np.max(np.abs(curve["minima_c1"][ok]), initial=0.1),
            np.max(np.abs(curve["minima_cG"][ok]), initial=0.1),
        )
        c_range = (-c, c)
    c1 = jnp.linspace(*c_range, n)
    C1, CG = jnp.meshgrid(c1, c1, indexing="ij")
    Vg = jax.vmap(lambda p: lin_V(C1, CG, p, sc) - lin_V(0.0, 0.0, p, sc))(jnp.asarray(P))
    out.update(c1=np.asarray(c1), cG=np.asarray(c1), V=np.asarray(Vg))
    return out


__all__ = [
    "copy_fraction",
    "full_minimum",
    "landscape",
    "linear_minima",
    "softmax_minima",
    "theory_curve",
]
