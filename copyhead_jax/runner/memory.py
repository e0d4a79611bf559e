"""Memory model of a sweep: device bytes per run, the budget, and runs per compiled chunk.

Used by :func:`~copyhead_jax.sweep.run_sweep` to size its chunks and to refuse, before compiling, a
run that alone does not fit, and by :func:`~copyhead_jax.sampling.run_sampler` to refuse a sampling
chunk that does not fit; every refusal goes through :func:`refuse_if_over` and names the size, the
budget and the flags that lower it.
"""

from __future__ import annotations

import math

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
            "(SweepConfig.memory_budget_gb, else 70% of free device memory, else 4 GiB); "
            f"{lower}"
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
        lower = ("use engine='reduced' (--engine reduced), a smaller width, or a larger "
                 "memory_budget_gb")  # fmt: skip
    refuse_if_over(need, have, what, lower)


def check_sampler_memory(mc, runs_per_chunk: int, run_bytes: int, have: int) -> None:
    """Refuse, before any work, a sampler chunk of ``runs_per_chunk`` runs of ``run_bytes``
    each (the sampler's own memory model, ``Sampler.run_bytes``) over the budget ``have``."""
    need = runs_per_chunk * run_bytes
    what = (f"sampling {runs_per_chunk} run(s) x {mc.n_chains} chain(s) of {mc.n_draws} "
            "draws")  # fmt: skip
    steps = "--iterations" if getattr(mc, "kind", "sgld") == "hmc" else "--steps"
    lower = f"use fewer {steps} or --chains, a larger --thin, or a smaller --chunk-runs"
    refuse_if_over(need, have, what, lower)


__all__ = [
    "available_bytes", "check_memory", "check_sampler_memory", "chunk_size", "per_run_bytes",
    "refuse_if_over",
]  # fmt: skip
