"""Shared test settings: rank promotion is an error, shapes are small.

Dtype promotion stays "standard": optax's Adam bias correction computes ``b1 ** count`` with an
int32 count, which strict promotion rejects; our own maths is checked in float32/float64 tests.
"""

import atexit
import os
import shutil
import tempfile

# XLA's CPU runtime can deadlock on a 2-core machine when batched LAPACK kernels run concurrently
# on its intra-op pool (gdb: both pool workers in jaxlib's ParallelBatchMap; see
# copyhead_jax/_runtime.py). A one-thread pool avoids it and is no slower here; importing
# copyhead_jax sets the same on small machines, the tests set it whatever the machine.
os.environ.setdefault("PJRT_NPROC", "1")
if "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    ).strip()

# One compilation cache for the whole run (fresh each run, shared with the CLI subprocesses):
# many tests build the same programs from new closures; measured -20% CPU time on
# test_sweep + test_models. Never reused across runs, so no stale state is tested.
_CACHE = tempfile.mkdtemp(prefix="copyhead-test-jax-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
for _k, _v in (
    ("JAX_COMPILATION_CACHE_DIR", _CACHE),
    ("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0"),
    ("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0"),
):
    os.environ.setdefault(_k, _v)

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@pytest.fixture
def tiny():
    import copyhead_jax as ch

    return ch.TINY
