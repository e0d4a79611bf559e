"""One BLAS thread per process against OpenBLAS's default (a thread per core), in one process:
the linear algebra of the Markov theory's Newton steps (``copyhead_jax.theory.beyond_points``,
full ``L x L`` space, softmax, the paper's V = 5, Markov rho = 0.25, float64).

Per ``L``: the action's ``jax.hessian``, ``jnp.linalg.lstsq`` (the Newton step), ``eigvalsh``
(the minimum check) and one whole Newton minimisation from a perturbed minimiser, each timed
with OpenBLAS's default threads and inside ``threadpoolctl.threadpool_limits(1)``, interleaved
over rounds (the median of each kind kept); CPU time per call and the ratio default / one
thread (> 1: one thread faster). The process sets ``COPYHEAD_KEEP_BLAS_THREADS=1`` so that
importing copyhead_jax leaves the default in place for the baseline. The load average is
recorded with every row, the process's peak resident memory at the end.

    python benchmarks/bench_blas_threads.py [--L 15 25] [--rounds 3]

Writes ``benchmarks/results/bench_blas_threads.json`` and prints a markdown table.
"""

from __future__ import annotations

import os

os.environ.setdefault("COPYHEAD_KEEP_BLAS_THREADS", "1")  # the baseline: OpenBLAS's default

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

import copyhead_jax as ch  # noqa: E402
from copyhead_jax.storage import environment  # noqa: E402
from copyhead_jax.theory import TheoryParams, beyond, beyond_problem  # noqa: E402


def _cpu_ms(fn, *args, n: int) -> float:
    jax.block_until_ready(fn(*args))
    t = time.process_time()
    for _ in range(n):
        jax.block_until_ready(fn(*args))
    return (time.process_time() - t) / n * 1e3


def row(L: int, rounds: int) -> dict:
    cfg = ch.preset("paper").replace(
        task=dict(L=L, V=5, source="markov", rho=0.25),
        model=dict(engine="reduced", width=10000),
        train=dict(train_embeddings=False),
        solver=dict(kind="exact"),
    )
    params = TheoryParams.from_config(cfg)
    S4, S2 = beyond.source_stats(cfg.task)
    kw = dict(params=params, attention="softmax", space="full", causal=False)
    logP = jnp.float64(np.log(300.0))
    f = lambda th: beyond_problem.action(th, jnp.exp(logP), S4, S2, **kw)  # noqa: E731
    th = 0.3 * jax.random.normal(jax.random.key(0), (L * L,), jnp.float64)
    hess, grad = jax.jit(jax.hessian(f)), jax.jit(jax.grad(f))
    H, g = hess(th), grad(th)
    m = beyond_problem.newton_minimiser(th, logP, S4, S2, **kw)
    start = m["theta"] + 1e-3 * jax.random.normal(jax.random.key(1), th.shape, th.dtype)
    parts = {
        "hessian": (hess, (th,), 3),
        "lstsq": (jax.jit(lambda H, g: jnp.linalg.lstsq(H, g)[0]), (H, g), 3),
        "eigvalsh": (jax.jit(jnp.linalg.eigvalsh), (H,), 3),
        "newton": (lambda s: beyond_problem.newton_minimiser(s, logP, S4, S2, **kw), (start,), 1),
    }
    times = {k: {"default": [], "one": []} for k in parts}
    for _ in range(rounds):
        for k, (fn, args, n) in parts.items():
            times[k]["default"].append(_cpu_ms(fn, *args, n=n))
            with threadpool_limits(1, user_api="blas"):
                times[k]["one"].append(_cpu_ms(fn, *args, n=n))
    out = {"L": L, "n": L * L, "load_avg": os.getloadavg()}
    for k, t in times.items():
        d, o = float(np.median(t["default"])), float(np.median(t["one"]))
        out[k] = {"default_cpu_ms": d, "one_cpu_ms": o, "ratio": d / o}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, nargs="+", default=[15, 25], help="sequence lengths")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median kept)")
    ap.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "bench_blas_threads.json")
    )
    a = ap.parse_args(argv)
    with jax.enable_x64(True):
        rows = [row(L, a.rounds) for L in a.L]
    res = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "environment": environment(),
        "cpu_count": os.cpu_count(),
        "blas": [
            {k: d[k] for k in ("internal_api", "num_threads", "version")}
            for d in threadpool_info()
            if d["user_api"] == "blas"
        ],
        "rows": rows,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print("| L | part | default CPU-ms | one thread CPU-ms | ratio | load |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for k in ("hessian", "lstsq", "eigvalsh", "newton"):
            v = r[k]
            print(
                f"| {r['L']} | {k} | {v['default_cpu_ms']:.1f} | {v['one_cpu_ms']:.1f} | "
                f"{v['ratio']:.1f} | {r['load_avg'][0]:.1f} |"
            )
    print(f"peak memory {res['max_rss_mb']:.0f} MB; wrote {a.out}")
    return res


if __name__ == "__main__":
    main()
