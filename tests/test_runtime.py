"""The deadlock guard (copyhead_jax/_runtime.py) sets JAX's CPU pool size only when it should."""

import os
import subprocess
import sys

import pytest

from copyhead_jax import _runtime

SNIPPET = "import os, copyhead_jax; print(os.environ.get('PJRT_NPROC', 'unset'))"


def _pool_after_import(**env):
    clean = {k: v for k, v in os.environ.items() if k not in ("PJRT_NPROC", "NPROC")}
    out = subprocess.run([sys.executable, "-c", SNIPPET], env={**clean, **env},
                         capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.strip()


@pytest.mark.skipif(
    _runtime.usable_cores() > _runtime.SMALL_MACHINE_CORES, reason="guard is for small machines"
)
def test_small_machine_gets_a_one_thread_pool_unless_the_user_chose():
    assert _pool_after_import() == "1"
    assert _pool_after_import(PJRT_NPROC="2") == "2"  # the user's choice is kept
    assert _pool_after_import(COPYHEAD_KEEP_XLA_POOL="1") == "unset"


def test_guard_does_nothing_once_the_backend_has_started(monkeypatch):
    import jax

    jax.devices()  # the backend is running in this process
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    monkeypatch.delenv("NPROC", raising=False)
    assert _runtime.avoid_lapack_pool_deadlock() is False
    assert "PJRT_NPROC" not in os.environ
