"""The Bayesian ``P*_aG`` with an interval that means what it says (issue 29, item 6b), from an
assembled ``posterior_branches*.json`` (no chain is rerun).

``P*`` is where the seed mean of ``dF = F_copy - F_pool`` changes sign, ``dF / P`` interpolated
linearly in ``log P`` between the two grid points that bracket it (as ``posterior_features.
crossing`` locates it; docs/theory.md §9.11). Its interval is
the hull of four intervals, each reported:

* ``seeds``: the 95% t-interval of the per-seed crossings (the seed spread alone);
* ``mc``: the crossing of ``mean dF +- 1.96 MCSE`` (the seeds' MCSEs in quadrature over ``n``);
* ``mc_quad``: the same band widened by the thermodynamic integral's quadrature error, the
  Euler-Maclaurin term ``|quad_corr|`` of both branches (systematic: the same rungs for every
  seed, so it is averaged over seeds, not divided by ``sqrt n``);
* ``grid``: with 3 or more grid points, the crossing of the quadratic in ``log P`` through the
  3 points nearest the bracket against the linear one; with only the bracketing pair, no curvature
  is known and the interval is the whole bracket.

Runs with split R-hat > :data:`RHAT_MAX` or ESS < :data:`ESS_MIN` on any rung are named, and the
crossing is recomputed without the seeds that have such a run at a bracketing ``P``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RHAT_MAX = 1.05  # split R-hat above this: the chains did not agree
ESS_MIN = 100.0  # fewer effective draws than this: the MCSE itself is unreliable
Z = 1.96  # two-sided 95% normal quantile, for the MC band


def _crossing(P: np.ndarray, y: np.ndarray) -> tuple[float | None, int | None]:
    """First sign change of ``y`` from > 0 to <= 0, ``y / P`` linear in ``log P``: (P*, bracket
    index)."""
    for i in range(P.size - 1):
        a, b = y[i] / P[i], y[i + 1] / P[i + 1]
        if np.isfinite(a) and np.isfinite(b) and a > 0 >= b:
            x0, x1 = math.log(P[i]), math.log(P[i + 1])
            return math.exp(x0 + a / (a - b) * (x1 - x0)), i
    return None, None


def _band(P, y, e) -> list[float | None]:
    """The crossings of ``y - e`` and ``y + e`` (sorted; None where one leaves the grid)."""
    c = [_crossing(P, y + s * e)[0] for s in (-1.0, 1.0)]
    return sorted(c) if None not in c else c


def _quadratic(P: np.ndarray, y: np.ndarray, i: int) -> float | None:
    """Root inside the bracket ``[P_i, P_i+1]`` of the quadratic in ``log P`` through the 3
    finite grid points nearest it; None with fewer than 3 or no root there."""
    ok = np.flatnonzero(np.isfinite(y))
    if ok.size < 3:
        return None
    x = np.log(P)
    mid = 0.5 * (x[i] + x[i + 1])
    near = ok[np.argsort(np.abs(x[ok] - mid))[:3]]
    c = np.polyfit(x[near], y[near] / P[near], 2)
    roots = [r.real for r in np.roots(c) if abs(r.imag) < 1e-12 and x[i] <= r.real <= x[i + 1]]
    return math.exp(roots[0]) if roots else None


def flagged_runs(res: dict) -> list[dict[str, Any]]:
    """Every run whose worst rung has R-hat > RHAT_MAX or ESS < ESS_MIN."""
    out = []
    for r in res.get("runs", []):
        rh, es = r.get("rhat_max"), r.get("ess_min")
        if (rh is not None and rh > RHAT_MAX) or (es is not None and es < ESS_MIN):
            out.append({k: r.get(k) for k in ("P", "seed", "branch", "rhat_max", "ess_min")})
    return out


def bayesian_interval(res: dict) -> dict[str, Any]:
    """The seed-mean crossing, its four intervals and their hull (module docstring)."""
    P = np.asarray(res["P"], float)
    dF = np.asarray(res["dF"], float)
    se = np.asarray(res["dF_mcse"], float)
    qc = sum(np.abs(np.asarray(res["health"][b]["quad_corr"], float)) for b in ("pool", "copy"))
    n = np.isfinite(dF).sum(1)
    with np.errstate(all="ignore"):
        m = np.nanmean(dF, 1)
        e_mc = Z * np.sqrt(np.nansum(np.where(np.isfinite(dF), se, 0.0) ** 2, 1)) / n
        e_q = np.nanmean(np.where(np.isfinite(dF), qc, np.nan), 1)
    P_star, i = _crossing(P, m)
    out: dict[str, Any] = {"P_star": P_star, "rule": "hull of seeds, mc, mc_quad, grid"}
    flags = flagged_runs(res)
    out["flagged"], out["n_runs"] = flags, len(res.get("runs", []))
    if P_star is None:
        return {**out, "reason": "the seed-mean dF does not change sign on the grid"}
    br = [float(P[i]), float(P[i + 1])]
    ps = (res.get("crossing_F") or {}).get("per_seed_ci") or {}
    parts = {"seeds": [ps["lo"], ps["hi"]]} if ps.get("lo") is not None else {}
    parts |= {
        "mc": _band(P, m, e_mc),
        "mc_quad": _band(P, m, e_mc + e_q),
    }
    qd = _quadratic(P, m, i)
    parts["grid"] = br if qd is None else sorted([P_star, qd])
    lows = [p[0] for p in parts.values()]
    highs = [p[1] for p in parts.values()]
    out.update(bracket=br, parts=parts, grid_method="bracket" if qd is None else "quadratic",
               lo=None if None in lows else min(lows), hi=None if None in highs else max(highs),
               e_mc=e_mc[i : i + 2].tolist(), e_quad=e_q[i : i + 2].tolist())  # fmt: skip
    bad = {f["seed"] for f in flags if f["P"] in (int(br[0]), int(br[1]))}
    keep = [s for s in range(dF.shape[1]) if s not in bad and np.isfinite(dF[i : i + 2, s]).all()]
    out["seeds_flagged_at_bracket"] = sorted(bad)
    if keep:
        with np.errstate(all="ignore"):
            out["P_star_unflagged"] = _crossing(P, np.nanmean(dF[:, keep], 1))[0]
        out["n_unflagged"] = len(keep)
    return out


def _g(x) -> str:
    return "-" if x is None else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def interval_text(d: dict[str, Any]) -> str:
    """One line: ``P* [lo, hi]`` with its parts and the flagged runs named."""
    if d.get("P_star") is None:
        return f"not located ({d.get('reason', 'no crossing')})"
    iv = lambda p: f"[{_g(p[0])}, {_g(p[1])}]" if None not in p else "[beyond the grid]"  # noqa: E731
    p = d["parts"]
    seeds = f"seeds {iv(p['seeds'])}, " if "seeds" in p else ""
    txt = (f"{_g(d['P_star'])} {iv([d['lo'], d['hi']])} (hull of: {seeds}"
           f"MC {iv(p['mc'])}, MC + quadrature {iv(p['mc_quad'])}, grid {iv(p['grid'])} "
           f"({d['grid_method']}))")  # fmt: skip
    fl = d["flagged"]
    if fl:
        at = [f for f in fl if f["P"] in {int(x) for x in d["bracket"]}]
        named = "; ".join(f"P={f['P']} seed {f['seed']} {f['branch']} (R-hat {f['rhat_max']:.3g},"
                          f" ESS {f['ess_min']:.3g})" for f in at)  # fmt: skip
        rest = {}
        for f in fl:
            if f not in at:
                rest[f["P"]] = rest.get(f["P"], 0) + 1
        txt += (f"; {len(fl)}/{d['n_runs']} runs with R-hat > {RHAT_MAX} or ESS < {ESS_MIN:g}; "
                f"at the bracketing P: {named or 'none'}")  # fmt: skip
        if rest:
            txt += "; elsewhere: " + ", ".join(f"{n} at P={p}" for p, n in sorted(rest.items()))
        if d.get("P_star_unflagged") is not None and d["seeds_flagged_at_bracket"]:
            txt += (f"; without the {len(d['seeds_flagged_at_bracket'])} seeds flagged at the "
                    f"bracket: {_g(d['P_star_unflagged'])} ({d['n_unflagged']} seeds)")
        elif d["seeds_flagged_at_bracket"]:
            txt += "; every seed has a flagged run at the bracket"
    return txt
