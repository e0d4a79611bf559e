"""Relative errors between measured and theoretical values, and the thresholds that make one a
reported disagreement."""

from __future__ import annotations

import math

REL_TOL = 0.25  # |measured/theory - 1| above this is listed as a disagreement
GROWTH_TOL = 1.5  # susceptibility growth factor that counts as an early-warning signal


def rel_err(measured, theory) -> float | None:
    """``(measured - theory) / theory``, or ``None`` if either is missing, non-finite, or the
    theory is zero."""
    if measured is None or theory is None:
        return None
    m, t = float(measured), float(theory)
    if not (math.isfinite(m) and math.isfinite(t)) or t == 0:
        return None
    return (m - t) / t


def disagrees(measured, theory, tol: float = REL_TOL) -> bool:
    """``|rel_err(measured, theory)| > tol`` (``False`` when the error is undefined)."""
    if not (tol >= 0):
        raise ValueError(f"tol must be a float >= 0, got {tol!r}")
    err = rel_err(measured, theory)
    return err is not None and abs(err) > tol
