"""Relative errors between measured and theoretical values, and the thresholds that make one a
reported disagreement."""

from __future__ import annotations

import math

REL_TOL = 0.25  # |measured/theory - 1| above this is listed as a disagreement
#: the growth of an order parameter's posterior variance from 0.5 P* to 0.9 P* that a basin
#: which only sharpens cannot exceed (docs/theory.md §13.9): growth above it is a warning
GROWTH_NULL = 1.0


def rel_err(measured, theory) -> float | None:
    """``(measured - theory) / theory``, or ``None`` if either is missing, non-finite, or the
    theory is zero."""
    if measured is None or theory is None:
        return None
    m, t = float(measured), float(theory)
    if not (math.isfinite(m) and math.isfinite(t)) or t == 0:
        return None
    return (m - t) / t


def disagrees(err: float | None, tol: float = REL_TOL) -> bool:
    """A relative error ``err`` (from :func:`rel_err`) beyond ``tol``; an undefined one is not."""
    if not (tol >= 0):
        raise ValueError(f"tol must be a float >= 0, got {tol!r}")
    return err is not None and abs(err) > tol
