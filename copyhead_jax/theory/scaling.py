r"""Scaling of the transition points with ``L`` and ``V``, power-law fits, phase diagrams (§5).

* :func:`scaling_table`: every ``P*`` on a grid of ``L`` (and/or ``V``), one batched call.
* :func:`fit_power_law`: least squares ``log y = a + k log x``, with a Student-t confidence
  interval on ``k`` and ``R^2``.
* :func:`fit_law`: the one-parameter fit ``y = C f(L, V)`` of a fixed law (the paper's ``V^2``,
  ``L^{3/2} V^{1/2}``, ``L ln^2 L``), with ``R^2`` in log space.
* :func:`scaling_fits`: both fits for every ``P*`` of a table.
* :func:`phase_diagram`: the global minimiser on an ``(L, P)`` or ``(V, P)`` grid (vmapped).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc

from .._checks import check_choice
from ._common import OBJECTIVES, x64
from .heads import theory_of
from .params import TheoryParams
from .points import points_batch

#: The paper's laws (docs/theory.md §2b, §5), as functions of ``(L, V)``; written only here (the
#: theory fits need them), and published with the paper's numbers as
#: ``copyhead_jax.compare.paper.PAPER_LAWS``.
PAPER_LAWS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "P_c1": ("V^2", lambda L, V: V**2.0),
    "P_cG": ("L^{3/2} V^{1/2}", lambda L, V: L**1.5 * V**0.5),
    "P_aG": ("L ln^2 L", lambda L, V: L * np.log(L) ** 2),
}
POINT_KEYS = ("P_c1", "P_cG", "P_cG_half", "P_aG")


@functools.lru_cache(maxsize=256)
def t_quantile(q: float, dof: int) -> float:
    """Student-t quantile by bisection on the CDF ``1 - I_{dof/(dof+t^2)}(dof/2, 1/2)/2``."""
    with jax.enable_x64(True):
        lo, hi = 0.0, 1e3
        for _ in range(64):  # 1e3 / 2^64: far below float64 resolution of t
            t = 0.5 * (lo + hi)
            cdf = 1.0 - 0.5 * float(betainc(dof / 2.0, 0.5, dof / (dof + t * t)))
            lo, hi = (t, hi) if cdf < q else (lo, t)
        return 0.5 * (lo + hi)


def fit_power_law(x, y, *, level: float = 0.95) -> dict[str, Any]:
    r"""Fit ``log y = log C + k log x`` by least squares.

    Returns ``exponent`` k, its ``ci`` (Student-t, ``level``), ``stderr``, ``prefactor`` C,
    ``r2`` and ``n``; non-finite points are dropped. Fewer than 3 points: ``exponent`` only.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    lx, ly = np.log(x[ok]), np.log(y[ok])
    n = int(ok.sum())
    out: dict[str, Any] = {"n": n, "exponent": None, "ci": None, "stderr": None, "r2": None}
    if n < 2 or np.ptp(lx) == 0:
        return out
    X = np.stack([np.ones_like(lx), lx], axis=1)
    coef, *_ = np.linalg.lstsq(X, ly, rcond=None)
    res = ly - X @ coef
    ss_tot = np.sum((ly - ly.mean()) ** 2)
    out.update(
        exponent=float(coef[1]),
        prefactor=float(np.exp(coef[0])),
        r2=float(1.0 - np.sum(res**2) / ss_tot) if ss_tot > 0 else 1.0,
    )
    if n >= 3:
        s2 = np.sum(res**2) / (n - 2)
        se = float(np.sqrt(s2 / np.sum((lx - lx.mean()) ** 2)))
        h = t_quantile(0.5 + level / 2.0, n - 2) * se
        out.update(stderr=se, ci=[float(coef[1] - h), float(coef[1] + h)])
    return out


def fit_law(y, law_values) -> dict[str, Any]:
    r"""Fit ``y = C f`` (one free constant) in log space: ``C``, ``R^2``, the largest ratio error.

    ``R^2 = 1 - SS_res/SS_tot`` of ``log y``; it is negative when the law's shape is worse than a
    constant.
    """
    y, f = np.asarray(y, float), np.asarray(law_values, float)
    ok = np.isfinite(y) & np.isfinite(f) & (y > 0) & (f > 0)
    ly, lf = np.log(y[ok]), np.log(f[ok])
    if ok.sum() < 2:
        return {"prefactor": None, "r2": None, "max_ratio_error": None, "n": int(ok.sum())}
    logC = np.mean(ly - lf)
    res = ly - lf - logC
    ss_tot = np.sum((ly - ly.mean()) ** 2)
    return {
        "prefactor": float(np.exp(logC)),
        "r2": float(1.0 - np.sum(res**2) / ss_tot) if ss_tot > 0 else None,
        "max_ratio_error": float(np.exp(np.max(np.abs(res))) - 1.0),
        "n": int(ok.sum()),
    }


def _axis_values(values, default: int) -> np.ndarray:
    return np.atleast_1d(np.asarray(default if values is None else values, dtype=int))


