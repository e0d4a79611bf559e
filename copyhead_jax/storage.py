"""Result files on disk: one ``.npz`` per result, written atomically, guarded by a lock.

A file holds named arrays plus one JSON string (``__meta__``) with the result kind, the schema
version, the full config, package versions and platform. Writes go to a temporary file in the
same folder followed by ``os.replace``, so a crash never leaves a half-written result; a
``.lock`` file beside a result keeps two processes from writing it at once. Summaries go to JSON
(:func:`write_json`: arrays as lists, 7 significant digits, NaN as null). Every writer of the
package (npz, JSON, netCDF, figures) goes through :func:`atomic_write`, so that a library's
failure is one error naming the file and leaves no temporary behind.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import platform
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._warn import CopyheadWarning

#: 2: order parameters stored under the head's names (softmax ``a1``/``aG``). Schema 1 stored
#: them as ``c1``/``cG`` for every head; it is refused at load (no silent renaming).
SCHEMA_VERSION = 2
#: checkpoints (chunks, snapshots, continuation steps) version their own layout
CHECKPOINT_SCHEMA = 1


def environment() -> dict[str, Any]:
    """Package versions, platform and JAX devices (recorded with every result)."""
    import importlib.metadata as md

    import jax

    versions = {}
    for pkg in ("copyhead_jax", "jax", "jaxlib", "equinox", "optax", "numpyro", "numpy"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    return {
        "versions": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
    }


class WriteError(ValueError):
    """A file that could not be written: one line naming it and saying ``why``; the library's
    own exception (h5py's ``RuntimeError``, an ``OSError`` of a full disk, matplotlib's
    ``ValueError``) is its ``__cause__``."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"cannot write {str(path)!r}: {why}")
        self.path, self.why = path, why


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """``write(tmp)`` into a temporary file beside ``path``, then renamed onto it: a crash never
    leaves a half-written ``path``. Any exception of the writer or the file system becomes a
    :class:`WriteError` naming ``path`` (``KeyboardInterrupt`` passes unchanged), and the
    temporary is removed either way. The file honours the umask, like ``open()``."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise WriteError(path, f"not writable: {e.strerror or e}") from e
    try:
        try:
            os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600
        finally:
            os.close(fd)
        write(tmp)
        os.replace(tmp, path)
    except Exception as e:  # noqa: BLE001 - any library's failure: one line naming the file
        _unlink_quietly(tmp)
        why = e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}: {e}"
        raise WriteError(path, " ".join(why.split())) from e  # h5py's text spans lines
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return path


def atomic_save_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write ``arrays`` and ``meta`` to ``path`` atomically (:func:`atomic_write`); errors name
    the path."""

    def write(tmp: str) -> None:
        buf = io.BytesIO()
        np.savez(buf, __meta__=np.array(json.dumps(meta)), **arrays)
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
            f.flush()
            os.fsync(f.fileno())

    return atomic_write(path, write)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def tmp_orphans(path: str | os.PathLike) -> list[Path]:
    """Temporary files that a killed :func:`atomic_save_npz` of ``path`` (or of anything in
    the folder ``path``) left behind."""
    path = Path(path)
    found = list(path.parent.glob(f".{path.name}.*.tmp")) if path.parent.is_dir() else []
    if path.is_dir():
        found += list(path.rglob(".*.npz.*.tmp"))
    return found


def remove_tmp_orphans(*paths: str | os.PathLike) -> int:
    """Delete the orphans of :func:`tmp_orphans`; call only while holding the path's lock."""
    n = 0
    for p in paths:
        for f in tmp_orphans(p):
            f.unlink(missing_ok=True)
            n += 1
    return n


_HELD: set[Path] = set()


def acquire_lock(path: str | os.PathLike) -> Path:
    """Take ``PATH.lock`` (holding this process's pid) so that one process at a time writes
    ``path``; a lock of a live process is refused naming its pid, one of a dead process (or of
    this process) is taken over. Released by :func:`release_lock`, or at interpreter exit."""
    lock = Path(str(path) + ".lock")
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _alive(pid):
                raise ValueError(
                    f"{str(path)!r} is being written by another process (pid {pid}, lock file "
                    f"{str(lock)!r}); wait for it to finish, or delete the lock if it is stale"
                ) from None
            lock.unlink(missing_ok=True)  # stale: its process is gone
            continue
        except OSError as e:
            raise ValueError(f"output path {str(path)!r} is not writable: {e}") from None
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        if lock not in _HELD:  # one exit hook per path, however often it is taken
            _HELD.add(lock)
            atexit.register(release_lock, lock)
        return lock
    raise ValueError(f"could not take the lock {str(lock)!r}")


