"""Validators: each raises ``ValueError`` naming the parameter and the allowed range."""

from __future__ import annotations

import dataclasses
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
            raise ValueError(
                f"{name} {str(p)!r} holds a {have!r}; refusing to replace it with "
                f"a {kind!r} (give another path)"
            )
    _check_writable_parent(name, p, target.parent)
    return p


@dataclasses.dataclass(frozen=True)
class Output:
    """One path a command writes: ``name`` says which (a flag, or what is derived from one);
    ``folder``: a folder it creates (``--out DIR``, a chunk folder), else a file; ``suffixes``
    and ``kind`` as in :func:`check_output_path`; ``removed``: a folder deleted when the command
    completes (its chunks), so nothing else may live inside it."""

    name: str
    path: Path
    folder: bool = False
    suffixes: tuple[str, ...] | None = None
    kind: str | None = None
    removed: bool = False


def check_paths(outputs: Iterable[Output], inputs: Iterable[Any] = ()) -> list[Path]:
    """Every path a command will write, checked as a set before any work; nothing is created.

    Each output against every input (``inputs``: the files it reads; ``None`` entries skipped),
    on its own (:func:`check_output_path` for a file, :func:`check_output_folder` for a folder;
    a file where a folder goes, or a folder where a file goes, is refused), and against every
    other output: never the same file (links and case-insensitive file systems included),
    never under a file, never an input inside a folder that is removed at the end. Errors name
    the paths in one line."""
    outputs = [o for o in outputs if o is not None]
    ins = [Path(i) for i in inputs if i is not None]
    for o in outputs:
        for i in ins:
            if same_path(o.path, i):
                raise ValueError(
                    f"{o.name} {str(o.path)!r} is the input file {str(i)!r}; give another path"
                )
            if _under(o.path, i):
                raise ValueError(
                    f"{o.name} {str(o.path)!r} lies under the input file "
                    f"{str(i)!r}; give another path"
                )
            if o.folder and _under(i, o.path) and o.removed:
                raise ValueError(
                    f"{o.name} {str(o.path)!r} holds the input {str(i)!r} and is "
                    "removed when the command completes; move the input"
                )
    for o in outputs:
        if o.folder:
            check_output_folder(o.name, o.path)
            if o.path.exists() and not o.path.is_dir():
                raise ValueError(f"{o.name} {str(o.path)!r} is a file; it must be a folder")
        else:
            check_output_path(o.name, o.path, suffixes=o.suffixes, kind=o.kind)
    for j, a in enumerate(outputs):
        for b in outputs[j + 1 :]:
            if same_path(a.path, b.path):
                raise ValueError(
                    f"{a.name} {str(a.path)!r} and {b.name} {str(b.path)!r} are "
                    "the same file; give other paths"
                )
            for x, y in ((a, b), (b, a)):
                if _under(x.path, y.path) and (not y.folder or y.removed):
                    what = "the file" if not y.folder else "the folder removed at the end,"
                    raise ValueError(
                        f"{x.name} {str(x.path)!r} lies under {what} {y.name} "
                        f"{str(y.path)!r}; give other paths"
                    )
    return [o.path for o in outputs]


def same_path(a: Any, b: Any, *, fold_case: bool | None = None) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path, the same existing file
    (links), or paths that differ only in case on a case-insensitive file system (``A.NPZ``
    and ``a.npz`` on macOS; ``fold_case``: whether it is, default found out from ``a``'s
    nearest existing folder)."""
    a, b = Path(a).resolve(), Path(b).resolve()
    if a == b:
        return True
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    if str(a).casefold() != str(b).casefold():
        return False
    return case_insensitive(a) if fold_case is None else fold_case


def _under(a: Path, b: Path) -> bool:
    """``a`` lies strictly inside ``b`` (resolved paths)."""
    a, b = Path(a).resolve(), Path(b).resolve()
    return a != b and b in a.parents


def case_insensitive(p: Path) -> bool:
    """Whether the nearest existing folder of ``p`` sits on a case-insensitive file system: it
    is found again under its name with the case swapped."""
    folder = p.parent
    while not folder.exists():
        folder = folder.parent
    swapped = folder.with_name(folder.name.swapcase())
    if folder.name == folder.name.swapcase():  # no letters: ask a file of its own instead
        return False
    return swapped.exists() and os.path.samefile(folder, swapped)


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
        raise ValueError(
            f"{name} {str(p)!r} is not writable: no write permission in {str(folder)!r}"
        )


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
