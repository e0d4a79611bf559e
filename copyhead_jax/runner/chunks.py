"""Chunked, checkpointed execution of a run axis: the resume machinery of sweeps and samplers.

``checkpointed`` keeps one piece of work in a file tagged with the fingerprint of what
determines it: read back when the tag matches, else computed and saved (a continuation step,
an umbrella window set); ``checkpointed_record`` does the same for a JSON record (a transition's
(seed, P) group: nested numbers and text that arrays do not fit). ``run_chunked`` splits
``n_runs`` runs into equal chunks (the last padded by repeating a run, so one compiled program
serves every chunk), computes each with ``compute(idx)``, checkpoints it atomically in
``ckpt_dir/chunk_XXXXX.npz`` tagged with a fingerprint of everything that determines it, and on
a rerun loads the chunks whose fingerprint matches instead of recomputing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..storage import CHECKPOINT_SCHEMA, atomic_save_npz, atomic_write, load_npz, set_aside

_CHUNK_KIND = "copyhead_jax.Chunk"


def load_checkpoint(path: Path, kind: str) -> tuple[dict[str, np.ndarray], dict]:
    """A checkpoint's arrays and meta; an unreadable one is set aside (``PATH.damaged``, a
    :class:`~copyhead_jax.storage.DamagedCheckpointWarning` naming it) and returned empty (no
    fingerprint), so that its work is recomputed instead of blocking."""
    try:
        return load_npz(path, kind=kind, schema=CHECKPOINT_SCHEMA)
    except ValueError as e:
        set_aside(path, str(e))
        return {}, {}


def checkpointed(
    path: Path | None,
    kind: str,
    fingerprint: str | None,
    compute: Callable[[], dict[str, np.ndarray]],
) -> tuple[dict[str, np.ndarray], bool]:
    """``(arrays, loaded)``: the arrays kept at ``path`` if its fingerprint is ``fingerprint``
    (``loaded``), else ``compute()`` saved there atomically with that tag (``path=None``: not
    kept, and no fingerprint needed); a damaged file is set aside and recomputed
    (:func:`load_checkpoint`)."""
    if path is not None and path.exists():
        arrays, meta = load_checkpoint(path, kind)
        if meta.get("fingerprint") == fingerprint:
            return arrays, True
    arrays = compute()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_save_npz(path, arrays, {"kind": kind, "schema": 1, "fingerprint": fingerprint})
    return arrays, False


def run_chunked(
    *,
    n_runs: int,
    chunk: int,
    compute: Callable[[np.ndarray], dict[str, np.ndarray]],
    fingerprint: str,
    ckpt_dir: Path | None,
    on_done: Callable[[int, int, bool], None] | None = None,
    snapshots: bool = False,
    merge: Callable[[list[dict[str, np.ndarray]]], dict[str, np.ndarray]] | None = None,
    fan_out: Callable[[list[np.ndarray]], list[dict[str, np.ndarray]]] | None = None,
) -> dict[str, np.ndarray]:
    """Per-run arrays of all runs (leading axis ``n_runs``), chunk by chunk.

    ``on_done(i, n_chunks, loaded)`` is called after chunk ``i`` is computed and saved (or
    loaded from its checkpoint). With ``snapshots``, ``compute(idx, snapshot)`` also gets
    ``(path, fingerprint)`` (or ``None`` without ``ckpt_dir``) where it may keep the state of the
    chunk in progress; the file is removed once the chunk is checkpointed. ``merge(parts)``
    joins the chunks' arrays (default: concatenated along the run axis). ``fan_out(idxs)``:
    the arrays of every chunk not kept, computed elsewhere (in the order of ``idxs``, the chunks'
    run indices; :func:`~.fanout.map_groups` on a cluster) instead of by ``compute``.
    """
    n_chunks = math.ceil(n_runs / chunk)

    def run_idx(c: int) -> np.ndarray:  # the last chunk repeats the last run to fill up
        return np.minimum(np.arange(c * chunk, (c + 1) * chunk), n_runs - 1)

    kept = {}
    for c in range(n_chunks):
        path = ckpt_dir / f"chunk_{c:05d}.npz" if ckpt_dir is not None else None
        if path is not None and path.exists():
            arrays, meta = load_checkpoint(path, _CHUNK_KIND)
            if meta.get("fingerprint") == f"{fingerprint}-{c}":
                kept[c] = arrays
    todo = [c for c in range(n_chunks) if c not in kept]
    remote = (
        {}
        if fan_out is None or not todo
        else dict(zip(todo, fan_out([run_idx(c) for c in todo]), strict=True))
    )
    parts = []
    for c in range(n_chunks):
        if c in kept:
            parts.append(kept[c])
            if on_done is not None:
                on_done(c, n_chunks, True)
            continue
        idx = np.arange(c * chunk, (c + 1) * chunk)
        valid = idx < n_runs
        fp = f"{fingerprint}-{c}"
        path = ckpt_dir / f"chunk_{c:05d}.npz" if ckpt_dir is not None else None
        safe_idx = run_idx(c)
        partial = ckpt_dir / f"chunk_{c:05d}.partial.npz" if ckpt_dir is not None else None
        if c in remote:
            arrays = remote.pop(c)
        elif snapshots:
            arrays = compute(safe_idx, None if partial is None else (partial, fp))
        else:
            arrays = compute(safe_idx)
        arrays = {k: np.asarray(v)[valid] for k, v in arrays.items()}
        if path is not None:
            atomic_save_npz(path, arrays, {"kind": _CHUNK_KIND, "schema": 1, "fingerprint": fp})
            partial.unlink(missing_ok=True)
        parts.append(arrays)
        if on_done is not None:
            on_done(c, n_chunks, False)
    if merge is not None:
        return merge(parts)
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def load_record(
    path: Path, kind: str, required: tuple[str, ...] = ()
) -> tuple[dict | None, str | None]:
    """A JSON checkpoint's record and fingerprint (:func:`checkpointed_record`); one that fails
    to load (not JSON, not a record of ``kind`` and this schema, a key of ``required`` missing
    from its record) is set aside (``PATH.damaged``, a warning naming it) and returned as
    ``(None, None)``, so that its work is recomputed instead of blocking."""
    try:
        obj = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        set_aside(path, f"{type(e).__name__}: {e}")
        return None, None
    rec = obj.get("record") if isinstance(obj, dict) else None
    if not isinstance(rec, dict) or obj.get("kind") != kind:
        why = f"not a {kind!r} record"
    elif obj.get("schema") != CHECKPOINT_SCHEMA:
        why = f"schema {obj.get('schema')!r}, this copyhead_jax reads {CHECKPOINT_SCHEMA}"
    else:
        missing = [k for k in required if k not in rec]
        why = f"no {', '.join(map(repr, missing))} in its record" if missing else None
    if why is not None:
        set_aside(path, why)
        return None, None
    return rec, obj.get("fingerprint")


def checkpointed_record(
    path: Path | None,
    kind: str,
    fingerprint: str | None,
    compute: Callable[[], dict],
    *,
    required: tuple[str, ...] = (),
    default: Callable | None = None,
) -> tuple[dict, bool]:
    """:func:`checkpointed` for a JSON record: ``(record, loaded)``, the record kept at ``path``
    if its fingerprint is ``fingerprint`` (``loaded``), else ``compute()`` saved there
    atomically with that tag (``path=None``: not kept). Floats are written exactly (``repr``;
    NaN as ``NaN``), so a record read back is the one computed, bit for bit; ``default``: for
    ``json.dumps``, what JSON cannot hold (NumPy values). A damaged file is set aside and
    recomputed (:func:`load_record`)."""
    if path is not None and path.exists():
        rec, fp = load_record(path, kind, required)
        if rec is not None and fp == fingerprint:
            return rec, True
    rec = compute()
    if path is not None:
        meta = {"kind": kind, "schema": CHECKPOINT_SCHEMA, "fingerprint": fingerprint}
        text = json.dumps({**meta, "record": rec}, default=default)  # before any file is touched
        atomic_write(path, lambda tmp: Path(tmp).write_text(text))
    return rec, False
