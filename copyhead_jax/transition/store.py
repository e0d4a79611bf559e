"""Checkpoints of ``copyhead transition`` (:mod:`.search`): the atomic JSON write and the
checked read of every (seed, P) group (a damaged one set aside and recomputed), the key that
names a run's checkpoint folder, and the MAP sweeps a resumed run reuses. A run resumes
wherever the numbers cannot change beyond float rounding: on another machine, memory budget or
batching."""

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


def read_checkpoint(path: Path | None, required: tuple[str, ...]) -> dict | None:
    """The JSON checkpoint at ``path``, or ``None`` when there is none. One that fails to load
    (truncated, emptied, not an object, a key of ``required`` missing) is set aside as
    ``PATH.damaged`` with a warning naming it (:func:`~copyhead_jax.storage.set_aside`) and
    ``None`` returned, so that its work is recomputed instead of blocking every rerun."""
    if path is None or not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        set_aside(path, f"{type(e).__name__}: {e}")
        return None
    missing = [k for k in required if k not in obj] if isinstance(obj, dict) else required
    if missing:
        set_aside(
            path,
            "not a JSON object"
            if not isinstance(obj, dict)
            else f"no {', '.join(map(repr, missing))}",
        )
        return None
    return obj


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
