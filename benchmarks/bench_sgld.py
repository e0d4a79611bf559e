"""SGLD chain-steps per second: ``copyhead_jax.sampling.sgld_chains`` against ``blackjax.sgld``.

Same potential (Bayesian logistic regression, full batch), same chains, same loop structure
(``lax.scan`` over steps, ``vmap`` over chains, one ``jit``), timed after compilation, best of
``--repeats`` interleaved rounds. Candidates:

* ``blackjax``: ``blackjax.sgld`` with the same potential's gradient; the loop keeps only the final
  positions and splits one key per step into one key per chain (blackjax's usual loop);
* ``copyhead``: ``sgld_chains`` as shipped, which also records per step U, the MALA proxy and the
  drift/noise norms (``jax.value_and_grad``), and the draws;
* ``copyhead_lean``: ``sgld_chains(record_potential=False)``, gradient only like blackjax;
* ``gradient_only``: gradient descent in the same loop, no noise: the potential's own cost, an
  upper bound on what any SGLD kernel can reach.

Prints the ratios (blackjax time / candidate time) and writes
``benchmarks/results/bench_sgld.json``.

    python benchmarks/bench_sgld.py [--quick] [--chains 1 16 64] [--steps 2000] [--repeats 7]

``--quick``: 500 steps and 5 rounds unless given.

``blackjax`` is a benchmark-only extra (``pip install blackjax``); the package never imports it.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import resource
import sys
import time
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch

OUT = Path(__file__).parent / "results" / "bench_sgld.json"


def make_problem(n_data: int, n_features: int, seed: int = 0):
    """Bayesian logistic regression, ``n_features + 1`` parameters (weights and a bias)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_data, n_features)) / np.sqrt(n_features)
    w_true = rng.normal(size=n_features)
    y = (rng.uniform(size=n_data) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float32)
    X, y = jnp.asarray(X, jnp.float32), jnp.asarray(y)

    def potential(theta):  # U = -log p(y | X, theta) - log N(theta; 0, I)
        z = X @ theta["w"] + theta["b"]
        nll = jnp.sum(jax.nn.softplus(z) - y * z)
        return nll + 0.5 * (jnp.sum(theta["w"] ** 2) + theta["b"] ** 2)

    init = {"w": jnp.zeros(n_features, jnp.float32), "b": jnp.zeros((), jnp.float32)}
    return potential, init


def blackjax_loop(potential, init, *, n_chains, n_steps, step_size):
    import blackjax

    sgld = blackjax.sgld(lambda theta, batch: jax.grad(lambda q: -potential(q))(theta))

    def run(key):
        z0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_chains, *x.shape)), init)

        def body(carry, _):
            z, key = carry
            key, sub = jax.random.split(key)
            keys = jax.random.split(sub, n_chains)
            z = jax.vmap(sgld.step, in_axes=(0, 0, None, None))(keys, z, None, step_size)
            return (z, key), None

        return lax_scan(body, (z0, key), n_steps)[0][0]

    return run


def lax_scan(body, carry, n):
    return jax.lax.scan(body, carry, None, length=n)


def ours_loop(potential, init, *, n_chains, n_steps, step_size, record_potential=True, **opts):
    def run(key):
        return ch.sgld_chains(
            key,
            init,
            potential,
            n_steps=n_steps,
            thin=n_steps,
            n_chains=n_chains,
            step_size=step_size,
            record_potential=record_potential,
            **opts,
        )

    return run


def gradient_loop(potential, init, *, n_chains, n_steps, step_size):
    """Gradient descent in the same loop: the potential's cost alone, a bound for any kernel."""

    def run(key):
        z0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_chains, *x.shape)), init)
        grad = jax.vmap(jax.grad(potential))

        def body(z, _):
            return jax.tree.map(lambda x, g: x - step_size * g, z, grad(z)), None

        return lax_scan(body, z0, n_steps)[0]

    return run


CANDIDATES = {
    "blackjax": blackjax_loop,
    "copyhead": ours_loop,  # sgld_chains as shipped: U, MALA proxy, norms, draws recorded
    "copyhead_lean": functools.partial(ours_loop, record_potential=False),  # gradient only
    "gradient_only": gradient_loop,  # no noise, no kernel: the ceiling
}


def compile_fn(fn, key) -> tuple:
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(key).compile()
    compile_s = time.perf_counter() - t0
    mem = {}
    try:
        ma = compiled.memory_analysis()
        mem = {
            "temp_bytes": int(ma.temp_size_in_bytes),
            "output_bytes": int(ma.output_size_in_bytes),
        }
    except Exception:  # memory_analysis is backend dependent
        pass
    jax.block_until_ready(compiled(key))  # warm-up run
    return compiled, compile_s, mem


