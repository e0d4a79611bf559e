"""Where SGLD's per-step time goes outside the gradient, on a potential where overhead shows.

Every variant is the same loop (one ``jit``, ``lax.scan`` over steps, ``vmap`` over chains) on the
same potential, timed after compilation, best of ``--repeats`` interleaved rounds (a shared
machine: the least disturbed round of each). Variants, cheapest first:

* ``gradient``: gradient descent, the potential's gradient alone (the floor);
* ``gradient+value``: the same with ``jax.value_and_grad``, U kept: the cost of the value;
* ``gradient+noise``: a minimal SGLD, noise ``jax.random.normal(fold_in(k_c, t))``;
* ``sgld_chains lean``: ``sgld_chains(record_potential=False)``, counter-mode Threefry noise;
* ``sgld_chains lean jax-noise``: the same with ``noise="jax"``;
* ``sgld_chains``: as shipped (U, the MALA proxy, drift/noise norms every step);
* ``blackjax``: ``blackjax.sgld`` (if installed).

The table gives microseconds of process CPU time per chain-step (wall times are kept too; on a
loaded machine they mostly measure the load) and the ratio to ``gradient`` measured in the same
process; the split below it attributes the differences (noise and kernel bookkeeping =
``sgld_chains lean - gradient``; diagnostics = ``sgld_chains - sgld_chains lean``). ``--trace`` adds
the top XLA ops per step of ``sgld_chains`` and ``gradient`` from a ``jax.profiler`` trace.

    python benchmarks/profile_sgld.py [--problem quadratic logreg] [--chains 1 16 64]
        [--steps 500] [--repeats 9] [--trace] [--out FILE]

Results go to ``benchmarks/results/profile_sgld.json`` with platform and versions.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import glob
import gzip
import json
import os
import platform
import re
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_sgld as B  # noqa: E402

import copyhead_jax as ch  # noqa: E402

OUT = Path(__file__).parent / "results" / "profile_sgld.json"


def quadratic_problem(d: int = 300, seed: int = 0):
    """``U = z^T A z / 2`` with a dense SPD ``A`` (eigenvalues 1..10): one small matvec."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    A = jnp.asarray(q @ np.diag(np.linspace(1.0, 10.0, d)) @ q.T, jnp.float32)
    return (lambda z: 0.5 * z @ (A @ z)), jnp.zeros(d, jnp.float32)


PROBLEMS = {
    "quadratic": quadratic_problem,  # 300 parameters, grad = one 300x300 matvec
    "logreg": lambda: B.make_problem(1000, 299),  # bench_sgld's problem (300 parameters)
}


def _batched(init, n):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *x.shape)), init)


def gd_loop(potential, init, *, n_chains, n_steps, step_size, value=False):
    """Gradient descent (``value``: with ``value_and_grad``, U carried) in the shared loop."""

    def run(key):
        def one(z):
            def body(carry, _):
                z, u = carry
                if value:
                    u, g = jax.value_and_grad(potential)(z)
                else:
                    g = jax.grad(potential)(z)
                return (jax.tree.map(lambda x, gx: x - step_size * gx, z, g), u), None

            return jax.lax.scan(body, (z, jnp.zeros(())), None, length=n_steps)[0]

        return jax.vmap(one)(_batched(init, n_chains))

    return run


def minimal_sgld(potential, init, *, n_chains, n_steps, step_size):
    """``z - eta grad U + sqrt(2 eta) xi``, xi from ``jax.random.normal(fold_in(k_c, t))``."""

    def run(key):
        def one(k, z):
            def body(z, t):
                g, kt = jax.grad(potential)(z), jax.random.fold_in(k, t)
                leaves, tree = jax.tree.flatten(z)
                ks = jax.random.split(kt, len(leaves))
                xi = [jax.random.normal(kk, x.shape, x.dtype) for kk, x in zip(ks, leaves)]
                xi = jax.tree.unflatten(tree, xi)
                s = jnp.sqrt(2 * step_size)
                return jax.tree.map(lambda x, gx, n: x - step_size * gx + s * n, z, g, xi), None

            return jax.lax.scan(body, z, jnp.arange(n_steps))[0]

        return jax.vmap(one)(jax.random.split(key, n_chains), _batched(init, n_chains))

    return run


def variants(potential, init, kw) -> dict:
    out = {
        "gradient": gd_loop(potential, init, **kw),
        "gradient+value": gd_loop(potential, init, value=True, **kw),
        "gradient+noise": minimal_sgld(potential, init, **kw),
        "sgld_chains lean": B.ours_loop(potential, init, record_potential=False, **kw),
        "sgld_chains lean jax-noise": B.ours_loop(
            potential, init, record_potential=False, noise="jax", **kw
        ),
        "sgld_chains": B.ours_loop(potential, init, **kw),
    }
    try:
        import blackjax  # noqa: F401

        out["blackjax"] = B.blackjax_loop(potential, init, **kw)
    except ImportError:
        pass
    return out


