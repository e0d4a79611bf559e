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
from ._common import OBJECTIVES, x64
from ._solvers import refine_minima
from .full import full_minimum as full_minimum  # moved to full.py; re-exported
from .heads import N_KEEP, LinearTheory, SoftmaxTheory, theory_of
from .params import TheoryParams
from .potentials import c0_lam, q_bracket

# ---------------------------------------------------------------------------------------------
# Public keyword API (pure JAX; vmappable over P and the scales; dtype of the inputs).


@functools.partial(jax.jit, static_argnames=("kind", "objective", "pushforward", "n_keep", "names"))
def _named_minima(kind, P, p, objective, pushforward, n_keep, names):
    x, fx, valid, n_min = kind.minima(
        P, p, objective=objective, pushforward=pushforward, n_keep=n_keep
    )
    named = kind.named(x, p.L)
    return {**{k: named[k] for k in names}, "value": fx, "valid": valid, "n_min": n_min}


def _record(P, params: TheoryParams):
    """``P`` and ``params`` as arrays of ``P``'s float dtype (a record of arrays passes)."""
    P = jnp.asarray(P, dtype=jnp.result_type(P, float))
    return P, (params if not isinstance(params.likelihood, str) else params.arrays(P.dtype))


def linear_minima(
    P, *, params: TheoryParams, objective: str = "map", n_keep: int = N_KEEP
) -> dict[str, jax.Array]:
    r"""Every local minimum of ``V_lin(c1, cG)`` at ``P`` (docs/theory.md §4-5), sorted by value.

    Returns ``c1, cG, value, valid`` (``[n_keep]``; slot 0 is the global minimiser, gauge
    ``r >= 0``) and ``n_min``. Pass float64 ``P`` (or run under ``jax.enable_x64``) for accuracy.
    """
    P, p = _record(P, params)
    return _named_minima(LinearTheory, P, p, objective, False, n_keep, ("c1", "cG"))


def softmax_minima(
    P,
    *,
    params: TheoryParams,
    objective: str = "map",
    pushforward: bool = False,
    n_keep: int = N_KEEP,
) -> dict[str, jax.Array]:
    r"""Every local minimum of ``V_soft(beta)`` at ``P`` (docs/theory.md §4-5), sorted by value."""
    P, p = _record(P, params)
    return _named_minima(SoftmaxTheory, P, p, objective, pushforward, n_keep, ("beta",))


# ---------------------------------------------------------------------------------------------
# Theory curves


copy_fraction = conv.copy_fraction  # docs/theory.md §5 (one implementation)


@functools.partial(jax.jit, static_argnames=("kind", "objective", "pushforward", "n_keep"))
def curve_minima(P, p, *, kind, objective, pushforward, n_keep=N_KEEP):
    """Minima at every ``P`` (sorted 1-d), then continuation of each branch to the neighbours.

    A grid can miss a metastable minimum whose basin is narrow at some ``P``; Newton from the
    minima of ``P[i-1]`` (forward sweep) and ``P[i+1]`` (backward sweep) recovers it. Both sweeps
    run in one scan (one copy of the Newton body in the compiled program).
    """
    how = dict(objective=objective, pushforward=pushforward)
    x, _, valid0, n_min = jax.vmap(lambda q: kind.minima(q, p, n_keep=n_keep, **how))(P)

    def f_of(q):
        return lambda z: kind.potential(z, q, p, **how)

    n = P.shape[0]
    steps = jnp.concatenate([jnp.arange(n), jnp.arange(n - 1, -1, -1)])  # forward, then back

    def sweep(carry, i):
        x_all, v_all, x_prev, v_prev = carry
        xn, _, vn = refine_minima(
            f_of(P[i]),
            jnp.concatenate([x_all[i], x_prev]),
            jnp.concatenate([v_all[i], v_prev]),
            1e-2,
            n_keep=n_keep,
            z2=kind.gauge_fix,
        )
        return (x_all.at[i].set(xn), v_all.at[i].set(vn), xn, vn), None

    (x, valid, _, _), _ = jax.lax.scan(sweep, (x, valid0, x[0], valid0[0]), steps)
    fx = jax.vmap(lambda p, xs: jax.vmap(f_of(p))(xs))(P, x)  # rows sorted by refine_minima
    return x, fx, valid, jnp.maximum(n_min, jnp.sum(valid, axis=-1))


