"""storage.py: atomic writes that honour the umask and name the file they failed on, the output
lock that refuses a live writer and takes over a dead one, and the JSON summaries (arrays as
lists, 7 significant digits, NaN as null and back to NaN inside lists; written atomically)."""

import errno
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.compare import locate as loc
from copyhead_jax.fit import programs as programs_mod
from copyhead_jax.storage import (
    acquire_lock,
    atomic_save_npz,
    jsonable,
    nulls_in_lists_to_nan,
    release_lock,
    write_json,
)
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
        monkeypatch.setattr(programs_mod, "Trainer", lambda *a: pytest.fail("training started"))
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


# JSON summaries


def test_jsonable_handles_nan_and_arrays():
    out = jsonable({"a": np.array([1.0, np.nan]), "b": np.float32(2.5), "c": jnp.ones(2)})
    assert out == {"a": [1.0, None], "b": 2.5, "c": [1.0, 1.0]}


def test_jsonable_keeps_seven_digits_and_plain_types():
    out = jsonable({1: (math.pi, np.int64(3), np.bool_(True), math.inf, "s", None)})
    assert out == {"1": [3.141593, 3, True, None, "s", None]}
    assert type(out["1"][1]) is int and type(out["1"][2]) is bool


def test_jsonable_writes_a_located_point_as_its_dict():
    p = loc.locate_level(np.array([1.0, 2.0, 4.0]), np.array([0.0, 0.4, 1.0]), 0.5)
    assert jsonable({"p": p}) == {"p": jsonable(p.to_dict())}
    assert jsonable(p)["P_star"] == float(f"{p.P_star:.7g}")


def test_write_json_round_trips_with_nan_restored_in_lists(tmp_path):
    path = write_json(tmp_path / "sub" / "r.json", {"x": np.array([1.0, np.nan]), "y": np.nan})
    assert not list(path.parent.glob("*.tmp"))
    back = nulls_in_lists_to_nan(json.loads(path.read_text()))
    assert back["y"] is None  # only list entries become NaN
    assert back["x"][0] == 1.0 and math.isnan(back["x"][1])
