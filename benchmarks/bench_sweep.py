"""Sweep throughput: the fused many-run Adam program against a per-run loop and eager PyTorch.

The same sweep work (every run a full-batch Adam epoch on U over ``P_max`` sequences, the
``SMALL`` protocol at the given width and attention) is done three ways and timed after
compilation, per *run-step* (one Adam epoch of one run):

* ``fused``: ``copyhead_jax.fit.adam.run_segment`` over a batch of ``runs`` runs (one compiled
  program, ``vmap`` over runs, early-stopping bookkeeping inside);
* ``loop``: the same ``Trainer`` with a batch of one run, called in a Python loop over runs;
* ``torch``: ``benchmarks/torch_baseline.py``, an eager PyTorch loop over runs of the same model,
  objective and Adam protocol in the same efficient one-hot form (best of 1 and 2 threads).

The two loops do the same work per run whatever the number of runs, so they time a loop over
``min(runs, 4)`` runs (2 with ``--quick``); all candidates of a configuration are timed in
interleaved rounds (the machine is shared: a change of load hits them alike).

It also measures this machine's dense float32 matmul FLOP/s and memory bandwidth (best of a
read-only reduction, an in-place scale, STREAM copy and triad; bytes read plus bytes written),
in a fresh process before any timed run, with the load average recorded, and reports the
roofline efficiency of each configuration: the per-run-step lower bound
``max(FLOPs / peak FLOP/s, bytes / peak bandwidth)`` (counted in ``model_counts``) divided by the
measured time per run-step, against the measured peaks and, for devices in ``NOMINAL``, against
the datasheet's. Peak memory is XLA's ``memory_analysis()`` of the compiled segment
(arguments + outputs - aliased + temporaries), and the per-run bytes at width 10,000 are compared
with 4x the bytes of W^G (weights, gradient, two Adam moments).

    python benchmarks/bench_sweep.py [--quick] [--widths 64 256 1024] [--runs 1 16 64]

``--quick``: widths 64 and 1024, 1 and 64 runs, 2 rounds (a couple of minutes on 2 cores).

Writes ``benchmarks/results/bench_sweep.json`` (with platform and package versions) and prints a
markdown table. Every figure is the minimum over ``--repeats`` rounds (medians are saved too).
torch is a benchmark-only extra.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import resource
import sys
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import RunInputs, Trainer, init_runs, run_segment
from copyhead_jax.storage import environment

sys.path.insert(0, str(Path(__file__).parent))
OUT = Path(__file__).parent / "results" / "bench_sweep.json"
LOG_EVERY = 10  # epochs per log point; a timed segment is n_logs * LOG_EVERY run-steps


# ---- the machine ---------------------------------------------------------------------------


def _best_time(f, repeats: int) -> float:
    f()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def machine_peaks(quick: bool) -> dict:
    """Dense float32 matmul FLOP/s (best of JAX/XLA and torch at n = 1024..4096) and memory
    bandwidth (best of a read-only reduction, an in-place scale with donated buffers in XLA and
    an in-place NumPy scale, over 256 MiB). The best figures are the roofline peaks."""
    rep = 3 if quick else 5
    flops = {}
    for n in (1024, 2048) if quick else (1024, 2048, 4096):
        a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
        b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
        mm = jax.jit(lambda a, b: a @ b)
        flops[f"jax_{n}"] = 2 * n**3 / _best_time(lambda: mm(a, b).block_until_ready(), rep)
    try:
        import torch
        from torch_baseline import device

        dev = device()
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        for n in (1024, 2048):
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)

            def mm_torch(a=a, b=b):
                a @ b
                sync()

            flops[f"torch_{n}"] = 2 * n**3 / _best_time(mm_torch, rep)
    except ImportError:
        pass
    n = 64 * 2**20  # 256 MiB of float32 per array; bytes count reads and writes
    x = jnp.ones((n,), jnp.float32)
    z = jnp.full((n,), 2.0, jnp.float32)
    red = jax.jit(jnp.sum)
    bw = {"jax_read": 4 * n / _best_time(lambda: red(x).block_until_ready(), rep)}
    scale = jax.jit(lambda x: x * 1.0000001, donate_argnums=0)
    box = [scale(x)]

    def inplace():
        box[0] = scale(box[0])
        box[0].block_until_ready()

    bw["jax_inplace_scale"] = 8 * n / _best_time(inplace, rep)
    # STREAM copy and triad into a fresh buffer: read 1 (2) arrays, write 1
    copy = jax.jit(lambda a: a + 0.0)
    bw["jax_stream_copy"] = 8 * n / _best_time(lambda: copy(z).block_until_ready(), rep)
    triad = jax.jit(lambda a, b: a + 1.5 * b)
    bw["jax_stream_triad"] = 12 * n / _best_time(lambda: triad(box[0], z).block_until_ready(), rep)
    y = np.ones(n, np.float32)
    bw["numpy_inplace_scale"] = 8 * n / _best_time(lambda: np.multiply(y, 1.0000001, out=y), rep)
    w, v = np.empty(n, np.float32), np.full(n, 2.0, np.float32)
    bw["numpy_stream_triad"] = 12 * n / _best_time(lambda: np.add(y, 1.5 * v, out=w), rep)
    return {
        "matmul_flops": flops,
        "bandwidth_bytes_per_s": bw,
        "peak_flops": max(flops.values()),
        "peak_bandwidth": max(bw.values()),
    }


#: Datasheet figures (dense float32 without tensor cores, memory bandwidth) of devices we have
#: measured on; efficiency against them is reported next to that against the measured peaks.
NOMINAL = {
    "NVIDIA H200": {"flops": 67e12, "bandwidth": 4.8e12, "source": "NVIDIA H200 SXM datasheet"},
}


def nominal_peaks() -> dict | None:
    kind = jax.devices()[0].device_kind
    return next(({"device": kind, **v} for k, v in NOMINAL.items() if kind.startswith(k)), None)


def peaks_in_fresh_process(quick: bool) -> dict:
    """``machine_peaks`` in a separate Python process started before any timed run (so the
    peaks do not depend on what this process compiled or holds), with the 1-min load average
    before and after it: efficiencies are only comparable between runs at similar load."""
    import os
    import subprocess

    before = os.getloadavg()[0]
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"import bench_sweep as b; print(json.dumps(b.machine_peaks({quick})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    peaks = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        **peaks,
        "load_before": before,
        "load_after": os.getloadavg()[0],
        "cores": len(os.sched_getaffinity(0)),
        "measured_in": "a fresh process",
    }


# ---- what one run-step has to do -----------------------------------------------------------


def model_counts(cfg: ch.Config, P: int) -> dict:
    """FLOPs and bytes of one run-step (one full-batch Adam epoch of one run), lower bounds.

    FLOPs: the data term of U forward + backward in the efficient form the engine executes
    (logits read out of ``M``, one-hot products as selects/additions, linear attention
    reassociated), the weight-side products ``M = U W^G U^T / N``, ``R = W^O U^T`` and their
    backward, the prior, and Adam. Bytes: every trained parameter and its two Adam moments read
    and written once, frozen parameters read once, the tokens and mask read once (intermediates
    and the gradient are not counted: a perfect implementation keeps them in cache).
    """
    L, V, N = cfg.task.L, cfg.task.V, cfg.model.width
    D = V + L
    LL = L * L
    if cfg.model.attention == "softmax":
        fwd = (
            3 * LL  # logits s_ab = M_EE[t_a,t_b] + M_EP[t_a,b] + M_PE[a,t_b] + M_PP[a,b]
            + 5 * LL  # softmax: max, subtract, exp, sum, divide
            + L * V  # values R_E[:, t_b] + R_P[:, b]
            + 2 * LL * V  # f = A val
            + 3 * L * V  # e = f - y, e^2, sum
        )
        bwd = (
            2 * LL * V  # dval = A^T df
            + 2 * LL * V  # dA = df val^T
            + 2 * L * V  # c_a = df^a . f^a
            + 2 * LL  # ds = A (dA - c)
            + 3 * LL  # one-hot sums of ds: dM_PP, dM_EP, dM_PE
            + 2 * L * V * V  # dM_EE
            + 2 * L * V * V  # dR_E, dR_P from dval
        )
    else:  # f = c Phi M (Phi^T val): no L x L array
        fwd = (
            L * V  # values
            + L * V  # K_E = X^T val (one-hot sums)
            + 2 * D * D * V  # H = M K
            + 2 * L * V  # f = c (H[t_a] + H[V + a])
            + 3 * L * V  # errors
        )
        bwd = (
            2 * L * V  # df, dH_E (one-hot sums)
            + 2 * D * D * V  # dM = dH K^T
            + 2 * D * D * V  # dK = M^T dH
            + 2 * L * V  # dval
            + 2 * L * V  # dR_E, dR_P
        )
    data = P * (fwd + bwd)
    n_G, n_O, n_emb = N * N, V * N, N * (V + L)
    gram = (
        2 * D * N * N
        + 2 * D * D * N  # M = U (W^G U^T) / N
        + 2 * V * N * D  # R = W^O U^T
        + 2 * D * D * N
        + 2 * D * N * N  # dW^G = (U^T dM) U / N
        + 2 * V * D * N  # dW^O = dR U
    )
    trained = n_G + n_O
    if cfg.train.train_embeddings:
        gram += 2 * 2 * D * N * N + 2 * V * D * N  # dU through both factors of M, and R
        trained += n_emb
    n_params = n_G + n_O + n_emb
    prior = 4 * n_params  # |w|^2 and its gradient w / sigma^2 added to g
    adam = 16 * trained  # m (3), v (4), sqrt/eps/divide (4), lr and add (2), select (1), norm (2)
    flops = data + gram + prior + adam
    bytes_ = 4 * (6 * trained + (n_params - trained) + P * L + P)
    return {"flops": float(flops), "bytes": float(bytes_), "data_flops": float(data)}


def roofline_seconds(counts: dict, peaks: dict) -> float:
    return max(counts["flops"] / peaks["peak_flops"], counts["bytes"] / peaks["peak_bandwidth"])


# ---- the three implementations -------------------------------------------------------------


def bench_config(width: int, attention: str) -> ch.Config:
    """The ``SMALL`` protocol at this width; early stopping cannot trigger while timing."""
    return ch.SMALL.replace(
        model=dict(width=width, attention=attention),
        train=dict(log_every=LOG_EVERY),
        solver=dict(min_epochs=10**7, max_epochs=10**8),
    )


def make_inputs(cfg: ch.Config, runs: int, P: int, seed: int = 0) -> RunInputs:
    L, V = cfg.task.L, cfg.task.V
    k = jax.random.split(jax.random.key(seed), 3)
    return RunInputs(
        key=jax.random.split(k[0], runs),
        train=jax.random.randint(k[1], (runs, P, L), 0, V, dtype=jnp.int32),
        mask=jnp.ones((runs, P), jnp.float32),
        test=jax.random.randint(k[2], (runs, 64, L), 0, V, dtype=jnp.int32),
        lr_mult=jnp.ones((runs,), jnp.float32),
    )


def memory_bytes(trainer: Trainer, state, inp, n_logs: int) -> dict:
    """XLA's static memory plan of the compiled segment (donated state aliased)."""
    m = run_segment.lower(trainer, state, inp, n_logs).compile().memory_analysis()
    peak = m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes
    return {"peak": int(peak + m.temp_size_in_bytes), "temp": int(m.temp_size_in_bytes)}


class Fused:
    """``run_segment`` over a batch of ``runs`` runs; one call = one timed round."""

    def __init__(self, cfg, runs: int, P: int, n_logs: int):
        self.trainer, self.n_logs = Trainer(cfg), n_logs
        self.inp = make_inputs(cfg, runs, P)
        self.state = init_runs(self.trainer, self.inp)
        self.memory = memory_bytes(self.trainer, self.state, self.inp, n_logs)
        self.steps = runs * n_logs * LOG_EVERY

    def __call__(self):
        self.state, curve = run_segment(self.trainer, self.state, self.inp, self.n_logs)
        jax.block_until_ready(curve)
        assert bool(jnp.all(jnp.isfinite(curve))), "fused sweep diverged while timing"


class Loop:
    """A Python loop over runs of the one-run program (same Trainer, batch of one)."""

    def __init__(self, cfg, runs: int, P: int, n_logs: int):
        self.trainer, self.n_logs = Trainer(cfg), n_logs
        inp = make_inputs(cfg, runs, P)
        self.one = [jax.tree_util.tree_map(lambda a, r=r: a[r : r + 1], inp) for r in range(runs)]
        self.states = [init_runs(self.trainer, x) for x in self.one]
        self.steps = runs * n_logs * LOG_EVERY

    def __call__(self):
        for r, x in enumerate(self.one):
            self.states[r], curve = run_segment(self.trainer, self.states[r], x, self.n_logs)
        jax.block_until_ready(curve)


