"""The paper configuration on a CPU through the exact width reduction (THEORY.md §2c).

    python benchmarks/bench_reduced.py [--quick]

Quenched protocol, paper preset (L = 25, V = 5, width 10,000, sigma^2 = chi = 30), 16 P x 10
seeds, both attentions: the exact MAP of all runs (float64 L-BFGS, ``engine='reduced'``), then
the default reduced SGLD (4 chains x ``n_steps`` per run, whitened). Next to it, measured in this
same process, the full-width engine's time per run-epoch of Adam at width 10,000 (one run, a few
epochs after compilation), and README's H200 figure (1.3 ms per run-epoch). Peak memory is the
process's peak resident set size. Targets (issue 11): the MAP in under 60 s, the whole
benchmark under 5 min on a 2-core CPU.

``--quick``: 4 seeds and 1,000 SGLD steps (the P grid and the widths are the paper's).
Writes ``benchmarks/results/bench_reduced.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import resource
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.results import environment
from copyhead_jax.sample import REDUCED_SGLD, run_sampler

H200_MS_PER_RUN_EPOCH = 1.3  # README: benchmarks/gpu_paper_config.sh on one H200


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def full_width_ms(epochs: int = 3) -> float:
    """Adam at width 10,000 (full engine, quenched, P = 1000): ms per run-epoch after compile."""
    cfg = ch.PAPER.replace(
        train=dict(train_embeddings=False, max_epochs=2 * epochs, min_epochs=0, log_every=epochs),
        sweep=dict(P=(1000,), n_seeds=1, chunk_runs=1),
    )
    import jax

    from copyhead_jax.sweep import _all_inputs
    from copyhead_jax.train import Trainer, init_runs, run_segment

    tr = Trainer(cfg)
    inp = _all_inputs(cfg, None)
    kinp = inp._replace(key=jax.random.wrap_key_data(inp.key))
    state = init_runs(tr, kinp)
    state, _ = run_segment(tr, state, kinp, 1)  # compile + first segment
    jax.block_until_ready(state.U)
    t0 = time.perf_counter()
    state, _ = run_segment(tr, state, kinp, 1)
    jax.block_until_ready(state.U)
    return (time.perf_counter() - t0) / epochs * 1e3


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 seeds, 1,000 SGLD steps")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_reduced.json"))
    args = ap.parse_args(argv)
    n_seeds = 4 if args.quick else 10
    sgld = REDUCED_SGLD
    if args.quick:
        sgld = dataclasses.replace(sgld, n_steps=1000, burn_in=200, thin=10)
    t_all = time.perf_counter()
    rows = {}
    for att in ("linear", "softmax"):
        cfg = ch.PAPER.replace(
            model=dict(attention=att, engine="reduced", width=10_000),
            train=dict(train_embeddings=False),
            sweep=dict(n_seeds=n_seeds),
        )
        t0 = time.perf_counter()
        res = ch.run_sweep(cfg, progress=False, keep_params=True)
        t_map = time.perf_counter() - t0
        t0 = time.perf_counter()
        post = run_sampler(res, sgld, progress=False)
        t_sgld = time.perf_counter() - t0
        rows[att] = dict(
            runs=int(res["U"].size), map_s=t_map, sgld_s=t_sgld,
            converged=int(np.sum(res["converged"])),
            max_rel_grad=float(np.max(res["rel_grad"])),
            min_eig_min=float(np.min(res["min_eig"])),
            solver_steps_median=float(np.median(res["stop_epoch"])),
            rhat_max=float(np.nanmax(post["rhat"])), ess_min=float(np.nanmin(post["ess"])),
            rhat_cG_max=float(np.nanmax(post["rhat_cG"])),
            ess_cG_min=float(np.nanmin(post["ess_cG"])),
        )  # fmt: skip
        print(att, rows[att], flush=True)
    total = time.perf_counter() - t_all
    ms = full_width_ms()
    out = dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        quick=args.quick, n_seeds=n_seeds, P=list(ch.PAPER.sweep.P), width=10_000,
        sgld=dataclasses.asdict(sgld), rows=rows, total_s=total,
        map_s=sum(r["map_s"] for r in rows.values()),
        full_width_ms_per_run_epoch=ms, h200_ms_per_run_epoch=H200_MS_PER_RUN_EPOCH,
        peak_rss_mb=_rss_mb(), targets=dict(map_s=60.0, total_s=300.0),
        environment=environment(),
    )  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: out[k] for k in ("map_s", "total_s", "full_width_ms_per_run_epoch",
                                          "peak_rss_mb")}))  # fmt: skip
    return out


if __name__ == "__main__":
    main()
