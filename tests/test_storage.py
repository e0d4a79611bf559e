"""storage.py: atomic writes that honour the umask and name the file they failed on, and the
output lock that refuses a live writer and takes over a dead one."""

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.storage import acquire_lock, atomic_save_npz, release_lock
from copyhead_jax.sweep import run as sweep_mod
from tests.helpers import FAKE_CFG

# crash safety


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_result_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = atomic_save_npz(tmp_path / "r.npz", {"x": np.zeros(2)}, {"kind": "k"})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode


def test_lock_refuses_a_live_writer_and_takes_over_a_dead_one(tmp_path, monkeypatch):
    out = tmp_path / "r.npz"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        Path(str(out) + ".lock").write_text(f"{live.pid}\n")
        with pytest.raises(ValueError, match=rf"another process \(pid {live.pid}"):
            acquire_lock(out)
        monkeypatch.setattr(sweep_mod, "Trainer", lambda *a: pytest.fail("training started"))
        with pytest.raises(ValueError, match=f"pid {live.pid}"):
            ch.run_sweep(FAKE_CFG, out=out, progress=False)
    finally:
        live.kill()
        live.wait()
    lock = acquire_lock(out)  # the holder is dead: stale, taken over
    assert lock.read_text().strip() == str(os.getpid())
    release_lock(lock)
    assert not lock.exists()


def test_a_failed_write_names_the_file_and_leaves_no_tmp(tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ValueError, match=r"cannot write '.*r\.npz': No space left on device"):
        atomic_save_npz(tmp_path / "r.npz", {"x": np.zeros(3)}, {"kind": "k"})
    assert not list(tmp_path.iterdir())