def trace_table(fn, key, n_steps: int, top: int = 12) -> list[dict]:
    """Top XLA ops of one compiled call from a ``jax.profiler`` trace, in microseconds per step."""
    compiled = jax.jit(fn).lower(key).compile()
    jax.block_until_ready(compiled(key))
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d, create_perfetto_trace=True)
        jax.block_until_ready(compiled(key))
        jax.profiler.stop_trace()
        files = glob.glob(f"{d}/**/*.trace.json.gz", recursive=True)
        events = json.load(gzip.open(files[0])) if files else {}
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        name = e.get("name", "")
        # XLA ops only (lower-case HLO names), not loops, Python frames or runtime spans
        if e.get("ph") != "X" or not re.fullmatch(r"[a-z][\w.\-]*", name):
            continue
        if name.startswith(("while", "wrapped_")):
            continue
        total[name] += e.get("dur", 0)
        count[name] += 1
    return [
        {"op": n, "us_per_step": t / n_steps, "calls": count[n]} for n, t in total.most_common(top)
    ]


def _version(m: str):
    try:
        return version(m)
    except PackageNotFoundError:
        return None


def profile(problem: str, a, key) -> list[dict]:
    """Rows (one per chain count) of the timing table, the split and optionally the trace."""
    potential, init = PROBLEMS[problem]()
    rows = []
    for c in a.chains:
        kw = dict(n_chains=c, n_steps=a.steps, step_size=a.step_size)
        fns = variants(potential, init, kw)
        compiled = {n: B.compile_fn(f, key)[0] for n, f in fns.items()}
        wall, cpu = B.interleaved_times(list(compiled.values()), key, a.repeats)
        # process CPU time: on a shared, oversubscribed machine wall time mostly measures the
        # others' load (best-of-9 walls were 2x off at load 15 on 2 cores; CPU times were not)
        us = {n: 1e6 * min(w) / (c * a.steps) for n, w in zip(compiled, cpu)}
        us_wall = {n: 1e6 * min(w) / (c * a.steps) for n, w in zip(compiled, wall)}
        g = us["gradient"]
        split = {
            "gradient": g,
            "value (U)": us["gradient+value"] - g,
            "noise + kernel bookkeeping (lean - gradient)": us["sgld_chains lean"] - g,
            "diagnostics: U, MALA proxy, norms (full - lean)": us["sgld_chains"]
            - us["sgld_chains lean"],
            "minimal SGLD noise, jax.random.normal": us["gradient+noise"] - g,
        }
        row = {
            "problem": problem,
            "n_params": int(sum(x.size for x in jax.tree.leaves(init))),
            "n_chains": c,
            "us_per_chain_step": us,  # best process CPU time of the rounds
            "wall_us_per_chain_step": us_wall,
            "ratio_to_gradient": {n: t / g for n, t in us.items()},
            "split_us": split,
        }
        if "blackjax" in us:
            row["ratio_vs_blackjax"] = {n: us["blackjax"] / t for n, t in us.items()}
        if a.trace:
            row["trace"] = {
                n: trace_table(fns[n], key, a.steps) for n in ("sgld_chains", "gradient")
            }
        rows.append(row)
        print(f"\n{problem}, {c} chain(s), {a.steps} steps, best of {a.repeats}")
        print(f"  {'variant':34s} {'CPU us/chain-step':>18s} {'x gradient':>11s} {'bj / it':>8s}")
        for n, t in us.items():
            bj = row.get("ratio_vs_blackjax", {}).get(n, float("nan"))
            print(f"  {n:34s} {t:18.3f} {t / g:11.2f} {bj:8.2f}")
        print("  split (us per chain-step):")
        for n, t in split.items():
            print(f"    {n:50s} {t:8.3f}  ({t / g:+.0%} of gradient)")
        for n, tab in row.get("trace", {}).items():
            print(f"  trace of {n}: top ops, us per step")
            for r in tab:
                print(f"    {r['op'][:60]:60s} {r['us_per_step']:9.1f}")
    return rows


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problem", choices=sorted(PROBLEMS), nargs="+", default=["quadratic"])
    p.add_argument("--chains", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--step-size", type=float, default=1e-3)
    p.add_argument("--trace", action="store_true", help="add top XLA ops from a profiler trace")
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)

    key = jax.random.key(0)
    load0 = os.getloadavg()
    rows = [r for problem in a.problem for r in profile(problem, a, key)]
    result = {
        "benchmark": "SGLD per-step time split: sgld_chains variants vs gradient alone",
        "problems": a.problem,
        "n_steps": a.steps,
        "repeats": a.repeats,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average": {"start": load0, "end": os.getloadavg()},  # others' jobs
        "results": rows,
        "platform": {
            "system": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
        },
        "device": {"backend": jax.default_backend(), "kind": jax.devices()[0].device_kind},
        "versions": {m: _version(m) for m in ("jax", "jaxlib", "blackjax", "numpy")},
        "copyhead_jax": ch.__version__,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")
    return result


if __name__ == "__main__":
    main()
