"""Measured ``P*`` on branch runs (docs/theory.md §5's definitions, applied by :mod:`.locate`).

A *runs* argument is any object with ``P`` (sorted measured sizes), ``masked(key, P=None)``
(``[nP, n_seeds]`` floats, NaN where a run diverged) and ``cfg`` (the engine config), e.g.
:class:`copyhead_jax.sweep.refine.Runs`; nothing here runs or reads a sweep.

* ``P_c1`` (:func:`onset`): onset of the row sum ``r`` of linear attention (second order).
* ``P_cG`` (:func:`copy_crossover`): ``argmax dpsi/dlog P`` of the copy fraction above the onset.
* ``P_aG`` (:func:`u_crossing`): where ``U`` of the pooling-branch start (zero logits) and of
  the copy-branch start cross, at the ``P`` where the two stayed distinct (the one crossing
  rule, :func:`.root.crossing`, through :func:`.locate.locate_crossing`).
* :func:`single_jump`: the jump of ``a_G`` of the pooling start alone (an upper spinodal).
* :func:`copy_fallback`, :func:`window_top`: the edges of the measured coexistence window.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any

import numpy as np

from . import locate as loc
from .pstar import AT_ORIGIN, ONSET_TOL

__all__ = ["AT_ORIGIN", "ONSET_TOL"]

KEYS = ("P_c1", "P_cG", "P_aG")
#: the single-start jump of the pooling branch, measured against the theory's upper spinodal
SINGLE = "P_aG_single"
#: the theory's point each measured one is compared with
THEORY_KEY = {"P_c1": "P_c1", "P_cG": "P_cG", "P_aG": "P_aG", SINGLE: "spinodal_hi"}


@contextlib.contextmanager
def quiet_nan():
    """Ignore NumPy's all-NaN / empty-slice warnings (diverged or absent runs are NaN)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def common_P(a, b) -> np.ndarray:
    return np.intersect1d(a.P, b.P)


def distinct_branches(pool, copy, P) -> np.ndarray:
    """``[nP, n_seeds]``: the copy start kept a larger ``a_G`` than the pooling start, by at least
    half the largest such gap seen (and at least ``0.1 sqrt(L)``)."""
    gap = copy.masked("cG", P) - pool.masked("cG", P)
    if not np.isfinite(gap).any():
        return np.zeros(gap.shape, bool)
    thr = max(0.5 * np.nanmax(gap), 0.1 * math.sqrt(pool.cfg.task.L))
    return np.nan_to_num(gap, nan=-np.inf) > thr


def branch_gap(pool, copy) -> dict[str, np.ndarray]:
    """At the ``P`` both starts ran: the seed mean of ``(U_pool - U_copy) / P`` (``dU_per_seq``)
    and the fraction of seeds whose starts stayed on distinct branches (``distinct``)."""
    P = common_P(pool, copy)
    with quiet_nan():
        dU = np.nanmean((pool.masked("U", P) - copy.masked("U", P)) / P[:, None], 1)
    return {"P": P, "dU_per_seq": dU, "distinct": distinct_branches(pool, copy, P).mean(1)}


def combine_seeds(kind: str, per: list[loc.Located]) -> loc.Located:
    """One ``Located`` from per-seed ones: the bracketed seeds' ``P*`` averaged in ``log P``, their
    brackets joined; unbracketed if no seed is (with the common side, if any)."""
    ok = [x for x in per if x.bracketed and x.P_star is not None]
    detail = {"per_seed": [x.to_dict() for x in per], "n_bracketed": len(ok)}
    if not ok:
        sides = {x.side for x in per}
        side = sides.pop() if len(sides) == 1 else None
        edge = per[0].detail.get("edge") if side else None
        return loc.Located(
            kind, None, None, False, side, {**detail, "edge": edge, "reason": "no seed bracketed"}
        )
    P_star = float(np.exp(np.mean([np.log(x.P_star) for x in ok])))
    bracket = (min(x.bracket[0] for x in ok), max(x.bracket[1] for x in ok))
    return loc.Located(kind, P_star, bracket, True, None, detail)


