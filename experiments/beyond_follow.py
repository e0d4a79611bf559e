"""Branch following in P (hysteresis) for the markov / causal artefacts (``experiments/beyond.py``,
settings ``follow``): is a softmax step a first-order jump (two minima coexist over a window of P)
or a steep crossover (one minimum whose a_G rises fast)?

Per seed, on a fine grid ``P[0] < ... < P[-1]`` around the step: the *up* branch starts from the
pool start's fit (zero logits) at ``P[0]`` and solves each next P from the same seed's fit at the
previous P (the training pools are nested, the embeddings the seed's); the *down* branch starts
from the copy start's fit (copy logits) at ``P[-1]`` and walks down the same way. Unlike the
solver's continuation (which keeps the lowest U of its starts), each pass keeps the minimum it
reaches, so a branch is followed until it ceases to exist. Where the two passes end in distinct
minima at the same P (a_G differs), two branches coexist there; where they agree everywhere, the
minimum is unique along the grid and the step is a crossover at this grid's resolution.
"""

from __future__ import annotations

import jax
import numpy as np

from copyhead_jax.sweep import exact_solve_from, run_mesh, sweep_inputs

from . import common as C

#: a_G of the two passes differing by more than this (same seed, same P): distinct minima
DISTINCT_AG = 0.05
LARGE_AG = 0.5
KEEP = ("U", "aG", "a1", "psi", "r", "converged", "finite")


def passes(P, start_up: tuple, start_down: tuple, solve) -> dict[str, dict[str, np.ndarray]]:
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
    from copyhead_jax.compare.locate import locate_crossing

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
    return {"n_distinct": distinct.sum(1).tolist(), "max_gap": max_gap,
            "n_ok": ok.sum(1).tolist(), "window": window, "crossing": crossing,
            "up_step": rise, "down_step": drop}  # fmt: skip


def follow(s: dict, chain: dict, causal: bool, f: dict, cache, config) -> dict:
    """The two passes of ``f = dict(P=[...], seeds=k)`` at ``chain`` (softmax; ``config``:
    :func:`experiments.beyond.config`), cached; JSON-able: per pass and key ``[nP][seed]``, and
    :func:`coexistence`."""
    P = sorted(int(p) for p in f["P"])
    sub = dict(s, P=P, seeds=f["seeds"])
    cfg = config(sub, chain, causal, "softmax", "zero")

    def run():
        first = {}
        for name, init, p in (("up", "zero", P[0]), ("down", "copy", P[-1])):
            res = C.cached_sweep(config(dict(sub, P=[p]), chain, causal, "softmax", init), cache)
            kept = ("params/W_G", "params/W_O_hat")
            first[name] = {k: res.arrays[k][0] for k in kept} | {k: res[k][0] for k in KEEP}
        inputs = sweep_inputs(cfg, None)  # P-major, pools cut at P_max (nested)
        solve_runs, nS = exact_solve_from(cfg, run_mesh(cfg.sweep.n_devices)), f["seeds"]

        def solve(i, w):
            rows = np.arange(i * nS, (i + 1) * nS)
            return solve_runs(jax.tree_util.tree_map(lambda a: np.asarray(a)[rows], inputs), w)

        return passes(P, first["up"], first["down"], solve)

    br = C.cached(cache, "beyond-follow", [cfg.to_dict()], run)
    out = {"P": P, "seeds": f["seeds"], "coexistence": coexistence(br, P),
           # the branches of the jump itself (a_G apart by > 0.5, as markov.md's "starts distinct")
           "coexistence_large": coexistence(br, P, LARGE_AG)}  # fmt: skip
    for name in ("up", "down"):
        out[name] = {k: np.asarray(v, float).tolist() for k, v in br[name].items()}
    return out


def follow_figure(rows: list[dict], path) -> None:
    """One panel per followed grid: each seed's a_G on the up pass (solid) and the down pass
    (dashed) versus P, the U crossings marked."""
    import matplotlib.pyplot as plt

    from copyhead_jax.style import P_LABEL

    panels = [(r, f) for r in rows for f in r.get("followed", [])]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (r, f) in zip(axes[0], panels):
        P = np.asarray(f["P"], float)
        up, dn = np.asarray(f["up"]["aG"]), np.asarray(f["down"]["aG"])
        for s in range(up.shape[1]):
            c = f"C{s}"
            ax.plot(P, up[:, s], "-o", c=c, ms=3, label=f"seed {s}: up" if s == 0 else None)
            ax.plot(P, dn[:, s], "--s", c=c, ms=3, mfc="none",
                    label="down" if s == 0 else None)  # fmt: skip
        for x in f["coexistence"]["crossing"]:
            if x is not None:
                ax.axvline(x, c="0.6", lw=0.8, zorder=0)
        chain = ", ".join(f"{k} = {r[k]:g}" for k in ("rho", "alpha") if k in r)
        ax.set(title=f"{chain}{', causal' if r['causal'] else ''}", xlabel=P_LABEL,
               ylabel="$a_G$")  # fmt: skip
        ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
