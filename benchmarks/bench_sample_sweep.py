"""Sampling a whole sweep in one compiled program versus run by run (same program, one run per
chunk), with the roofline efficiency of the fused sampler.

    python benchmarks/bench_sample_sweep.py [--quick]

``--quick``: 100 SGLD steps per chain instead of 200, best of 2 rounds instead of 3.

The roofline lower bound per chain-step uses ``bench_sweep.model_counts`` (the FLOPs and bytes of
one training step of the same model: the data term forward + backward and the weight-side
products; its Adam part is small at these widths), against this machine's measured peaks.
Writes ``benchmarks/results/bench_sample_sweep.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import run_sampler
from copyhead_jax.storage import environment

sys.path.insert(0, str(Path(__file__).parent))
from bench_sweep import machine_peaks, model_counts, roofline_seconds  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = ap.parse_args(argv)
    n_steps, rounds = (100, 2) if args.quick else (200, 3)
    cfg = ch.SMALL.replace(
        model=dict(width=64, attention="softmax"),
        solver=dict(max_epochs=40, min_epochs=40),
        sweep=dict(P=(16, 32, 64, 128), n_seeds=4),
    )
    sweep = ch.run_sweep(cfg, progress=False, keep_params=True)
    sg = ch.SGLDConfig(step_size=1e-4, n_steps=n_steps, burn_in=n_steps // 2, thin=10, n_chains=4)
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    chunks = {"fused": n_runs, "run_by_run": 1}
    n_warn = 0

    def sample(chunk):  # chain-health warnings of these short chains are expected: count them
        nonlocal n_warn
        with contextlib.redirect_stderr(io.StringIO()):
            post = run_sampler(sweep, sg, progress=False, chunk_runs=chunk)
        n_warn = len(post.meta["warnings"])

    for chunk in chunks.values():
        sample(chunk)  # compile
    times = {name: np.inf for name in chunks}
    for _ in range(rounds):  # interleaved: a change of load hits both alike
        for name, chunk in chunks.items():
            t0 = time.perf_counter()
            sample(chunk)
            times[name] = min(times[name], time.perf_counter() - t0)
    print(f"{n_warn} chain-health warnings per sampling call (short benchmark chains)")
    chain_steps = n_runs * sg.n_chains * sg.n_steps
    peaks = machine_peaks(quick=True)
    bound = roofline_seconds(model_counts(cfg, cfg.sweep.P_max), peaks)
    out = {
        "kind": "copyhead_jax.bench_sample_sweep",
        "environment": environment(),
        "quick": args.quick,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "config": {
            "width": 64,
            "L": 25,
            "V": 5,
            "P_max": cfg.sweep.P_max,
            "runs": n_runs,
            "chains": sg.n_chains,
            "steps": sg.n_steps,
        },
        "seconds": times,
        "fused_over_run_by_run": times["run_by_run"] / times["fused"],
        "chain_steps_per_s_fused": chain_steps / times["fused"],
        "roofline_eff_fused": bound * chain_steps / times["fused"],
        "peaks": {k: peaks[k] for k in ("peak_flops", "peak_bandwidth")},
        "chain_health_warnings": n_warn,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024
        / (1024 if sys.platform == "darwin" else 1),
    }
    print(json.dumps({k: v for k, v in out.items() if k != "environment"}, indent=1))
    path = Path(__file__).parent / "results" / "bench_sample_sweep.json"
    path.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
