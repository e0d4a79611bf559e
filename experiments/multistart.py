"""Does the exact MAP solver find the lowest minimum? Linear attention: six starts against the
continuation in P; results: docs/reports/multistart.md.

    python -m experiments multistart [--publish | --out DIR]   # ~19 CPU-min: both presets, 10 seeds
    python -m experiments multistart --tiny --out /tmp/x       # plain only, the TINY engine

The same runs (reduced engine, width 10,000) from a prior draw of W^G, the copy pattern with
logits +-0.5 and +-2 and zero logits, and from ``ExactConfig.continuation``: per P the
seeds a start improves and the largest U gap; per preset how often each reaches the lowest U,
and P*_cG and psi = 1/2 located per seed as the main reproduction does. Settings: ``multistart``
of ``configs/MODE.py`` per preset (``mc``: the engine mode of ``configs/posterior.py``, the grid
``P``, ``n_seeds``). Writes ``OUT/results/multistart_linear[_tiny].json`` (one file: each preset
run adds its scan to it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import locate_level, locate_max_slope, seeds_summary
from copyhead_jax.storage import write_json

from .common import PRESET_NAMES
from .configs.posterior import CONFIGS as ENGINES
from .posterior_runs import branch_config
from .report.studies import multistart_table

#: the extra starts (the prior draw is the default reproduction's)
STARTS = {
    "prior": {},
    "copy+0.5": dict(init_attention="copy", init_copy_logit=0.5),
    "copy-0.5": dict(init_attention="copy", init_copy_logit=-0.5),
    "copy+2": dict(init_attention="copy", init_copy_logit=2.0),
    "copy-2": dict(init_attention="copy", init_copy_logit=-2.0),
    "zero": dict(init_attention="zero"),
}
#: a start "improves" on the prior start if its U is lower by more than this (float64 minima)
U_TOL = 1e-3


def locate(P, psi) -> dict:
    """P*_cG (max slope) and psi = 1/2 per seed, bracketed seeds only, as the main reproduction
    (``analysis.per_seed_points``): :func:`seeds_summary`, the geometric mean over seeds with
    its 95% bootstrap CI widened by the grid's error."""
    P = np.asarray(P, float)
    nS = psi.shape[1]
    ms = [locate_max_slope(P, psi[:, s]) for s in range(nS)]
    half = [locate_level(P, psi[:, s], 0.5) for s in range(nS)]
    return {"P_cG": seeds_summary(ms), "P_cG_half": seeds_summary(half)}


def preset_scan(mc: dict, preset: str, P: list[int], n_seeds: int) -> dict:
    base = branch_config(mc, preset, "linear", P, None, n_seeds)
    res = {}
    for name, tr in STARTS.items():
        t0 = time.time()
        res[name] = ch.run_sweep(base.replace(train=tr) if tr else base, progress=False)
        print(f"[multistart] {preset} {name}: {time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    cont = ch.run_sweep(base.replace(solver=dict(continuation=True)), progress=False)
    print(f"[multistart] {preset} continuation: {time.time() - t0:.0f} s", flush=True)
    U = np.stack([r["U"] for r in res.values()])  # [start, P, seed]
    best = U.argmin(0)
    pick = lambda k: np.take_along_axis(np.stack([r[k] for r in res.values()]), best[None], 0)[0]  # noqa: E731
    gap = U[0] - U.min(0)
    conv = np.stack([r["converged"] for r in res.values()])
    return {
        "P": P,
        "n_seeds": n_seeds,
        "starts": list(STARTS),
        "seeds_improved": (gap > U_TOL).sum(1).tolist(),
        "max_U_gap": gap.max(1).tolist(),
        "best_start_counts": {n: int((best == i).sum()) for i, n in enumerate(STARTS)},
        # runs (P, seed) where each start reaches the lowest U (ties count for every start)
        "reaches_lowest": {n: int((U[i] - U.min(0) <= U_TOL).sum()) for i, n in enumerate(STARTS)},
        "reaches_lowest_pairs": {
            f"prior+{n}": int(((np.minimum(U[0], U[i]) - U.min(0)) <= U_TOL).sum())
            for i, n in enumerate(STARTS)
            if i
        },
        "n_runs": int(U[0].size),
        # the continuation: runs where it reaches the lowest U of the six starts, and where
        # it goes lower still (a minimum none of the six found)
        "continuation_reaches_lowest": int((cont["U"] - U.min(0) <= U_TOL).sum()),
        "continuation_below_all": int((cont["U"] < U.min(0) - U_TOL).sum()),
        "continuation_seconds": cont.meta["wall_seconds"],
        "prior_seconds": res["prior"].meta["wall_seconds"],
        "psi_continuation": cont["psi"].mean(1).tolist(),
        "r_continuation": cont["r"].mean(1).tolist(),
        "located_continuation": locate(P, cont["psi"]),
        "all_converged": bool(conv.all()),
        "psi_prior": res["prior"]["psi"].mean(1).tolist(),
        "psi_best": pick("psi").mean(1).tolist(),
        "r_prior": res["prior"]["r"].mean(1).tolist(),
        "r_best": pick("r").mean(1).tolist(),
        "located_prior": locate(P, res["prior"]["psi"]),
        "located_best": locate(P, pick("psi")),
    }


def main(spec, out: str | Path) -> dict:
    """The scan of ``spec.preset`` (nothing where its mode has no ``multistart`` settings for
    it), added to the mode's JSON beside the other presets' scans."""
    s = spec.settings
    if not s:
        print(f"[multistart] no settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    t0 = time.time()
    scan = preset_scan(ENGINES[s["mc"]], spec.preset, list(s["P"]), s["n_seeds"])
    name = "multistart_linear" + ("_tiny" if spec.mode == "tiny" else "")
    path = Path(out) / "results" / f"{name}.json"
    prev = json.loads(path.read_text()) if path.exists() else {}
    scans = prev.get("presets", {}) | {spec.preset: scan}
    scans = {p: scans[p] for p in (*PRESET_NAMES, *scans) if p in scans}  # plain first
    # the scans' time (the other preset's, where it is in the file, as written with it)
    seconds = time.time() - t0 + (prev.get("seconds", 0) if set(scans) - {spec.preset} else 0)
    out = {
        "presets": scans,
        "command": "python -m experiments multistart" + (" --tiny" if spec.mode == "tiny" else ""),
        "engine": "reduced, width 10,000 (tiny: the TINY posterior engine)",
        "seconds": seconds,
    }
    path = write_json(path, out)
    print(multistart_table(out))
    print(f"[multistart] wrote {path} ({out['seconds']:.0f} s)")
    return out
