"""What ``copyhead transition`` (:mod:`.search`) keeps on disk: the atomic JSON write of its
result, the JSON encoding of its records (:func:`json_default`), the key its (seed, P) groups'
records are tagged with on the run harness (:func:`run_key`), and the MAP sweeps a resumed run
reuses. A run resumes wherever the numbers cannot change beyond float rounding: on another
machine, memory budget or batching."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from ..config import Config
from ..runner import fingerprint
from ..storage import atomic_write, set_aside
from .ti_settings import TISettings


def write_checkpoint(path: Path, obj) -> None:
    """Atomic JSON write (:func:`~copyhead_jax.storage.atomic_write`: a temporary file in the
    folder, then renamed; a failure names the file and leaves no temporary)."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(obj, default=json_default)))


def json_default(x):
    """NumPy arrays and scalars for ``json.dump(default=...)`` (NaN stays NaN)."""
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON: {type(x).__name__}")


def resume_identity(cfg: Config) -> dict:
    """What a resumed run must share with the checkpoints: the config but the memory budget,
    which only sizes chunks (it changes numbers by float rounding at most, as the platform
    does), so a run resumes on a machine with another budget."""
    d = cfg.to_dict()
    d["sweep"] = {k: v for k, v in d["sweep"].items() if k != "memory_budget_gb"}
    return d


def run_key(cfg: Config, settings: TISettings, extra) -> str:
    """The checkpoints' key: :func:`resume_identity`, Monte-Carlo settings and ``extra``. Not
    ``batched`` (float rounding too): groups computed batched on an accelerator resume one
    after the other on a CPU; nor, without a target, the rungs' stopping fields (they change
    nothing then)."""
    drop = {"batched"} | (
        set() if settings.ess_target else {"ess_target", "rhat_target", "round_iter"}
    )
    s = {k: v for k, v in dataclasses.asdict(settings).items() if k not in drop}
    return fingerprint([resume_identity(cfg), s, extra], digits=10)


def kept_sweep(path: Path | None, cfg: Config):
    """The finished MAP sweep at ``path`` if it is this config's with kept weights (a resumed
    transition does not refit it), else None."""
    from ..results import SweepResult

    if path is None or not path.is_file():
        return None
    try:
        res = SweepResult.load(path)
    except ValueError as e:  # unreadable: set aside, refitted
        set_aside(path, str(e))
        return None
    same = resume_identity(res.config) == resume_identity(cfg)
    return res if same and res.has_params else None
