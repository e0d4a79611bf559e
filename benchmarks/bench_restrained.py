"""A profile window's restrained energy in one pass against the energy plus the restraint on the
order parameter by autodiff, and a draw's record in one pass against two, on the same windows in
the same process.

Per P (plain L = 25, V = 5, width infinity, seed 0's tokens, float32): the softmax landscape
(``transition.profile.landscape``) with its restrained energy in one pass over the data and
one backward (``Landscape.restrained``: ``sampling.collapsed.marginal_energy_and_copy``),
against the same landscape without it (``restrained=None``: ``energy + kappa/2 (a_G - c)^2``,
the order's gradient a second backward over the attention), and each draw's ``(a_G, p_a)``
from one mean attention (``Landscape.observe``) against ``order`` and ``record`` apart (two
forward passes over the data). Two measurements, interleaved rounds, the minimum process CPU
time of each:

* per gradient: ``jit(value_and_grad)`` of the restrained energy at a window's centre (one
  pass against apart);
* in the windows' loops: ``run_windows`` (fixed length, 3 windows at a_G = 0.5, 1.5, 2.5,
  kappa 20, 4 chains, 20 adaptation + 40 recorded iterations of 5 leapfrog steps, a scaled
  identity whitening), per window-chain-iteration, the per-draw record included: ``apart``
  (both changes off), ``record apart`` (the energy in one pass, the record in two), ``one pass``.

Also the largest relative difference of the two gradients, load average and peak RSS.

    python benchmarks/bench_restrained.py [--P 50 322 1000] [--rounds 4] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.objective import Objective
from copyhead_jax.transition import profile

sys.path.insert(0, str(Path(__file__).parent))
from record import write_record  # noqa: E402

OUT = Path(__file__).parent / "results" / "bench_restrained.json"
CENTERS = np.array([0.5, 1.5, 2.5])
KAPPA = 20.0
WINDOWS = profile.UmbrellaSettings(n_chains=4, n_adapt=20, n_iter=80, thin=2)


def cpu_per(f, n: int) -> float:
    c0 = time.process_time()
    jax.block_until_ready(f())
    return (time.process_time() - c0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[50, 322, 1000])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    load0 = os.getloadavg()
    base = ch.preset("plain").replace(task=dict(L=25, V=5), model=dict(attention="softmax"))
    cfg = profile.profile_config(base).replace(model=dict(width=math.inf))
    obj = Objective.from_config(cfg)
    fused = profile.landscape(obj)
    variants = {
        "apart": dataclasses.replace(fused, restrained=None, observe=None),
        "record apart": dataclasses.replace(fused, observe=None),
        "one pass": fused,
    }
    rows = []
    for P in args.P:
        prob = profile.build_problem(cfg, 0, P)
        x0 = np.stack([profile.logit_start(prob, profile.beta_of_aG(c, prob.L)) for c in CENTERS])
        C = np.stack([0.05 * np.eye(prob.n)] * len(CENTERS))
        x = jnp.asarray(x0[1], jnp.float32)
        grads = {
            name: jax.jit(jax.value_and_grad(lambda y, ls=ls: ls.biased(prob, y, 1.5, KAPPA)))
            for name, ls in variants.items()
            if name != "record apart"
        }
        windows = {
            name: (
                lambda ls=ls: (
                    profile.run_windows(
                        jax.random.key(0), ls, prob, x0, C, CENTERS, KAPPA, WINDOWS
                    ).a
                )
            )
            for name, ls in variants.items()
        }
        (_, g0), (_, g1) = (f(x) for f in grads.values())
        diff = float(jnp.max(jnp.abs(g0 - g1)) / jnp.max(jnp.abs(g0)))
        for f in windows.values():
            f()  # compile
        n_win = len(CENTERS) * WINDOWS.n_chains * (WINDOWS.n_adapt + WINDOWS.n_iter)
        t = {k: {"window": []} | ({"grad": []} if k in grads else {}) for k in windows}
        for _ in range(args.rounds):
            for name in windows:
                if name in grads:
                    g = cpu_per(lambda n=name: [grads[n](x) for _ in range(20)], 20)
                    t[name]["grad"].append(g)
                t[name]["window"].append(cpu_per(windows[name], n_win))
        ms = {k: {m: 1e3 * min(v) for m, v in d.items()} for k, d in t.items()}
        row = dict(
            P=P,
            ms=ms,
            grad_speedup=ms["apart"]["grad"] / ms["one pass"]["grad"],
            window_speedup=ms["apart"]["window"] / ms["one pass"]["window"],
            record_speedup=ms["record apart"]["window"] / ms["one pass"]["window"],
            grad_max_rel_diff=diff,
            load=os.getloadavg()[0],
        )
        rows.append(row)
        print(
            f"P={P}: gradient {ms['apart']['grad']:.2f} -> {ms['one pass']['grad']:.2f} ms "
            f"({row['grad_speedup']:.2f}x); window chain-iteration {ms['apart']['window']:.2f} "
            f"-> {ms['record apart']['window']:.2f} (record apart) -> "
            f"{ms['one pass']['window']:.2f} ms ({row['window_speedup']:.2f}x, the record's "
            f"share {row['record_speedup']:.2f}x); gradients differ by {diff:.1e}",
            flush=True,
        )
    write_record(args.out, "bench_restrained", rows, load0)


if __name__ == "__main__":
    main()
