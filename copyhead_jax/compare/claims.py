"""Whether a measurement reproduces a claim of the paper: the rule, defined once
(docs/theory.md §5b).

A claim is a number (a ``P*``, an exponent) with a **tolerance band** ``[t_lo, t_hi]`` around it:
for a reported ``P*``, +- :data:`P_TOL` of it (relative); for a law's exponent, +-
:data:`EXPONENT_TOL` (absolute). A measurement with 95% interval ``[lo, hi]`` **reproduces** the
claim when the whole interval lies inside the band, is **off** when the whole interval lies
outside it, and is **not resolved** otherwise: an interval too wide to tell, or one across a
band edge. A wide interval can therefore never make a claim reproduced. The reported deviation
is the signed distance from the claimed number to the nearest end of the interval (0 inside
it): relative for a ``P*``, absolute for an exponent.
"""

from __future__ import annotations

import math
from typing import Any

#: tolerance of a reported P*, relative to it: the report's threshold for a disagreement
#: (a relative error above 25% is listed as one), applied the same way to every claim
P_TOL = 0.25
#: tolerance of a law's exponent: a 5-point fit over a ~3x range of L or V that is off by 0.1
#: moves P* by ~12% at the range's ends
EXPONENT_TOL = 0.1


def relative_band(value: float, tol: float = P_TOL) -> tuple[float, float]:
    """The band of a reported ``P*``: ``value`` +- ``tol`` of it."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"value must be a finite positive number, got {value!r}")
    if not 0.0 < tol < 1.0:
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    return value * (1.0 - tol), value * (1.0 + tol)


def judge(
    lo: float | None,
    hi: float | None,
    target: float,
    band: tuple[float, float],
    *,
    relative: bool = True,
) -> dict[str, Any]:
    """The rule for one interval ``[lo, hi]`` against ``target`` with tolerance ``band``:
    ``{'outcome': 'reproduced' | 'off' | 'not resolved' | 'not measured', 'reproduced': True |
    False | None (not resolved or not measured), 'off': signed deviation | None, 'band',
    'relative', 'target'}``."""
    t_lo, t_hi = band
    if not t_lo <= target <= t_hi:
        raise ValueError(f"band must contain target {target!r}, got {band!r}")
    out: dict[str, Any] = {"band": [t_lo, t_hi], "relative": relative, "target": target}
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return {**out, "outcome": "not measured", "reproduced": None, "off": None}
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got [{lo!r}, {hi!r}]")
    near = lo if target < lo else hi if target > hi else target
    off = (near / target - 1.0) if relative else (near - target)
    if t_lo <= lo and hi <= t_hi:
        outcome, rep = "reproduced", True
    elif hi < t_lo or lo > t_hi:
        outcome, rep = "off", False
    else:
        outcome, rep = "not resolved", None
    return {**out, "outcome": outcome, "reproduced": rep, "off": off}


def verdict_text(j: dict[str, Any]) -> str:
    """``reproduced within X%`` / ``not reproduced (X% off; band ...)`` / ``not resolved
    (interval [lo, hi] across the band ...)`` of :func:`judge`."""
    if j["outcome"] == "not measured":
        return "not measured"
    t, (a, b) = j["target"], j["band"]
    if j["relative"]:
        x = f"{abs(j['off']):.0%}"
        tol = f"band {a:.4g}-{b:.4g}"
    else:
        x = f"{abs(j['off']):.2g}"
        tol = f"+-{max(t - a, b - t):.2g}"
    if j["outcome"] == "reproduced":
        return "reproduced (inside the CI)" if j["off"] == 0 else f"reproduced within {x}"
    if j["outcome"] == "off":
        return f"not reproduced ({x} off; {tol})"
    return f"not resolved (the interval crosses the {tol})"


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


__all__ = [
    "EXPONENT_TOL",
    "P_TOL",
    "across_readings",
    "judge",
    "order_of",
    "relative_band",
    "verdict_text",
]


def across_readings(
    reproduced: dict[str, bool | None], outcomes: dict[str, str] | None = None
) -> str:
    """The verdict over every reading tried (reading -> :func:`judge`'s ``reproduced``, and
    optionally its ``outcome``): the readings that reproduce the claim; else the readings where
    it is not resolved; "not reproduced under the readings tried" only where every judged
    reading is off."""
    yes = [r for r, v in reproduced.items() if v]
    if yes:
        return "reproduced under " + ", ".join(f"`{r}`" for r in yes)
    unresolved = [r for r, o in (outcomes or {}).items() if o == "not resolved"]
    if unresolved:
        return "not resolved under " + ", ".join(f"`{r}`" for r in unresolved)
    if any(v is False for v in reproduced.values()):
        return "not reproduced under the readings tried"
    return "not measured"
