"""A collapsed-HMC draw observed from the moments its trajectory's last gradient kept, against a
draw observed by its own pass over the data, in the same process on the same chains.

Per head and P (L = 25, V = 5, float32, a random reduced head, one seed's tokens, a dense
whitening): ``hmc_chains`` on the collapsed target, 4 chains one after the other (as the
sampler runs them at these P), 20 adaptation + 40 recorded iterations, head, tokens and
whitening passed as arguments (not constants XLA could fold). "pass": ``value_and_grad`` by
autodiff and each draw recorded by ``draw_observed`` (one pass over the data); "moments": the
sampler's ``value_and_grad`` and ``observed_from_moments`` on the kept moments. Interleaved
rounds, the minimum process CPU time per chain-iteration of each; the largest relative
difference of the two programs' records; load average and peak RSS.

    python benchmarks/bench_draw_moments.py [--P 322 1000] [--rounds 4] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from copyhead_jax.sampling import (
    collapsed_target,
    draw_observed,
    hmc_chains,
    observed_from_moments,
    with_WG,
)

sys.path.insert(0, str(Path(__file__).parent))
from bench_collapsed import problem  # noqa: E402
from record import write_record  # noqa: E402

OUT = Path(__file__).parent / "results" / "bench_draw_moments.json"
CHAINS, ADAPT, ITER = 4, 20, 40


def recorded(U, loss, A):
    """What each draw records here: U, the loss and the mean attention (the sampler's order
    parameters are a fixed projection of it)."""
    return jnp.concatenate([U[None], loss[None], A.ravel()])


def programs(obj):
    """The two jitted chain programs ``f(keys, head, tokens, mask, C, x)``."""

    def run(moments: bool):
        def f(keys, head, tok, mask, C, x):
            def obs_moments(k, h, m):
                h, U, loss, A = observed_from_moments(k, h, m, tok, mask, obj)
                return recorded(U, loss, A)

            pot, rec, vga = collapsed_target(head, tok, mask, obj, C, None, obs_moments)

            def rec_pass(state, j, xs):
                key = jax.random.fold_in(state.rng_key, -1 - j)
                h = with_WG(head, xs + C @ state.position)
                h, U, loss, A = draw_observed(key, h, tok, mask, obj)
                return recorded(U, loss, A), 0.0

            kw = dict(n_iter=ITER, step_size=0.1, n_adapt=ADAPT, adapt_mass=True, batched=False)
            if moments:
                kw["value_and_grad"] = vga
            ch = hmc_chains(
                keys, pot, jnp.zeros_like(x), rec if moments else rec_pass, chain_args=(x,), **kw
            )
            return ch.records[0]

        return jax.jit(f)

    return run(False), run(True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[322, 1000])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    load0 = os.getloadavg()
    rows = []
    for attention in ("linear", "softmax"):
        for P in args.P:
            head, tok, mask, obj = problem(attention, P)
            n = head.W_G.size
            C = 0.02 * jnp.eye(n) + 0.001 * jax.random.normal(jax.random.key(3), (n, n))
            x = jnp.broadcast_to(head.W_G.ravel()[None], (CHAINS, n))
            a = (jax.random.split(jax.random.key(0), CHAINS), head, tok, mask, C, x)
            f_pass, f_mom = programs(obj)
            r_pass, r_mom = f_pass(*a), f_mom(*a)
            diff = float(jnp.max(jnp.abs(r_pass - r_mom) / (jnp.abs(r_pass) + 1e-6)))
            t = {"pass": [], "moments": []}
            for _ in range(args.rounds):
                for name, f in (("pass", f_pass), ("moments", f_mom)):
                    c0 = time.process_time()
                    jax.block_until_ready(f(*a))
                    t[name].append((time.process_time() - c0) / (CHAINS * (ADAPT + ITER)))
            row = dict(
                attention=attention,
                P=P,
                pass_ms=1e3 * min(t["pass"]),
                moments_ms=1e3 * min(t["moments"]),
                speedup=min(t["pass"]) / min(t["moments"]),
                max_rel_diff=diff,
                load=os.getloadavg()[0],
            )
            rows.append(row)
            print(
                f"{attention} P={P}: pass {row['pass_ms']:.2f} ms, moments "
                f"{row['moments_ms']:.2f} ms per chain-iteration, {row['speedup']:.3f}x "
                f"(records differ by {diff:.1e})",
                flush=True,
            )
    write_record(args.out, "bench_draw_moments", rows, load0)


if __name__ == "__main__":
    main()
