"""The cells of the benchmark tables: ratios, percentages, ranges, yes/no, memory (shared by
:mod:`benchmarks.render` and :mod:`benchmarks.render_posterior`)."""

from __future__ import annotations


def fmt_x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def fmt_pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def fmt_range(vals, fmt) -> str:
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    lo, hi = min(vals), max(vals)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} - {fmt(hi)}"


def fmt_met(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "**no**")


def fmt_mib(b: float | None) -> str:
    if b is None:
        return "-"
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"
