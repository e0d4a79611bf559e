"""The run harness every long computation shares: one writer per output, a fingerprint of what
determines the work, chunks checkpointed beside the output, and a progress bar of real runs.

* :func:`claim` takes the output's lock (``PATH.lock``, :func:`~copyhead_jax.storage.
  acquire_lock`: a second writer is refused before any work) and removes the temporary files
  that a killed final write left; :meth:`Claim.finish` writes the result, removes the checkpoint
  folder and releases the lock. A run that stops early keeps its checkpoints for the next call.
* :func:`fingerprint`: the first hex digits of the SHA-256 of a JSON record (and raw bytes, e.g.
  weights), the key a checkpoint is tagged with and checked against on resume.
* :class:`Progress`: a bar on stderr that counts the runs of finished chunks (not a chunk's
  padding slots), names the chunks resumed from checkpoints, and calls ``on_chunk(i, n)`` after
  each chunk computed; :meth:`Progress.chunks` runs a list of chunks
  (:func:`~.chunks.run_chunked`) through it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..storage import acquire_lock, release_lock, remove_tmp_orphans
from .chunks import run_chunked


def fingerprint(record, *blobs: bytes, digits: int = 16) -> str:
    """The first ``digits`` hex digits of SHA-256 over ``record`` as sorted JSON (objects JSON
    cannot hold written as ``str``) and then the raw ``blobs``."""
    h = hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode())
    for b in blobs:
        h.update(b)
    return h.hexdigest()[:digits]


@dataclasses.dataclass
class Claim:
    """A writer's hold on an output (:func:`claim`); ``lock`` and ``ckpt`` may be ``None``."""

    lock: Path | None = None
    ckpt: Path | None = None

    def finish(self, save: Callable[[], object] | None = None) -> None:
        """``save()`` (the atomic final write), then the checkpoints removed and the lock
        released, in that order: a crash before the end leaves the checkpoints to resume from."""
        if save is not None:
            save()
        if self.ckpt is not None:
            shutil.rmtree(self.ckpt, ignore_errors=True)
        if self.lock is not None:
            release_lock(self.lock)


def claim(
    out: Path | None, *, ckpt: Path | None = None, lock: Path | None = None, make: bool = True
) -> Claim:
    """Hold ``lock`` (default ``out``; ``None`` and no ``out``: nothing held) as the one writer,
    and remove the temporary files of a killed final write of ``out`` and of the checkpoint
    folder ``ckpt``; ``make``: create ``out``'s folder first."""
    lock = out if lock is None else lock
    if lock is None:
        return Claim(None, ckpt)
    if make and out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    held = acquire_lock(lock)
    remove_tmp_orphans(*(p for p in dict.fromkeys((out, ckpt, lock)) if p is not None))
    return Claim(held, ckpt)


class Progress:
    """A bar over ``total`` runs (stderr; ``show=False``: none drawn) that chunks advance by
    their real runs; ``n_chunks`` chunks in all, ``on_chunk(i, n_chunks)`` after each one
    computed (not one resumed). ``bar_kw`` go to tqdm (``unit``, ``bar_format``)."""

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        show: bool = True,
        n_chunks: int = 0,
        on_chunk: Callable[[int, int], None] | None = None,
        **bar_kw,
    ):
        bar_kw.setdefault("unit", "run")
        self.bar = tqdm(
            total=total, desc=desc, disable=not show, file=sys.stderr, leave=False, **bar_kw
        )
        self.n_chunks, self.on_chunk = n_chunks, on_chunk
        self.chunks_done = self.runs_done = 0

    def chunk_done(self, n_runs: int, loaded: bool) -> None:
        """A chunk of ``n_runs`` real runs finished (``loaded``: from its checkpoint)."""
        if loaded:
            self.bar.set_postfix_str(f"resumed {self.chunks_done + 1} chunk(s) from checkpoints")
        elif self.on_chunk is not None:
            self.on_chunk(self.chunks_done, self.n_chunks)
        self.chunks_done += 1
        self.runs_done += n_runs
        self.bar.n = self.runs_done  # a chunk's work may have moved the bar in between
        self.bar.refresh()

    def chunks(
        self,
        *,
        n_runs: int,
        chunk: int,
        compute: Callable[..., dict[str, np.ndarray]],
        fingerprint: str,
        ckpt_dir: Path | None,
        snapshots: bool = False,
        merge: Callable[[list[dict[str, np.ndarray]]], dict[str, np.ndarray]] | None = None,
        fan_out: Callable[[list[np.ndarray]], list[dict[str, np.ndarray]]] | None = None,
    ) -> dict[str, np.ndarray]:
        """:func:`~.chunks.run_chunked` of ``n_runs`` runs in chunks of ``chunk``, each chunk
        counted on the bar by its real runs (the last chunk's padding repeats a run)."""

        def done(c: int, _n: int, loaded: bool) -> None:
            self.chunk_done(min(chunk, n_runs - c * chunk), loaded)

        return run_chunked(
            n_runs=n_runs,
            chunk=chunk,
            compute=compute,
            fingerprint=fingerprint,
            ckpt_dir=ckpt_dir,
            on_done=done,
            snapshots=snapshots,
            merge=merge,
            fan_out=fan_out,
        )

    def update(self, n: float = 1) -> None:
        """Advance the bar by ``n`` runs inside a chunk (or after the chunks)."""
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


__all__ = ["Claim", "Progress", "claim", "fingerprint"]
