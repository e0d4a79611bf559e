r"""Root-finding for the transition points of the general action (§12): a scan in ``log P``
brackets each point, and these locate it to float64 precision on minimisers warm-started from
the grid (a spinodal: Brent on the branch's softest curvature, ``beyond.Problem.alive``).

Every function takes the problem as callables of ``t = log P`` (so it serves the full ``L x L``
space and the ansatz alike) and returns ``None`` where the scan holds no bracket: a point not
found inside the scanned range is never reported as the range's edge. Brent's method is
:func:`scipy.optimize.brentq` (a well-kept root finder).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

#: tolerance of a fold in ``log P``: the minimiser within ~1e-8 of a fold is itself only
#: resolved to ~1e-8 (its Hessian is near singular there), so a finer bisection buys nothing
FOLD_XTOL = 1e-9
#: Brent's tolerance in ``log P``: the minimisers' values are converged to ~1e-13 relative, so
#: the roots of their differences are resolved far below the 1e-9 the closed forms are held to
XTOL = 1e-13
#: step of the slope's central differences (``P_cG``): with Richardson's extrapolation the
#: truncation is ~h^4 (~1e-12 in ``log P``), the rounding ~1e-13 / h (minimisers converged to
#: ~1e-13): both below the 1e-9 the closed forms are held to
SLOPE_STEP = 1e-3


class _Undefined(Exception):
    """``f`` is not finite somewhere in the bracket (no minimum reached there)."""


def brent(f: Callable[[float], float], a: float, b: float, xtol: float = XTOL) -> float | None:
    """The root of ``f`` in ``[a, b]`` (Brent, to ``xtol`` in ``t``) when ``f`` changes sign
    there, else ``None``; ``None`` too when ``f`` is not finite at a point Brent evaluates."""

    def finite(x):
        y = float(f(x))
        if not np.isfinite(y):
            raise _Undefined
        return y

    try:
        fa, fb = finite(a), finite(b)
        if fa * fb > 0:
            return None
        if fa == 0:
            return a
        if fb == 0:
            return b
        return float(brentq(finite, a, b, xtol=xtol, rtol=8 * np.finfo(float).eps))
    except _Undefined:
        return None


def first_crossing(
    t: np.ndarray, y: np.ndarray, level: float, at: Callable[[float, int], float]
) -> float | None:
    """``t`` where ``y - level`` first changes sign on the grid, refined by Brent on
    ``at(t, i) - level`` (``i``: the bracket's left grid index, for a warm start)."""
    s = np.sign(np.asarray(y, float) - level)
    idx = np.nonzero(s[:-1] * s[1:] < 0)[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    return brent(lambda x: at(x, i) - level, float(t[i]), float(t[i + 1]))


def slope_argmax(
    t: np.ndarray, slope: np.ndarray, slope_at: Callable[[float, int], float], h: float = SLOPE_STEP
) -> float | None:
    """``argmax`` of a slope sampled on the grid ``t``, located as the root of its derivative
    between the grid neighbours of the sampled maximum (the derivative by central differences
    with Richardson's extrapolation, error ~h^4); ``None`` when that maximum sits at an end of
    the grid (the scan does not contain it) or the derivative does not change sign there."""
    slope = np.asarray(slope, float)
    if not np.any(np.isfinite(slope)):
        return None
    i = int(np.nanargmax(slope))  # a grid point whose slope failed (NaN) is not a maximum
    if i == 0 or i == len(t) - 1:
        return None

    def central(x, step):
        return (slope_at(x + step, i) - slope_at(x - step, i)) / (2 * step)

    def d(x):
        return (4.0 * central(x, h / 2) - central(x, h)) / 3.0

    return brent(d, float(t[i - 1]), float(t[i + 1]))


__all__ = ["FOLD_XTOL", "SLOPE_STEP", "XTOL", "brent", "first_crossing", "slope_argmax"]