class Torch:
    """Eager PyTorch, a loop over runs, started from the same initial weights."""

    def __init__(self, cfg, runs: int, P: int, n_steps: int, threads: int):
        from torch_baseline import TorchRun

        trainer, inp = Trainer(cfg), make_inputs(cfg, runs, P)
        self.threads, self.n_steps = threads, n_steps
        self.runs = []
        for r in range(runs):
            params, frozen, _ = trainer.init(inp.key[r])
            head = eqx.combine(params, frozen)
            self.runs.append(TorchRun(head, cfg, np.asarray(inp.train[r]), np.asarray(inp.mask[r])))
        self.steps = runs * n_steps

    def __call__(self):
        import torch

        torch.set_num_threads(self.threads)
        for x in self.runs:
            x.run(self.n_steps)


def time_interleaved(cands: dict, repeats: int) -> dict:
    """Each candidate once to warm up (compile), then ``repeats`` rounds of all candidates in
    turn, so that a change in the machine's load hits every candidate alike. Seconds per
    run-step: minimum and median over rounds."""
    for f in cands.values():
        f()
    times = {k: [] for k in cands}
    for _ in range(repeats):
        for k, f in cands.items():
            t0 = time.perf_counter()
            f()
            times[k].append((time.perf_counter() - t0) / f.steps)
    return {k: {"s_per_run_step": min(v), "median": float(np.median(v))} for k, v in times.items()}


