"""``run_sweep``: every (P, seed) run of a config, in chunks of one compiled program.

Data flow: config -> per-seed data (nested P) -> chunks of runs -> compiled Adam segments ->
measurements -> :class:`SweepResult`. Runs are ordered P-major (run ``i * n_seeds + s`` is
``P[i]``, seed ``s``). All chunks have the same size (the last is padded with repeats) so the
whole sweep compiles once. With an output path, each finished chunk is checkpointed next to it
(``OUT.chunks/``) and an interrupted sweep resumes from the finished chunks with identical
results; the final file is written atomically and the checkpoints removed. The memory model
(bytes per run, runs per chunk) lives in :mod:`.runner.memory`.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
from tqdm.auto import tqdm

from .._checks import check_output_path
from ..config import Config
from ..fit import (
    RunInputs,
    Trainer,
    check_lr_mult,
    init_runs,
    measure_runs,
    run_segment,
    sweep_inputs,
)
from ..results import SWEEP_KIND, SweepResult, divergence_flags, order_names
from ..runner import (
    check_memory,
    chunk_size,
    load_checkpoint,
    run_chunked,
    run_mesh,
    shard_runs,
    to_host,
)
from ..sources import tokens_tag, user_seed_data
from ..storage import acquire_lock, atomic_save_npz, environment, release_lock, remove_tmp_orphans

SEGMENT_EPOCHS = 250  # epochs per compiled segment call (progress granularity)


def segment_logs(cfg: Config) -> int:
    """Log points per compiled segment (fixed per config, so one compilation serves all)."""
    every = cfg.train.log_every
    total = math.ceil(cfg.solver.max_epochs / every)
    return max(1, min(total, round(SEGMENT_EPOCHS / every)))


def _fingerprint(cfg: Config, chunk: int) -> str:
    blob = json.dumps({"config": cfg.to_dict(), "chunk": chunk}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def padding_groups(cfg: Config) -> dict[int, np.ndarray]:
    """Padded dataset length -> the runs (P-major indices) trained at that length.

    The exact solver always pads to ``P_max``, in one group: it passes each chunk the number of
    blocks of sequences that hold data (``fit.exact.value_and_grad_fn``), so a P = 4 run costs the
    work of one block while one compiled program serves every P of the sweep."""
    sw = cfg.sweep
    P_of = np.repeat(np.asarray(sw.P), sw.n_seeds)
    if sw.padding == "max" or cfg.solver.kind == "exact":
        return {sw.P_max: np.arange(len(P_of))}
    pads = np.minimum(2 ** np.ceil(np.log2(P_of)).astype(int), sw.P_max)
    return {int(p): np.flatnonzero(pads == p) for p in np.unique(pads)}


_SNAPSHOT_KIND = "copyhead_jax.ChunkSnapshot"


def save_snapshot(snapshot: tuple[Path, str], state, curves: list, n_done: int) -> None:
    """The state of a chunk in progress (every leaf on the host) and its curves so far."""
    path, fp = snapshot
    arrays = {f"leaf_{i:04d}": to_host(x) for i, x in enumerate(jax.tree_util.tree_leaves(state))}
    arrays["curves"] = np.concatenate(curves, axis=1)
    meta = {"kind": _SNAPSHOT_KIND, "schema": 1, "fingerprint": fp, "segments_done": n_done}
    atomic_save_npz(path, arrays, meta)


def load_snapshot(snapshot: tuple[Path, str] | None, fresh):
    """``(state, curves, segments_done)`` from a matching snapshot, else ``None``; the leaves go
    back onto the devices with the sharding of ``fresh`` (a just-initialised state)."""
    if snapshot is None or not snapshot[0].exists():
        return None
    arrays, meta = load_checkpoint(snapshot[0], _SNAPSHOT_KIND)  # unreadable: {} and a warning
    leaves, treedef = jax.tree_util.tree_flatten(fresh)
    n = sum(k.startswith("leaf_") for k in arrays)
    if meta.get("fingerprint") != snapshot[1] or n != len(leaves):
        return None
    new = [
        jax.device_put(arrays[f"leaf_{i:04d}"].astype(x.dtype), x.sharding)
        for i, x in enumerate(leaves)
    ]
    return treedef.unflatten(new), [arrays["curves"]], int(meta["segments_done"])


def _run_chunk(
    trainer: Trainer,
    inp: RunInputs,
    keep_params: bool,
    bar,
    mesh,
    snapshot: tuple[Path, str] | None = None,
    snapshot_every_s: float = 600.0,
) -> dict[str, np.ndarray]:
    """Train one chunk (run axis sharded over ``mesh``) and return its per-run host arrays.

    With ``snapshot = (path, fingerprint)`` the chunk's state is saved there at most every
    ``snapshot_every_s`` seconds of training, and a matching snapshot is resumed from, so a crash
    inside a long chunk loses at most that much work."""
    cfg = trainer.cfg
    rows = jax.tree_util.tree_leaves(inp)[0].shape[0]  # the bar counts runs (padding: see done)
    if cfg.solver.kind == "exact":
        from ..fit.exact_sweep import run_exact_chunk

        out = run_exact_chunk(cfg, inp, keep_params, mesh)
        if bar is not None:
            bar.update(rows)
        return out
    n_logs_total = math.ceil(cfg.solver.max_epochs / cfg.train.log_every)
    seg = segment_logs(cfg)
    n_segments = math.ceil(n_logs_total / seg)
    step = rows / n_segments  # a segment of every run of the chunk
    inp = shard_runs(inp, mesh)
    kinp = inp._replace(key=jax.random.wrap_key_data(inp.key))
    state = init_runs(trainer, kinp)
    loss_init = to_host(measure_runs(trainer, state, kinp)[0].train_loss)  # divergence reference
    curves, start = [], 0
    resumed = load_snapshot(snapshot, state)
    if resumed is not None:
        state, curves, start = resumed
        if bar is not None:
            bar.set_postfix_str(f"resumed from a snapshot ({start} segment(s) done)")
            bar.update(start * step)
    last_save = time.time()
    for i in range(start, n_segments):
        if bool(np.all(to_host(state.stopped))):
            if bar is not None:
                bar.update((n_segments - i) * step)
            break
        state, c = run_segment(trainer, state, kinp, seg)
        curves.append(to_host(c))
        if bar is not None:
            bar.update(step)
        if snapshot is not None and time.time() - last_save >= snapshot_every_s:
            save_snapshot(snapshot, state, curves, i + 1)
            last_save = time.time()
    m, span_gn = measure_runs(trainer, state, kinp)
    curve = np.concatenate(curves, axis=1)[:, :n_logs_total]  # [runs, logs, 2]
    pad = n_logs_total - curve.shape[1]
    curve = np.pad(curve, ((0, 0), (0, pad), (0, 0)), constant_values=np.nan)
    epochs = (np.arange(n_logs_total) + 1) * cfg.train.log_every
    stop = to_host(state.stop_epoch)
    after = epochs[None, :] > np.where(stop > 0, stop, cfg.solver.max_epochs)[:, None]
    curve[after] = np.nan
    n_train = np.maximum(np.asarray(inp.mask).sum(1), 1)
    o = m.order
    n1, nG = order_names(cfg)  # softmax: a1, aG
    out = {
        n1: o.c1, nG: o.cG, "r": o.r, "psi": o.psi, "coverage": o.coverage,
        "sample_coverage": m.sample_coverage, "train_loss": m.train_loss,
        "test_loss": m.test_loss, "copy_accuracy": m.copy_accuracy, "U": state.U,
        "grad_norm": state.grad_norm, "grad_norm_span": span_gn, "stop_epoch": state.stop_epoch,
        "mean_attention": m.mean_attention, "positional_logits": m.positional_logits,
    }  # fmt: skip
    out = {k: to_host(v) for k, v in out.items()}
    measured_ok = np.all(np.isfinite(out["mean_attention"]), axis=(1, 2)) & np.isfinite(
        out["train_loss"]
    )
    out["finite"] = to_host(state.finite) & measured_ok
    out["curve_U"] = curve[:, :, 0]
    out["curve_loss"] = curve[:, :, 1] / n_train[:, None]
    out["loss_init"] = loss_init  # train loss before the first step
    if keep_params:
        import equinox as eqx

        head = eqx.combine(state.params, state.frozen)
        for k in ("W_E", "b", "W_G", "W_O_hat"):
            out[f"params/{k}"] = to_host(getattr(head, k))
    return out


def run_sweep(
    cfg: Config,
    *,
    out: str | Path | None = None,
    progress: bool = True,
    keep_params: bool | None = None,
    lr_mult: np.ndarray | None = None,
    on_chunk: Callable[[int, int], None] | None = None,
    snapshot_every_s: float = 600.0,
    tokens: np.ndarray | None = None,
) -> SweepResult:
    """Fit every (P, seed) run of ``cfg`` with Adam and measure it.

    Args:
        cfg: the sweep's configuration (``ch.preset('small')``, ``cfg.replace(...)``).
        out: save the result here (atomic ``.npz``); checkpoints finished chunks in
            ``OUT.chunks/`` and resumes from them when run again with the same config.
        progress: show a progress bar (stderr) over compiled segments.
        keep_params: keep the fitted weights (to warm-start a sampler); default: when they take
            under 2 GB.
        lr_mult: per-run learning-rate multipliers (P-major order), e.g. to probe stability.
        on_chunk: called as ``on_chunk(i, n_chunks)`` after chunk ``i`` is done and saved.
        snapshot_every_s: with ``out``, the state of the chunk in training is also saved (next
            to the chunk checkpoints) at most this often, and resumed from, so a crash inside
            a long chunk loses at most this much work; ``inf`` turns it off.
        tokens: a user's int sequences ``[n, L]`` instead of the task's source, split into
            seeds by :func:`.sources.user_seed_data`; ``meta['tokens_sha256']`` names them.

    With ``ExactConfig.continuation`` (``cfg.solver``) every run is then also solved from its
    neighbouring P's kept fit and the lowest-U minimum kept (:mod:`copyhead_jax.fit.continuation`;
    adds ``start_source`` and ``U_own_start``).

    Returns:
        A :class:`SweepResult`; a diverged run has ``finite=False`` and the others are kept.
    """
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a copyhead_jax Config, got {type(cfg).__name__}")
    if (isinstance(snapshot_every_s, bool | str | bytes)
            or not isinstance(snapshot_every_s, int | float | np.integer | np.floating)
            or not snapshot_every_s >= 0):  # fmt: skip  (not >= 0 also rejects NaN)
        raise ValueError(
            f"snapshot_every_s must be >= 0 seconds (a number; inf: off), got {snapshot_every_s!r}"
        )
    if out is not None:
        out = check_output_path("out", out, kind=SWEEP_KIND)
    t0 = time.time()
    sw = cfg.sweep
    nP, nS = len(sw.P), sw.n_seeds
    n_runs = nP * nS
    if lr_mult is not None:
        lr_mult = check_lr_mult(lr_mult, n_runs)
    if tokens is not None:
        tokens = user_seed_data(tokens, cfg, sw.P_max, check_only=True)
    N = cfg.model.width
    if keep_params is None:
        Nw = cfg.task.V + cfg.task.L if cfg.model.engine == "reduced" else N
        keep_params = n_runs * 8 * (Nw * Nw + Nw * (2 * cfg.task.V + cfg.task.L)) < 2 * 2**30
    continuation = cfg.solver.kind == "exact" and cfg.solver.continuation and nP > 1
    keep_fitted = keep_params or continuation  # continuation starts from the kept weights
    mesh = run_mesh(cfg.sweep.n_devices)
    groups = padding_groups(cfg)
    sizes = {pad: chunk_size(cfg, len(runs), mesh.size, pad) for pad, runs in groups.items()}
    n_chunks = sum(math.ceil(len(groups[p]) / c) for p, c in sizes.items())
    check_memory(cfg, groups)
    ckpt = Path(str(out) + ".chunks") if out is not None else None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(out)  # one writer per output; released after the final save
        remove_tmp_orphans(out, ckpt)  # left by a final write that was killed
    trainer = Trainer(cfg)
    n_steps = 2 * (nP - 1) if continuation else 0  # continuation: one step per P and pass
    bar = tqdm(  # counts runs (a continuation step re-solves the n_seeds runs of one P)
        total=n_runs + n_steps * nS,
        unit="run",
        bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt} runs [{elapsed}<{remaining}{postfix}]",
        desc=f"sweep {cfg.model.attention} N={N} {cfg.model.engine}/{cfg.solver.kind} "
        f"({n_runs} runs, {n_chunks} chunk(s))",
        disable=not progress,
        file=sys.stderr,
        leave=False,
    )
    chunks_done = [0]
    runs_done, group = [0], {"n": 0, "size": 1}  # the group being run: its runs, chunk size

    def done(c, n, loaded):
        if loaded:
            bar.set_postfix_str(f"resumed {chunks_done[0] + 1} chunk(s) from checkpoints")
        elif on_chunk is not None:
            on_chunk(chunks_done[0], n_chunks)
        chunks_done[0] += 1
        # the chunk's real runs, not its padded slots (the last chunk repeats a run to fill up)
        runs_done[0] += min(group["size"], group["n"] - c * group["size"])
        bar.n = runs_done[0]
        bar.refresh()

    merged: dict[str, np.ndarray] = {}
    for pad, runs in groups.items():
        inputs = jax.tree_util.tree_map(lambda a: a[runs], sweep_inputs(cfg, lr_mult, pad, tokens))
        group.update(n=len(runs), size=sizes[pad])

        def compute(idx, snapshot, inputs=inputs):
            chunk_inputs = jax.tree_util.tree_map(lambda a: a[idx], inputs)
            return _run_chunk(
                trainer, chunk_inputs, keep_fitted, bar, mesh, snapshot, snapshot_every_s
            )

        fingerprint = _fingerprint(cfg, sizes[pad]) + f"-{int(keep_fitted)}-{_lr_tag(lr_mult)}"
        fingerprint += "" if tokens is None else f"-{tokens_tag(tokens)}"  # resume: same rows
        part = run_chunked(
            n_runs=len(runs), chunk=sizes[pad], compute=compute, fingerprint=fingerprint,
            ckpt_dir=None if ckpt is None else ckpt / f"pad{pad}", on_done=done, snapshots=True,
        )  # fmt: skip
        for k, v in part.items():
            merged.setdefault(k, np.zeros((n_runs,) + v.shape[1:], v.dtype))[runs] = v
    if continuation:  # the exact solver pads to P_max in one group: `inputs` are all runs
        from ..fit.continuation import continue_in_P

        merged = continue_in_P(
            cfg, inputs, merged, exact_solve_from(cfg, mesh),
            None if ckpt is None else ckpt / "continuation", fingerprint,
            on_step=lambda: bar.update(nS),
        )  # fmt: skip
        if not keep_params:
            merged = {k: v for k, v in merged.items() if not k.startswith("params/")}
    C = max(sizes.values())
    arrays = {k: v.reshape((nP, nS) + v.shape[1:]) for k, v in merged.items()}
    n_logs = arrays["curve_U"].shape[-1]
    arrays["curve_epoch"] = (np.arange(n_logs) + 1) * cfg.train.log_every
    if cfg.solver.kind == "exact":  # one point: the solver's last iterate
        arrays["curve_epoch"] = np.asarray(arrays["stop_epoch"]).max(keepdims=True).ravel()
    bar.close()
    meta = {
        "environment": environment(),
        "wall_seconds": time.time() - t0,
        "chunk_runs": C,
        "n_chunks": n_chunks,
        "kept_params": bool(keep_params),
    }
    meta.update({} if tokens is None else {"tokens_sha256": tokens_tag(tokens)})
    arrays["diverged"] = divergence_flags(arrays, cfg.task.L)
    result = SweepResult(config=cfg, arrays=arrays, meta=meta)
    n_bad = int(arrays["diverged"].sum())
    if n_bad:
        print(f"warning: {n_bad} of {n_runs} runs diverged (non-finite or blown up: "
              "diverged=True; excluded from means)", file=sys.stderr)  # fmt: skip
    n_unc = int((result.unconverged & ~arrays["diverged"]).sum())
    if n_unc:
        print(f"warning: {n_unc} of {n_runs} exact fits did not converge within "
              f"max_steps={cfg.solver.max_steps} (converged=False; excluded from "
              "means); raise --exact-max-steps or --exact-gtol", file=sys.stderr)  # fmt: skip
    if out is not None:
        result.save(out)
        shutil.rmtree(ckpt, ignore_errors=True)
        release_lock(lock)
    return result


def exact_solve_from(cfg: Config, mesh):
    """``solve(inp, (W_G, W_O_hat))``: exact fits of the runs ``inp`` from those weights, the
    runs padded to a multiple of the mesh size (repeats of the last) and cut back."""
    from ..fit.exact_sweep import run_exact_chunk

    def solve(inp: RunInputs, weights: tuple) -> dict[str, np.ndarray]:
        n = len(np.asarray(inp.mask))
        idx = np.minimum(np.arange(n + (-n) % mesh.size), n - 1)
        inp = jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], inp)
        out = run_exact_chunk(cfg, inp, True, mesh, tuple(np.asarray(w)[idx] for w in weights))
        return {k: v[:n] for k, v in out.items()}

    return solve


def _lr_tag(lr_mult) -> str:
    if lr_mult is None:
        return "1"
    return hashlib.sha256(np.asarray(lr_mult, np.float32).tobytes()).hexdigest()[:8]
