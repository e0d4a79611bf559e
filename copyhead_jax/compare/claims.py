"""Whether a measurement reproduces a claim of the paper: the rule, defined once
(docs/theory.md §5b).

A claim is a number (a ``P*``, an exponent) with a **tolerance band** ``[t_lo, t_hi]`` around it:
for a reported ``P*``, the reported value's neighbours on the paper's ``P`` grid (the paper could
not resolve its ``P*`` more finely); for a law's exponent, the exponent +- :data:`EXPONENT_TOL`.
A measurement with confidence interval ``[lo, hi]`` **reproduces** the claim when its interval
meets the band (equivalently: the claimed number lies in the interval widened by the tolerance).
The reported deviation is the signed distance from the claimed number to the nearest end of the
interval (0 inside it): relative for a ``P*``, absolute for an exponent.
"""

from __future__ import annotations

import math
from typing import Any

#: tolerance of a law's exponent: a 5-point fit over a ~3x range of L or V that is off by 0.1
#: moves P* by ~12% at the range's ends, about the paper's own grid step at its reported P*
EXPONENT_TOL = 0.1


def grid_band(value: float, grid) -> tuple[float, float]:
    """``value``'s neighbours on ``grid`` (the band of a reported ``P*``); ``value`` itself at an
    end of the grid. ``value`` must be a grid point."""
    g = sorted(float(x) for x in grid)
    if float(value) not in g:
        raise ValueError(f"value must be a point of grid {g}, got {value!r}")
    i = g.index(float(value))
    return g[max(i - 1, 0)], g[min(i + 1, len(g) - 1)]


def judge(
    lo: float | None, hi: float | None, target: float, band: tuple[float, float],
    *, relative: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """The rule for one interval ``[lo, hi]`` against ``target`` with tolerance ``band``:
    ``{'reproduced': bool | None, 'off': signed deviation | None, 'band', 'relative'}``
    (``None``: nothing measured)."""
    t_lo, t_hi = band
    if not t_lo <= target <= t_hi:
        raise ValueError(f"band must contain target {target!r}, got {band!r}")
    out: dict[str, Any] = {"band": [t_lo, t_hi], "relative": relative, "target": target}
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return {**out, "reproduced": None, "off": None}
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got [{lo!r}, {hi!r}]")
    near = lo if target < lo else hi if target > hi else target
    off = (near / target - 1.0) if relative else (near - target)
    return {**out, "reproduced": bool(lo <= t_hi and hi >= t_lo), "off": off}


def verdict_text(j: dict[str, Any]) -> str:
    """``reproduced within X%`` / ``not reproduced (X% off, tolerance ...)`` of :func:`judge`."""
    if j["reproduced"] is None:
        return "not measured"
    t, (a, b) = j["target"], j["band"]
    if j["relative"]:
        x = f"{abs(j['off']):.0%}"
        tol = f"band {a:g}-{b:g}"
    else:
        x = f"{abs(j['off']):.2g}"
        tol = f"+-{max(t - a, b - t):.2g}"
    if j["reproduced"]:
        return "reproduced (inside the CI)" if j["off"] == 0 else f"reproduced within {x}"
    return f"not reproduced ({x} off; {tol})"


def order_of(intervals) -> str | None:
    """``'ordered'`` when intervals ``[(lo, hi), ...]`` strictly increase (each ``hi`` below the
    next ``lo``), ``'reversed'`` when some pair strictly decreases, else ``'overlapping'``;
    None if one is missing."""
    iv = list(intervals)
    if any(x is None or x[0] is None or x[1] is None for x in iv):
        return None
    pairs = list(zip(iv, iv[1:]))
    if all(a[1] < b[0] for a, b in pairs):
        return "ordered"
    return "reversed" if any(a[0] > b[1] for a, b in pairs) else "overlapping"


__all__ = ["EXPONENT_TOL", "grid_band", "judge", "order_of", "verdict_text"]


def across_readings(reproduced: dict[str, bool | None]) -> str:
    """The verdict over every reading tried (reading -> :func:`judge`'s ``reproduced``): the
    readings that reproduce the claim; "not reproduced under the readings tried" only where
    none does and one at least was judged."""
    yes = [r for r, v in reproduced.items() if v]
    if yes:
        return "reproduced under " + ", ".join(f"`{r}`" for r in yes)
    if any(v is False for v in reproduced.values()):
        return "not reproduced under the readings tried"
    return "not measured"