def _have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def per_run_memory_at_width(widths, attention: str, P: int) -> dict:
    """Per-run peak bytes of a one-run segment (XLA's memory plan; compiled, not run)."""
    out = {}
    for N in widths:
        cfg = bench_config(N, attention)
        trainer = Trainer(cfg)
        inp = make_inputs(cfg, 1, P)
        state = jax.eval_shape(lambda x: init_runs(trainer, x), inp)  # shapes only: no buffers
        mem = memory_bytes(trainer, state, inp, 1)
        out[str(N)] = {**mem, "W_G_bytes": 4 * N * N, "ratio_to_4_W_G": mem["peak"] / (16 * N * N)}
    return out


# ---- driver --------------------------------------------------------------------------------


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smaller grid (a few minutes)")
    p.add_argument("--widths", type=int, nargs="+", default=None)
    p.add_argument("--runs", type=int, nargs="+", default=None)
    p.add_argument("--attention", nargs="+", default=None, choices=["softmax", "linear"])
    p.add_argument("--P", type=int, default=1000, help="P_max, sequences per run")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--memory-width", type=int, default=10_000)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args(argv)
    widths = a.widths or ([64, 1024] if a.quick else [64, 256, 1024])
    runs_grid = a.runs or ([1, 64] if a.quick else [1, 16, 64])
    atts = a.attention or ["softmax", "linear"]
    repeats = a.repeats or (2 if a.quick else 3)
    n_logs = 1  # LOG_EVERY run-steps per timed segment and run
    loop_runs = 2 if a.quick else 4  # the per-run loop and torch time this many runs each

    peaks = peaks_in_fresh_process(a.quick)
    nominal = nominal_peaks()
    print(
        f"peak matmul {peaks['peak_flops'] / 1e9:.1f} GFLOP/s, "
        f"peak bandwidth {peaks['peak_bandwidth'] / 1e9:.1f} GB/s",
        flush=True,
    )
    rows = []
    use_torch = not a.no_torch and _have_torch()
    for att in atts:
        for N in widths:
            cfg = bench_config(N, att)
            counts = model_counts(cfg, a.P)
            bound = roofline_seconds(counts, peaks)
            for R in runs_grid:
                cands = {"fused": Fused(cfg, R, a.P, n_logs)}
                n_loop = min(R, loop_runs)  # per-run figures: the loops time a few runs
                cands["loop"] = Loop(cfg, n_loop, a.P, n_logs)
                if use_torch:  # a careful user picks the faster thread count: time both
                    for th in (1, 2):
                        cands[f"torch_{th}"] = Torch(cfg, n_loop, a.P, LOG_EVERY, th)
                tm = time_interleaved(cands, repeats)
                t, loop = tm["fused"]["s_per_run_step"], tm["loop"]["s_per_run_step"]
                tor = None
                if use_torch:
                    th = min((1, 2), key=lambda k: tm[f"torch_{k}"]["s_per_run_step"])
                    tor = {**tm[f"torch_{th}"], "threads": th}
                row = {
                    "attention": att,
                    "width": N,
                    "runs": R,
                    "P": a.P,
                    "loop_runs": n_loop,
                    "fused_ms": 1e3 * t,
                    "loop_ms": 1e3 * loop,
                    "torch_ms": None if tor is None else 1e3 * tor["s_per_run_step"],
                    "loop_over_fused": loop / t,
                    "torch_over_fused": None if tor is None else tor["s_per_run_step"] / t,
                    "roofline_ms": 1e3 * bound,
                    "roofline_eff_fused": bound / t,
                    "roofline_eff_loop": bound / loop,
                    "roofline_eff_torch": None if tor is None else bound / tor["s_per_run_step"],
                    "roofline_eff_nominal": None
                    if nominal is None
                    else roofline_seconds(
                        counts,
                        {"peak_flops": nominal["flops"], "peak_bandwidth": nominal["bandwidth"]},
                    )
                    / t,
                    "peak_bytes": cands["fused"].memory["peak"],
                    "peak_bytes_per_run": cands["fused"].memory["peak"] / R,
                    "counts": counts,
                    "timings": tm,
                    "torch": tor,
                }
                rows.append(row)
                print(_row_line(row), flush=True)
                del cands
    mem_widths = [1024, 2048, 4096, a.memory_width] if not a.quick else [1024, a.memory_width]
    memory = per_run_memory_at_width(mem_widths, atts[0], a.P)
    big = memory[str(a.memory_width)]
    result = {
        "kind": "copyhead_jax.bench_sweep",
        "environment": {**environment(), "torch": _torch_version()},
        "quick": a.quick,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "peaks": peaks,
        "nominal_peaks": nominal,
        "protocol": "SMALL preset (quenched embeddings, muP Adam), L=25, V=5, all P rows valid",
        "rows": rows,
        "per_run_memory": memory,
        "memory_target_met": big["ratio_to_4_W_G"] <= 1.0,
        "maxrss_mb": maxrss_mb(),  # this process's peak resident memory (host)
    }
    print()
    print(markdown_table(rows))
    print(
        f"\nper-run peak bytes at width {a.memory_width}: {big['peak'] / 2**30:.2f} GiB = "
        f"{big['ratio_to_4_W_G']:.2f} x (4 x bytes of W^G)"
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def maxrss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return kb / 1024 / (1024 if sys.platform == "darwin" else 1)


def _torch_version():
    try:
        import torch

        return torch.__version__
    except ImportError:
        return None


def _fmt(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


def _row_line(r) -> str:
    eff = 100 * r["roofline_eff_fused"]
    return (
        f"{r['attention']:8s} N={r['width']:5d} runs={r['runs']:3d}: fused "
        f"{r['fused_ms']:.3f} ms/run-step, loop x{r['loop_over_fused']:.2f}, torch x"
        f"{_fmt(r['torch_over_fused'])}, roofline {eff:.0f}%"
    )


def markdown_table(rows) -> str:
    head = (
        "| attention | width | runs | fused ms/run-step | loop / fused | torch / fused | "
        "roofline eff. fused (loop, torch) | peak MiB per run |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        et = r["roofline_eff_torch"]
        eff = (
            f"{100 * r['roofline_eff_fused']:.0f}% ({100 * r['roofline_eff_loop']:.0f}%, "
            f"{_fmt(et and 100 * et, '{:.0f}%')})"
        )
        lines.append(
            f"| {r['attention']} | {r['width']} | {r['runs']} | {r['fused_ms']:.3f} | "
            f"{r['loop_over_fused']:.2f} | {_fmt(r['torch_over_fused'])} | {eff} | "
            f"{r['peak_bytes_per_run'] / 2**20:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
