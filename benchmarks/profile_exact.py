"""Where the exact MAP solver's time goes.

    python benchmarks/profile_exact.py [--attention linear softmax] [--P 300 | --P 0] [--seeds 10]
        [--again]

The paper configuration (quenched, reduced engine, width 10,000; ``--P 0``: its 16 P values):
each attention's sweep in this one process (as ``bench_reduced.py`` runs them), with wall and
CPU seconds (the CPU time is the useful number on a shared machine: the solver runs on one
thread), the solver's steps, and with ``--again`` a second identical sweep (compiled programs
cached: execution only) timed chunk by chunk.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import copyhead_jax as ch


def _clock():
    return time.perf_counter(), time.process_time()


def _since(t0) -> str:
    w, c = _clock()
    return f"{w - t0[0]:.2f} s (CPU {c - t0[1]:.2f} s)"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--attention", nargs="+", default=["linear", "softmax"])
    ap.add_argument("--P", type=int, nargs="+", default=[0], help="0: the paper's 16 P")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--again", action="store_true", help="rerun each sweep, chunk by chunk")
    args = ap.parse_args(argv)
    t_all = _clock()
    for att in args.attention:
        cfg = ch.PAPER.replace(
            model=dict(attention=att, engine="reduced", width=10000),
            train=dict(train_embeddings=False, solver=ch.ExactConfig()),
            sweep=dict(n_seeds=args.seeds) | ({} if args.P == [0] else dict(P=tuple(args.P))),
        )
        t0 = _clock()
        r = ch.run_sweep(cfg, progress=False)
        a = r.arrays
        print(f"{att} P={cfg.sweep.P} x {args.seeds}: sweep {_since(t0)}")
        n_ok, n = int(np.sum(a["converged"])), a["converged"].size
        print(
            f"  converged {n_ok} of {n}, max rel_grad {np.max(a['rel_grad']):.2g}, "
            f"min min_eig {np.min(a['min_eig']):.4g}"
        )
        print(f"  L-BFGS steps per P (max over seeds): {np.max(a['stop_epoch'], 1)}")
        if args.again:
            marks = []
            on_chunk = lambda i, n: marks.append(_clock())  # noqa: E731
            t0 = _clock()
            ch.run_sweep(cfg, progress=False, on_chunk=on_chunk)
            print(f"  again (compiled): {_since(t0)}")
            prev = t0
            for P, m in zip(cfg.sweep.P, marks):
                print(f"    chunk P={P}: {m[0] - prev[0]:.2f} s (CPU {m[1] - prev[1]:.2f} s)")
                prev = m
    print(f"all: {_since(t_all)}")


if __name__ == "__main__":
    main()
