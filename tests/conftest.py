"""Shared test settings: rank promotion is an error, shapes are small.

Dtype promotion stays "standard": optax's Adam bias correction computes ``b1 ** count`` with an
int32 count, which strict promotion rejects; our own maths is checked in float32/float64 tests.
"""

import os

# XLA's CPU backend can deadlock in its Eigen worker pool on a loaded 2-core machine (processes
# seen asleep forever mid-computation, three times this session; the flag made the same tests
# pass). Set before JAX is imported; appended to any flags the caller set.
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    ).strip()

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def tiny():
    import copyhead_jax as ch

    return ch.TINY
