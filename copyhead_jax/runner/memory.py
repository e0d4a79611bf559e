"""Memory model of a sweep: device bytes per run, the budget, and runs per compiled chunk.

Used by :func:`~copyhead_jax.sweep.run_sweep` to size its chunks and to refuse, before compiling, a
run that alone does not fit, and by :func:`~copyhead_jax.sampling.run_sampler` to refuse a sampling
chunk that does not fit; every refusal goes through :func:`refuse_if_over` and names the size, the
budget and the flags that lower it.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np

from ..config import Config


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
    if cfg.model.engine == "reduced" and cfg.solver.kind == "exact":
        # 40 L-BFGS pairs + Lanczos; activations of one block of sequences at a time; the pool
        block = min(P, 32) * L * (L * 8 + V * 6)
        return 8 * (weights + 48 * trained + 3 * block) + DATA_BYTES_PER_TOKEN * P * L
    return 4 * (weights + 4 * trained + activations)


#: Peak bytes per token of drawing a training pool (``data.sample_tokens``: one threefry key per
#: sequence; measured 26 B at P = 2e6, L = 25) and of the copies a sweep keeps of it.
DATA_BYTES_PER_TOKEN = 48


def available_bytes(cfg: Config | None = None) -> int:
    """Memory budget for one chunk: the config's (at most the machine's memory), else free device
    memory (70%), else 4 GiB (at most the machine's memory)."""
    real = machine_bytes()
    if cfg is not None and cfg.sweep.memory_budget_gb > 0:
        return min(int(cfg.sweep.memory_budget_gb * 2**30), real)
    try:
        stats = jax.devices()[0].memory_stats() or {}
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return int(0.7 * free)
    except (KeyError, AttributeError, RuntimeError):
        return min(4 * 2**30, real)


def machine_bytes() -> int:
    """The memory the work can have at most: the device's (an accelerator's limit), else the
    host's physical memory; a budget above it would end in the allocator, not in a refusal."""
    try:
        stats = jax.devices()[0].memory_stats() or {}
        return int(stats["bytes_limit"])
    except (KeyError, AttributeError, RuntimeError):
        pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # no sysconf: no cap
        return 2**62


def chunk_size(cfg: Config, n_runs: int, n_devices: int = 1, P: int | None = None) -> int:
    """Runs per compiled chunk: ``cfg.sweep.chunk_runs`` or as many as the memory budget of
    each device holds (datasets padded to ``P``), rounded up to a multiple of the device count."""
    if cfg.sweep.chunk_runs > 0:
        c = min(cfg.sweep.chunk_runs, n_runs)
    else:
        per_run = per_run_bytes(cfg, P)
        c = max(1, min(n_runs, n_devices * (available_bytes(cfg) // per_run)))
        if cfg.solver.kind == "exact":  # one P per chunk: its runs share its block count
            c = min(c, cfg.sweep.n_seeds)
    return n_devices * math.ceil(c / n_devices)


def refuse_if_over(need: int, have: int, what: str, lower: str) -> None:
    """The one refusal of every engine and sampler: ``what`` needs ``need`` bytes, more than
    the budget ``have`` (:func:`available_bytes`); ``lower`` names the flags that shrink it."""
    if need > have:
        a, b = size_text(need), size_text(have)
        if a == b:  # rounded alike: the bytes say which is larger
            a, b = f"{need:,} bytes", f"{have:,} bytes"
        raise ValueError(
            f"{what} needs about {a} of memory, but {b} is available "
            "(SweepConfig.memory_budget_gb up to the machine's memory, else 70% of free device "
            f"memory, else 4 GiB); {lower}"
        )


def size_text(n: int) -> str:
    """``n`` bytes as GiB to one decimal, as MiB below 0.1 GiB, in bytes below 0.1 MiB (never
    "0.0 GiB")."""
    if n >= 0.1 * 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 0.1 * 2**20 else f"{int(n):,} bytes"


def check_memory(cfg: Config, groups: dict[int, np.ndarray]) -> None:
    """Refuse, before compiling, a run that alone exceeds the memory budget (it would swap,
    hang or die in the allocator, not fail cleanly): full engine, reduced engine, both solvers."""
    P = max(groups)
    need, have = per_run_bytes(cfg, P), available_bytes(cfg)
    if cfg.model.engine == "reduced":
        what = f"one reduced-engine run at P = {P}"
        lower = "use a smaller largest P (--P) or a larger memory_budget_gb"
    else:
        what = f"one run at width {cfg.model.width}"
        lower = (
            "use engine='reduced' (--engine reduced), a smaller width, or a larger memory_budget_gb"
        )
    refuse_if_over(need, have, what, lower)


def kept_params_bytes(cfg: Config) -> int:
    """Host bytes of a sweep's kept weights (``keep_params``): every run's trained blocks, float64
    at most (the reduced engine's width is V + L)."""
    Nw = cfg.task.V + cfg.task.L if cfg.model.engine == "reduced" else cfg.model.width
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    return n_runs * 8 * (Nw * Nw + Nw * (2 * cfg.task.V + cfg.task.L))


def check_kept_params(cfg: Config) -> None:
    """Refuse, before any work, kept weights over the budget."""
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    refuse_if_over(
        kept_params_bytes(cfg),
        available_bytes(cfg),
        f"keeping the weights of {n_runs} runs at width {cfg.model.width}",
        "drop --keep-params, or use fewer --P or --seeds, a smaller --width, or a "
        "larger memory_budget_gb",
    )


def polish_bytes(cfg: Config) -> int:
    """Peak bytes of polishing a sweep: every run's exact float64 solve at once (vmapped; the
    reduced engine's exact model of :func:`per_run_bytes`) plus one full-width head reduced at a
    time (``W^G``, its reduction and one temporary, float64)."""
    red = cfg.replace(model=dict(engine="reduced"), solver=dict(kind="exact"))
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    N = cfg.model.width if cfg.model.engine != "reduced" else 0  # the sweep's full heads
    return n_runs * per_run_bytes(red, cfg.sweep.P_max) + 3 * 8 * N * N


def check_polish_memory(cfg: Config) -> None:
    """Refuse, before any work, a polish over the budget."""
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    refuse_if_over(
        polish_bytes(cfg),
        available_bytes(cfg),
        f"polishing {n_runs} runs at P <= {cfg.sweep.P_max}",
        "polish a sweep of fewer runs (--P, --seeds) or give a larger memory_budget_gb",
    )


def check_sampler_memory(mc, runs_per_chunk: int, run_bytes: int, have: int) -> None:
    """Refuse, before any work, a sampler chunk of ``runs_per_chunk`` runs of ``run_bytes``
    each (the sampler's own memory model, ``Sampler.run_bytes``) over the budget ``have``."""
    need = runs_per_chunk * run_bytes
    what = f"sampling {runs_per_chunk} run(s) x {mc.n_chains} chain(s) of {mc.n_draws} draws"
    steps = "--iterations" if getattr(mc, "kind", "sgld") == "hmc" else "--steps"
    lower = f"use fewer {steps} or --chains, a larger --thin, or a smaller --chunk-runs"
    refuse_if_over(need, have, what, lower)


__all__ = [
    "available_bytes",
    "check_kept_params",
    "check_memory",
    "check_polish_memory",
    "check_sampler_memory",
    "chunk_size",
    "kept_params_bytes",
    "machine_bytes",
    "per_run_bytes",
    "polish_bytes",
    "refuse_if_over",
]
