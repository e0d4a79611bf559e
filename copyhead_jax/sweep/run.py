"""``run_sweep``: every (P, seed) run of a config, in chunks of one compiled program.

Data flow: config -> per-seed data (nested P) -> chunks of runs -> the solver's compiled
program (:func:`~copyhead_jax.fit.solver_program`: Adam segments or the exact solver) ->
measurements -> :class:`SweepResult`. Runs are ordered P-major (run ``i * n_seeds + s`` is
``P[i]``, seed ``s``). All chunks have the same size (the last is padded with repeats) so the
whole sweep compiles once. With an output path, each finished chunk is checkpointed next to it
(``OUT.chunks/``) and an interrupted sweep resumes from the finished chunks with identical
results; the final file is written atomically and the checkpoints removed. The memory model
(bytes per run, runs per chunk) lives in :mod:`.runner.memory`.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from .._checks import check_output_path
from .._warn import RunHealthWarning
from ..config import Config
from ..fit import check_lr_mult, solver_program, sweep_inputs
from ..results import SWEEP_KIND, SweepResult, divergence_flags
from ..runner import (
    Progress,
    check_memory,
    chunk_size,
    claim,
    failures,
    fingerprint,
    map_groups,
    run_mesh,
)
from ..runner.eta import announce
from ..runner.memory import check_kept_params, kept_params_bytes
from ..sources import tokens_tag, user_seed_data
from ..storage import environment
from .estimate import sweep_estimate


def _fingerprint(cfg: Config, chunk: int) -> str:
    return fingerprint({"config": cfg.to_dict(), "chunk": chunk})


def padding_groups(cfg: Config) -> dict[int, np.ndarray]:
    """Padded dataset length -> the runs (P-major indices) fitted at that length (the solver's
    program decides: :meth:`~copyhead_jax.fit.programs.SolverProgram.padding_groups`)."""
    return solver_program(cfg).padding_groups()


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
    cluster: str | None = None,
    estimate: bool | None = None,
) -> SweepResult:
    """Fit every (P, seed) run of ``cfg`` with its solver and measure it.

    Args:
        cfg: the sweep's configuration (``ch.preset('small')``, ``cfg.replace(...)``).
        out: save the result here (atomic ``.npz``); checkpoints finished chunks in
            ``OUT.chunks/`` and resumes from them when run again with the same config.
        progress: show a progress bar (stderr) with its ETA.
        keep_params: keep the fitted weights (to warm-start a sampler); default: when they take
            under 2 GB.
        lr_mult: per-run learning-rate multipliers (P-major order), e.g. to probe stability.
        on_chunk: called as ``on_chunk(i, n_chunks)`` after chunk ``i`` is done and saved.
        snapshot_every_s: with ``out``, the state of the chunk in training is also saved (next
            to the chunk checkpoints) at most this often, and resumed from, so a crash inside
            a long chunk loses at most this much work; ``inf`` turns it off.
        tokens: a user's int sequences ``[n, L]`` instead of the task's source, split into
            seeds by :func:`.sources.user_seed_data`; ``meta['tokens_sha256']`` names them.
        cluster: run the chunks on a Dask cluster (``"tcp://host:port"``, ``"local:N"``;
            :func:`~copyhead_jax.runner.map_groups`), each from the config alone: the same
            numbers as here (a chunk is a function of its runs), checkpointed here as they
            return; ``None``: in this process.
        estimate: say what the sweep will cost before it starts (one line on stderr,
            :mod:`.estimate`); ``None``: when ``progress``.

    The solver config (``cfg.solver``) chooses the program (:func:`~copyhead_jax.fit.
    solver_program`): Adam, or the exact solver; with ``ExactConfig.continuation`` every run is
    then also solved from its neighbouring P's kept fit and the lowest-U minimum kept
    (:mod:`copyhead_jax.fit.continuation`; adds ``start_source`` and ``U_own_start``).

    Returns:
        A :class:`SweepResult`; a diverged run has ``finite=False`` and the others are kept.
    """
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a copyhead_jax Config, got {type(cfg).__name__}")
    if (
        isinstance(snapshot_every_s, bool | str | bytes)
        or not isinstance(snapshot_every_s, int | float | np.integer | np.floating)
        or not snapshot_every_s >= 0
    ):  # not >= 0 also rejects NaN
        raise ValueError(
            f"snapshot_every_s must be >= 0 seconds (a number; inf: off), got {snapshot_every_s!r}"
        )
    if out is not None:
        out = check_output_path("out", out, kind=SWEEP_KIND)
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
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
        keep_params = kept_params_bytes(cfg) < 2 * 2**30
    elif keep_params:  # asked for: refused before any work when it cannot fit
        check_kept_params(cfg)
    program = solver_program(cfg)
    keep_fitted = program.keep_fitted(keep_params)
    mesh = run_mesh(cfg.sweep.n_devices)
    groups = program.padding_groups()
    sizes = {pad: chunk_size(cfg, len(runs), mesh.size, pad) for pad, runs in groups.items()}
    n_chunks = sum(math.ceil(len(groups[p]) / c) for p, c in sizes.items())
    check_memory(cfg, groups)
    if progress if estimate is None else estimate:  # what it will cost, before any work
        announce(lambda: sweep_estimate(cfg), __name__)
    ckpt = Path(str(out) + ".chunks") if out is not None else None
    held = claim(out, ckpt=ckpt)  # one writer per output; released after the final save
    bar = Progress(  # counts runs (a continuation step re-solves the n_seeds runs of one P)
        n_runs + program.extra_runs(),
        f"sweep {cfg.model.attention} N={N} {cfg.model.engine}/{cfg.solver.kind} "
        f"({n_runs} runs, {n_chunks} chunk(s))",
        show=progress,
        n_chunks=n_chunks,
        on_chunk=on_chunk,
        bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt} runs [{elapsed}<{remaining}{postfix}]",
    )

    merged: dict[str, np.ndarray] = {}
    for pad, runs in groups.items():
        inputs = jax.tree_util.tree_map(lambda a: a[runs], sweep_inputs(cfg, lr_mult, pad, tokens))

        def compute(idx, snapshot, inputs=inputs):
            chunk_inputs = jax.tree_util.tree_map(lambda a: a[idx], inputs)
            return program.run_chunk(
                chunk_inputs, keep_fitted, bar.bar, mesh, snapshot, snapshot_every_s
            )

        fp = _fingerprint(cfg, sizes[pad]) + f"-{int(keep_fitted)}-{_lr_tag(lr_mult)}"
        fp += "" if tokens is None else f"-{tokens_tag(tokens)}"  # resume: same rows
        task = (cfg, lr_mult, pad, tokens, runs, keep_fitted)
        part = bar.chunks(
            n_runs=len(runs),
            chunk=sizes[pad],
            compute=compute,
            fingerprint=fp,
            ckpt_dir=None if ckpt is None else ckpt / f"pad{pad}",
            snapshots=True,
            fan_out=None if cluster is None else functools.partial(_fan_out, cluster, task),
        )
        for k, v in part.items():
            merged.setdefault(k, np.zeros((n_runs,) + v.shape[1:], v.dtype))[runs] = v
    # what needs every chunk's fits (continuation in P; it runs on the one padding group the
    # exact solver has, so `inputs` are all runs)
    merged = program.after_chunks(
        inputs,
        merged,
        mesh,
        None if ckpt is None else ckpt / "continuation",
        fp,
        on_runs=bar.update,
    )
    if not keep_params:  # kept only for the work after the chunks
        merged = {k: v for k, v in merged.items() if not k.startswith("params/")}
    C = max(sizes.values())
    arrays = {k: v.reshape((nP, nS) + v.shape[1:]) for k, v in merged.items()}
    arrays["curve_epoch"] = program.curve_epoch(arrays)
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
        warnings.warn(
            f"{n_bad} of {n_runs} runs diverged (non-finite or blown up: "
            "diverged=True; excluded from means)",
            RunHealthWarning,
            stacklevel=2,
        )
    n_unc = int((result.unconverged & ~arrays["diverged"]).sum())
    if n_unc:
        warnings.warn(
            f"{n_unc} of {n_runs} exact fits did not converge within "
            f"max_steps={cfg.solver.max_steps} (converged=False; excluded from "
            "means); raise --exact-max-steps or --exact-gtol",
            RunHealthWarning,
            stacklevel=2,
        )
    held.finish(None if out is None else lambda: result.save(out))
    return result


def _remote_chunk(task: tuple) -> dict[str, np.ndarray]:
    """One chunk of a sweep from ``(cfg, lr_mult, pad, tokens, runs, keep_fitted, idx)``, built
    from the config alone (a cluster's worker): the inputs and program of :func:`run_sweep`."""
    cfg, lr_mult, pad, tokens, runs, keep_fitted, idx = task
    inputs = sweep_inputs(cfg, lr_mult, pad, tokens)
    chunk_inputs = jax.tree_util.tree_map(lambda a: a[runs[idx]], inputs)
    program = solver_program(cfg)
    return program.run_chunk(
        chunk_inputs, keep_fitted, None, run_mesh(cfg.sweep.n_devices), None, math.inf
    )


def _fan_out(cluster: str, task: tuple, idxs: list) -> list[dict[str, np.ndarray]]:
    """The chunks ``idxs`` of one padding group on ``cluster``; a chunk that failed there is
    one ``ValueError`` after the others (the caller checkpoints what came back first)."""
    out = map_groups(_remote_chunk, [(*task, i) for i in idxs], cluster=cluster)
    bad = failures(out)
    if bad:
        raise ValueError(f"{len(bad)} of {len(idxs)} sweep chunk(s) failed on {cluster}: {bad[0]}")
    return out


def _lr_tag(lr_mult) -> str:
    if lr_mult is None:
        return "1"
    return hashlib.sha256(np.asarray(lr_mult, np.float32).tobytes()).hexdigest()[:8]
