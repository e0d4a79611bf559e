"""The copy task (docs/theory.md §1): i.i.d. uniform one-hot tokens, target ``y^a = x^{a-1}``.

Sequences are stored as token indices ``[P, L]``; one-hot matrices are built on the fly. For a
sweep, each seed draws ``P_max`` training sequences once and the dataset for ``P`` is its first
``P`` rows (nested: a larger ``P`` adds data rather than redrawing it), selected by a 0/1 mask.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._types import Mask, OneHotSeq, TargetSeq, TokenBatch


def sample_tokens(key: Array, *, n: int, L: int, V: int) -> TokenBatch:
    """``n`` sequences of ``L`` i.i.d. uniform tokens in ``{0..V-1}``.

    Sequence ``alpha`` is drawn from ``fold_in(key, alpha)``, so the first ``P`` sequences do
    not depend on ``n``: datasets are nested across P grids and across sweeps.
    """
    draw = lambda i: jax.random.randint(jax.random.fold_in(key, i), (L,), 0, V, dtype=jnp.int32)
    return jax.vmap(draw)(jnp.arange(n))


def one_hot(tokens: Int[Array, "*batch L"], V: int) -> Float[Array, "*batch L V"]:
    """``X`` with rows ``x^a = e_{t_a}`` (of one sequence, or of a batch of them)."""
    return jax.nn.one_hot(tokens, V, dtype=jnp.float32)


def copy_targets(x: OneHotSeq) -> TargetSeq:
    """``Y = G* X``: ``y^a = x^{a-1}`` with periodic boundary."""
    return jnp.roll(x, 1, axis=-2)


def nested_mask(P: Int[Array, ""] | int, P_max: int) -> Mask:
    """1 for the first ``P`` of ``P_max`` sequences, 0 for the padding."""
    return (jnp.arange(P_max) < P).astype(jnp.float32)


class SeedData(NamedTuple):
    """One seed's data: ``train[P_max, L]`` (nested prefixes) and ``test[n_test, L]``."""

    train: TokenBatch
    test: TokenBatch


def seed_data(key: Array, *, P_max: int, n_test: int, L: int, V: int) -> SeedData:
    """Training pool and a separate probe/test set, from independent keys."""
    k_train, k_test = jax.random.split(key)
    return SeedData(
        train=sample_tokens(k_train, n=P_max, L=L, V=V),
        test=sample_tokens(k_test, n=n_test, L=L, V=V),
    )


def masked_mean(x: Float[Array, "P ..."], mask: Mask) -> Float[Array, "..."]:
    """Mean over the first axis counting only ``mask == 1`` rows (padding never leaks in)."""
    m = mask.reshape(mask.shape + (1,) * (x.ndim - 1))
    return jnp.sum(jnp.where(m > 0, x, 0.0), axis=0) / jnp.maximum(jnp.sum(mask), 1.0)