def scaling_table(
    params: TheoryParams,
    *,
    L_values: Sequence[int] | None = None,
    V_values: Sequence[int] | None = None,
    attention: str = "both",
    objective: str = "map",
) -> dict[str, Any]:
    """Every ``P*`` on the grid ``L_values x V_values`` (other fields from ``params``).

    Returns ``L``, ``V`` (1-d) and, for each key of :func:`points_batch`, an array ``[nL, nV]``.
    """
    Ls, Vs = _axis_values(L_values, params.L), _axis_values(V_values, params.V)
    plist = [params.replace(L=int(L), V=int(V)) for L in Ls for V in Vs]
    b = points_batch(plist, attention, objective)
    table: dict[str, Any] = {k: v.reshape(len(Ls), len(Vs)) for k, v in b.items()}
    table.update(L=Ls, V=Vs, attention=attention, objective=objective, params=params.to_dict())
    table["not_found"] = not_found_counts(table)
    table["n_not_found"] = sum(table["not_found"].values())
    return table


def not_found_counts(table: dict[str, Any]) -> dict[str, int]:
    """Per point, the grid entries whose search found nothing inside its scan (NaN; a NaN
    ``P_aG`` or spinodal where the transition is not first order is no such entry)."""
    out = {}
    for k in ("P_cG", "P_cG_half", "P_aG_crossover"):
        if k in table:
            out[k] = int(np.sum(~np.isfinite(np.asarray(table[k], float))))
    if "first_order" in table:
        first = np.asarray(table["first_order"], bool)
        for k in ("spinodal_lo", "spinodal_hi"):
            if k in table:
                out[k] = int(np.sum(first & ~np.isfinite(np.asarray(table[k], float))))
    return out


def scaling_fits(table: dict[str, Any], *, level: float = 0.95) -> dict[str, Any]:
    """Free power-law exponents in ``L`` (each ``V``) and ``V`` (each ``L``), and the paper's laws.

    ``fits[key]['L'][j]`` fits ``P*`` against ``L`` at ``V[j]``; ``fits[key]['V'][i]`` against
    ``V`` at ``L[i]``; ``fits[key]['law']`` fits the paper's law over the whole table; for
    ``P_aG`` also the exponent of ``P*/ln^2 L`` in ``L``.
    """
    Ls, Vs = np.asarray(table["L"], float), np.asarray(table["V"], float)
    LL, VV = np.meshgrid(Ls, Vs, indexing="ij")
    out: dict[str, Any] = {}
    for key in POINT_KEYS:
        if key not in table:
            continue
        y = np.asarray(table[key], float)
        fits: dict[str, Any] = {}
        if len(Ls) > 1:
            fits["L"] = [fit_power_law(Ls, y[:, j], level=level) for j in range(len(Vs))]
        if len(Vs) > 1:
            fits["V"] = [fit_power_law(Vs, y[i, :], level=level) for i in range(len(Ls))]
        law = PAPER_LAWS.get("P_cG" if key == "P_cG_half" else key)
        if law is not None:
            fits["law"] = {"law": law[0], **fit_law(y, law[1](LL, VV))}
        if key == "P_aG" and len(Ls) > 1:
            fits["L_over_ln2L"] = [
                fit_power_law(Ls, y[:, j] / np.log(Ls) ** 2, level=level) for j in range(len(Vs))
            ]
        out[key] = fits
    return out


@functools.partial(jax.jit, static_argnames=("kind", "objective"))
def _phase_kernel(P, p: TheoryParams, *, kind, objective):
    """Global minimiser on ``P[nP]`` for a parameter record with leaves ``[B]``."""

    def one(q, s):
        x, _, _, n_min = kind.minima(q, s, objective=objective, n_keep=3, coarse=True)
        return {**kind.named(x[0], s.L), "n_min": n_min}

    return jax.vmap(lambda s: jax.vmap(lambda q: one(q, s))(P))(p)


@x64
def phase_diagram(
    params: TheoryParams,
    P_values,
    *,
    L_values: Sequence[int] | None = None,
    V_values: Sequence[int] | None = None,
    attention: str = "linear",
    objective: str = "map",
) -> dict[str, Any]:
    r"""Global minimiser on an ``(L, P)`` grid (``L_values``) or ``(V, P)`` grid (``V_values``).

    The theory class's ``fields`` ``[n_axis, nP]`` (linear: ``c1, cG, r, psi``; softmax:
    ``beta, aG, a1, p``) and ``n_min``.
    """
    kind = theory_of(attention)
    if (L_values is None) == (V_values is None):
        raise ValueError("phase_diagram needs exactly one of L_values, V_values")
    axis, values = ("L", L_values) if V_values is None else ("V", V_values)
    vals = np.atleast_1d(np.asarray(values, dtype=int))
    plist = [params.replace(**{axis: int(v)}) for v in vals]
    check_choice("objective", objective, OBJECTIVES)
    P = np.asarray(P_values, dtype=np.float64)
    out = _phase_kernel(jnp.asarray(P), TheoryParams.stack(plist), kind=kind, objective=objective)
    res = {k: np.asarray(v) for k, v in out.items()}
    res.update(P=P, axis=axis, values=vals, attention=attention, params=params.to_dict())
    return res


__all__ = [
    "PAPER_LAWS",
    "fit_law",
    "fit_power_law",
    "phase_diagram",
    "scaling_fits",
    "scaling_table",
]