def release_lock(lock: Path) -> None:
    """Remove ``lock`` if this process holds it."""
    try:
        if int(lock.read_text().strip() or 0) == os.getpid():
            lock.unlink(missing_ok=True)
    except (OSError, ValueError):
        pass


def release_held_locks() -> None:
    """Release every lock this process holds (before a hard exit that skips ``atexit``)."""
    for lock in list(_HELD):
        release_lock(lock)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


class DamagedCheckpointWarning(CopyheadWarning):
    """A checkpoint or chunk that failed to load: set aside as ``PATH.damaged`` and its work
    recomputed."""


def set_aside(path: str | os.PathLike, why: str) -> Path | None:
    """Rename the damaged checkpoint ``path`` to ``PATH.damaged`` (replacing an older one, so
    the folder keeps one copy to inspect) and warn naming both; returns the new path (``None``
    if it could not be renamed, then it is removed so that a rerun is never blocked by it)."""
    import warnings

    path = Path(path)
    kept = path.with_name(path.name + ".damaged")
    try:
        os.replace(path, kept)
    except OSError:
        kept = None
        _unlink_quietly(str(path))
    where = f"set aside as {str(kept)!r}" if kept else "removed"
    warnings.warn(
        f"checkpoint {str(path)!r} failed to load ({why}); {where}, recomputing its work",
        DamagedCheckpointWarning,
        stacklevel=2,
    )
    return kept


def load_npz(
    path: str | os.PathLike, *, kind: str, schema: int = SCHEMA_VERSION
) -> tuple[dict[str, np.ndarray], dict]:
    """Read a file of the given kind and schema; unreadable, foreign or other-schema files raise
    ``ValueError``."""
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"a result path must be a str or path, got {type(path).__name__}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a folder, not a result file (give a .npz file)")
    if not path.is_file():
        raise ValueError(f"result file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:  # no handle leaks
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - any decoding failure means "not a result file"
        why = "not an .npz archive" if "pickle" in str(e) else str(e)  # never advise pickle
        raise ValueError(f"{str(path)!r} is not a readable copyhead_jax result ({why})") from None
    if "__meta__" not in arrays:
        raise ValueError(f"{str(path)!r} is not a copyhead_jax result (no metadata)")
    try:
        meta = json.loads(str(arrays.pop("__meta__")))
    except ValueError:
        raise ValueError(f"{str(path)!r} is not a copyhead_jax result (bad metadata)") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{str(path)!r} is not a copyhead_jax result (bad metadata)")
    if meta.get("kind") != kind:
        raise ValueError(f"{str(path)!r} holds a {meta.get('kind')!r}, expected a {kind!r}")
    if meta.get("schema") != schema:
        raise ValueError(
            f"{str(path)!r} has result schema {meta.get('schema')}; this copyhead_jax reads "
            f"schema {schema} only (rerun the command that wrote it)"
        )
    return arrays, meta


def jsonable(x: Any) -> Any:
    """NumPy/JAX values to JSON, floats to 7 significant digits (small files), NaN and inf to
    ``None``; an object with ``to_dict`` (a located ``P*``) as its dict."""
    if hasattr(x, "to_dict"):
        return jsonable(x.to_dict())
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "__array__") and not isinstance(x, np.generic):  # NumPy and JAX arrays
        return jsonable(np.asarray(x).tolist())
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return float(f"{float(x):.7g}") if np.isfinite(float(x)) else None
    return x


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """``jsonable(obj)`` to ``path`` (indented), written atomically (:func:`atomic_write`);
    returns the path."""
    text = lambda: json.dumps(jsonable(obj), indent=1, sort_keys=False) + "\n"
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text()))


def nulls_in_lists_to_nan(x: Any) -> Any:
    """JSON writes NaN as null (:func:`jsonable`): back to NaN inside lists, at any depth."""
    if isinstance(x, dict):
        return {k: nulls_in_lists_to_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [np.nan if v is None else nulls_in_lists_to_nan(v) for v in x]
    return x
