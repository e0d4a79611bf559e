"""Memory model of a sweep: device bytes per run, the budget, and runs per compiled chunk.

Used by :func:`~.sweep.run_sweep` to size its chunks and to refuse, before compiling, a run
that alone does not fit (re-exported from :mod:`.sweep`).
"""

from __future__ import annotations

import math

import jax
import numpy as np

from .config import Config


def per_run_bytes(cfg: Config, P: int | None = None) -> int:
    """Estimated peak device bytes of one run: weights, gradient, two Adam moments, one
    temporary of each trained block, plus the per-sequence activations of a step."""
    N, L, V = cfg.model.width, cfg.task.L, cfg.task.V
    P = cfg.sweep.P_max if P is None else P
    if cfg.model.engine == "reduced":  # the width-(V+L) image; exact solver: float64, L-BFGS
        N = V + L
    trained = N * N + V * N + (N * (V + L) if cfg.train.train_embeddings else 0)
    weights = N * N + V * N + N * (V + L)
    activations = P * L * L * 8 + P * L * V * 6
    if cfg.model.engine == "reduced" and cfg.solver == "exact":
        return 8 * (weights + 48 * trained + 3 * activations)  # 20 L-BFGS pairs + line search
    return 4 * (weights + 4 * trained + activations)


def available_bytes(cfg: Config) -> int:
    """Memory budget for one chunk: the config's, else free device memory (70%), else 4 GB."""
    if cfg.sweep.memory_budget_gb > 0:
        return int(cfg.sweep.memory_budget_gb * 2**30)
    try:
        stats = jax.devices()[0].memory_stats() or {}
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return int(0.7 * free)
    except (KeyError, AttributeError, RuntimeError):
        return 4 * 2**30


def chunk_size(cfg: Config, n_runs: int, n_devices: int = 1, P: int | None = None) -> int:
    """Runs per compiled chunk: ``cfg.sweep.chunk_runs`` or as many as the memory budget of
    each device holds (datasets padded to ``P``), rounded up to a multiple of the device count."""
    if cfg.sweep.chunk_runs > 0:
        c = min(cfg.sweep.chunk_runs, n_runs)
    else:
        per_run = per_run_bytes(cfg, P)
        c = max(1, min(n_runs, n_devices * (available_bytes(cfg) // per_run)))
        if cfg.solver == "exact":  # one P per chunk: its runs share its block count
            c = min(c, cfg.sweep.n_seeds)
    return n_devices * math.ceil(c / n_devices)


def check_memory(cfg: Config, groups: dict[int, np.ndarray]) -> None:
    """Refuse, before compiling, a run that alone exceeds the memory budget (it would swap
    or hang, not fail)."""
    need, have = per_run_bytes(cfg, max(groups)), available_bytes(cfg)
    if need > have:
        raise ValueError(
            f"one run at width {cfg.model.width} needs about {need / 2**30:.1f} GiB of memory, "
            f"but {have / 2**30:.1f} GiB is available (SweepConfig.memory_budget_gb, else 70% of "
            "free device memory, else 4 GiB); use engine='reduced' (--engine reduced), a "
            "smaller width, or a larger memory_budget_gb"
        )


__all__ = ["available_bytes", "check_memory", "chunk_size", "per_run_bytes"]
