"""The free-energy profile's windows sampled until they mix against the old fixed length: CPU
seconds, draws and flagged windows per probe, and the P* each gives, on one configuration.

``profile_transition`` (``copyhead transition``'s default method) runs twice on the same seed
and probes (default plain L = 15, V = 7, width inf, seed 0, P = 52 and 53: the two probes that
bracket its P*): once with every window at the fixed length of 200 iterations (``ess_target =
0``, the default before windows stopped when enough) and once at the default (rounds of 100
iterations until each window's ESS of a_G and U is >= 50 and split R-hat <= 1.1, the bar below
which the profile flags a window; each window stops on its own; cap 1,000). No MAP switch (not
part of the profile's cost). Per run: the process's CPU seconds (compilation included; the
second run compiles its own round programs), per probe the CPU seconds, the windows' draws per
chain (min, max), the smallest window ESS, the largest R-hat, the flagged windows, and the
seed's P* with its Monte-Carlo error. Load average before and after and the peak RSS are
recorded: a ratio is quoted only from an idle rerun.

    python benchmarks/bench_profile.py [--L 15] [--V 7] [--probes 52 53] [--seed 0]
        [--out benchmarks/results/bench_profile.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import resource
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.storage import write_json
from copyhead_jax.transition import (
    FIXED_WINDOW_ITERS,
    PROFILE_UMBRELLA,
    SearchSettings,
    default_profile_settings,
    profile_transition,
)


def cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run(cfg, probes, umbrella, seed: int) -> dict:
    ss = SearchSettings(
        probes=tuple(probes),
        max_probes=len(probes),
        map_switch=False,
        profile=default_profile_settings(cfg.task.L, umbrella=umbrella),
    )
    c0, t0 = cpu(), time.time()
    res = profile_transition(cfg, n_seeds=1, settings=ss, seed=seed, progress=False)
    s = res["seeds"][0]
    rows = []
    for P, prof in s["profiles"].items():
        w = prof["windows"]
        rows.append(
            {
                "P": int(P),
                "cpu_s": round(s["cpu"][P], 1),
                "draws": [int(min(w["n_draws"])), int(max(w["n_draws"]))],
                "ess_min": round(float(np.min(np.minimum(w["ess"], w["ess_U"]))), 1),
                "rhat_max": round(float(np.max(np.maximum(w["rhat"], w["rhat_U"]))), 3),
                "windows": len(w["n_draws"]),
                "flagged": len(prof["flagged"]),
            }
        )
    cr = s.get("crossing") or {}
    return {
        "cpu_s": round(cpu() - c0, 1),
        "wall_s": round(time.time() - t0, 1),
        "P_star": s["P_star"],
        "err_mc_log": cr.get("err_mc"),
        "verdict": s["verdict"],
        "probes": rows,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, default=15)
    ap.add_argument("--V", type=int, default=7)
    ap.add_argument("--probes", type=int, nargs="+", default=[52, 53])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "bench_profile.json"
    )
    args = ap.parse_args(argv)
    cfg = ch.preset("plain").replace(
        task=dict(L=args.L, V=args.V),
        model=dict(width=float("inf"), attention="softmax", engine="reduced"),
        train=dict(train_embeddings=False),
    )
    load0 = os.getloadavg()
    fixed = dataclasses.replace(PROFILE_UMBRELLA, ess_target=0.0, n_iter=FIXED_WINDOW_ITERS)
    out = {
        "fixed_200": run(cfg, args.probes, fixed, args.seed),
        "until_mixed": run(cfg, args.probes, PROFILE_UMBRELLA, args.seed),
    }
    out["cpu_ratio_fixed_over_until_mixed"] = round(
        out["fixed_200"]["cpu_s"] / out["until_mixed"]["cpu_s"], 2
    )
    out.update(
        config={
            "preset": "plain",
            "L": args.L,
            "V": args.V,
            "width": "inf",
            "probes": args.probes,
            "seed": args.seed,
        },
        load_before=load0,
        load_after=os.getloadavg(),
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        cpus=os.cpu_count(),
        date=datetime.date.today().isoformat(),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, out)
    for k in ("fixed_200", "until_mixed"):
        r = out[k]
        print(
            f"{k}: {r['cpu_s']} CPU-s, P* {r['P_star']}, "
            + "; ".join(
                f"P={p['P']} {p['cpu_s']} CPU-s draws {p['draws']} ESS>={p['ess_min']} "
                f"R-hat<={p['rhat_max']} flagged {p['flagged']}/{p['windows']}"
                for p in r["probes"]
            )
        )
    print(
        f"CPU ratio fixed / until mixed: {out['cpu_ratio_fixed_over_until_mixed']} "
        f"(load {load0[0]:.1f} -> {out['load_after'][0]:.1f}); wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
