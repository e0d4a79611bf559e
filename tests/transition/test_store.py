"""transition/store.py: the checkpoint key ignores the memory budget and batching, but not the
TI settings."""

from __future__ import annotations

import math

import copyhead_jax as ch
from copyhead_jax.transition import TISettings

TINY_CFG = ch.PLAIN.replace(task=dict(L=4, V=3), model=dict(width=math.inf, attention="softmax",
                                                               engine="reduced"),
                            train=dict(train_embeddings=False))  # fmt: skip
GRID = (8, 11, 16, 23, 32, 45, 64)


def test_checkpoint_key_ignores_the_memory_budget_and_batching_but_not_the_settings():
    # a run resumes on another machine (another memory budget, a CPU after an accelerator);
    # anything that changes the numbers beyond float rounding changes the key
    from copyhead_jax.transition import run_key

    s = TISettings(batched=False)
    key = run_key(TINY_CFG, s, [list(GRID), 0.5, 0])
    other = TINY_CFG.replace(sweep=dict(memory_budget_gb=60.0))
    assert run_key(other, TISettings(batched=True), [list(GRID), 0.5, 0]) == key
    assert run_key(TINY_CFG, TISettings(n_iter=200, batched=False), [list(GRID), 0.5, 0]) != key
    assert run_key(TINY_CFG.replace(task=dict(L=5)), s, [list(GRID), 0.5, 0]) != key
    assert run_key(TINY_CFG, s, [list(GRID), 0.6, 0]) != key
