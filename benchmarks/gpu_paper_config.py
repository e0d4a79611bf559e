"""The paper configuration on one accelerator, in one program per chunk: width 10,000,
10 seeds x 16 values of P, the paper's Adam protocol; then a short SGLD run warm-started from a
small sweep that keeps its weights. Prints wall time, throughput and peak device memory, and
saves ``gpu_paper_config.json`` after every stage (a stage that fails is recorded, the next runs).

    python benchmarks/gpu_paper_config.py [--max-epochs 300] [--out benchmarks/results]

``--max-epochs`` caps the Adam protocol so that one call fits a device lease: the throughput
(run-epochs per second, measured on the chunks after the first, i.e. without compilation)
extrapolates to the full protocol, whose early stopping needs at least 2,000 epochs.
``--deadline-s`` stops starting new stages once that much wall time has passed.
Only the public API is used.
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from pathlib import Path

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import run_sampler
from copyhead_jax.storage import environment


def peak_bytes() -> int | None:
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def train_stage(cfg, attention: str) -> dict:
    """One sweep of the paper grid; per-chunk wall times separate compilation from steady state."""
    c = cfg.replace(model=dict(attention=attention))
    stamps = [time.perf_counter()]
    res = ch.run_sweep(
        c, keep_params=False, on_chunk=lambda i, n: stamps.append(time.perf_counter())
    )
    wall = time.perf_counter() - stamps[0]
    chunk_s = np.diff(stamps)
    C = res.meta["chunk_runs"]
    steady = chunk_s[1:] if len(chunk_s) > 1 else chunk_s
    epochs = np.asarray(res["stop_epoch"], float).ravel()
    out = {
        "wall_s": wall,
        "runs": int(epochs.size),
        "chunk_runs": C,
        "n_chunks": res.meta["n_chunks"],
        "chunk_wall_s": chunk_s.tolist(),
        "first_chunk_minus_steady_s (compile)": float(chunk_s[0] - np.median(steady)),
        "run_epochs": float(epochs.sum()),
        # every run of a chunk steps until the chunk's last run stops: count the chunk's epochs
        "steady_run_epochs_per_s": float(C * c.solver.max_epochs / np.median(steady)),
        "steady_ms_per_run_epoch": float(1e3 * np.median(steady) / (C * c.solver.max_epochs)),
        "peak_device_bytes": peak_bytes(),
        "finite": int(np.asarray(res["finite"]).sum()),
        "summary": {
            k: np.asarray(v).tolist()
            for k, v in res.summary().items()
            if k in ("P", "c1", "cG", "aG", "coverage", "train_loss", "stop_epoch")
        },
    }
    return out


def sgld_stage(cfg, steps: int) -> dict:
    small = cfg.replace(sweep=dict(P=(64, 512), n_seeds=2))
    fit = ch.run_sweep(small, keep_params=True)
    sg = ch.SGLDConfig(step_size=5e-10, n_steps=steps, burn_in=steps // 2, thin=10, n_chains=2)
    t0 = time.perf_counter()
    post = run_sampler(fit, sg)
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "chains": 4 * 2,
        "steps": steps,
        "chain_steps_per_s_incl_compile": 4 * 2 * steps / wall,
        "peak_device_bytes": peak_bytes(),
        "finite_chains": int(np.asarray(post["finite"]).sum()),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-epochs", type=int, default=300)
    ap.add_argument("--width", type=int, default=10_000)
    ap.add_argument("--sgld-steps", type=int, default=200)
    ap.add_argument("--deadline-s", type=float, default=420.0)
    ap.add_argument("--stages", nargs="+", default=["softmax", "linear", "sgld"])
    ap.add_argument("--out", default="benchmarks/results")
    a = ap.parse_args(argv)
    cfg = ch.PAPER.replace(
        model=dict(width=a.width),
        solver=dict(max_epochs=a.max_epochs, min_epochs=min(2000, a.max_epochs)),
    )
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "environment": environment(),
        "device": str(jax.devices()[0].device_kind),
        "width": a.width,
        "grid": {"P": list(cfg.sweep.P), "n_seeds": cfg.sweep.n_seeds},
        "max_epochs": a.max_epochs,
        "note": "epochs capped to fit a 15-minute device lease; throughput extrapolates",
    }
    t_start = time.perf_counter()
    for stage in a.stages:
        if time.perf_counter() - t_start > a.deadline_s:
            report[stage] = {"skipped": f"deadline {a.deadline_s} s passed"}
            continue
        try:
            if stage == "sgld":
                report[stage] = sgld_stage(cfg, a.sgld_steps)
            else:
                report[stage] = train_stage(cfg, stage)
        except Exception as e:  # record and go on: one stage's failure keeps the others
            report[stage] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        shown = {k: v for k, v in report[stage].items() if k not in ("summary", "trace")}
        print(json.dumps({stage: shown}), flush=True)
        (out / "gpu_paper_config.json").write_text(json.dumps(report, indent=1))
    report["total_wall_s"] = time.perf_counter() - t_start
    (out / "gpu_paper_config.json").write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
