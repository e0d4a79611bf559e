"""The collapsed energy's gradient: the hand-written form (``copyhead_jax.sampling.collapsed``)
against autodiff of the one-hot form it replaced (2026-12-04), in the same process, on the same
heads.

U_m(W^G) of a reduced head at L = 25, V = 5 (the paper's), float32, one seed's tokens, a random
W^G (the cost does not depend on the values); per head and P: the median time of one gradient
(``jax.grad``, jitted, compilation excluded) in interleaved rounds (the minimum over rounds of
each median is kept: the machine is shared), the ratio baseline / ours (> 1: ours faster), the
largest relative difference of the two gradients, and XLA's temporary buffer bytes of each
compiled gradient.

    python benchmarks/bench_collapsed.py [--quick] [--rounds N]

Writes ``benchmarks/results/bench_collapsed.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.models import head_class
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import collapsed, marginal_energy, with_WG
from copyhead_jax.storage import environment

OUT = Path(__file__).parent / "results" / "bench_collapsed.json"


def one_hot_energy(head, tokens, mask, obj):
    """U_m as computed before 2026-12-04: one-hot products, plain autodiff (the baseline)."""
    M = head.logit_gram()
    dt = M.dtype
    V = head.W_E.shape[1]
    X = jax.nn.one_hot(tokens, V, dtype=dt)
    XM = X @ M[:V, :V] + M[V:, :V][None]
    s = jnp.einsum("pav,pbv->pab", XM, X) + (X @ M[:V, V:]) + M[V:, V:][None]
    A = head.activation(s)
    F = jnp.concatenate([jnp.einsum("pab,pbv->pav", A, X), A], -1)
    keep = (mask > 0).astype(dt)
    D = F.shape[-1]
    Fm = F * keep[:, None, None]
    SF = Fm.reshape(-1, D).T @ F.reshape(-1, D)
    BF = Fm.reshape(-1, D).T @ jnp.roll(X, 1, axis=1).reshape(-1, V)
    E = head.embeddings()
    w, N = obj.likelihood_weight, E.shape[1]
    Lam = (2 * w / (head.chi * N)) * (E.T @ SF @ E) + jnp.eye(N, dtype=dt) / obj.sigma_O**2
    B = (2 * w / math.sqrt(head.chi * N)) * (E.T @ BF)
    Lc = collapsed.cholesky(Lam)
    Z = collapsed.solve_lower(Lc, B)
    prior = jnp.sum(head.W_G**2) / (2 * obj.sigma_G**2)
    logdet = jnp.sum(jnp.log(jnp.diag(Lc) * obj.sigma_O))
    return prior - 0.5 * jnp.sum(Z**2) + V * logdet + w * jnp.sum(keep) * tokens.shape[1]


def problem(attention: str, P: int):
    cfg = ch.preset("paper-map").replace(model=dict(attention=attention, width="inf"),
                                         sweep=dict(P=(P,), n_seeds=1))  # fmt: skip
    V, L = cfg.task.V, cfg.task.L
    D = V + L
    k = jax.random.split(jax.random.key(0), 4)
    head = head_class(attention).from_config(
        cfg, W_E=jax.random.normal(k[0], (D, V)), b=jax.random.normal(k[1], (D, L)),
        W_G=0.3 * jax.random.normal(k[2], (D, D)), W_O_hat=jax.random.normal(k[3], (V, D)))
    tokens = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0][:P])
    return head, tokens, jnp.ones((P,), jnp.float32), Objective.from_config(cfg)


def median_ms(f, x, n: int) -> float:
    jax.block_until_ready(f(x))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="P = 32, 322 and 2 rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    Ps = (32, 322) if a.quick else (32, 322, 1250)
    rounds = 2 if a.quick else a.rounds
    rows = []
    for attention in ("softmax", "linear"):
        for P in Ps:
            head, t, m, obj = problem(attention, P)
            x0 = head.W_G.ravel()
            grads = {name: jax.jit(jax.grad(lambda x, f=f: f(with_WG(head, x), t, m, obj)))
                     for name, f in (("ours", marginal_energy), ("one_hot", one_hot_energy))}
            g0, g1 = (np.asarray(grads[k](x0), np.float64) for k in ("ours", "one_hot"))
            n = max(10, int(2000 / P))
            ms = {k: [] for k in grads}
            for _ in range(rounds):
                for k, g in grads.items():
                    ms[k].append(median_ms(g, x0, n))
            mem = {k: int(g.lower(x0).compile().memory_analysis().temp_size_in_bytes)
                   for k, g in grads.items()}  # fmt: skip
            row = {"attention": attention, "P": P, "ms_ours": min(ms["ours"]),
                   "ms_one_hot": min(ms["one_hot"]), "ms_rounds": ms,
                   "ratio": min(ms["one_hot"]) / min(ms["ours"]),
                   "max_rel_diff": float(np.max(np.abs(g0 - g1)) / np.max(np.abs(g1))),
                   "temp_bytes": mem}  # fmt: skip
            rows.append(row)
            print(f"{attention:8s} P={P:5d}: ours {row['ms_ours']:.2f} ms, one-hot "
                  f"{row['ms_one_hot']:.2f} ms, ratio {row['ratio']:.2f}, temp "
                  f"{mem['ours'] / 2**20:.1f} / {mem['one_hot'] / 2**20:.1f} MiB, "
                  f"rel diff {row['max_rel_diff']:.1e}", flush=True)  # fmt: skip
    out = {"date": datetime.date.today().isoformat(), "environment": environment(),
           "rounds": rounds, "rows": rows}  # fmt: skip
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1))
    print("\n| head | P | ours (ms) | one-hot autodiff (ms) | ratio | temp MiB (ours / one-hot) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['attention']} | {r['P']} | {r['ms_ours']:.2f} | {r['ms_one_hot']:.2f} | "
              f"{r['ratio']:.2f} | {r['temp_bytes']['ours'] / 2**20:.1f} / "
              f"{r['temp_bytes']['one_hot'] / 2**20:.1f} |")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
