"""Shared test settings: rank promotion is an error, shapes are small.

Dtype promotion stays "standard": optax's Adam bias correction computes ``b1 ** count`` with an
int32 count, which strict promotion rejects; our own maths is checked in float32/float64 tests.
"""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def tiny():
    import copyhead_jax as ch

    return ch.TINY
