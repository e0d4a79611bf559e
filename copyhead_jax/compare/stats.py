"""Confidence intervals over seeds: each seed (its embeddings and its training set) is one
independent draw of the experiment, so a P* located per seed is resampled over seeds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def bootstrap_ci(
    values, *, level: float = 0.95, n_boot: int = 4000, seed: int = 0, log: bool = True
) -> dict[str, Any]:
    """Percentile bootstrap over seeds of the mean of ``values`` (``log``: the geometric mean,
    the natural average of a ``P*``); ``None`` / NaN entries (seeds where the point was not
    located) are left out and counted.

    Returns ``{'n', 'n_missing', 'estimate', 'lo', 'hi', 'level', 'values'}``; ``lo = hi =
    estimate`` for one value, everything ``None`` for none.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    raw = [None if v is None else float(v) for v in np.atleast_1d(np.asarray(values, object))]
    x = np.asarray([v for v in raw if v is not None and math.isfinite(v)], float)
    if log and np.any(x <= 0):
        raise ValueError("log=True needs values > 0 (P* are positive)")
    out: dict[str, Any] = {
        "n": int(x.size),
        "n_missing": len(raw) - int(x.size),
        "level": level,
        "values": raw,
    }
    if x.size == 0:
        return {**out, "estimate": None, "lo": None, "hi": None}
    y = np.log(x) if log else x
    back = np.exp if log else (lambda z: z)
    est = float(back(y.mean()))
    if x.size == 1:
        return {**out, "estimate": est, "lo": est, "hi": est}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, y.size, size=(n_boot, y.size))
    m = y[idx].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(m, [a, 1 - a])
    return {**out, "estimate": est, "lo": float(back(lo)), "hi": float(back(hi))}


def ci_contains(ci: dict[str, Any] | None, value) -> bool | None:
    """Whether ``value`` lies inside the interval ``[ci['lo'], ci['hi']]`` (None if either is
    missing)."""
    if not ci or ci.get("lo") is None or value is None:
        return None
    return bool(ci["lo"] <= float(value) <= ci["hi"])
