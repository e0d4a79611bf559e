r"""Measured ``P*`` of a phase diagram beside the EK theory's and the paper's (``copyhead sweep``).

Per seed (its own embeddings and training set), each ``P*`` is located on the sweep's grid by the
definitions of docs/theory.md §5 (:mod:`.locate`); the seeds' values are averaged in ``log P``
with a 95% bootstrap interval over seeds widened by the grid's error (:func:`seeds_summary`).

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
import warnings
from typing import Any

import numpy as np

from ..theory import theory_of
from . import locate as loc
from .paper import PAPER_HEADS, PAPER_MEASURED
from .stats import bootstrap_ci

ONSET_TOL = 0.02  # r below 2% of its largest seed-mean value counts as zero (no pooling)
AT_ORIGIN = 1e-6  # |r|, |cG| below this: the exact MAP sits at G = 0 (float64 residue ~1e-10)

#: What each P* is; a table row puts the head's name before it (``softmax copy transition``).
LABELS = {
    "P_c1": "pooling onset P*_c1",
    "P_cG": "copy crossover P*_cG",
    "P_aG": "copy transition P*_aG",
    "P_aG_jump": "jump, one minimum per P",
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
    per = [
        loc.locate_crossing(P, Up[:, s], Uc[:, s], valid=distinct[:, s]) for s in range(Up.shape[1])
    ]
    if any(x.bracketed for x in per):
        return {"P_aG": per}
    jumps = [loc.locate_jump(P, aGp[:, s], min_jump=thr) for s in range(aGp.shape[1])]
    return {"P_aG": per, "P_aG_jump": jumps}


class Arrays:
    """Order-parameter arrays ``[nP, n_seeds]`` as the locators read a sweep (``P``, ``ok``,
    ``res[key]``, ``config``); ``ok`` defaults to the converged runs with a finite ``U``."""

    def __init__(self, P, d, ok=None, config=None):
        self.P, self._d, self.config = np.asarray(P), d, config
        self.ok = (d["converged"] > 0) & np.isfinite(d["U"]) if ok is None else np.asarray(ok)

    def __getitem__(self, k):
        return self._d[k]


def _as_dict(x) -> dict | None:
    return x if x is None or isinstance(x, dict) else x.to_dict()


def _grid_of(d: dict) -> list[float] | None:
    """A located seed's grid error: its ``grid``, else (a locator that set none, an older
    result) its bracket."""
    return d.get("grid") or d.get("bracket")


def seeds_summary(per_seed: list) -> dict[str, Any]:
    """One ``P*`` over seeds (:class:`.locate.Located` or their ``to_dict``; ``None``: not looked
    for on that seed), the one summary every table uses.

    ``P_star`` (also ``estimate``) is the geometric mean of the seeds that bracketed it;
    ``seeds_lo, seeds_hi`` its 95% percentile bootstrap interval over seeds (the seeds' scatter);
    ``grid_lo, grid_hi`` the geometric means of the seeds' grid errors
    (:attr:`.locate.Located.grid`), where the mean lies whatever the grid hides inside each
    seed's interval. Every seed shares one grid, so the grid error is systematic: it does not
    shrink with more seeds and is not bootstrapped, but added to the seeds' interval in
    ``log P`` (where the mean is taken): ``lo = seeds_lo * grid_lo / P_star``, ``hi = seeds_hi *
    grid_hi / P_star``. A step function gives its bracket as the interval whatever the number of
    seeds. Also: ``n`` located of ``n_seeds`` (``n_missing`` the others), ``values`` /
    ``per_seed`` (None: not located), ``bracket`` (the hull of the seeds' brackets), and
    ``unlocated``, the sides of the grid where the unlocated seeds' feature lies."""
    d = [_as_dict(x) for x in per_seed]
    found = [x is not None and bool(x.get("bracketed")) and x.get("P_star") is not None for x in d]
    ok = [x for x, f in zip(d, found) if f]
    vals = [x["P_star"] if f else None for x, f in zip(d, found)]
    ci = bootstrap_ci(vals)
    out = dict(
        P_star=ci["estimate"],
        estimate=ci["estimate"],
        lo=ci["lo"],
        hi=ci["hi"],
        seeds_lo=ci["lo"],
        seeds_hi=ci["hi"],
        grid_lo=None,
        grid_hi=None,
        n=len(ok),
        n_seeds=len(d),
        n_missing=len(d) - len(ok),
        level=ci["level"],
        values=vals,
        per_seed=vals,
        bracket=None,
        unlocated=sorted(
            {x["side"] for x, f in zip(d, found) if x is not None and not f and x.get("side")}
        ),
    )
    if not ok:
        return out
    g = np.log(np.asarray([_grid_of(x) for x in ok], float))
    g_lo, g_hi = (float(np.exp(v)) for v in g.mean(axis=0))
    est = ci["estimate"]
    out.update(
        grid_lo=g_lo,
        grid_hi=g_hi,
        lo=ci["lo"] * g_lo / est,
        hi=ci["hi"] * g_hi / est,
        bracket=[min(x["bracket"][0] for x in ok), max(x["bracket"][1] for x in ok)],
    )
    return out


R_ONSET = 0.05  # a seed pools somewhere on the grid when its r passes this
ABSENT = loc.Located("absent", None, None, False, "above", {"reason": "not on the grid"})


def array_points(attention: str, P, d: dict, min_jump: float) -> dict[str, dict[str, Any]]:
    """:func:`seeds_summary` of each ``P*`` of order-parameter arrays ``d`` (``U, c1, cG, r,
    psi, converged`` as ``[nP, n_seeds]``; softmax ``aG`` as ``cG``), e.g. the lowest of several
    starts. Linear: :func:`linear_points` where the feature exists on the seed's grid (P*_c1: r
    passes ``R_ONSET``; P*_cG: psi reaches 1/2), elsewhere above the grid (a MAP at G = 0 has
    only residue in r, psi, which the locators would read as a feature). Softmax: the step of
    ``aG`` (:func:`.locate.locate_jump`) where it exceeds ``min_jump`` (two-branch kinds)."""
    if not theory_of(attention).two_branches:
        d = dict(d)
        zero = (np.abs(d["r"]) < AT_ORIGIN) & (np.abs(d["cG"]) < AT_ORIGIN)
        d["r"] = np.where(zero, 0.0, d["r"])
        d["psi"] = np.where(zero, 0.0, d["psi"])
        pts = linear_points(Arrays(P, d))
        pools = np.nanmax(np.abs(d["r"]), axis=0) > R_ONSET
        copies = np.nanmax(d["psi"], axis=0) >= 0.5
        for key, has in (("P_c1", pools), ("P_cG", copies)):
            pts[key] = [x if h else ABSENT for x, h in zip(pts[key], has)]
        return {k: seeds_summary(v) for k, v in pts.items()}
    aG = np.where((d["converged"] > 0), d["cG"], np.nan)
    per = [
        loc.locate_jump(np.asarray(P, float), aG[:, s], min_jump=min_jump)
        if np.nanmax(aG[:, s]) > min_jump
        else ABSENT  # no copying on the grid
        for s in range(aG.shape[1])
    ]
    return {"P_aG": seeds_summary(per)}


def pstar_rows(
    measured: dict[str, list], theory: dict[str, Any], *, attention: str, compare_paper: bool
):
    """Rows of the measured-vs-theory table of one head (``attention``, whose name labels the
    rows): :func:`seeds_summary` of each ``P*`` (``measured`` its estimate; ``lo, hi`` the seeds'
    interval widened by the grid error, both parts kept), the EK theory's ``P*`` and
    (``compare_paper``, for a head the paper measured) the paper's."""
    name = theory_of(attention).name
    compare_paper = compare_paper and name in PAPER_HEADS
    rows = []
    for key, per_seed in measured.items():
        s = seeds_summary(per_seed)
        rows.append(
            dict(
                key=key,
                label=f"{name} {LABELS[key]}",
                measured=s["P_star"],
                **{
                    k: s[k]
                    for k in (
                        "lo",
                        "hi",
                        "seeds_lo",
                        "seeds_hi",
                        "grid_lo",
                        "grid_hi",
                        "n",
                        "n_seeds",
                        "bracket",
                    )
                },
                theory=theory.get(key, theory.get(key.removesuffix("_jump"))),  # same P*
                paper=PAPER_MEASURED.get(key.removesuffix("_jump")) if compare_paper else None,
            )
        )
    return rows


def format_pstar(rows) -> str:
    """The rows as a plain-text table (what ``copyhead sweep`` prints at the end)."""
    f = lambda x: "-" if x is None else f"{x:,.1f}"
    g = lambda b: "-" if b is None else f"{b[0]:,.0f}-{b[1]:,.0f}"
    lines = [
        f"{'transition':<30} {'measured [CI: seeds, grid]':>26} {'seeds':>5} {'grid':>11} "
        f"{'EK theory':>10} {'paper':>6}"
    ]
    for r in rows:
        m = f"{f(r['measured'])} [{f(r['lo'])}, {f(r['hi'])}]" if r["n"] else "not on the grid"
        lines.append(
            f"{r['label']:<30} {m:>26} {r['n']:>2}/{r['n_seeds']:<2} "
            f"{g(r['bracket']):>11} {f(r['theory']):>10} {f(r['paper']):>6}"
        )
    return "\n".join(lines)


def point_summary(located: list) -> dict[str, Any]:
    """One ``P*`` over seeds as the markov/causal artefacts store it, from
    :func:`seeds_summary`: ``mean``, ``ci`` (seeds and grid error), ``seeds_ci`` and ``grid``
    (the two parts), ``n``, ``n_missing``; ``per_seed`` (None: not bracketed, or, ``None`` in
    ``located``, not looked for on that seed's grid); ``bracket_hull``, the smallest interval of
    grid points that holds every located seed's bracket; ``side``, where an unlocated seed's
    feature lies (``above`` / ``below`` the grid; None: absent)."""
    d = [_as_dict(x) for x in located]
    s = seeds_summary(d)
    both = lambda a, b: None if s[a] is None else [s[a], s[b]]  # noqa: E731
    return {
        "mean": s["P_star"],
        "ci": both("lo", "hi"),
        "seeds_ci": both("seeds_lo", "seeds_hi"),
        "grid": both("grid_lo", "grid_hi"),
        "n": s["n"],
        "n_missing": s["n_missing"],
        "bracket_hull": s["bracket"],
        "per_seed": s["per_seed"],
        "side": [
            None if x is None or v is not None else x.get("side") for x, v in zip(d, s["per_seed"])
        ],
    }


#: the arrays :func:`seed_groups` merges
GROUP_ARRAYS = ("c1", "cG", "U", "coverage", "r", "psi")


def seed_groups(main, more: list) -> tuple[list, dict]:
    """A sweep ``main`` with extra sweeps ``more`` at other ``P`` on its first ``k`` seeds (same
    data, nested): ``[(n_seeds, Arrays)]``, the first ``k`` seeds on the union of the grids and
    the others on the main grid (no extras: ``[(n, main)]``); and the largest |U| difference of a
    seed where an extra repeats a main grid point (the same minimum found twice)."""
    if not more:
        return [(main.config.sweep.n_seeds, main)], {}
    k = min(e.config.sweep.n_seeds for e in more)
    P = np.unique(np.concatenate([np.asarray(main.P), *(np.asarray(e.P) for e in more)]))
    arr = {a: np.full((P.size, k), np.nan) for a in GROUP_ARRAYS}
    ok = np.zeros((P.size, k), bool)
    dU = 0.0
    for res in (*more[::-1], main):  # main last: its runs win where the grids overlap
        i = np.searchsorted(P, res.P)
        U = np.where(res.ok[:, :k], np.asarray(res["U"], float)[:, :k], np.nan)
        both = ok[i] & np.isfinite(U)
        if both.any():
            dU = max(dU, float(np.nanmax(np.abs(U - arr["U"][i])[both])))
        for a in GROUP_ARRAYS:
            arr[a][i] = np.asarray(res[a], float)[:, :k]
        ok[i] = res.ok[:, :k]
    merged = Arrays(P, arr, ok, main.config)
    check = {"seeds_extended": k, "overlap_max_dU": dU}
    if main.config.sweep.n_seeds <= k:
        return [(k, merged)], check
    tail = Arrays(
        main.P,
        {a: np.asarray(main[a], float)[:, k:] for a in GROUP_ARRAYS},
        main.ok[:, k:],
        main.config,
    )
    return [(k, merged), (main.config.sweep.n_seeds - k, tail)], check


def group_points(lin: list, pool: list, copy: list) -> dict[str, list]:
    """Per-seed ``P*`` of :func:`seed_groups` of a linear, a pooling-start and a copy-start
    sweep, seeds in order: :func:`linear_points` and :func:`softmax_points` per group
    (``P_aG_jump``, only in groups with no crossing, is None on the other groups' seeds)."""
    pts: dict[str, list] = {}
    for _, g in lin:
        for k, v in linear_points(g).items():
            pts.setdefault(k, []).extend(v)
    soft = [softmax_points(p, c) for (_, p), (_, c) in zip(pool, copy)]
    for k in sorted({k for d in soft for k in d}):
        pts[k] = [x for d, (n, _) in zip(soft, pool) for x in d.get(k, [None] * n)]
    return pts


def group_means(groups: list, keys) -> dict[str, np.ndarray]:
    """The seed mean of each of ``keys`` (ok runs only) over every seed of :func:`seed_groups`,
    on the first group's grid (the widest); NaN at a ``P`` no seed reached."""
    grid = groups[0][1]
    out = {}
    for k in keys:
        a = np.full((grid.P.size, sum(n for n, _ in groups)), np.nan)
        col = 0
        for n, g in groups:
            i = np.searchsorted(grid.P, g.P)
            a[i, col : col + n] = np.where(g.ok, np.asarray(g[k], float), np.nan)
            col += n
        with warnings.catch_warnings():  # a P no seed reached: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            out[k] = np.nanmean(a, 1)
    return out


__all__ = [
    "Arrays",
    "array_points",
    "format_pstar",
    "group_means",
    "group_points",
    "linear_points",
    "point_summary",
    "pstar_rows",
    "seed_groups",
    "seeds_summary",
    "softmax_points",
]
