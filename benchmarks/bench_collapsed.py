"""The collapsed energy's value and gradient (``copyhead_jax.sampling.collapsed``) against
autodiff of the one-hot form it replaced, in the same process, on the same heads, with its
roofline.

U_m(W^G) of a reduced head at L = 25, V = 5 (the paper's; ``--L``, ``--V`` change them),
float32 (``--x64``: float64, as the transition's windows run), one seed's tokens, a random
W^G (the cost does not depend on the values); per head and P: the median time of one gradient
(``jax.grad``, jitted, compilation excluded) in interleaved rounds (the minimum over rounds of
each median is kept: the machine is shared) and the process CPU time per call, the ratio
baseline / ours (> 1: ours faster), the largest relative difference of the two gradients, and
XLA's temporary buffer bytes of each compiled gradient.

Roofline. FLOPs and bytes of one value + gradient are counted from the formulation
(:func:`counted`: every product's multiply-adds, the per-entry arithmetic of the ``L x L``
arrays, and the traffic that the query-row blocks cannot keep in cache: the residuals written
by the forward pass and read back by the backward one) and, as a second opinion, taken from
XLA's cost analysis of the compiled program (every operation's operands and result, no reuse).
The peaks are measured in the same run, before and after the rows (the larger kept): GEMM
GFLOP/s of a 1024 x 1024 float32 product, and stream bandwidth of ``a + 3 b`` over 64 MB
arrays. The roofline time is ``max(flops / peak_flops, bytes / peak_bw)``; its fraction is that
time over the measured one. The load average is recorded with every row, the process's peak
resident memory at the end.

    python benchmarks/bench_collapsed.py [--quick] [--rounds N] [--P P ...] [--against REV]
        [--L L --V V] [--x64] [--loops [--chains N]] [--out FILE]

``--loops`` times every gradient where the samplers call it, inside two nested loops (HMC
iterations of leapfrog steps, :func:`in_loops`), per gradient; ``--chains N`` with it also times
ours on N chains, batched (``vmap``) and one after the other (``lax.map``), per gradient: the
measurement behind ``copyhead_jax.sampling.chains.batch_chains``.

``--profile`` also prints, per row, the compiled gradient's operations by their median time in
a ``jax.profiler`` trace of 50 calls (each operation's time includes the trace's own overhead,
about a microsecond an operation; a loop's time includes its body's operations, listed too).

``--against REV`` times a third gradient in the same rounds: the same energy with the module of
``copyhead_jax.models.feature_moments`` as it was at git revision ``REV`` (its moments and their
backward), so that a change of the formulation is measured against the form before it in one
process.

Writes ``benchmarks/results/bench_collapsed.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import inspect
import json
import math
import os
import resource
import subprocess
import sys
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.models import feature_moments, head_class, query_blocks
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import collapsed, marginal_energy, with_WG
from copyhead_jax.storage import environment

OUT = Path(__file__).parent / "results" / "bench_collapsed.json"


def one_hot_energy(head, tokens, mask, obj):
    """U_m by one-hot products and plain autodiff: the form the hand-written gradient replaced
    (the baseline)."""
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


def counted(attention: str, P: int, L: int, V: int, itemsize: int = 4) -> dict:
    """FLOPs and bytes of one value + gradient in the formulation of
    ``copyhead_jax.models.feature_moments``.

    With ``Q = L P`` query rows, ``D = V + L``, ``E = D + V``: the products ``S = G G^T``
    (``2 E^2 Q``), ``W = G_x G`` (``2 D E Q``) and the two of ``dM`` (``2 (L + V)(V + 1) Q``);
    per entry of the ``L x L`` arrays (``L Q`` of them) the arithmetic written in the code:
    softmax forward 8 + V (four-term logits, max, shift, exp, sum, scale, V histogram adds),
    backward 4 + V, plus the row term's ``2 D`` per query row; linear forward 4 + V, backward
    3 + V; and ``13 D^3`` for the D x D algebra (``E^T S E``, the sweep, the gradient's
    products). Bytes: what the query-row blocks cannot keep in cache, i.e. the residuals of
    every block (``X``: ``L Q``, ``G``: ``E Q`` values) written forwards and read backwards,
    plus tokens and row weights read once per pass."""
    Q, D = L * P, V + L
    E = D + V
    gemm = 2 * E * E * Q + 2 * D * E * Q + 2 * (L + V) * (V + 1) * Q
    per_entry = (12 + 2 * V) if attention == "softmax" else (7 + 2 * V)
    flops = gemm + per_entry * L * Q + (2 * D * Q if attention == "softmax" else 0) + 13 * D**3
    bytes_ = 2 * (L + E) * Q * itemsize + 2 * 2 * Q * 4
    return {
        "flops": int(flops),
        "gemm_flops": int(gemm),
        "bytes": int(bytes_),
        "blocks": len(query_blocks(L, P)),
    }


def problem(attention: str, P: int, L: int = 25, V: int = 5):
    cfg = ch.preset("paper-map").replace(
        task=dict(L=L, V=V),
        model=dict(attention=attention, width="inf"),
        sweep=dict(P=(P,), n_seeds=1),
    )
    V, L = cfg.task.V, cfg.task.L
    D = V + L
    k = jax.random.split(jax.random.key(0), 4)
    head = head_class(attention).from_config(
        cfg,
        W_E=jax.random.normal(k[0], (D, V)),
        b=jax.random.normal(k[1], (D, L)),
        W_G=0.3 * jax.random.normal(k[2], (D, D)),
        W_O_hat=jax.random.normal(k[3], (V, D)),
    )
    tokens = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0][:P])
    return head, tokens, jnp.ones((P,), jnp.float32), Objective.from_config(cfg)


def features_at(rev: str) -> types.ModuleType:
    """The module that defines ``copyhead_jax.models.feature_moments`` as it was at git
    revision ``rev``, imported beside today's (its relative imports resolve in the same
    package)."""
    root = Path(__file__).resolve().parents[1]
    path = Path(inspect.getsourcefile(feature_moments)).resolve().relative_to(root)
    src = subprocess.run(
        ["git", "show", f"{rev}:{path.as_posix()}"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    home = feature_moments.__module__
    name = f"{home}_at_" + rev.replace("~", "_").replace("^", "_")
    mod = types.ModuleType(name)
    mod.__package__ = home.rpartition(".")[0]
    sys.modules[name] = mod  # dataclasses look their module up here
    exec(compile(src, name, "exec"), mod.__dict__)
    return mod


def energy_with(features: types.ModuleType):
    """``marginal_energy`` whose moments and backward are ``features``' (same-named activation
    class, same fields), swapped in while it is traced."""

    def energy(head, *args):
        act = head.feature_activation()
        old_act = getattr(features, type(act).__name__)(
            **{f.name: getattr(act, f.name) for f in dataclasses.fields(act)}
        )
        saved = collapsed.feature_moments, collapsed.feature_moments_grad
        collapsed.feature_moments = lambda _, *r: features.feature_moments(old_act, *r)
        collapsed.feature_moments_grad = lambda _, *r: features.feature_moments_grad(old_act, *r)
        try:
            return marginal_energy(head, *args)
        finally:
            collapsed.feature_moments, collapsed.feature_moments_grad = saved

    return energy


def operation_times(f, x, n: int = 50) -> list[tuple[str, float, int]]:
    """``[(operation, median us per call, times per call), ...]`` of the compiled ``f`` from a
    ``jax.profiler`` trace of ``n`` calls, slowest first."""
    import glob
    import tempfile

    jax.block_until_ready(f(x))
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            for _ in range(n):
                jax.block_until_ready(f(x))
        data = jax.profiler.ProfileData.from_file(
            glob.glob(f"{d}/**/*.xplane.pb", recursive=True)[0]
        )
    ns: dict[str, list[int]] = {}
    for plane in data.planes:
        for line in plane.lines:
            if line.name.startswith("tf_XLA"):  # the CPU client's threads
                for ev in line.events:
                    if not ev.name.startswith("ThunkExecutor"):
                        ns.setdefault(ev.name, []).append(ev.duration_ns)
    out = [(k, len(v) // n * float(np.median(v)) / 1e3, len(v) // n) for k, v in ns.items()]
    return sorted((o for o in out if o[2] > 0), key=lambda o: -o[1])


#: ``--loops``: HMC iterations x leapfrog steps, the two nested loops every sampler runs
LOOPS = (2, 5)


def in_loops(grad):
    """``x -> x - 1e-6 grad(x)`` repeated in two nested ``lax.scan`` of ``LOOPS`` steps, as a
    sampler's chain calls the gradient: XLA compiles a loop body apart (loop-invariant work is
    hoisted out of it), so the same gradient can cost differently inside loops and alone."""

    def leap(x, _):
        return x - 1e-6 * grad(x), None

    def iteration(x, _):
        return jax.lax.scan(leap, x, None, length=LOOPS[1])[0], None

    return lambda x: jax.lax.scan(iteration, x, None, length=LOOPS[0])[0]


def timed(f, x, n: int) -> tuple[float, float]:
    """(median wall ms, mean process-CPU ms) of ``n`` calls after one warm call."""
    jax.block_until_ready(f(x))
    ts = []
    c0 = time.process_time()
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts)), 1e3 * (time.process_time() - c0) / n


def peaks(rounds: int = 5) -> dict:
    """This process's GEMM GFLOP/s (1024^3 float32 product) and stream GB/s (``a + 3 b``: three
    arrays moved per call) for 64 MB arrays (memory) and 4 MB ones (last-level cache), each the
    best of ``rounds`` runs, timed by wall clock (medians) and by process CPU time (means), the
    faster kept: a shared machine only ever slows a run down."""
    n = 1024
    a = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    gemm = jax.jit(lambda a: a @ a)
    triad = jax.jit(lambda x, y: x + 3.0 * y)
    out = {"gemm_gflops": 2 * n**3 / min(min(timed(gemm, a, 20)) for _ in range(rounds)) / 1e6}
    for name, m in (("stream_gbs", 1 << 24), ("stream_cache_gbs", 1 << 20)):
        x, y = jnp.ones((m,), jnp.float32), jnp.ones((m,), jnp.float32)
        f = lambda x, y=y: triad(x, y)  # noqa: E731
        t = min(min(timed(f, x, max(5, (1 << 26) // m))) for _ in range(rounds))
        out[name] = 3 * 4 * m / t / 1e6
    return out | {"load": os.getloadavg()}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="P = 32, 322 and 2 rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--out",
        type=Path,
        help=f"default {OUT.name}; bench_collapsed_L<L>_V<V>[_x64].json at another shape or dtype",
    )
    ap.add_argument("--P", type=int, nargs="+", help="these P only")
    ap.add_argument(
        "--against",
        metavar="REV",
        help="also time the feature moments (copyhead_jax.models.feature_moments) as they "
        "were at git revision REV",
    )
    ap.add_argument("--profile", action="store_true", help="print each gradient's operations")
    ap.add_argument("--L", type=int, default=25, help="sequence length (default 25)")
    ap.add_argument("--V", type=int, default=5, help="vocabulary (default 5)")
    ap.add_argument("--x64", action="store_true", help="float64 (default float32)")
    ap.add_argument("--heads", default="softmax,linear", help="default softmax,linear")
    ap.add_argument(
        "--chains",
        type=int,
        default=1,
        help="with --loops: also ours on this many chains, batched and one after the other",
    )
    ap.add_argument(
        "--loops",
        action="store_true",
        help="time each gradient inside two nested loops, as every sampler calls it",
    )
    a = ap.parse_args(argv)
    if a.chains > 1 and not a.loops:
        ap.error("--chains needs --loops")
    if a.x64:
        jax.config.update("jax_enable_x64", True)
    if a.out is None:
        paper = (a.L, a.V, a.x64, a.loops) == (25, 5, False, False)
        tail = f"_L{a.L}_V{a.V}{'_x64' * a.x64}{'_loops' * a.loops}"
        tail += f"_chains{a.chains}" if a.chains > 1 else ""
        a.out = OUT if paper else OUT.with_name(f"bench_collapsed{tail}.json")
    Ps = tuple(a.P) if a.P else (32, 322) if a.quick else (32, 322, 1250)
    energies = [("ours", marginal_energy), ("one_hot", one_hot_energy)]
    if a.against:
        energies.append(("against", energy_with(features_at(a.against))))
    rounds = 2 if a.quick else a.rounds
    peak0 = peaks()
    print(
        f"peaks: {peak0['gemm_gflops']:.0f} GFLOP/s GEMM, stream {peak0['stream_gbs']:.1f} GB/s "
        f"(memory), {peak0['stream_cache_gbs']:.1f} GB/s (cache); load {peak0['load'][0]:.2f}",
        flush=True,
    )
    rows = []
    for attention in a.heads.split(","):
        for P in Ps:
            head, t, m, obj = problem(attention, P, a.L, a.V)
            x0 = head.W_G.ravel()
            raw = {
                name: jax.grad(lambda x, f=f: f(with_WG(head, x), t, m, obj))
                for name, f in energies
            }
            grads = {k: jax.jit(g) for k, g in raw.items()}
            timers = {k: jax.jit(in_loops(g)) for k, g in raw.items()} if a.loops else grads
            per_call = LOOPS[0] * LOOPS[1] if a.loops else 1
            args = dict.fromkeys(timers, x0)
            calls = dict.fromkeys(timers, per_call)
            if a.chains > 1:  # ours on a.chains chains, batched and one after the other
                xs = x0[None] + 1e-3 * jax.random.normal(jax.random.key(5), (a.chains, x0.size))
                loop = in_loops(raw["ours"])
                timers |= {
                    "chains_batched": jax.jit(jax.vmap(loop)),
                    "chains_apart": jax.jit(lambda xs, f=loop: jax.lax.map(f, xs)),
                }
                args |= dict.fromkeys(("chains_batched", "chains_apart"), xs)
                calls |= dict.fromkeys(("chains_batched", "chains_apart"), per_call * a.chains)
            compiled, compile_s = {}, {}
            for k, g in timers.items():
                t0 = time.perf_counter()
                compiled[k] = g.lower(args[k]).compile()
                compile_s[k] = time.perf_counter() - t0
            g0, g1 = (np.asarray(grads[k](x0), np.float64) for k in ("ours", "one_hot"))
            load0 = os.getloadavg()
            n = max(10, int(2000 / P))
            ms = {k: [] for k in timers}
            cpu = {k: [] for k in timers}
            for _ in range(rounds):
                for k, g in timers.items():
                    wall, proc = timed(g, args[k], max(2, n // calls[k]))
                    ms[k].append(wall / calls[k])
                    cpu[k].append(proc / calls[k])
            cost = compiled["ours"].cost_analysis()
            cost = cost[0] if isinstance(cost, list) else cost
            mem = {k: int(c.memory_analysis().temp_size_in_bytes) for k, c in compiled.items()}
            row = {
                "attention": attention,
                "P": P,
                "ms_ours": min(ms["ours"]),
                "ms_one_hot": min(ms["one_hot"]),
                "ms_rounds": ms,
                "cpu_ms_ours": min(cpu["ours"]),
                "cpu_ms_one_hot": min(cpu["one_hot"]),
                "ratio": min(ms["one_hot"]) / min(ms["ours"]),
                "cpu_ratio": min(cpu["one_hot"]) / min(cpu["ours"]),
                "max_rel_diff": float(np.max(np.abs(g0 - g1)) / np.max(np.abs(g1))),
                "temp_bytes": mem,
                "compile_s": compile_s,
                "counted": counted(attention, P, t.shape[1], head.W_E.shape[1], x0.dtype.itemsize),
                "xla_cost": {
                    "flops": float(cost.get("flops", float("nan"))),
                    "bytes": float(cost.get("bytes accessed", float("nan"))),
                },
                "load": [load0, os.getloadavg()],
            }
            if "against" in cpu:
                g2 = np.asarray(grads["against"](x0), np.float64)
                row |= {
                    "against": a.against,
                    "cpu_ms_against": min(cpu["against"]),
                    "cpu_speedup_vs_against": min(cpu["against"]) / min(cpu["ours"]),
                    "max_rel_diff_against": float(np.max(np.abs(g0 - g2)) / np.max(np.abs(g2))),
                }
            if a.chains > 1:
                row |= {
                    "chains": a.chains,
                    "cpu_ms_chains_batched": min(cpu["chains_batched"]),
                    "cpu_ms_chains_apart": min(cpu["chains_apart"]),
                    "logits_mib": a.chains * P * a.L**2 * x0.dtype.itemsize / 2**20,
                }
                print(
                    f"  {a.chains} chains: batched {row['cpu_ms_chains_batched']:.2f}, one after "
                    f"the other {row['cpu_ms_chains_apart']:.2f} CPU ms per gradient "
                    f"({row['logits_mib']:.2f} MiB of logits)",
                    flush=True,
                )
            if a.profile:
                ops = operation_times(timers["ours"], x0)
                row["operations_us"] = ops
                print("  operations (median us per call):")
                for name, us, k in ops[:25]:
                    print(f"    {us:8.1f}  x{k:<3d} {name}")
            rows.append(row)
            print(
                f"{attention:8s} P={P:5d}: ours {row['ms_ours']:.2f} ms (CPU "
                f"{row['cpu_ms_ours']:.2f}), one-hot {row['ms_one_hot']:.2f} ms, ratio "
                f"{row['ratio']:.2f} (CPU {row['cpu_ratio']:.2f}), compile "
                f"{compile_s['ours']:.1f} s, load {load0[0]:.2f}"
                + (
                    f"; at {a.against}: CPU {row['cpu_ms_against']:.2f} ms, ours "
                    f"{row['cpu_speedup_vs_against']:.3f}x"
                    if "against" in row
                    else ""
                ),
                flush=True,
            )
    peak1 = peaks()
    peak = {k: max(peak0[k], peak1[k]) for k in ("gemm_gflops", "stream_gbs", "stream_cache_gbs")}
    peak["runs"] = [peak0, peak1]
    for r in rows:  # the cache bandwidth (the larger): the roofline is then the shorter
        for src, c in (("counted", r["counted"]), ("xla", r["xla_cost"])):
            t_flop = c["flops"] / peak["gemm_gflops"] / 1e6  # ms
            t_byte = c["bytes"] / peak["stream_cache_gbs"] / 1e6
            r[f"roofline_ms_{src}"] = max(t_flop, t_byte)
            r[f"roofline_fraction_{src}"] = max(t_flop, t_byte) / r["ms_ours"]
            r[f"roofline_fraction_{src}_cpu"] = max(t_flop, t_byte) / r["cpu_ms_ours"]
    out = {
        "date": datetime.date.today().isoformat(),
        "environment": environment(),
        "rounds": rounds,
        "L": a.L,
        "V": a.V,
        "dtype": "float64" if a.x64 else "float32",
        "peaks": peak,
        "rows": rows,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1))
    print(
        f"\npeaks {peak['gemm_gflops']:.0f} GFLOP/s, stream {peak['stream_gbs']:.1f} GB/s "
        f"(memory), {peak['stream_cache_gbs']:.1f} GB/s (cache); peak RSS "
        f"{out['peak_rss_mib']:.0f} MiB"
    )
    print(
        "\n| head | P | ours (ms) | one-hot autodiff (ms) | ratio | CPU ms (ours / one-hot) "
        "| MFLOP | MB | roofline (ms) | of roofline | load | temp MiB (ours / one-hot) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["counted"]
        print(
            f"| {r['attention']} | {r['P']} | {r['ms_ours']:.2f} | {r['ms_one_hot']:.2f} | "
            f"{r['ratio']:.2f} | {r['cpu_ms_ours']:.2f} / {r['cpu_ms_one_hot']:.2f} | "
            f"{c['flops'] / 1e6:.0f} | {c['bytes'] / 1e6:.1f} | "
            f"{r['roofline_ms_counted']:.2f} | {100 * r['roofline_fraction_counted']:.0f}% | "
            f"{r['load'][0][0]:.2f} | {r['temp_bytes']['ours'] / 2**20:.1f} / "
            f"{r['temp_bytes']['one_hot'] / 2**20:.1f} |"
        )
    return out


if __name__ == "__main__":
    main()
