"""The one markdown table writer and the number formats shared by every report page."""

from __future__ import annotations

import math
from typing import Any

#: a reach cap above this is the cost model's answer to an unlimited per-run budget (the
#: default mode's ``max_run_s = 1e9``), not a measured limit
UNBOUNDED_P = 10**8


def table(head: list[str], rows: list[list[Any]]) -> str:
    """A markdown table (a ``|`` inside a cell becomes ``/``)."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def num(x, d: int = 3) -> str:
    """``d`` significant digits, exponent form outside [1e-2, 1e4); ``n/a`` for none or inf."""
    if x is None:
        return "n/a"
    if isinstance(x, int):  # bool included
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.{d - 1}e}" if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-2) else f"{x:.{d}g}"


def pct(x) -> str:
    """A relative error as a signed percentage."""
    return "n/a" if x is None else f"{100 * x:+.0f}%"


def reach_text(cap) -> str:
    """The largest ``P`` in reach, or what stands for it when no budget limits the runs."""
    if cap is None:
        return "not computed"
    return "no per-run budget" if cap > UNBOUNDED_P else f"{int(cap):,}"


def measured_text(m: dict | None) -> str:
    """A located P*: ``P* [bracket]``, the grid edge it lies beyond, or why it was not found."""
    if not m:
        return "not measured"
    if m.get("bracketed") and m.get("P_star") is not None:
        lo, hi = m["bracket"]
        return f"{num(m['P_star'])} [{num(lo)}, {num(hi)}]"
    if m.get("side"):
        e = m.get("detail", {}).get("edge")
        return f"{'<' if m['side'] == 'below' else '>'} {num(e)} (not bracketed)"
    return f"none ({m.get('detail', {}).get('reason', 'not found')})"


def ci_text(ci: dict | None) -> str:
    """``estimate [lo, hi] (n/N seeds)`` of a :func:`copyhead_jax.compare.bootstrap_ci` dict."""
    n_all = (ci or {}).get("n_missing", 0)
    if ci and ci.get("estimate") is None and ci.get("side"):
        rel = "<" if ci["side"] == "below" else ">"
        return f"{rel} {num(ci.get('edge'), 4)} (outside the grid, {n_all} seeds)"
    if not ci or ci.get("estimate") is None:
        return f"not located on the grid (0/{n_all} seeds)" if n_all else "n/a"
    n, n_all = ci["n"], ci["n"] + ci["n_missing"]
    seeds = "" if n == n_all else f" ({n}/{n_all} seeds)"
    if n == 1:
        return f"{num(ci['estimate'], 4)}{seeds}"
    return f"{num(ci['estimate'], 4)} [{num(ci['lo'], 4)}, {num(ci['hi'], 4)}]{seeds}"
