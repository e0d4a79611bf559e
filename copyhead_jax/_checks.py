"""Validators: each raises ``ValueError`` naming the parameter and the allowed range."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
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


def check_output_path(
    name: str,
    path: Any,
    *,
    suffixes: Iterable[str] | None = (".npz",),
    inputs: Iterable[Any] = (),
    kind: str | None = None,
) -> Path:
    """An output file ``path``, checked before any work is done; nothing is created.

    It must be a str or path ending in one of ``suffixes`` (any if ``None``), not a folder, not
    one of ``inputs`` (the files the command reads), not a copyhead_jax result of another kind
    than ``kind`` (a sweep is never replaced by its posterior), and its nearest existing folder
    must be a writable folder. Errors name ``name`` and the path."""
    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise ValueError(f"{name} must be a file path (str or Path), got {path!r}")
    p = Path(path)
    sfx = None if suffixes is None else tuple(suffixes)
    if p.is_dir():
        raise ValueError(f"{name} {str(p)!r} is a folder; give a file path")
    if sfx is not None and p.suffix.lower() not in sfx:
        raise ValueError(f"{name} {str(p)!r} must end in {' or '.join(sfx)}")
    target = p.resolve()
    for i in inputs:
        if i is not None and Path(i).resolve() == target:
            raise ValueError(f"{name} {str(p)!r} is the input file; give another path")
    if kind is not None and p.is_file():
        have = stored_kind(p)
        if have is not None and have != kind:
            raise ValueError(f"{name} {str(p)!r} holds a {have!r}; refusing to replace it with "
                             f"a {kind!r} (give another path)")  # fmt: skip
    _check_writable_parent(name, p, target.parent)
    return p


def check_output_folder(name: str, path: Any) -> Path:
    """An output folder, checked before any work; nothing is created. It must be a str or
    path that is a folder or can be made as one (its nearest existing parent a writable
    folder)."""
    if not isinstance(path, str | os.PathLike) or not str(path).strip():
        raise ValueError(f"{name} must be a folder path (str or Path), got {path!r}")
    p = Path(path)
    _check_writable_parent(name, p, p.resolve())
    return p


def _check_writable_parent(name: str, p: Path, folder: Path) -> None:
    """``folder``'s nearest existing ancestor (itself included) is a folder this process may
    write in, else a one-line error naming ``name`` and ``p``."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{name} {str(p)!r} is not writable: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {str(p)!r} is not writable: no write permission in "
                         f"{str(folder)!r}")  # fmt: skip


def stored_kind(path: Any) -> str | None:
    """The ``kind`` in a copyhead_jax result file's metadata, else ``None``."""
    import json

    import numpy as np

    try:
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as z:
            return json.loads(str(z["__meta__"])).get("kind")
    except Exception:  # noqa: BLE001 - not a result file: no kind
        return None


def python_scalar(value: Any) -> Any:
    """A number given as a NumPy scalar or 0-d array (``np.int64(4)``, ``np.array(30.0)``,
    ``np.bool_``), a ``Decimal`` or a ``Fraction`` as the Python number it equals (an int when it
    is integral and not a float type), so that configs compare, hash and serialise to JSON like
    hand-written ones; tuples entry by entry; anything else unchanged (the validators judge it).
    """
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np

    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Decimal):
        if not value.is_finite():
            return float(value)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    if isinstance(value, tuple):
        return tuple(python_scalar(v) for v in value)
    return value


def normalise_scalars(obj: Any) -> None:
    """Every field of the frozen dataclass ``obj`` through :func:`python_scalar`, in place: the
    first step of each config's validation, so that what passes is stored as plain Python."""
    import dataclasses

    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        w = python_scalar(v)
        if w is not v:
            object.__setattr__(obj, f.name, w)


def _np_int() -> type:
    import numpy as np

    return np.integer
