"""Every writer of the package (npz results and checkpoints, JSON summaries and checkpoints,
netCDF, figures) goes through one atomic write: a library's failure, an unwritable folder and a
full disk each end in one error naming the file, with neither the file nor a temporary left."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.results import DRAW_FIELDS, PosteriorResult


def _post():
    cfg = ch.TINY.replace(sweep=dict(P=(2, 8), n_seeds=1))
    sgld = ch.SGLDConfig(step_size=1e-5, n_steps=100, burn_in=20, thin=10, n_chains=2)
    shape, rng = (2, 1, 2, 8), np.random.default_rng(0)
    arrays = dict(
        draws=rng.normal(size=(*shape, len(DRAW_FIELDS))),
        accept=rng.uniform(size=shape),
        distance=rng.uniform(size=shape),
        U0=rng.normal(size=shape[:3]),
        finite=np.ones(shape[:3], bool),
        draw_step=np.arange(30, 101, 10),
    )
    return PosteriorResult(cfg, sgld, arrays)


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot(np.arange(2000.0), np.random.default_rng(0).normal(size=2000))
    return fig


def write(kind: str, path):
    """Write a file of ``kind`` to ``path`` with the package's writer of that kind."""
    from copyhead_jax.cli import save_figure
    from copyhead_jax.sampling import save_netcdf
    from copyhead_jax.storage import atomic_save_npz, write_json
    from copyhead_jax.transition.store import write_checkpoint

    big = np.random.default_rng(1).normal(size=20_000)
    return {
        "npz": lambda: atomic_save_npz(path, {"x": big}, {"kind": "k"}),
        "json": lambda: write_json(path, {"x": big}),
        "checkpoint": lambda: write_checkpoint(path, {"x": big}),
        "netcdf": lambda: save_netcdf(_post(), path, P=8, seed=0),
        "figure": lambda: save_figure(_figure(), path),
    }[kind]()


SUFFIX = {"npz": ".npz", "json": ".json", "checkpoint": ".json", "netcdf": ".nc", "figure": ".png"}


def _library_fails(kind, monkeypatch):
    """Make the library under the writer of ``kind`` fail as it does (h5py's RuntimeError, a
    zip or JSON encoder's error, matplotlib after writing part of the file)."""
    import matplotlib.figure
    import xarray

    def boom(*a, **k):
        for x in a[1:2]:  # a writer that got as far as its file: part of it is on disk
            if isinstance(x, str) and os.path.exists(x):
                with open(x, "wb") as f:
                    f.write(b"partial")
        raise RuntimeError("Can't decrement id ref count (file write failed:\nerrno = 28)")

    target = {
        "npz": (np, "savez"),
        "json": (json, "dumps"),
        "checkpoint": (json, "dumps"),
        "netcdf": (xarray.Dataset, "to_netcdf"),
        "figure": (matplotlib.figure.Figure, "savefig"),
    }[kind]
    monkeypatch.setattr(*target, boom)


def _one_line_naming(err: Exception, path) -> None:
    msg = str(err)
    assert str(path) in msg and "\n" not in msg, msg


@pytest.mark.parametrize("kind", list(SUFFIX))
def test_a_library_failure_is_one_error_naming_the_file(kind, tmp_path, monkeypatch):
    path = tmp_path / f"out{SUFFIX[kind]}"
    _library_fails(kind, monkeypatch)
    with pytest.raises(ValueError) as e:
        write(kind, path)
    _one_line_naming(e.value, path)
    assert "RuntimeError" in str(e.value)
    assert list(tmp_path.iterdir()) == []  # neither the file nor a temporary


@pytest.mark.parametrize("kind", list(SUFFIX))
def test_an_unwritable_folder_is_one_error_naming_the_file(kind, tmp_path):
    path = Path("/proc/copyhead_no_such_folder/out" + SUFFIX[kind])  # not writable, even by root
    with pytest.raises(ValueError) as e:
        write(kind, path)
    _one_line_naming(e.value, path)
    if os.geteuid() != 0:  # a read-only folder binds everyone but root
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            with pytest.raises(ValueError) as e:
                write(kind, ro / f"out{SUFFIX[kind]}")
            _one_line_naming(e.value, ro / f"out{SUFFIX[kind]}")
            assert list(ro.iterdir()) == []
        finally:
            ro.chmod(0o755)


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from tests.test_writers import SUFFIX, write
# a file size limit is a full disk to the writer (EFBIG instead of ENOSPC), without root
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
folder = Path(sys.argv[1])
for kind in SUFFIX:
    path = folder / f"out{SUFFIX[kind]}"
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    try:
        write(kind, path)
        print(kind, "written")
    except ValueError as e:
        print(kind, "refused:", e)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
"""


def test_a_full_disk_is_one_error_per_file_and_leaves_nothing(tmp_path):
    """Each writer in a process whose files may not pass 4 kB (each of these files is larger):
    every one refused in one line naming its file, nothing left in the folder, and the process
    ends cleanly (h5py writing the netCDF itself failed again at exit: tracebacks from its
    ``__dealloc__``, then a segmentation fault)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FULL_DISK), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == len(SUFFIX), r.stdout
    for kind, line in zip(SUFFIX, lines):
        assert line.startswith(f"{kind} refused: cannot write") and f"out{SUFFIX[kind]}" in line
        assert "too large" in line.lower(), line  # EFBIG, named
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []
