"""The finite-width theory (docs/theory.md §2b) on the runs' own embeddings and training sets, with
its transition points located like the measured ones."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from copyhead_jax.compare import locate as loc

from . import common as C

FINITE_DENSE = 16  # finite-width theory: log-spaced P across the theory range (plus measured P)
FINITE_REFINE = 6  # and this many integers inside each bracket of its own P*, per seed


def finite_width(spec: C.Spec, runs: C.Runs, attention: str, P_grid) -> dict[str, Any]:
    """The finite-width theory (docs/theory.md §2b) of each seed, on ``P_grid`` plus the measured
    ``P``, then refined near its own jump / steepest rise (integers); cached."""
    key = [
        runs.cfg.to_dict(),
        attention,
        np.asarray(P_grid).tolist(),
        runs.P.tolist(),
        C.code_version("engine"),
    ]
    return C.cached(
        spec.cache_dir,
        f"finite-{attention}",
        key,
        lambda: _finite_width(spec, runs, attention, P_grid),
    )


def _finite_width(spec: C.Spec, runs: C.Runs, attention: str, P_grid) -> dict[str, Any]:
    cfg = runs.cfg
    th = spec.theory_params(L=cfg.task.L, V=cfg.task.V)
    nS = cfg.sweep.n_seeds
    if cfg.train.train_embeddings:  # embeddings trained: each run has its own Gram (measured P)
        P = runs.P
        parts = []
        for p in P:
            toks = [C.seed_tokens(cfg, s, p) for s in range(nS)]
            grams = [C.run_gram(runs, p, s) for s in range(nS)]
            parts.append(C.finite_theory(th, attention, toks, grams, [p]))
        ft = {k: (np.concatenate([x[k] for x in parts]) if k != "P" else P) for k in parts[0]}
    else:
        P = np.union1d(np.asarray(P_grid, int), runs.P)
        P_max = int(P.max() * 2)
        toks = [C.seed_tokens(cfg, s, P_max) for s in range(nS)]
        grams = [C.seed_gram(cfg, s) for s in range(nS)]
        ft = C.finite_theory(th, attention, toks, grams, P)
        extra = []
        for s in range(nS):
            for L_ in _finite_points(ft, attention, s, cfg.task.L).values():
                if L_.bracketed:
                    extra.extend(loc.refine_grid(L_.bracket, n_new=FINITE_REFINE, existing=P))
        extra = np.setdiff1d(np.asarray(extra, int), P)
        if extra.size:
            ft = _merge_curves(ft, C.finite_theory(th, attention, toks, grams, extra))
    pts = [_finite_points(ft, attention, s, cfg.task.L) for s in range(nS)]
    return {"curve": ft, "points": pts, "summary": _summarise_points(pts)}


def _merge_curves(a: dict, b: dict) -> dict:
    """Two finite-theory results on disjoint ``P`` merged and sorted by ``P``."""
    P = np.concatenate([a["P"], b["P"]])
    order = np.argsort(P)
    return {k: (P[order] if k == "P" else np.concatenate([a[k], b[k]])[order]) for k in a}


def _finite_points(ft, attention: str, s: int, L: int) -> dict[str, loc.Located]:
    P = ft["P"]
    if attention == "linear":
        r = ft["r"][:, s]
        tol = 1e-6 * max(float(np.abs(r).max()), 1e-300)
        return {
            "P_c1": loc.locate_onset(P, r, tol=tol),
            "P_cG": loc.locate_max_slope(P, ft["psi"][:, s]),
            "P_cG_half": loc.locate_level(P, ft["psi"][:, s], 0.5),
        }
    out = {"P_aG": loc.locate_jump(P, ft["aG"][:, s])}
    two = ft["n_min"][:, s] >= 2
    if two.any():
        i, j = np.flatnonzero(two)[[0, -1]]
        lo = (float(P[i - 1]) if i > 0 else None, float(P[i]))
        hi = (float(P[j]), float(P[j + 1]) if j + 1 < P.size else None)
        out["spinodal_lo"] = loc.Located(
            "spinodal",
            math.sqrt(lo[0] * lo[1]) if lo[0] else None,
            lo if lo[0] else None,
            lo[0] is not None,
        )
        out["spinodal_hi"] = loc.Located(
            "spinodal",
            math.sqrt(hi[0] * hi[1]) if hi[1] else None,
            hi if hi[1] else None,
            hi[1] is not None,
        )
    return out


def _summarise_points(pts: list[dict[str, loc.Located]]) -> dict[str, Any]:
    out = {}
    for k in pts[0]:
        v = [p[k].P_star for p in pts if k in p and p[k].P_star is not None]
        out[k] = {
            "mean": float(np.mean(v)) if v else None,
            "sd": float(np.std(v)) if len(v) > 1 else None,
            "per_seed": [p[k].P_star if k in p else None for p in pts],
        }
    return out
