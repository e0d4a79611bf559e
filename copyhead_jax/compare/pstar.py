r"""Measured ``P*`` of a phase diagram beside the EK theory's and the paper's (``copyhead sweep``).

Per seed (its own embeddings and training set), each ``P*`` is located on the sweep's grid by the
definitions of docs/theory.md §5 (:mod:`.locate`); the seeds' values are averaged in ``log P``
with a 95% bootstrap interval over seeds (:func:`.stats.bootstrap_ci`).

* ``P_c1`` (linear): onset of the row sum ``r`` (pooling), on the ``P`` before copying sets in.
* ``P_cG`` (linear): ``argmax dpsi/dlog P`` of the copy fraction above that onset.
* ``P_aG`` (softmax): where ``U`` of the pooling-branch start (zero logits) and of the copy-branch
  start cross, at the ``P`` where the two stayed distinct (a first-order transition: one start
  alone jumps at a spinodal, not at ``P*``).
* ``P_aG_jump`` (softmax, only where no seed's crossing is bracketed, i.e. the grid resolves no
  coexistence window wider than one step): the largest step of ``aG`` between neighbouring ``P``
  of the pooling start, the transition itself to within the grid's step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import locate as loc
from .paper import PAPER_MEASURED
from .stats import bootstrap_ci

ONSET_TOL = 0.02  # r below 2% of its largest seed-mean value counts as zero (no pooling)
AT_ORIGIN = 1e-6  # |r|, |cG| below this: the exact MAP sits at G = 0 (float64 residue ~1e-10)

LABELS = {
    "P_c1": "linear pooling onset P*_c1",
    "P_cG": "linear copy crossover P*_cG",
    "P_aG": "softmax copy transition P*_aG",
    "P_aG_jump": "softmax jump, one minimum per P",
}


def _arr(res, key: str) -> np.ndarray:
    """``[nP, n_seeds]`` float, NaN where a run is not ok."""
    return np.where(res.ok, np.asarray(res[key], float), np.nan)


def _psi(res) -> np.ndarray:
    """Copy fraction, 0 where the fit sits at ``G = 0`` (nothing copies)."""
    at0 = (np.abs(_arr(res, "r")) < AT_ORIGIN) & (np.abs(_arr(res, "cG")) < AT_ORIGIN)
    return np.where(at0, 0.0, _arr(res, "psi"))


def _onset(P, r, psi) -> loc.Located:
    scale = np.nanmax(np.abs(r)) if np.isfinite(r).any() else 0.0
    if scale <= 0:
        return loc.Located("onset", None, None, False, None, {"reason": "r = 0 everywhere"})
    pre = ~(psi >= 0.5)  # before copying sets in (NaN counts as before)
    keep = np.arange(P.size) < (np.argmin(pre) if not pre.all() else P.size)
    if keep.sum() < 2:
        keep[:] = True
    return loc.locate_onset(P[keep], r[keep], tol=ONSET_TOL * scale)


def linear_points(res) -> dict[str, list[loc.Located]]:
    """Per-seed ``P_c1`` and ``P_cG`` of a linear sweep."""
    P, r, psi = np.asarray(res.P, float), _arr(res, "r"), _psi(res)
    out: dict[str, list[loc.Located]] = {"P_c1": [], "P_cG": []}
    for s in range(r.shape[1]):
        c1 = _onset(P, r[:, s], psi[:, s])
        keep = P > c1.bracket[1] if c1.bracketed else np.ones(P.size, bool)
        if keep.sum() < 3:
            keep[:] = True
        cG = loc.locate_max_slope(P[keep], psi[keep, s])
        out["P_c1"].append(c1)
        out["P_cG"].append(cG)
    return out


def softmax_points(pool, copy) -> dict[str, list[loc.Located]]:
    """Per-seed ``P_aG``: the ``U`` crossing of the pooling-branch and copy-branch sweeps; where
    no seed's crossing is bracketed, also ``P_aG_jump``, the step of the pooling start's ``aG``."""
    P = np.intersect1d(pool.P, copy.P)
    ip, ic = (np.searchsorted(r.P, P) for r in (pool, copy))
    aGp, aGc = _arr(pool, "cG")[ip], _arr(copy, "cG")[ic]
    Up, Uc = _arr(pool, "U")[ip], _arr(copy, "U")[ic]
    gap = aGc - aGp
    g_max = np.nanmax(gap) if np.isfinite(gap).any() else 0.0
    thr = max(0.5 * g_max, 0.1 * math.sqrt(pool.config.task.L))
    distinct = np.nan_to_num(gap, nan=-np.inf) > thr  # the two starts stayed on their branches
    per = [loc.locate_crossing(P, Up[:, s], Uc[:, s], valid=distinct[:, s])
           for s in range(Up.shape[1])]  # fmt: skip
    if any(x.bracketed for x in per):
        return {"P_aG": per}
    jumps = [loc.locate_jump(P, aGp[:, s], min_jump=thr) for s in range(aGp.shape[1])]
    return {"P_aG": per, "P_aG_jump": jumps}


class _Arrays:
    """Order-parameter arrays ``[nP, n_seeds]`` as the locators read a sweep (``P``, ``ok``)."""

    def __init__(self, P, d):
        self.P, self._d = np.asarray(P), d
        self.ok = (d["converged"] > 0) & np.isfinite(d["U"])

    def __getitem__(self, k):
        return self._d[k]


def seeds_summary(per_seed: list[loc.Located]) -> dict[str, Any]:
    """Seeds' geometric mean with its bootstrap interval, the grid bracket, per-seed values and
    on which side of the grid the unlocated seeds' feature lies."""
    ok = [x for x in per_seed if x.bracketed and x.P_star is not None]
    ci = bootstrap_ci([x.P_star for x in ok] + [None] * (len(per_seed) - len(ok)))
    sides = sorted({x.side for x in per_seed if not x.bracketed and x.side})
    return dict(P_star=ci["estimate"], lo=ci["lo"], hi=ci["hi"], n=len(ok), n_seeds=len(per_seed),
                bracket=[min(x.bracket[0] for x in ok), max(x.bracket[1] for x in ok)] if ok
                else None, per_seed=[x.P_star if x.bracketed else None for x in per_seed],
                unlocated=sides)  # fmt: skip


