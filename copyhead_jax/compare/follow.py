"""Branch following in P (hysteresis): is a step of a_G a first-order jump (two minima coexist
over a window of P) or a steep crossover (one minimum whose a_G rises fast)?

Per seed, on a grid ``P[0] < ... < P[-1]`` around the step: the *up* pass starts from a fit on
the pooling branch at ``P[0]`` and solves each next P from the same seed's fit at the previous P;
the *down* pass starts from a fit on the copy branch at ``P[-1]`` and walks down the same way.
Unlike the solver's continuation (which keeps the lowest U of its starts), each pass keeps the
minimum it reaches, so a branch is followed until it ceases to exist. Where the two passes end in
distinct minima at the same P (a_G differs), two branches coexist there; where they agree
everywhere, the minimum is unique along the grid and the step is a crossover at the grid's
resolution. Nothing here runs a sweep: ``solve`` is the caller's.
"""

from __future__ import annotations

import numpy as np

from .locate import locate_crossing

__all__ = ["DISTINCT_AG", "KEEP", "LARGE_AG", "coexistence", "passes"]

#: a_G of the two passes differing by more than this (same seed, same P): distinct minima
DISTINCT_AG = 0.05
LARGE_AG = 0.5
KEEP = ("U", "aG", "a1", "psi", "r", "converged", "finite")


def passes(P, start_up: dict, start_down: dict, solve) -> dict[str, dict[str, np.ndarray]]:
    """``{"up": {key: [nP, nS]}, "down": ...}``: ``solve(i, (W_G, W_O_hat))`` fits the seeds'
    runs at ``P[i]`` from those weights (``[nS, ...]`` each) and returns the run arrays
    (``params/W_G``, ``params/W_O_hat`` and :data:`KEEP`). ``start_up``: the fits at ``P[0]``
    (the up branch's first point), ``start_down``: at ``P[-1]``."""
    n = len(P)
    out = {}
    for name, first, order in (("up", start_up, range(n)), ("down", start_down, range(n)[::-1])):
        rows, w = {}, None
        for i in order:
            r = first if w is None else solve(i, w)
            rows[i] = r
            w = (np.asarray(r["params/W_G"]), np.asarray(r["params/W_O_hat"]))
        out[name] = {k: np.stack([np.asarray(rows[i][k]) for i in range(n)]) for k in KEEP}
    return out


def coexistence(br: dict, P, tol: float = DISTINCT_AG) -> dict:
    """Where the passes end in distinct minima (|a_G up - a_G down| > tol, both converged and
    finite): per P how many seeds; per seed the window (first and last distinct P, None: none),
    the U crossing of the two branches where bracketed (:func:`locate_crossing` over the distinct
    P), and each pass's largest a_G change between neighbouring P (``[size, P_lo, P_hi]``: the
    up pass's rise, the down pass's drop)."""
    P = np.asarray(P, float)
    up, dn = br["up"], br["down"]
    ok = up["converged"].astype(bool) & up["finite"] & dn["converged"].astype(bool) & dn["finite"]
    gap = np.where(ok, np.abs(up["aG"] - dn["aG"]), np.nan)
    distinct = ok & (gap > tol)
    window, crossing, rise, drop = [], [], [], []
    for s in range(gap.shape[1]):
        d = np.flatnonzero(distinct[:, s])
        window.append([float(P[d[0]]), float(P[d[-1]])] if d.size else None)
        c = locate_crossing(P, up["U"][:, s], dn["U"][:, s], valid=distinct[:, s])
        crossing.append(float(c.P_star) if c.bracketed else None)
        for out, a in ((rise, up["aG"][:, s]), (drop, dn["aG"][:, s])):
            i = int(np.nanargmax(np.diff(a)))
            out.append([float(a[i + 1] - a[i]), float(P[i]), float(P[i + 1])])
    with np.errstate(all="ignore"):
        max_gap = [float(x) if np.isfinite(x) else None for x in np.nanmax(gap, 1)]
    return {
        "n_distinct": distinct.sum(1).tolist(),
        "max_gap": max_gap,
        "n_ok": ok.sum(1).tolist(),
        "window": window,
        "crossing": crossing,
        "up_step": rise,
        "down_step": drop,
    }
