"""The paper configuration on one accelerator, in one program per chunk: width 10,000,
10 seeds x 16 values of P, the paper's Adam protocol; then a short SGLD run warm-started from a
small sweep that keeps its weights. Prints wall time, throughput and peak device memory, and
saves ``benchmarks/results/gpu_paper_config.json``.

    python benchmarks/gpu_paper_config.py [--max-epochs 2000] [--out benchmarks/results]

``--max-epochs`` caps the Adam protocol (the paper's early stopping needs at least its 2,000
warm-up epochs; the cap keeps one call inside a device lease). Only the public API is used.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.results import environment
from copyhead_jax.sample import run_sampler


def peak_bytes() -> int | None:
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-epochs", type=int, default=2000)
    ap.add_argument("--width", type=int, default=10_000)
    ap.add_argument("--sgld-steps", type=int, default=200)
    ap.add_argument("--out", default="benchmarks/results")
    a = ap.parse_args(argv)
    cfg = ch.PAPER.replace(
        model=dict(width=a.width),
        train=dict(max_epochs=a.max_epochs, min_epochs=min(2000, a.max_epochs)),
    )
    report: dict = {"environment": environment(), "width": a.width, "max_epochs": a.max_epochs}
    for att in ("softmax", "linear"):
        c = cfg.replace(model=dict(attention=att))
        t0 = time.perf_counter()
        res = ch.run_sweep(c, keep_params=False)
        wall = time.perf_counter() - t0
        run_epochs = float(np.sum(res["stop_epoch"]))
        report[att] = {
            "wall_s": wall,
            "runs": int(res["stop_epoch"].size),
            "chunk_runs": res.meta["chunk_runs"],
            "run_epochs": run_epochs,
            "run_epochs_per_s": run_epochs / wall,
            "peak_device_bytes": peak_bytes(),
            "finite": int(res["finite"].sum()),
            "summary": {k: np.asarray(v).tolist() for k, v in res.summary().items()
                        if k in ("P", "c1", "cG", "coverage", "train_loss", "stop_epoch")},
        }  # fmt: skip
        print(json.dumps({att: {k: v for k, v in report[att].items() if k != "summary"}}))
    # SGLD: a 2 P x 2 seed sweep keeps its weights to warm-start 2 chains per run
    small = cfg.replace(sweep=dict(P=(64, 512), n_seeds=2))
    fit = ch.run_sweep(small, keep_params=True)
    sg = ch.SGLDConfig(step_size=5e-10, n_steps=a.sgld_steps, burn_in=a.sgld_steps // 2,
                       thin=10, n_chains=2)  # fmt: skip
    t0 = time.perf_counter()
    post = run_sampler(fit, sg)
    wall = time.perf_counter() - t0
    report["sgld"] = {
        "wall_s": wall,
        "chain_steps_per_s": 4 * 2 * a.sgld_steps / wall,
        "peak_device_bytes": peak_bytes(),
        "finite_chains": int(post["finite"].sum()),
    }
    print(json.dumps({"sgld": report["sgld"]}))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_paper_config.json").write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
