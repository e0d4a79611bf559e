"""Result schema and storage: one ``.npz`` file per result, written atomically.

A file holds named arrays plus one JSON string (``__meta__``) with the result kind, the schema
version, the full config, package versions and platform. Writes go to a temporary file in the
same folder followed by ``os.replace``, so a crash never leaves a half-written result.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import platform
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import Config

SCHEMA_VERSION = 1
SWEEP_KIND = "copyhead_jax.SweepResult"


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


def atomic_save_npz(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """Write ``arrays`` and ``meta`` to ``path`` atomically; errors name the path."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise ValueError(f"output path {str(path)!r} is not writable: {e}") from None
    try:
        buf = io.BytesIO()
        np.savez(buf, __meta__=np.array(json.dumps(meta)), **arrays)
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def load_npz(path: str | os.PathLike, *, kind: str) -> tuple[dict[str, np.ndarray], dict]:
    """Read a result file of the given kind; unreadable or foreign files raise ``ValueError``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"result file {str(path)!r} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - any decoding failure means "not a result file"
        raise ValueError(f"{str(path)!r} is not a readable copyhead_jax result ({e})") from None
    if "__meta__" not in arrays:
        raise ValueError(f"{str(path)!r} is not a copyhead_jax result (no metadata)")
    meta = json.loads(str(arrays.pop("__meta__")))
    if meta.get("kind") != kind:
        raise ValueError(f"{str(path)!r} holds a {meta.get('kind')!r}, expected a {kind!r}")
    if meta.get("schema") != SCHEMA_VERSION:
        raise ValueError(
            f"{str(path)!r} has schema {meta.get('schema')}; "
            f"this copyhead_jax reads schema {SCHEMA_VERSION}"
        )
    return arrays, meta


#: Per-run scalar fields of a sweep, each stored as an array indexed ``[P, seed]``.
SCALARS = (
    "c1", "cG", "r", "psi", "coverage", "sample_coverage", "train_loss", "test_loss",
    "copy_accuracy", "U", "grad_norm", "grad_norm_span", "stop_epoch", "finite",
)  # fmt: skip


@dataclass
class SweepResult:
    """A MAP sweep: per-run measurements indexed ``[P, seed]`` plus curves and fitted weights.

    ``arrays`` holds the ``SCALARS`` (each ``[nP, n_seeds]``), ``mean_attention`` and
    ``positional_logits`` (``[nP, n_seeds, L, L]``), ``curve_U`` and ``curve_loss``
    (``[nP, n_seeds, n_logs]``, NaN after a run stopped) with ``curve_epoch`` (``[n_logs]``), and,
    if kept, ``params/W_E``, ``params/b``, ``params/W_G``, ``params/W_O_hat``
    (``[nP, n_seeds, ...]``) for warm-starting a sampler. For linear heads ``(c1, cG)`` are
    gauge fixed (``r > 0``); for softmax heads they are ``(a1, aG)``.
    """

    config: Config
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def P(self) -> np.ndarray:
        return np.asarray(self.config.sweep.P)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            raise KeyError(f"SweepResult has no array {name!r}; available: {sorted(self.arrays)}")
        return self.arrays[name]

    @property
    def has_params(self) -> bool:
        return "params/W_G" in self.arrays

    def summary(self) -> dict[str, np.ndarray]:
        """Mean and sd over finite seeds of each scalar, per P."""
        out: dict[str, np.ndarray] = {"P": self.P}
        ok = self.arrays["finite"].astype(bool)
        for k in SCALARS:
            if k == "finite":
                out["n_finite"] = ok.sum(1)
                continue
            x = np.where(ok, self.arrays[k].astype(float), np.nan)
            with np.errstate(all="ignore"):
                out[k] = np.nanmean(x, axis=1)
                out[k + "_sd"] = np.nanstd(x, axis=1)
        return out

    def save(self, path: str | os.PathLike) -> Path:
        meta = dict(self.meta)
        meta.update(kind=SWEEP_KIND, schema=SCHEMA_VERSION, config=self.config.to_dict())
        return atomic_save_npz(path, self.arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SweepResult:
        arrays, meta = load_npz(path, kind=SWEEP_KIND)
        try:
            cfg = Config.from_dict(meta["config"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{str(path)!r} has an invalid config: {e}") from None
        return cls(config=cfg, arrays=arrays, meta=meta)

    def replace(self, **kw) -> SweepResult:
        return dataclasses.replace(self, **kw)
