"""The paper configuration's whole posterior sweep stopping when enough: its CPU cost, measured on
a subset of P and scaled to every run.

    python benchmarks/bench_paper_posterior.py [--P 4 64 322 1000] [--target 400] [--round 125]
        [--attention linear softmax] [--seeds 1] [--n-warmup N] [--n-adapt N]
        [--n-leapfrog N] [--target-accept A] [--pooled-adaptation] [--out FILE]

The paper preset (L = 25, V = 5, width 10,000 quenched through the exact reduction; 16 P x 10
seeds, both heads). Each measured run is sampled by its head's default collapsed HMC
(``default_sampler``; ``--n-warmup``, ``--n-adapt`` replace its warm-up and adaptation
lengths, ``--n-leapfrog`` its leapfrog steps per transition, ``--target-accept`` its step's
acceptance target, ``--pooled-adaptation`` shares one adaptation among a start group's
chains) with ``ess_target`` (ESS >= ``--target`` on U and both order parameters, split
R-hat <= 1.01, rounds of ``--round`` iterations, the fixed length as the cap), ``--seeds``
seeds at each ``--P``, each P its own ``run_sampler`` call, twice: the repeat reuses the
compiled programs and draws the same chains, so it measures the runs and the fresh call less
the repeat one compilation at that P (the first P's also holds the process's one-time costs:
an over-count). Times are the process's CPU seconds (on a shared machine a better
estimate of the idle wall time than the wall clock: one BLAS and XLA thread per process).

**Scaling to the 320 runs** the way ``run_sampler`` runs them: chunks of two P values x 10 seeds,
each trimmed to its larger P (padding rows cost as much as data), compiled once; each run of a
chunk stops in the round it meets the target, and the chunk's runs are mapped one after the
other (every chunk of this grid: ``chains.batch_chains``), so a stopped run costs nothing more.
A chunk costs 20 x the mean per-run cost at its larger P plus one compilation there (both
interpolated linearly in P between the measured P, held at the end values outside them: the cost
grows with P, so below the smallest measured P this over-counts). The per-run cost at a measured
P is the repeat's CPU over its seeds, the mean of their rounds; where that call's few runs are
small enough to run batched (P <= 157 / seeds: ``chains.batch_chains``) they go on together
until the last meets the target, an over-count. Seeds differ in the rounds they need, so the
scaled total is an estimate whose error shrinks with ``--seeds``; the cap bounds it above (the
fixed length, ``benchmarks/bench_reduced.py``). Target: <= 2 CPU-hours for both heads,
ESS >= 400 on every run.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import default_sampler, run_sampler
from copyhead_jax.storage import environment

sys.path.insert(0, str(Path(__file__).parent))
from bench_reduced import paper_config  # noqa: E402
from bench_rounds import cpu, per_run  # noqa: E402

TARGET_CPU_H = 2.0
CHUNK_P = 2  # P values per compiled chunk (CollapsedHMC.chunk_runs)


def measure(attention: str, P_list, seeds: int, target: float, round_iter: int, **changes) -> dict:
    """Sampling cost of ``seeds`` runs at each P (module docstring): every P sampled twice, the
    repeat's CPU the runs', the fresh call's less the repeat's one compilation."""
    rows, fits = [], {}
    calls = [P for P in P_list for _ in range(2)]
    for i, P in enumerate(calls):
        if P not in fits:  # the exact MAP the chains start from
            fits[P] = ch.run_sweep(
                paper_config(attention, P=(P,), n_seeds=seeds), progress=False, keep_params=True
            )
        mc = dataclasses.replace(
            default_sampler(fits[P]), ess_target=target, round_iter=round_iter, **changes
        )
        c0, t0 = cpu(), time.time()
        post = run_sampler(fits[P], mc, progress=False)
        row = dict(
            P=int(P),
            repeat=P in calls[:i],
            cpu_s=cpu() - c0,
            wall_s=time.time() - t0,
            load=os.getloadavg()[0],
            runs=per_run(post, post.order_names),
        )
        rows.append(row)
        met = sum(bool(r.get("target_met")) for r in row["runs"])
        print(
            f"{attention} P={P}: {row['cpu_s']:.0f} CPU-s, draws/chain "
            f"{[r['draws'] for r in row['runs']]}, met {met}/{seeds}"
            + (" (compiled before)" if row["repeat"] else ""),
            flush=True,
        )
    fresh = {r["P"]: r["cpu_s"] for r in rows if not r["repeat"]}
    again = {r["P"]: r["cpu_s"] for r in rows if r["repeat"]}
    compile_at = [max(fresh[P] - again[P], 0.0) for P in P_list]
    per_run_cpu = [again[P] / seeds for P in P_list]
    return dict(
        sampler=dataclasses.asdict(mc),
        rows=rows,
        compile_cpu_s=float(np.mean(compile_at)),
        compile_cpu_s_at=compile_at,
        fit_P=list(P_list),
        per_run_cpu_s=per_run_cpu,
        all_met=all(bool(r.get("target_met")) for row in rows for r in row["runs"]),
    )


def scale(m: dict, P_grid, n_seeds: int) -> float:
    """CPU seconds of every run of the grid, chunked as ``run_sampler`` does (docstring)."""
    P = np.asarray(m["fit_P"], float)
    order = np.argsort(P)
    cost = lambda p: float(np.interp(p, P[order], np.asarray(m["per_run_cpu_s"])[order]))  # noqa: E731
    comp = lambda p: float(np.interp(p, P[order], np.asarray(m["compile_cpu_s_at"])[order]))  # noqa: E731
    grid = sorted(P_grid)
    chunks = [grid[i : i + CHUNK_P] for i in range(0, len(grid), CHUNK_P)]
    return sum(len(c) * n_seeds * cost(max(c)) + comp(max(c)) for c in chunks)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[4, 64, 322, 1000])
    ap.add_argument("--attention", nargs="+", default=["linear", "softmax"])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--target", type=float, default=400.0)
    ap.add_argument("--round", type=int, default=125)
    ap.add_argument("--n-warmup", type=int, default=None)
    ap.add_argument("--n-adapt", type=int, default=None)
    ap.add_argument("--n-leapfrog", type=int, default=None)
    ap.add_argument("--target-accept", type=float, default=None)
    ap.add_argument("--pooled-adaptation", action="store_true")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parent / "results" / "bench_paper_posterior.json",
    )
    a = ap.parse_args(argv)
    load0 = os.getloadavg()
    grid = ch.PAPER.sweep
    heads = {}
    lengths = (
        ("n_warmup", a.n_warmup),
        ("n_adapt", a.n_adapt),
        ("n_leapfrog", a.n_leapfrog),
        ("target_accept", a.target_accept),
    )
    changes = {k: v for k, v in lengths if v is not None}  # 0 is a length too
    if a.pooled_adaptation:
        changes["pooled_adaptation"] = True
    for att in a.attention:
        heads[att] = m = measure(att, a.P, a.seeds, a.target, a.round, **changes)
        m["scaled_cpu_s"] = scale(m, grid.P, grid.n_seeds)
        print(f"{att}: all 320/2 runs ~{m['scaled_cpu_s'] / 3600:.2f} CPU-h (scaled)", flush=True)
    total_h = sum(m["scaled_cpu_s"] for m in heads.values()) / 3600
    out = dict(
        benchmark="bench_paper_posterior",
        measured=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        command=" ".join(
            [
                "python benchmarks/bench_paper_posterior.py",
                *(sys.argv[1:] if argv is None else argv),
            ]
        ),
        config=dict(
            L=ch.PAPER.task.L,
            V=ch.PAPER.task.V,
            P_grid=list(grid.P),
            n_seeds=grid.n_seeds,
            width=10_000,
            measured_P=a.P,
            measured_seeds=a.seeds,
            changes=changes,
        ),
        target=dict(ess=a.target, cpu_h=TARGET_CPU_H),
        heads=heads,
        scaled_total_cpu_h=total_h,
        met=bool(total_h <= TARGET_CPU_H and all(m["all_met"] for m in heads.values())),
        load_average=dict(start=load0, end=os.getloadavg()),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        environment=environment(),
    )
    print(
        f"both heads, {len(grid.P)} P x {grid.n_seeds} seeds: ~{total_h:.2f} CPU-h scaled "
        f"(target <= {TARGET_CPU_H:g}); every measured run met ESS >= {a.target:g}: "
        f"{all(m['all_met'] for m in heads.values())}; load {load0[0]:.1f} - "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1, default=float) + "\n")
    return out


if __name__ == "__main__":
    main()
