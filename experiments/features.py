"""Measured transition points of the runs (docs/theory.md §5's definitions, applied by
``copyhead_jax.compare.locate``): the branch runs every artefact measures, the features that
:func:`experiments.common.adaptive` refines, and the measured linear hysteresis gap.

* ``P_c1``: onset of the row sum ``r`` of the linear attention matrix (second order).
* ``P_cG``: ``argmax dpsi/dlog P`` of the measured copy fraction; ``P_cG_half``: ``psi = 1/2``.
* ``P_aG``: where ``U`` of the runs started on the pooling branch (zero logits) and on the copy
  branch (``init_copy_logit * G*``) cross, at the ``P`` where the two stayed distinct.
* ``P_aG_single``: the jump of ``a_G`` of the pooling-branch starts alone (compared with the
  theory's upper spinodal, where the weak minimum disappears).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from copyhead_jax.compare import locate as loc

from . import common as C

KEYS = ("P_c1", "P_cG", "P_aG")
# the single-start jump of the pooling branch, measured against the theory's upper spinodal
SINGLE = "P_aG_single"
THEORY_KEY = {"P_c1": "P_c1", "P_cG": "P_cG", "P_aG": "P_aG", SINGLE: "spinodal_hi"}


def P_star(located: loc.Located | None) -> float | None:
    return None if located is None else located.P_star


def branch_runs(spec: C.Spec, **task) -> tuple[C.Runs, C.Runs, C.Runs]:
    """Linear runs (the preset's initialisation) and softmax runs started on the pooling branch
    (zero logits) and on the copy branch, each with its reach cap."""
    s = spec.settings
    lin_cfg = spec.engine_for("linear", **task)
    soft = spec.engine_for("softmax", **task)
    pool_cfg = soft.replace(train=dict(init_attention="zero"))
    copy_cfg = soft.replace(train=dict(init_attention="copy"))
    n_seeds = s.get("n_seeds")
    if n_seeds:
        lin_cfg, pool_cfg, copy_cfg = (
            c.replace(sweep=dict(n_seeds=n_seeds)) for c in (lin_cfg, pool_cfg, copy_cfg)
        )
    cap = lambda c: C.reach_cap(c, s["max_run_s"], spec.cost)
    return (
        C.Runs(lin_cfg, "linear", cap(lin_cfg)),
        C.Runs(pool_cfg, "pool", cap(pool_cfg)),
        C.Runs(copy_cfg, "copy", cap(copy_cfg)),
    )


def distinct_branches(pool: C.Runs, copy: C.Runs, P) -> np.ndarray:
    """``[nP, n_seeds]``: the copy start kept a larger ``a_G`` than the pooling start, by at least
    half the largest such gap seen (and at least ``0.1 sqrt(L)``)."""
    gap = copy.masked("cG", P) - pool.masked("cG", P)
    if not np.isfinite(gap).any():
        return np.zeros(gap.shape, bool)
    g_max = np.nanmax(gap)
    thr = max(0.5 * g_max, 0.1 * math.sqrt(pool.cfg.task.L))
    return np.nan_to_num(gap, nan=-np.inf) > thr


def common_P(a: C.Runs, b: C.Runs) -> np.ndarray:
    return np.intersect1d(a.P, b.P)


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


def crossing(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """``P*_aG``: per seed, where ``U`` of the pooling and copy starts cross (only at the ``P``
    where that seed's two runs stayed distinct); the seeds' estimates are averaged in ``log P``
    and their brackets joined."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("crossing", None, None, False, None, {"reason": "< 2 common P"})
    dist = distinct_branches(pool, copy, P)
    Up, Uc = pool.masked("U", P), copy.masked("U", P)
    per = [loc.locate_crossing(P, Up[:, s], Uc[:, s], valid=dist[:, s]) for s in range(Up.shape[1])]
    return combine_seeds("crossing", per)


def window_interior(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """The ``P`` range from the grid point below the first to the one above the last ``P`` where
    any seed's two starts stayed distinct: refining it puts runs inside every seed's window."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("window", None, None, False, None, {"reason": "< 2 common P"})
    idx = np.flatnonzero(distinct_branches(pool, copy, P).any(axis=1))
    if idx.size == 0:
        return loc.Located("window", None, None, False, None, {"reason": "never distinct"})
    lo, hi = P[max(idx[0] - 1, 0)], P[min(idx[-1] + 1, P.size - 1)]
    return loc.Located("window", float(np.sqrt(lo * hi)), (float(lo), float(hi)), True)


def _window_edge(pool: C.Runs, copy: C.Runs, direction: int) -> loc.Located:
    """Per seed, the step of "the two starts are distinct" (up: lower edge, down: upper edge)."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("jump", None, None, False, None, {"reason": "< 2 common P"})
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


def copy_fallback(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """Lower edge of the measured coexistence window: the smallest ``P`` from which the copy
    start stays on the copy branch (the fraction of seeds with distinct branches jumps up)."""
    return _window_edge(pool, copy, 1)


def window_top(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """Upper edge of the measured coexistence window: beyond it the pooling start has jumped to
    the copy branch (the fraction of seeds with distinct branches drops)."""
    return _window_edge(pool, copy, -1)


ONSET_TOL = 0.02  # r below 2% of its largest measured value counts as zero (no pooling)
#: |r| and |cG| below this: the linear fit sits at G = 0 (the exact MAP's float64 residue is
#: ~1e-10), where psi is a ratio of residues (up to 0.84 per seed at P < P*_c1, paper preset)
AT_ORIGIN = 1e-6


def linear_psi(lin: C.Runs) -> np.ndarray:
    """The copy fraction psi ``[nP, n_seeds]`` of linear runs, 0 where the fit sits at G = 0
    (no attention: nothing copies; as ``experiments.posterior.map_psi``)."""
    at0 = (np.abs(lin.masked("r")) < AT_ORIGIN) & (np.abs(lin.masked("cG")) < AT_ORIGIN)
    return np.where(at0, 0.0, lin.masked("psi"))


def onset(lin: C.Runs) -> loc.Located:
    """Onset of the row sum ``r`` of the linear attention matrix (pooling, ``P*_c1``), located
    on the ``P`` before copying sets in (seed-mean copy fraction ``psi < 1/2``): at larger ``L``
    ``r`` falls back to ~0 between the pooling and the copy regimes, and the onset locator (the
    last rise of ``r`` that lasts to the end of the grid) would otherwise find that rise."""
    r = lin.masked("r")
    with C.quiet_nan():
        scale = float(np.nanmax(np.abs(np.nanmean(r, axis=1))))
        pre = np.nanmean(linear_psi(lin), axis=1) < 0.5
    if not np.isfinite(scale) or scale <= 0:
        return loc.Located("onset", None, None, False, None, {"reason": "r = 0 everywhere"})
    keep = np.arange(pre.size) < (np.argmin(pre) if not pre.all() else pre.size)
    if keep.sum() < 2:
        keep[:] = True
    return loc.locate_onset(lin.P[keep], r[keep], tol=ONSET_TOL * scale)


def copy_crossover(lin: C.Runs) -> loc.Located:
    """``P*_cG``: ``argmax dpsi/dlog P``, over the ``P`` above the pooling onset where it is
    located (below it ``r ~ 0`` and the copy fraction ``psi`` is a ratio of noise, whose jumps
    between sparse grid points can outgrow the crossover's slope)."""
    P, psi = lin.P, linear_psi(lin)
    c1 = onset(lin)
    if c1.bracketed and (P > c1.bracket[1]).sum() >= 3:
        keep = P > c1.bracket[1]
        P, psi = P[keep], psi[keep]
    return loc.locate_max_slope(P, psi)


def single_jump(pool: C.Runs) -> loc.Located:
    """The jump of ``a_G`` of the pooling-branch starts alone, per seed (seeds have their own
    data, so their jumps differ); a step below 10% of the full scale ``sqrt(L)`` of ``a_G`` is
    noise, not a copy transition."""
    jmin = 0.1 * math.sqrt(pool.cfg.task.L)
    aG = pool.masked("cG")
    per = [loc.locate_jump(pool.P, aG[:, s], min_jump=jmin) for s in range(aG.shape[1])]
    out = combine_seeds("jump", per)
    if out.bracketed:
        out.detail["jump"] = float(np.mean([x.detail["jump"] for x in per if x.bracketed]))
        out.detail["sharpness"] = float(np.mean([x.detail["sharpness"] for x in per
                                                 if x.bracketed]))  # fmt: skip
    return out


def features(lin: C.Runs, pool: C.Runs, copy: C.Runs, which=("P_c1", "P_cG", "P_aG")) -> list:
    F = C.Feature
    out = []
    if "P_c1" in which:
        out.append(F("P_c1", lambda: onset(lin), [lin]))
    if "P_cG" in which:
        out.append(F("P_cG", lambda: copy_crossover(lin), [lin]))
        out.append(F("P_cG_half", lambda: loc.locate_level(lin.P, linear_psi(lin), 0.5), [lin]))
    if "P_aG" in which:
        out.append(F("P_aG", lambda: crossing(pool, copy), [pool, copy]))
        # the coexistence window's edges: refining them puts runs inside each seed's window
        out.append(F("window", lambda: window_interior(pool, copy), [pool, copy]))
        out.append(F("P_aG_single", lambda: single_jump(pool), [pool]))
    return out


def collect(spec: C.Spec) -> dict[str, Any]:
    """Every measurement of the main artefact (cached: a rerun only reloads)."""
    s = spec.settings
    lin, pool, copy = branch_runs(spec)
    C.log(f"main {spec.preset}: linear (cap P <= {lin.P_cap}), softmax (cap P <= {pool.P_cap})")
    C.measure(lin, s["P_linear"], spec)
    C.measure(pool, s["P_pool"], spec)
    C.measure(copy, s["P_copy"], spec)
    found = C.adaptive(features(lin, pool, copy), spec, rounds=s["rounds"], n_new=s["n_new"])
    out = {"lin": lin, "pool": pool, "copy": copy, "found": found}
    if spec.sgld is not None:
        C.log(f"main {spec.preset}: SGLD")
        out["post_lin"] = C.posterior(lin, s["sgld_linear"], spec)
        out["post_soft"] = C.posterior(pool, s["sgld_softmax"], spec)
    return out


def linear_hysteresis_gap(lin: C.Runs, lin_copy: C.Runs | None) -> dict[str, Any] | None:
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
    with C.quiet_nan():
        same = np.where(anti, np.nan, d)
        return {
            "P": P,
            "max_abs_dcG": float(np.nanmax(d)),
            "max_abs_dcG_same_branch": float(np.nanmax(same)) if np.isfinite(same).any() else None,
            "anti_copy_landings": [[int(i), int(s)] for i, s in zip(*np.nonzero(anti))],  # P index
            "dcG": np.nanmean(d, 1),
            "dU_per_seq": np.nanmean(dU, 1),
        }
