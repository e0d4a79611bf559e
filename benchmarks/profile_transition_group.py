"""Where one group of ``copyhead transition`` spends its time on the paper preset.

    python benchmarks/profile_transition_group.py [--P 1245] [--P-pad PAD]

One seed's exact MAP (softmax, the paper-map preset's reduced engine, width 10,000) at the grid P
next to ``--P`` stands for both branch references (the cost does not depend on which branch a
reference is); the group's data are padded to ``--P-pad`` rows (default: as ``copyhead transition``
pads ``--P`` on the paper preset, whose MAP grid tops out at 1,652; 1,274 rows for the default P,
where its later seeds' probes sit). The pieces of ``transition.branch_group.free_energies`` are
timed one by one in CPU seconds, default ``TISettings`` on the CPU: the float64 whitening
(compilation included), the reference draws (a_G and, with the exact t = 0 rung, U at each; a second
call without compilation), the rungs' compilation and their run, with the number of gradients.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.data import nested_mask
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.objective import Objective
from copyhead_jax.transition import BRANCHES, SIDE, TISettings, a_G, pad_of, ti_programs


def cpu(f):
    t0 = time.process_time()
    out = jax.block_until_ready(f())
    return out, time.process_time() - t0


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=1245)
    ap.add_argument("--P-pad", type=int, default=None)
    a = ap.parse_args(argv)
    a.P_pad = pad_of(a.P, 1652, 25) if a.P_pad is None else a.P_pad
    cfg = ch.preset("paper-map").replace(
        model=dict(attention="softmax"), sweep=dict(P=(a.P,), n_seeds=1)
    )
    res = ch.run_sweep(cfg, keep_params=True, progress=False)
    heads = res.heads((np.zeros(2, int), np.zeros(2, int)), dtype=jnp.float32)  # the fit, twice
    obj = Objective.from_config(cfg)
    train = sweep_inputs(cfg.replace(sweep=dict(P=(a.P_pad,))), None, a.P_pad).train[0]
    mask = nested_mask(a.P, a.P_pad)
    m32 = jnp.asarray(mask, jnp.float32)
    thr = float(a_G(jax.tree.map(lambda x: x[0], heads), train, m32))
    s = TISettings(batched=False)
    whiten, orders_at_ref, rungs = ti_programs(obj, s)
    out = {"P": a.P, "P_pad": a.P_pad, "settings": repr(s)}
    with jax.enable_x64(True):
        h64 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), heads)
        C64, out["whiten_s"] = cpu(lambda: whiten(h64, train, jnp.asarray(mask, jnp.float64)))
    C32 = jnp.asarray(np.asarray(C64), jnp.float32)
    _, out["ref_first_s"] = cpu(lambda: orders_at_ref(jax.random.key(0), heads, train, m32, C32))
    _, out["ref_s"] = cpu(lambda: orders_at_ref(jax.random.key(1), heads, train, m32, C32))
    K, nC = len(s.chain_ts), s.n_chains
    args = (
        jax.random.split(jax.random.key(2), 2 * K * nC).reshape(2, K, nC),
        heads,
        train,
        m32,
        C32,
        jnp.asarray([SIDE[b] for b in BRANCHES], jnp.int32),
        jnp.float32(thr),
        jnp.asarray(np.arange(a.P_pad) < a.P - 35, jnp.float32),
        jnp.full((2, K), s.step_size, jnp.float32),
    )
    t0 = time.process_time()
    compiled = rungs.lower(*args).compile()
    out["rungs_compile_s"] = time.process_time() - t0
    _, out["rungs_s"] = cpu(lambda: compiled(*args))
    out["gradients"] = 2 * K * nC * (s.n_adapt + s.n_iter) * 5  # 5 leapfrog steps an iteration
    out["ms_per_gradient_all_in"] = 1e3 * out["rungs_s"] / out["gradients"]
    for k, v in out.items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    return out


if __name__ == "__main__":
    main()
