"""The Adam chunk of a sweep: every run of a chunk trained in one compiled program, segment by
segment, with snapshots of the chunk in training.

Full-batch Adam (:mod:`.adam`) runs ``segment_logs`` log points at a time (a compiled segment,
which sets the progress bar's granularity); between segments the chunk's state is saved at most
every ``snapshot_every_s`` seconds (:func:`save_snapshot`), and a matching snapshot is resumed
from, so a crash inside a long chunk loses at most that much training.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import jax
import numpy as np

from ..config import Config
from ..models import ARRAY_FIELDS
from ..results import order_names
from ..runner import load_checkpoint, shard_runs, to_host
from ..storage import atomic_save_npz
from .adam import Trainer, init_runs, measure_runs, run_segment
from .inputs import RunInputs

SEGMENT_EPOCHS = 250  # epochs per compiled segment call (progress granularity)


def segment_logs(cfg: Config) -> int:
    """Log points per compiled segment (fixed per config, so one compilation serves all)."""
    every = cfg.train.log_every
    total = math.ceil(cfg.solver.max_epochs / every)
    return max(1, min(total, round(SEGMENT_EPOCHS / every)))


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


def run_adam_chunk(
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
        n1: o.c1,
        nG: o.cG,
        "r": o.r,
        "psi": o.psi,
        "coverage": o.coverage,
        "sample_coverage": m.sample_coverage,
        "train_loss": m.train_loss,
        "test_loss": m.test_loss,
        "copy_accuracy": m.copy_accuracy,
        "U": state.U,
        "grad_norm": state.grad_norm,
        "grad_norm_span": span_gn,
        "stop_epoch": state.stop_epoch,
        "mean_attention": m.mean_attention,
        "positional_logits": m.positional_logits,
    }
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
        for k in ARRAY_FIELDS:
            out[f"params/{k}"] = to_host(getattr(head, k))
    return out
