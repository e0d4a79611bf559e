"""Number formats of the markdown tables of measured results: one significant-digit rule, seed
means with their spread, a located ``P*`` with its bracket."""

from __future__ import annotations

import numpy as np


def fmt(x, nd: int = 3) -> str:
    """``x`` to ``nd`` significant digits; ``-`` for None or non-finite."""
    return "-" if x is None or not np.isfinite(x) else f"{x:.{nd}g}"


def fmt_P(x) -> str:
    """A P: 3 significant digits; thousands as integers with separators (1,234, not 1.23e+03)."""
    return "-" if x is None else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def mean_sd(a, nd: int = 3) -> str:
    """``mean ± sd`` over the finite entries of a row (one entry: its value; none: ``-``)."""
    a = np.asarray(a, float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return "-"
    return f"{a.mean():.{nd}g} ± {a.std(ddof=1):.2g}" if a.size > 1 else f"{a.mean():.{nd}g}"


def located(loc: dict | None) -> str:
    """A located point (``Located.to_dict()``): ``P* [lo, hi]``, or where it lies off the grid."""
    if not loc or loc.get("P_star") is None:
        return f"outside grid ({(loc or {}).get('side')})"
    b = loc.get("bracket")
    return f"{fmt_P(loc['P_star'])} [{fmt_P(b[0])}, {fmt_P(b[1])}]" if b else fmt_P(loc["P_star"])


def per_seed_ci(c: dict) -> str:
    """A crossing's per-seed 95% interval (``c["per_seed_ci"]``: mean, lo, hi, n) in words."""
    ci = c["per_seed_ci"]
    return f"(per seed {fmt(ci['mean'])} [{fmt(ci['lo'])}, {fmt(ci['hi'])}], n = {ci['n']})"
