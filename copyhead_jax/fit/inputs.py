"""The per-run inputs of a sweep: init key, nested training pool and its mask, test set and
learning-rate multiplier of every (P, seed) run, built from a config (run axis first, P-major:
run ``i * n_seeds + s`` is ``P[i]``, seed ``s``)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._types import Mask, TokenBatch
from ..config import Config
from ..data import nested_mask
from ..sources import task_data, user_seed_data


class RunInputs(NamedTuple):
    """Per-run inputs of a chunk (leading run axis)."""

    key: Array  # init key of the run's seed
    train: TokenBatch  # [P_max, L], the seed's nested training pool
    mask: Mask  # [P_max], first P rows
    test: TokenBatch  # [n_test, L]
    lr_mult: Float[Array, ""]  # multiplies the learning rate of this run (1 by default)


def sweep_inputs(cfg: Config, lr_mult, P_pad: int | None = None, tokens=None) -> RunInputs:
    """Host-side per-run inputs for the whole sweep (run axis first, P-major order), with the
    training pools cut to ``P_pad`` rows (default ``P_max``; larger ``P`` are not meaningful);
    ``tokens``: a user's rows instead of the source (:func:`.sources.user_seed_data`)."""
    sw, task = cfg.sweep, cfg.task
    P_pad = sw.P_max if P_pad is None else P_pad
    keys = [jax.random.split(jax.random.key(sw.seed + s)) for s in range(sw.n_seeds)]
    data = (
        [task_data(k[0], task, P_max=P_pad) for k in keys]
        if tokens is None
        else user_seed_data(tokens, cfg, P_pad)
    )  # the task's source, or the user's rows
    init_keys = jnp.stack([jax.random.key_data(k[1]) for k in keys])
    train = jnp.stack([d.train for d in data])
    test = jnp.stack([d.test for d in data])
    nP, nS = len(sw.P), sw.n_seeds
    seed_of = np.tile(np.arange(nS), nP)
    P_of = np.repeat(np.asarray(sw.P), nS)
    lr = np.ones(nP * nS, np.float32) if lr_mult is None else check_lr_mult(lr_mult, nP * nS)
    return RunInputs(
        key=init_keys[seed_of],
        train=train[seed_of],
        mask=jax.vmap(lambda p: nested_mask(p, P_pad))(jnp.asarray(np.minimum(P_of, P_pad))),
        test=test[seed_of],
        lr_mult=jnp.asarray(lr),
    )


def check_lr_mult(lr_mult, n_runs: int) -> np.ndarray:
    """Per-run learning-rate multipliers: ``n_runs`` finite reals > 0 (float32)."""
    try:
        lr = np.asarray(lr_mult, np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"lr_mult must be {n_runs} real numbers > 0, got {lr_mult!r}") from None
    if lr.shape != (n_runs,):
        raise ValueError(f"lr_mult must have one entry per run ({n_runs}), got {lr.shape}")
    if not np.all(np.isfinite(lr) & (lr > 0)):
        raise ValueError(f"lr_mult entries must be finite reals > 0, got {lr.min()} .. {lr.max()}")
    return lr