def _too_few(kind: str) -> loc.Located:
    return loc.Located(kind, None, None, False, None, {"reason": "< 2 common P"})


def u_crossing(pool, copy) -> loc.Located:
    """``P*_aG``: per seed, where ``U`` of the pooling and copy starts cross (only at the ``P``
    where that seed's two runs stayed distinct), combined by :func:`combine_seeds`."""
    P = common_P(pool, copy)
    if P.size < 2:
        return _too_few("crossing")
    dist = distinct_branches(pool, copy, P)
    Up, Uc = pool.masked("U", P), copy.masked("U", P)
    per = [loc.locate_crossing(P, Up[:, s], Uc[:, s], valid=dist[:, s]) for s in range(Up.shape[1])]
    return combine_seeds("crossing", per)


def window_interior(pool, copy) -> loc.Located:
    """The ``P`` range from the grid point below the first to the one above the last ``P`` where
    any seed's two starts stayed distinct: refining it puts runs inside every seed's window."""
    P = common_P(pool, copy)
    if P.size < 2:
        return _too_few("window")
    idx = np.flatnonzero(distinct_branches(pool, copy, P).any(axis=1))
    if idx.size == 0:
        return loc.Located("window", None, None, False, None, {"reason": "never distinct"})
    lo, hi = P[max(idx[0] - 1, 0)], P[min(idx[-1] + 1, P.size - 1)]
    return loc.Located("window", float(np.sqrt(lo * hi)), (float(lo), float(hi)), True)


def _window_edge(pool, copy, direction: int) -> loc.Located:
    """Per seed, the step of "the two starts are distinct" (up: lower edge, down: upper edge)."""
    P = common_P(pool, copy)
    if P.size < 2:
        return _too_few("jump")
    dist = distinct_branches(pool, copy, P).astype(float)
    edge = 0 if direction == 1 else -1
    per = []
    for s in range(dist.shape[1]):
        d = dist[:, s]
        if d.max() <= 0:
            per.append(loc.Located("jump", None, None, False, None, {"reason": "never distinct"}))
        elif d[edge] > 0:  # distinct at the edge of the grid: the window extends beyond it
            side = "below" if direction == 1 else "above"
            per.append(loc.Located("jump", None, None, False, side, {"edge": float(P[edge])}))
        else:
            per.append(loc.locate_jump(P, d, direction=direction))
    return combine_seeds("jump", per)


def copy_fallback(pool, copy) -> loc.Located:
    """Lower edge of the measured coexistence window: the smallest ``P`` from which the copy
    start stays on the copy branch (the fraction of seeds with distinct branches jumps up)."""
    return _window_edge(pool, copy, 1)


def window_top(pool, copy) -> loc.Located:
    """Upper edge of the measured coexistence window: beyond it the pooling start has jumped to
    the copy branch (the fraction of seeds with distinct branches drops)."""
    return _window_edge(pool, copy, -1)


def coexistence(pool, copy) -> dict[str, Any]:
    """The measured softmax coexistence window: the ``P`` where the two starts stayed distinct
    (:func:`distinct_branches`), its edges per seed, and the largest ``c_G`` gap seen."""
    P = common_P(pool, copy)
    if P.size == 0:
        return {"P": [], "distinct_fraction": [], "max_gap": None, "seen": False}
    dist = distinct_branches(pool, copy, P)
    gap = copy.masked("cG", P) - pool.masked("cG", P)
    g = float(np.nanmax(gap)) if np.isfinite(gap).any() else None
    edge = lambda x: None if x.P_star is None else x.P_star
    return {
        "P": [int(p) for p in P],
        "distinct_fraction": [float(f) for f in dist.mean(axis=1)],
        "max_gap": g,
        "seen": bool(dist.any()),
        "lower": edge(copy_fallback(pool, copy)),
        "upper": edge(window_top(pool, copy)),
    }


