"""Does the exact MAP solver's single start find the lowest minimum? (linear attention)

    python -m experiments.multistart [--out docs]      # ~4 CPU-min: both presets, 10 seeds
    python -m experiments.multistart --tiny --out /tmp/x

The default reproduction fits linear attention once per run, from a prior draw of W^G
(``init_attention="prior"``). Here the same runs (same seeds, data and embeddings: width 10,000
through the reduced engine) are also started from the copy pattern with logits +-0.5, +-2 and
from zero logits; every start ends at a converged float64 minimum. Per P: how many seeds have a
start with lower U than the prior start, the largest U gap, and the seed-mean psi and r of the
prior start against the lowest-U start; per preset, P*_cG (max dpsi/dlog P) and psi = 1/2 of
both (per seed, geometric mean). Writes ``OUT/results/multistart_linear.json``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare.locate import locate_level, locate_max_slope

from .common import write_json
from .configs.posterior import QUICK, TINY
from .posterior import branch_config

#: the extra starts (the prior draw is the default reproduction's)
STARTS = {
    "prior": {},
    "copy+0.5": dict(init_attention="copy", init_copy_logit=0.5),
    "copy-0.5": dict(init_attention="copy", init_copy_logit=-0.5),
    "copy+2": dict(init_attention="copy", init_copy_logit=2.0),
    "copy-2": dict(init_attention="copy", init_copy_logit=-2.0),
    "zero": dict(init_attention="zero"),
}
#: P grids around each preset's linear transitions (EK P*_cG: plain 3.4, paper 2,125)
GRIDS = {
    "plain": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 32, 64],
    "paper": [128, 256, 512, 768, 1062, 1500, 2000, 2500, 3000, 4000, 6000],
}
#: a start "improves" on the prior start if its U is lower by more than this (float64 minima)
U_TOL = 1e-3


def _gmean(xs) -> float | None:
    xs = [x for x in xs if x]
    return math.exp(float(np.mean(np.log(xs)))) if xs else None


def locate(P, psi) -> dict:
    """Per seed P*_cG (max slope) and psi = 1/2, geometric mean over the seeds that locate."""
    P = np.asarray(P, float)
    ms = [locate_max_slope(P, psi[:, s]).P_star for s in range(psi.shape[1])]
    half = [locate_level(P, psi[:, s], 0.5).P_star for s in range(psi.shape[1])]
    return {"P_cG": _gmean(ms), "P_cG_n": sum(1 for x in ms if x),
            "P_cG_half": _gmean(half), "P_cG_half_n": sum(1 for x in half if x)}  # fmt: skip


def preset_scan(mc: dict, preset: str, P: list[int], n_seeds: int) -> dict:
    base = branch_config(mc, preset, "linear", P, None, n_seeds)
    res = {}
    for name, tr in STARTS.items():
        t0 = time.time()
        res[name] = ch.run_sweep(base.replace(train=tr) if tr else base, progress=False)
        print(f"[multistart] {preset} {name}: {time.time() - t0:.0f} s", flush=True)
    U = np.stack([r["U"] for r in res.values()])  # [start, P, seed]
    best = U.argmin(0)
    pick = lambda k: np.take_along_axis(np.stack([r[k] for r in res.values()]), best[None], 0)[0]  # noqa: E731
    gap = U[0] - U.min(0)
    conv = np.stack([r["converged"] for r in res.values()])
    return {
        "P": P, "n_seeds": n_seeds, "starts": list(STARTS),
        "seeds_improved": (gap > U_TOL).sum(1).tolist(), "max_U_gap": gap.max(1).tolist(),
        "best_start_counts": {n: int((best == i).sum()) for i, n in enumerate(STARTS)},
        # runs (P, seed) where each start reaches the lowest U (ties count for every start)
        "reaches_lowest": {n: int((U[i] - U.min(0) <= U_TOL).sum()) for i, n in enumerate(STARTS)},
        "reaches_lowest_pairs": {f"prior+{n}": int(((np.minimum(U[0], U[i]) - U.min(0)) <= U_TOL)
                                                   .sum()) for i, n in enumerate(STARTS) if i},
        "n_runs": int(U[0].size),
        "all_converged": bool(conv.all()),
        "psi_prior": res["prior"]["psi"].mean(1).tolist(), "psi_best": pick("psi").mean(1).tolist(),
        "r_prior": res["prior"]["r"].mean(1).tolist(), "r_best": pick("r").mean(1).tolist(),
        "located_prior": locate(P, res["prior"]["psi"]), "located_best": locate(P, pick("psi")),
    }  # fmt: skip


def _g(x) -> str:
    return "not located" if x is None else f"{x:.3g}"


def table(out: dict) -> str:
    lines = []
    for preset, d in out["presets"].items():
        lp, lb = d["located_prior"], d["located_best"]
        lines += [f"{preset}: P*_cG prior start {_g(lp['P_cG'])} ({lp['P_cG_n']} seeds), lowest U "
                  f"{_g(lb['P_cG'])} ({lb['P_cG_n']} seeds); psi = 1/2: {_g(lp['P_cG_half'])} "
                  f"({lp['P_cG_half_n']}) / {_g(lb['P_cG_half'])} ({lb['P_cG_half_n']})",
                  "| P | seeds improved | max U gap | psi prior / lowest U | r prior / lowest U |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for i, p in enumerate(d["P"]):
            lines.append(
                f"| {p} | {d['seeds_improved'][i]}/{d['n_seeds']} | {d['max_U_gap'][i]:.3g} | "
                f"{d['psi_prior'][i]:.3f} / {d['psi_best'][i]:.3f} | "
                f"{d['r_prior'][i]:.3f} / {d['r_best'][i]:.3f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(tiny: bool = False, out_dir: str | Path = "docs") -> dict:
    t0 = time.time()
    if tiny:
        scans = {"plain": preset_scan(TINY, "plain", [1, 2, 4, 8], 2)}
    else:
        scans = {p: preset_scan(QUICK, p, GRIDS[p], 10) for p in ("plain", "paper")}
    out = {"presets": scans, "command": "python -m experiments.multistart",
           "engine": "reduced, width 10,000 (tiny: the TINY posterior engine)",
           "seconds": time.time() - t0}  # fmt: skip
    name = "multistart_linear" + ("_tiny" if tiny else "")
    path = write_json(Path(out_dir) / "results" / f"{name}.json", out)
    print(table(out))
    print(f"[multistart] wrote {path} ({out['seconds']:.0f} s)")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-scale smoke run")
    ap.add_argument("--out", default="docs")
    a = ap.parse_args()
    main(a.tiny, a.out)