R_ONSET = 0.05  # a seed pools somewhere on the grid when its r passes this
ABSENT = loc.Located("absent", None, None, False, "above", {"reason": "not on the grid"})


def array_points(attention: str, P, d: dict, min_jump: float) -> dict[str, dict[str, Any]]:
    """:func:`seeds_summary` of each ``P*`` of order-parameter arrays ``d`` (``U, c1, cG, r,
    psi, converged`` as ``[nP, n_seeds]``; softmax ``aG`` as ``cG``), e.g. the lowest of several
    starts. Linear: :func:`linear_points` where the feature exists on the seed's grid (P*_c1: r
    passes ``R_ONSET``; P*_cG: psi reaches 1/2), elsewhere above the grid (a MAP at G = 0 has
    only residue in r, psi, which the locators would read as a feature). Softmax: the step of
    ``aG`` (:func:`.locate.locate_jump`) where it exceeds ``min_jump``."""
    if attention == "linear":
        d = dict(d)
        zero = (np.abs(d["r"]) < AT_ORIGIN) & (np.abs(d["cG"]) < AT_ORIGIN)
        d["r"] = np.where(zero, 0.0, d["r"])
        d["psi"] = np.where(zero, 0.0, d["psi"])
        pts = linear_points(_Arrays(P, d))
        pools = np.nanmax(np.abs(d["r"]), axis=0) > R_ONSET
        copies = np.nanmax(d["psi"], axis=0) >= 0.5
        for key, has in (("P_c1", pools), ("P_cG", copies)):
            pts[key] = [x if h else ABSENT for x, h in zip(pts[key], has)]
        return {k: seeds_summary(v) for k, v in pts.items()}
    aG = np.where((d["converged"] > 0), d["cG"], np.nan)
    per = [loc.locate_jump(np.asarray(P, float), aG[:, s], min_jump=min_jump)
           if np.nanmax(aG[:, s]) > min_jump else ABSENT  # no copying on the grid
           for s in range(aG.shape[1])]  # fmt: skip
    return {"P_aG": seeds_summary(per)}


def pstar_rows(measured: dict[str, list], theory: dict[str, Any], *, compare_paper: bool):
    """Rows of the measured-vs-theory table: the seeds' geometric mean [95% bootstrap CI], the
    grid bracket that holds every seed's ``P*`` (the CI collapses inside one bracket), the
    number of seeds located, the EK theory's ``P*`` and (``compare_paper``) the paper's."""
    rows = []
    for key, per_seed in measured.items():
        ok = [x for x in per_seed if x.bracketed and x.P_star is not None]
        ci = bootstrap_ci([x.P_star for x in ok] + [None] * (len(per_seed) - len(ok)))
        rows.append(
            dict(
                key=key,
                label=LABELS[key],
                measured=ci["estimate"],
                lo=ci["lo"],
                hi=ci["hi"],
                n=ci["n"],
                n_seeds=len(per_seed),
                bracket=(min(x.bracket[0] for x in ok), max(x.bracket[1] for x in ok))
                if ok
                else None,
                theory=theory.get(key, theory.get(key.removesuffix("_jump"))),  # same P*
                paper=PAPER_MEASURED.get(key.removesuffix("_jump")) if compare_paper else None,
            )
        )
    return rows


def format_pstar(rows) -> str:
    """The rows as a plain-text table (what ``copyhead sweep`` prints at the end)."""
    f = lambda x: "-" if x is None else f"{x:,.1f}"
    g = lambda b: "-" if b is None else f"{b[0]:,.0f}-{b[1]:,.0f}"
    lines = [f"{'transition':<30} {'measured [95% CI]':>26} {'seeds':>5} {'grid':>11} "
             f"{'EK theory':>10} {'paper':>6}"]  # fmt: skip
    for r in rows:
        m = f"{f(r['measured'])} [{f(r['lo'])}, {f(r['hi'])}]" if r["n"] else "not on the grid"
        lines.append(f"{r['label']:<30} {m:>26} {r['n']:>2}/{r['n_seeds']:<2} "
                     f"{g(r['bracket']):>11} {f(r['theory']):>10} {f(r['paper']):>6}")  # fmt: skip
    return "\n".join(lines)


__all__ = ["array_points", "format_pstar", "linear_points", "pstar_rows", "seeds_summary",
           "softmax_points"]