def _mse(c1, cG, P, p):
    _, lam = c0_lam(P, p)
    return q_bracket(c1, cG, L=p.L, V=p.V, lam=lam, sigma_e=p.sigma_e, sigma_p=p.sigma_p)


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
    kind = theory_of(attention)
    check_int("n_keep", n_keep, lo=1, hi=64)
    P_in = np.atleast_1d(np.asarray(P_grid, dtype=np.float64))
    if P_in.ndim != 1 or not np.all(np.isfinite(P_in) & (P_in > 0)):
        raise ValueError(f"P_grid must be a 1-d array of finite numbers > 0, got {P_grid!r}")
    order = np.argsort(P_in)
    check_choice("objective", objective, OBJECTIVES)
    pa = params.arrays()
    # pad to a bucket (32, 64, 128, ...) by repeating the largest P: one compile serves many grids
    n = P_in.size
    bucket = max(32, 1 << (n - 1).bit_length())
    P_pad = np.concatenate([P_in[order], np.full(bucket - n, P_in[order][-1])])
    out = curve_minima(
        jnp.asarray(P_pad),
        pa,
        kind=kind,
        objective=objective,
        pushforward=bool(pushforward),
        n_keep=n_keep,
    )
    undo = np.argsort(order)
    x, fx, valid, n_min = (np.asarray(a)[:n][undo] for a in out)
    named = {k: np.asarray(v) for k, v in kind.named(jnp.asarray(x), pa.L).items()}
    c1, cG = (np.asarray(c)[:, 0] for c in kind.span(jnp.asarray(x), pa.L))
    res: dict[str, Any] = {k: named[k][:, 0] for k in kind.fields}
    res.update({f"minima_{k}": named[k] for k in kind.minima_fields})
    res.update(
        mse=np.asarray(_mse(c1, cG, jnp.asarray(P_in), pa)),
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


#: Peak bytes of one P's minima in :func:`theory_curve`'s compiled program: XLA's buffer
#: assignment of ``curve_minima`` at 32, 64 and 128 P (L = 8) holds linear 120.4 kB,
#: softmax 74.2 kB, sigmoid 215.3 kB per P (the same at each size: the grids are fixed, and no
#: array has a length L or V); here rounded up by ~20%.
CURVE_BYTES_PER_P = {"linear": 145_000, "softmax": 90_000, "sigmoid": 260_000}
#: Arrays of the landscape's grid ``[n_P, n^d]`` alive at once: it is evaluated op by op (eager
#: vmap), each elementwise op of the potential a full float64 array (compiled, XLA fuses the
#: potential into one such array: 8.0 bytes per grid point at 8 P; eager, a few live at once).
LANDSCAPE_LIVE = 8


def curve_bytes(n_P: int, attention: str) -> int:
    """Peak bytes of :func:`theory_curve` over ``n_P`` values of ``P``: the minima of every
    ``P`` at once, padded to its bucket (:data:`CURVE_BYTES_PER_P`)."""
    bucket = max(32, 1 << (max(int(n_P), 1) - 1).bit_length())
    return CURVE_BYTES_PER_P[theory_of(attention).name] * bucket


def landscape_bytes(n_P: int, attention: str, n: int = 161) -> int:
    """Peak bytes of :func:`landscape` at ``n_P`` values of ``P``: its curve, or the potential on
    the ``n`` (one coordinate) or ``n x n`` grid at every ``P`` (:data:`LANDSCAPE_LIVE` arrays)."""
    grid = 8 * int(n_P) * n ** min(len(theory_of(attention).coords), 2)
    return max(curve_bytes(n_P, attention), LANDSCAPE_LIVE * grid)


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
    kind = theory_of(attention)
    P = np.atleast_1d(np.asarray(P_values, dtype=np.float64))
    check_choice("objective", objective, OBJECTIVES)
    pa = params.arrays()
    curve = theory_curve(params, P, attention, objective)
    out: dict[str, Any] = {"P": P, "attention": attention, "minima": curve}
    if len(kind.coords) == 1:
        beta = jnp.linspace(*beta_range, n)[:, None]
        Vg = jax.vmap(
            lambda q: (
                kind.potential(beta, q, pa, objective)
                - kind.potential(0.0 * beta[0], q, pa, objective)
            )
        )(jnp.asarray(P))
        out.update({kind.coords[0]: np.asarray(beta[:, 0]), "V": np.asarray(Vg)})
        return out
    if len(kind.coords) != 2:
        raise ValueError(f"no landscape for a {len(kind.coords)}-parameter ansatz")
    names = kind.landscape_axes
    if c_range is None:
        ok = curve["minima_valid"]
        c = 1.5 * max(np.max(np.abs(curve[f"minima_{k}"][ok]), initial=0.1) for k in names)
        c_range = (-c, c)
    c1 = jnp.linspace(*c_range, n)
    C1, CG = jnp.meshgrid(c1, c1, indexing="ij")
    x = kind.from_axes(C1, CG, pa.L)
    x0 = jnp.zeros(2, x.dtype)
    Vg = jax.vmap(
        lambda q: kind.potential(x, q, pa, objective) - kind.potential(x0, q, pa, objective)
    )(jnp.asarray(P))
    out.update({names[0]: np.asarray(c1), names[1]: np.asarray(c1), "V": np.asarray(Vg)})
    return out


__all__ = [
    "copy_fraction",
    "curve_bytes",
    "full_minimum",
    "landscape",
    "landscape_bytes",
    "linear_minima",
    "softmax_minima",
    "theory_curve",
]
