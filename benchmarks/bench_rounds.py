"""Stopping when enough against the fixed length: draws and CPU-seconds of the collapsed HMC on
one small configuration, with the posterior means each gives.

The same reduced sweep (the ``paper-map`` preset: L = 25, V = 5, width 10,000 quenched, exact
MAP; one seed, default P = 32 and 100) is sampled twice by ``run_sampler``: with the default
sampler of its head (``default_sampler``: fixed length, 1,500 HMC iterations for softmax, 3,500
for linear) and with
the same sampler stopping when enough (``ess_target``, default 400 on U and both order
parameters, split R-hat <= 1.01, rounds of ``--round`` iterations, the fixed length as the cap).
Per run: draws per chain, the smallest ESS and largest R-hat of the three, the posterior means
of the order parameters with their MCSE (``run_mean``) and the difference of the two runs' means
in units of their combined MCSE. Per sampler: the process's CPU seconds of ``run_sampler``
(compilation included: each sampler compiles its own programs, the rounds two) and its wall
time; with ``--repeat N`` each sampler runs N times and the fastest later call (compiled
programs reused: the same numbers) is reported too, as ``cpu_s_warm``. Load average before and
after and the peak RSS are recorded.

    python benchmarks/bench_rounds.py [--attention softmax|linear] [--P 32 100]
        [--target 400] [--round 250] [--repeat 1] [--out benchmarks/results/bench_rounds.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import resource
import sys
import time
from pathlib import Path

import copyhead_jax as ch
from copyhead_jax.sampling import default_sampler, run_mean, run_sampler


def cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def sample(sweep, mc) -> tuple[dict, object]:
    c0, t0 = cpu(), time.time()
    post = run_sampler(sweep, mc, progress=False)
    timing = {"cpu_s": cpu() - c0, "wall_s": time.time() - t0}
    return timing, post


def per_run(post, names) -> list[dict]:
    """One row per run (every P and seed): draws per chain, the smallest ESS and largest R-hat
    reached, the flags, and each order parameter's mean with its MCSE."""
    a = post.arrays
    n = a["n_draws"]
    out = []
    means = {k: run_mean(post, k) for k in names}
    for i, P in enumerate(post.P):
        for j in range(n.shape[1]):
            row = {
                "P": int(P),
                "seed": j,
                "draws": int(n[i, j]),
                "ess_min": float(a["ess_reached"][i, j]),
                "rhat_max": float(a["rhat_reached"][i, j]),
                "flagged": bool(a["flagged"][i, j]),
            }
            if "target_met" in a:
                row["target_met"] = bool(a["target_met"][i, j])
            for k in names:
                m, se, _ = means[k]
                row[k] = {"mean": float(m[i, j]), "mcse": float(se[i, j])}
            out.append(row)
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--attention", choices=("softmax", "linear"), default="softmax")
    p.add_argument("--P", type=int, nargs="+", default=[32, 100])
    p.add_argument("--target", type=float, default=400.0)
    p.add_argument("--round", type=int, default=250)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "bench_rounds.json"
    )
    a = p.parse_args(argv)
    load0 = os.getloadavg()
    cfg = ch.preset("paper-map").replace(
        model=dict(attention=a.attention), sweep=dict(P=tuple(a.P), n_seeds=1)
    )
    t0 = time.time()
    sweep = ch.run_sweep(cfg, progress=False, keep_params=True)
    fit_s = time.time() - t0
    fixed = default_sampler(sweep)
    enough = dataclasses.replace(fixed, ess_target=a.target, round_iter=a.round)
    res = {}
    for label, mc in (("fixed", fixed), ("enough", enough)):
        timing, post = sample(sweep, mc)
        warm = [sample(sweep, mc)[0] for _ in range(a.repeat - 1)]
        if warm:
            timing["cpu_s_warm"] = min(w["cpu_s"] for w in warm)
            timing["wall_s_warm"] = min(w["wall_s"] for w in warm)
        res[label] = {
            "sampler": dataclasses.asdict(mc),
            **timing,
            "runs": per_run(post, post.order_names),
        }
        print(
            f"{label}: {timing['cpu_s']:.0f} CPU-s, {timing['wall_s']:.0f} s wall"
            + (f"; again {timing['cpu_s_warm']:.0f} CPU-s" if warm else ""),
            flush=True,
        )
    for rf, re_ in zip(res["fixed"]["runs"], res["enough"]["runs"]):
        for k in res["fixed"]["runs"][0]:
            if isinstance(rf[k], dict):
                d = re_[k]["mean"] - rf[k]["mean"]
                re_[k]["z_vs_fixed"] = d / math.hypot(re_[k]["mcse"], rf[k]["mcse"])
    result = {
        "benchmark": "bench_rounds",
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(
            ["python benchmarks/bench_rounds.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "config": {
            "attention": a.attention,
            "L": cfg.task.L,
            "V": cfg.task.V,
            "P": a.P,
            "width": cfg.model.width,
            "seeds": 1,
        },
        "fit_wall_s": fit_s,
        **res,
        "cpu_ratio": res["fixed"]["cpu_s"] / res["enough"]["cpu_s"],
        "cpu_ratio_warm": (
            res["fixed"]["cpu_s_warm"] / res["enough"]["cpu_s_warm"] if a.repeat > 1 else None
        ),
        "load_average": {"start": load0, "end": os.getloadavg()},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(table(result))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    return result


def table(r: dict) -> str:
    """One markdown row per run and sampler."""
    lines = [
        "| sampler | P | draws/chain | min ESS | max R-hat | met | means (z vs fixed) | "
        "CPU-s (all runs) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label in ("fixed", "enough"):
        for row in r[label]["runs"]:
            ms = ", ".join(
                f"{k} {v['mean']:.3f}+-{v['mcse']:.3f}"
                + (f" ({v['z_vs_fixed']:+.1f})" if "z_vs_fixed" in v else "")
                for k, v in row.items()
                if isinstance(v, dict)
            )
            met = {True: "yes", False: "no"}.get(row.get("target_met"), "-")
            lines.append(
                f"| {label} | {row['P']} | {row['draws']} | {row['ess_min']:.0f} | "
                f"{row['rhat_max']:.3f} | {met} | {ms} | {r[label]['cpu_s']:.0f} |"
            )
    la = r["load_average"]
    warm = r.get("cpu_ratio_warm")
    lines.append(
        f"\nfixed / enough CPU: {r['cpu_ratio']:.2f}x with compilation"
        + (
            f", {warm:.2f}x compiled ({r['fixed']['cpu_s_warm']:.0f} / "
            f"{r['enough']['cpu_s_warm']:.0f} CPU-s)"
            if warm
            else ""
        )
        + f"; load {la['start'][0]:.1f} - {la['end'][0]:.1f}; peak RSS "
        f"{r['peak_rss_mb']:.0f} MB"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
