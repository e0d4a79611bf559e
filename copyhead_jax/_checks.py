"""Validators: each raises ``ValueError`` naming the parameter and the allowed range."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def check_int(name: str, value: Any, *, lo: int, hi: int | None = None) -> int:
    """``value`` must be an int in ``[lo, hi]``."""
    rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
    if isinstance(value, bool) or not isinstance(value, int | _np_int()):
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")
    return int(value)


def check_float(
    name: str, value: Any, *, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = True
) -> float:
    """``value`` must be a finite real in ``(lo, hi]`` (``[lo, hi]`` if ``lo_open=False``)."""
    left = "(" if lo_open else "["
    rng = f"in {left}{lo}, {hi}]" if hi < math.inf else (f"> {lo}" if lo_open else f">= {lo}")
    if isinstance(value, str | bytes):  # float("30") would pass: a typo, not a number
        raise ValueError(f"{name} must be a real number {rng}, got the string {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number {rng}, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite real number {rng}, got {value!r}")
    if (v <= lo if lo_open else v < lo) or v > hi:
        raise ValueError(f"{name} must be a real number {rng}, got {value!r}")
    return v


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` must be one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_P_grid(name: str, values: Any, *, lo: int = 1, hi: int = 10**7) -> tuple[int, ...]:
    """A non-empty, strictly increasing tuple of ints in ``[lo, hi]``."""
    try:
        grid = tuple(values)
    except TypeError:
        raise ValueError(f"{name} must be a non-empty sequence of ints in [{lo}, {hi}]") from None
    if not grid:
        raise ValueError(f"{name} must be a non-empty sequence of ints in [{lo}, {hi}], got ()")
    for p in grid:
        check_int(f"{name} entry", p, lo=lo, hi=hi)
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ValueError(f"{name} must be strictly increasing, got {grid}")
    return tuple(int(p) for p in grid)


def python_scalar(value: Any) -> Any:
    """numpy scalars (``np.int64(4)``, ``np.float32(0.1)``, ``np.bool_``) as Python numbers, so
    that configs compare, hash and serialise to JSON like hand-written ones."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(python_scalar(v) for v in value)
    return value


def _np_int() -> type:
    import numpy as np

    return np.integer