def interleaved_times(fns, key, repeats: int) -> tuple[list[list[float]], list[list[float]]]:
    """Wall and process-CPU times of ``repeats`` rounds, the candidates alternating in each.

    Alternating keeps a background load (a shared machine) from favouring one candidate; the
    best of the rounds is the least disturbed run of each. CPU time (all threads of this
    process) is what the work costs, and is less sensitive than wall time to being descheduled.
    """
    wall, cpu = [[] for _ in fns], [[] for _ in fns]
    for _ in range(repeats):
        for f, w, c in zip(fns, wall, cpu):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(f(key))
            w.append(time.perf_counter() - t0)
            c.append(time.process_time() - c0)
    return wall, cpu


def maxrss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return kb / 1024 / (1024 if sys.platform == "darwin" else 1)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chains", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--steps", type=int, default=None, help="default 2000 (500 with --quick)")
    p.add_argument("--repeats", type=int, default=None, help="default 7 (5 with --quick)")
    p.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    p.add_argument("--n-data", type=int, default=1000)
    p.add_argument("--n-features", type=int, default=299)
    p.add_argument("--step-size", type=float, default=1e-3)
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    a.steps = a.steps or (500 if a.quick else 2000)
    a.repeats = a.repeats or (5 if a.quick else 7)

    load0 = os.getloadavg()
    potential, init = make_problem(a.n_data, a.n_features)
    key = jax.random.key(0)
    rows = []
    for c in a.chains:
        kw = dict(n_chains=c, n_steps=a.steps, step_size=a.step_size)
        compiled = {
            n: compile_fn(make(potential, init, **kw), key) for n, make in CANDIDATES.items()
        }
        wall, cpu = interleaved_times([f for f, _, _ in compiled.values()], key, a.repeats)
        best = {n: min(ts) for n, ts in zip(compiled, wall)}
        median = {n: float(np.median(ts)) for n, ts in zip(compiled, wall)}
        best_cpu = {n: min(ts) for n, ts in zip(compiled, cpu)}
        row = {
            "n_chains": c,
            "n_steps": a.steps,
            "chain_steps_per_s": {n: c * a.steps / t for n, t in best.items()},
            "ratio_vs_blackjax": {n: best["blackjax"] / t for n, t in best.items()},
            "ratio_of_medians_vs_blackjax": {n: median["blackjax"] / t for n, t in median.items()},
            "cpu_ratio_vs_blackjax": {n: best_cpu["blackjax"] / t for n, t in best_cpu.items()},
            "wall_s": {n: ts for n, ts in zip(compiled, wall)},
            "cpu_s": {n: ts for n, ts in zip(compiled, cpu)},
            "compile_s": {n: v[1] for n, v in compiled.items()},
            "compiled_memory": {n: v[2] for n, v in compiled.items()},
            "maxrss_mb": maxrss_mb(),
        }
        rows.append(row)
        r, rm = row["ratio_vs_blackjax"], row["ratio_of_medians_vs_blackjax"]
        rc = row["cpu_ratio_vs_blackjax"]
        print(
            f"chains={c:3d}  blackjax {row['chain_steps_per_s']['blackjax']:8.0f} chain-steps/s | "
            + "  ".join(
                f"{n} {r[n]:.2f}x (median {rm[n]:.2f}x, cpu {rc[n]:.2f}x)"
                for n in list(CANDIDATES)[1:]
            )
            + f" | maxrss {row['maxrss_mb']:.0f} MB",
            flush=True,
        )
    result = {
        "benchmark": "sgld chain-steps per second, "
        "copyhead_jax.sampling.sgld_chains vs blackjax.sgld",
        "problem": {
            "model": "Bayesian logistic regression, N(0, 1) prior, full batch",
            "n_data": a.n_data,
            "n_params": a.n_features + 1,
            "dtype": "float32",
            "step_size": a.step_size,
        },
        "quick": a.quick,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "target_ratio": 1.2,
        "ratio": "blackjax time / candidate time: best wall of the repeats (ratio_vs_blackjax), "
        "median wall, best process CPU time (robust to a loaded machine)",
        "load_average": {"start": load0, "end": os.getloadavg()},  # others' jobs on the machine
        "results": rows,
        "maxrss_mb": maxrss_mb(),
        "platform": {
            "system": platform.platform(),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
        },
        "device": {
            "backend": jax.default_backend(),
            "kind": jax.devices()[0].device_kind,
            "count": jax.device_count(),
        },
        "versions": {
            m: version(m) for m in ("jax", "jaxlib", "numpyro", "blackjax", "numpy", "optax")
        },
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")
    return result


if __name__ == "__main__":
    main()