def linear_psi(lin) -> np.ndarray:
    """The copy fraction psi ``[nP, n_seeds]`` of linear runs, 0 where the fit sits at G = 0
    (no attention: nothing copies)."""
    at0 = (np.abs(lin.masked("r")) < AT_ORIGIN) & (np.abs(lin.masked("cG")) < AT_ORIGIN)
    return np.where(at0, 0.0, lin.masked("psi"))


def onset(lin) -> loc.Located:
    """Onset of the row sum ``r`` of linear attention (``P*_c1``), located on the ``P`` before
    copying sets in (seed-mean ``psi < 1/2``): at larger ``L`` ``r`` falls back to ~0 between the
    pooling and the copy regimes, and the onset locator (the last rise of ``r`` that lasts to
    the end of the grid) would otherwise find that rise."""
    r = lin.masked("r")
    with quiet_nan():
        scale = float(np.nanmax(np.abs(np.nanmean(r, axis=1))))
        pre = np.nanmean(linear_psi(lin), axis=1) < 0.5
    if not np.isfinite(scale) or scale <= 0:
        return loc.Located("onset", None, None, False, None, {"reason": "r = 0 everywhere"})
    keep = np.arange(pre.size) < (np.argmin(pre) if not pre.all() else pre.size)
    if keep.sum() < 2:
        keep[:] = True
    return loc.locate_onset(lin.P[keep], r[keep], tol=ONSET_TOL * scale)


def copy_crossover(lin) -> loc.Located:
    """``P*_cG``: ``argmax dpsi/dlog P`` over the ``P`` above the located pooling onset (below
    it ``r ~ 0`` and psi is a ratio of noise, whose jumps between sparse grid points can
    outgrow the crossover's slope)."""
    P, psi = lin.P, linear_psi(lin)
    c1 = onset(lin)
    if c1.bracketed and (P > c1.bracket[1]).sum() >= 3:
        keep = P > c1.bracket[1]
        P, psi = P[keep], psi[keep]
    return loc.locate_max_slope(P, psi)


def single_jump(pool) -> loc.Located:
    """The jump of ``a_G`` of the pooling-branch starts alone, per seed (seeds have their own
    data, so their jumps differ); a step below 10% of the full scale ``sqrt(L)`` of ``a_G`` is
    noise, not a copy transition."""
    jmin = 0.1 * math.sqrt(pool.cfg.task.L)
    aG = pool.masked("cG")
    per = [loc.locate_jump(pool.P, aG[:, s], min_jump=jmin) for s in range(aG.shape[1])]
    out = combine_seeds("jump", per)
    if out.bracketed:
        ok = [x for x in per if x.bracketed]
        out.detail["jump"] = float(np.mean([x.detail["jump"] for x in ok]))
        out.detail["sharpness"] = float(np.mean([x.detail["sharpness"] for x in ok]))
    return out


def linear_hysteresis_gap(lin, lin_copy) -> dict[str, Any] | None:
    """Linear attention from the prior and from the copy pattern: the gap in ``cG`` per ``P``.

    The linear potential is Z2-symmetric and, in the copying regime, also has a metastable
    anti-copy minimum (``cG < 0`` at ``r > 0``); a prior start that lands there is counted
    separately, so ``max_abs_dcG_same_branch`` measures hysteresis of the copy transition itself.
    """
    if lin_copy is None:
        return None
    P = common_P(lin, lin_copy)
    if P.size == 0:
        return None
    a, b = lin.masked("cG", P), lin_copy.masked("cG", P)
    d = np.abs(a - b)
    anti = (a < 0) & (b > 0)
    dU = (lin.masked("U", P) - lin_copy.masked("U", P)) / P[:, None]
    with quiet_nan():
        same = np.where(anti, np.nan, d)
        return {
            "P": P,
            "max_abs_dcG": float(np.nanmax(d)),
            "max_abs_dcG_same_branch": float(np.nanmax(same)) if np.isfinite(same).any() else None,
            "anti_copy_landings": [[int(i), int(s)] for i, s in zip(*np.nonzero(anti))],
            "dcG": np.nanmean(d, 1),
            "dU_per_seq": np.nanmean(dU, 1),
        }
