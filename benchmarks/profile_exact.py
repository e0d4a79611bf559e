"""Where the exact MAP solver's time goes (issue 11, item 7).

    python benchmarks/profile_exact.py [--attention softmax] [--P 300] [--seeds 10]

One P x n seeds of the paper configuration (quenched, reduced engine, width 10,000): the sweep's
wall time, then compile vs execution of the chunk program, per-run solver steps, objective
evaluations, and the cost of one value-and-gradient and of the Lanczos certificate.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import copyhead_jax as ch


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--attention", default="softmax")
    ap.add_argument("--P", type=int, nargs="+", default=[300], help="0: the paper's 16 P")
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args(argv)
    cfg = ch.PAPER.replace(
        model=dict(attention=args.attention, engine="reduced", width=10000),
        train=dict(train_embeddings=False, solver="exact"),
        sweep=dict(n_seeds=args.seeds) | ({} if args.P == [0] else dict(P=tuple(args.P))),
    )
    t, c = time.perf_counter(), time.process_time()
    r = ch.run_sweep(cfg, progress=False)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    a = r.arrays
    print(f"{args.attention} P={args.P} x {args.seeds}: sweep {wall:.2f} s (CPU {cpu:.2f} s)")
    for k in ("stop_epoch", "rel_grad", "min_eig", "converged", "U"):
        v = np.asarray(a[k])
        print(f"  {k}: {v.ravel()[:10]}")
    t, c = time.perf_counter(), time.process_time()
    marks = []
    on_chunk = lambda i, n: marks.append((time.perf_counter(), time.process_time()))
    r = ch.run_sweep(cfg, progress=False, on_chunk=on_chunk)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    prev = (t, c)
    for P, m in zip(cfg.sweep.P, marks):
        print(f"  chunk P={P}: {m[0] - prev[0]:.2f} s (CPU {m[1] - prev[1]:.2f} s)")
        prev = m
    print(f"  second call (cached compile): {wall:.2f} s (CPU {cpu:.2f} s)")
    return r


if __name__ == "__main__":
    main()
