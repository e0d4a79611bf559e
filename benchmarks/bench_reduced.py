"""The paper configuration on a CPU through the exact width reduction (docs/theory.md §2c).

    python benchmarks/bench_reduced.py [--quick]

Quenched protocol, paper preset (L = 25, V = 5, width 10,000, sigma^2 = chi = 30), 16 P x 10
seeds, both attentions:

1. the exact MAP of all 320 runs (float64 L-BFGS, ``engine='reduced'``), target < 60 s;
2. the default reduced posterior sampler (collapsed HMC, ``sampling.default_sampler``: 4 chains,
   2,000 steps softmax / 4,000 linear) on **one seed at P = 32 and 322** (``SAMPLE_P``), each
   P its own run, so that the cost per run is measured against P. Sampling all 320 runs (the old
   target "whole benchmark under 5 min") takes hours on this CPU; the script measures the per-run
   cost and extrapolates the 320-run total from a fit ``t = a + b P`` (labelled as extrapolated);
3. the full-width engine's time per run-epoch of Adam at width 10,000 (one run, a few epochs
   after compilation), next to README's H200 figure (1.3 ms per run-epoch).

Every time is given as wall and as process CPU time (user + system): the package runs XLA's
CPU pool with one thread on small machines (``_runtime``), so on a machine shared with other
jobs the CPU time is the better estimate of the idle wall time. The 1-minute load average is
recorded at start and end. Peak memory is the process's peak resident set size.

``--quick``: 4 seeds for the MAP and sampling at P = 32 only.
Writes ``benchmarks/results/bench_reduced.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import resource
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import default_sampler, run_sampler
from copyhead_jax.storage import environment

H200_MS_PER_RUN_EPOCH = 1.3  # README: benchmarks/gpu_paper_config.sh on one H200
SAMPLE_P = (32, 322)  # the sampler's per-run cost against P (one seed each)
QUICK_SAMPLE_P = (32,)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Clock:
    """Wall and CPU seconds of a ``with`` block."""

    def __enter__(self):
        self.t, self.c = time.perf_counter(), _cpu_s()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t, _cpu_s() - self.c


def paper_config(attention: str, **sweep) -> ch.Config:
    return ch.PAPER.replace(
        model=dict(attention=attention, engine="reduced", width=10_000),
        train=dict(train_embeddings=False),
        sweep=sweep,
    )


def full_width_ms(epochs: int = 3) -> float:
    """Adam at width 10,000 (full engine, quenched, P = 1000): ms per run-epoch after compile."""
    cfg = ch.PAPER.replace(
        train=dict(train_embeddings=False, log_every=epochs),
        solver=dict(max_epochs=2 * epochs, min_epochs=0),
        sweep=dict(P=(1000,), n_seeds=1, chunk_runs=1),
    )
    import jax

    from copyhead_jax.fit import Trainer, init_runs, run_segment, sweep_inputs

    tr = Trainer(cfg)
    inp = sweep_inputs(cfg, None)
    kinp = inp._replace(key=jax.random.wrap_key_data(inp.key))
    state = init_runs(tr, kinp)
    state, _ = run_segment(tr, state, kinp, 1)  # compile + first segment
    jax.block_until_ready(state.U)
    t0 = time.perf_counter()
    state, _ = run_segment(tr, state, kinp, 1)
    jax.block_until_ready(state.U)
    return (time.perf_counter() - t0) / epochs * 1e3


def exact_map(attention: str, n_seeds: int) -> dict:
    """All P x seeds of the paper grid, one call of the exact solver."""
    with Clock() as c:
        res = ch.run_sweep(paper_config(attention, n_seeds=n_seeds), progress=False)
    return dict(
        runs=int(res["U"].size),
        wall_s=c.wall,
        cpu_s=c.cpu,
        converged=int(np.sum(res["converged"])),
        max_rel_grad=float(np.max(res["rel_grad"])),
        min_eig_min=float(np.min(res["min_eig"])),
        solver_steps_median=float(np.median(res["stop_epoch"])),
    )


def sample_cost(attention: str, P_list) -> dict:
    """The default sampler on one run (seed 0) at each P of ``P_list``; P_list[0] twice, the
    second time from the compilation cache, so that ``compile_cpu_s`` is measured."""
    rows, fits = [], {}
    for i, P in enumerate([P_list[0], *P_list]):
        if P not in fits:  # the exact MAP to start from, once per P
            fits[P] = ch.run_sweep(
                paper_config(attention, P=(P,), n_seeds=1), progress=False, keep_params=True
            )
        res = fits[P]
        sg = default_sampler(res)
        with Clock() as c:
            post = run_sampler(res, sg, progress=False)
        names = post.order_names
        rows.append(
            dict(
                P=int(P),
                cached=i == 1,
                wall_s=c.wall,
                cpu_s=c.cpu,
                rhat_max=float(
                    np.nanmax(
                        [
                            np.nanmax(post[k])
                            for k in ("rhat", f"rhat_{names[0]}", f"rhat_{names[1]}")
                        ]
                    )
                ),
                ess_min=float(
                    np.nanmin(
                        [np.nanmin(post[k]) for k in ("ess", f"ess_{names[0]}", f"ess_{names[1]}")]
                    )
                ),
            )
        )
        print(attention, rows[-1], flush=True)
    first, again = rows[0], rows[1]
    steady = rows[1:]  # compiled program per shape: each P but the repeat compiles once
    compile_cpu = max(first["cpu_s"] - again["cpu_s"], 0.0)
    P = np.array([r["P"] for r in steady], float)
    run_cpu = np.array([r["cpu_s"] for r in steady]) - np.where(
        [r["cached"] for r in steady], 0.0, compile_cpu
    )
    return dict(
        sgld=dataclasses.asdict(sg),
        rows=rows,
        compile_cpu_s=compile_cpu,
        fit_P=P.tolist(),
        fit_run_cpu_s=run_cpu.tolist(),
    )


def extrapolate(cost: dict, P_grid, n_seeds: int, chunk_P: int = 2) -> float | None:
    """CPU seconds to sample every run of the grid: per-run cost ``a + b P`` fitted to the
    measured runs, plus one compilation per chunk of ``chunk_P`` P values (``run_sampler``'s
    default chunking of reduced sweeps)."""
    P, t = np.asarray(cost["fit_P"]), np.asarray(cost["fit_run_cpu_s"])
    if len(np.unique(P)) < 2:
        return None
    b, a = np.polyfit(P, t, 1)
    per_run = np.maximum(a + b * np.asarray(P_grid, float), 0.0)
    n_chunks = -(-len(P_grid) // chunk_P)
    return float(n_seeds * per_run.sum() + n_chunks * cost["compile_cpu_s"])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 seeds; sampling at P = 32 only")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_reduced.json"))
    args = ap.parse_args(argv)
    n_seeds = 4 if args.quick else 10
    P_sample = QUICK_SAMPLE_P if args.quick else SAMPLE_P
    load0 = os.getloadavg()[0]
    with Clock() as c_all:
        rows = {}
        for att in ("linear", "softmax"):
            rows[att] = dict(map=exact_map(att, n_seeds))
            print(att, rows[att]["map"], flush=True)
        for att in ("linear", "softmax"):
            rows[att]["sample"] = cost = sample_cost(att, P_sample)
            grid = ch.PAPER.sweep
            cost["extrapolated_runs"] = len(grid.P) * grid.n_seeds
            cost["extrapolated_cpu_s_all_runs"] = extrapolate(cost, grid.P, grid.n_seeds)
    ms = full_width_ms()
    maps = [r["map"] for r in rows.values()]
    out = dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        quick=args.quick,
        n_seeds=n_seeds,
        P=list(ch.PAPER.sweep.P),
        width=10_000,
        sample_P=list(P_sample),
        rows=rows,
        map_wall_s=sum(m["wall_s"] for m in maps),
        map_cpu_s=sum(m["cpu_s"] for m in maps),
        total_wall_s=c_all.wall,
        total_cpu_s=c_all.cpu,
        full_width_ms_per_run_epoch=ms,
        h200_ms_per_run_epoch=H200_MS_PER_RUN_EPOCH,
        peak_rss_mb=_rss_mb(),
        load=[load0, os.getloadavg()[0]],
        targets=dict(map_s=60.0, total_s=300.0),
        environment=environment(),
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(
        json.dumps(
            {
                k: out[k]
                for k in (
                    "map_wall_s",
                    "map_cpu_s",
                    "total_cpu_s",
                    "full_width_ms_per_run_epoch",
                    "peak_rss_mb",
                    "load",
                )
            }
        )
    )
    return out


if __name__ == "__main__":
    main()
