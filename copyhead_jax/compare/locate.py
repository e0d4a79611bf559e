r"""Measured transition points ``P*`` from results on a grid of ``P`` (host-side NumPy).

Each locator applies docs/theory.md §5's definition of a ``P*`` to measured values on a (possibly
ragged, unsorted) grid of training-set sizes, and returns a :class:`Located`: the estimate, the
bracket ``[P_lo, P_hi]`` of grid points that contains it, and whether it was bracketed at all.
:func:`refine_grid` proposes new ``P`` inside a bracket (log-spaced, integers) and
:func:`extend_grid` beyond the grid when the feature lies outside it, so an experiment can measure
at coarse ``P``, locate, measure again where the locator asks, merge, and locate again.

* :func:`locate_onset` -- second-order onset (``P*_c1``): the order parameter leaves zero.
* :func:`locate_max_slope` -- crossover (``P*_cG``): ``argmax_P dy/dlog P``.
* :func:`locate_level` -- the first crossing of a level (``psi = 1/2``).
* :func:`locate_jump` -- first-order jump (single-start ``a_G``): the largest step, bracketed by
  the grid points on either side of its mid-value (the theory's bisection on
  ``1[beta > (beta_- + beta_+)/2]``).
* :func:`locate_crossing` -- where two branches' objectives ``U`` cross (``P*_aG``), by the
  package's one crossing rule (:func:`.root.crossing`; a MAP has no Monte-Carlo error).

Values may be ``[nP]`` or ``[nP, n_seeds]`` (averaged over seeds, NaNs ignored). Interpolation is
linear in ``log P``. A locator never extrapolates: a feature outside the grid gives
``bracketed=False`` with ``side`` ``'below'`` or ``'above'``.

**Grid error** (``Located.grid``, docs/theory.md §6): the interval the grid's resolution leaves
for ``P*``. A point the data place nowhere in particular inside its bracket (the onset: the
first grid point past a threshold; the jump: a step between two grid points) has the bracket
itself. An interpolated point (level, crossing, largest slope) has the hull of its estimate
and the next-order interpolant's (three points, in the same variable ``log P``) on each side
where a third point exists, else of the same rule linear in ``P`` (the other natural variable):
the difference between successive orders is the interpolation's error estimate. It is never
wider than the bracket. Every seed shares one grid, so this error does not average out over
seeds: :func:`.pstar.seeds_summary` widens the seeds' interval by it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .root import crossing, three_point_roots

__all__ = [
    "Located",
    "extend_grid",
    "integer_grid",
    "locate_crossing",
    "locate_jump",
    "locate_level",
    "locate_max_slope",
    "locate_onset",
    "refine_grid",
]


@dataclass(frozen=True)
class Located:
    """A located ``P*``.

    ``P_star`` is the estimate (``None`` if the feature is absent); ``bracket = (P_lo, P_hi)`` are
    the neighbouring grid points that contain it; ``precision`` is the bracket's relative
    half-width ``(P_hi - P_lo) / (2 P_star)``; ``side`` says where an unbracketed feature lies
    (``'below'`` the smallest or ``'above'`` the largest ``P``); ``detail`` holds method-specific
    numbers (jump size, slope, number of crossings, ...). ``grid = (g_lo, g_hi)`` is the grid
    error: where in the bracket ``P*`` may lie given the grid's resolution (the module's
    docstring); :attr:`grid_interval` falls back to the bracket where a locator set none.
    """

    kind: str
    P_star: float | None
    bracket: tuple[float, float] | None
    bracketed: bool
    side: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    grid: tuple[float, float] | None = None

    @property
    def grid_interval(self) -> tuple[float, float] | None:
        """``grid``, else the bracket (the widest honest grid error); None if not bracketed."""
        if self.P_star is None or not self.bracketed:
            return None
        return self.grid if self.grid is not None else self.bracket

    @property
    def precision(self) -> float | None:
        if self.P_star is None or self.bracket is None or not self.bracketed:
            return None
        return (self.bracket[1] - self.bracket[0]) / (2.0 * self.P_star)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bracket"] = None if self.bracket is None else [float(b) for b in self.bracket]
        d["grid"] = None if self.grid is None else [float(b) for b in self.grid]
        d["precision"] = self.precision
        return d


# ---------------------------------------------------------------------------------------------
# Input handling


def _prepare(P, *ys, name: str = "y") -> tuple[np.ndarray, list[np.ndarray]]:
    """Sorted ``P`` (float, > 0, distinct) and the seed means of each ``y`` in the same order."""
    P = np.asarray(P, dtype=float)
    if P.ndim != 1 or P.size < 2:
        raise ValueError(f"P must be a 1-d array of at least 2 values > 0, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P <= 0):
        raise ValueError("P must hold finite values > 0")
    if len(np.unique(P)) != P.size:
        raise ValueError("P must not repeat a value (merge the seeds of a P into one row)")
    order = np.argsort(P)
    out = []
    for k, y in enumerate(ys):
        y = np.asarray(y, dtype=float)
        label = name if len(ys) == 1 else f"{name}[{k}]"
        if y.ndim not in (1, 2) or y.shape[0] != P.size:
            raise ValueError(
                f"{label} must have shape [nP] or [nP, n_seeds] with nP = {P.size}, got {y.shape}"
            )
        if y.ndim == 2:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows stay NaN
                y = np.nanmean(y, axis=1)
        out.append(y[order])
    return P[order], out


def _finite(P, *ys):
    ok = np.isfinite(P)
    for y in ys:
        ok &= np.isfinite(y)
    return (P[ok], *(y[ok] for y in ys))


def _interp_log(P0, P1, y0, y1, level) -> float:
    """``P`` where the straight line through ``(log P0, y0), (log P1, y1)`` meets ``level``."""
    if y1 == y0:
        return math.sqrt(P0 * P1)
    w = float(np.clip((level - y0) / (y1 - y0), 0.0, 1.0))
    return float(math.exp((1.0 - w) * math.log(P0) + w * math.log(P1)))


def _interp_lin(P0, P1, y0, y1, level) -> float:
    """``P`` where the straight line through ``(P0, y0), (P1, y1)`` meets ``level``."""
    if y1 == y0:
        return 0.5 * (P0 + P1)
    w = float(np.clip((level - y0) / (y1 - y0), 0.0, 1.0))
    return float((1.0 - w) * P0 + w * P1)


def _crossing_grid(P, y, j: int, level: float, scale: str = "log") -> tuple[float, tuple]:
    """The estimate of where ``y`` crosses ``level`` between ``P[j-1]`` and ``P[j]`` (two-point,
    linear in ``log P`` or, ``scale='linear'``, in ``P``) and its grid interval: the hull of the
    estimate and the crossing rule's three-point roots (:func:`.root.three_point_roots`, same
    variable), or, with no neighbour, of the two-point rule in the other variable."""
    P0, P1 = float(P[j - 1]), float(P[j])
    two = {"log": _interp_log, "linear": _interp_lin}
    est = two[scale](P0, P1, y[j - 1], y[j], level)
    x = np.log(P) if scale == "log" else np.asarray(P, float)
    back = np.exp if scale == "log" else (lambda v: v)
    alt = [float(back(r)) for r in three_point_roots(x, y, j - 1, level)]
    if not alt:
        other = "linear" if scale == "log" else "log"
        alt.append(two[other](P0, P1, y[j - 1], y[j], level))
    pts = [est, *alt]
    lo, hi = max(min(pts), P0), min(max(pts), P1)
    return est, (float(lo), float(hi))


def _vertex(x, s) -> float:
    """The vertex of the parabola through three points ``(x, s)``, clipped to their span (the
    middle point when the parabola opens upwards)."""
    a, b, _ = np.polyfit(x - x[1], s, 2)
    v = x[1] + (-b / (2.0 * a) if a < 0 else 0.0)
    return float(np.clip(v, x[0], x[-1]))


def _cubic_max(x, s, lo: float, hi: float) -> float:
    """Where the cubic through four points ``(x, s)`` is largest on ``[lo, hi]``."""
    c = np.polyfit(x - x[1], s, 3)
    r = np.roots(np.polyder(c))
    r = np.real(r[np.abs(np.imag(r)) < 1e-12]) + x[1]
    cand = np.concatenate([[lo, hi], r[(r > lo) & (r < hi)]])
    return float(cand[np.argmax(np.polyval(c, cand - x[1]))])


def _outside(kind: str, side: str, P: np.ndarray, detail: dict) -> Located:
    edge = float(P[0] if side == "below" else P[-1])
    return Located(kind, None, None, False, side, {**detail, "edge": edge})


# ---------------------------------------------------------------------------------------------
# Locators


def locate_jump(P, y, *, direction: int = 1, min_jump: float = 0.0) -> Located:
    """First-order jump: the largest step of ``y`` between neighbouring grid points.

    The step ``[P_i, P_{i+1}]`` with the largest ``direction * (y_{i+1} - y_i)`` brackets the jump;
    ``P_star`` is where ``y`` crosses the step's mid-value ``(y_i + y_{i+1})/2`` (interpolated in
    ``log P``; for a step resolved to neighbouring integers it is their geometric mean). ``detail``
    reports the ``jump``, the ``mid`` value and the ``sharpness`` = jump / (max y - min y): close
    to 1 for a jump resolved by the grid, small for a smooth rise. No step larger than
    ``min_jump``: ``P_star = None``. The grid error is the bracket: the jump happens somewhere
    between the two grid points, and the mid-value says nothing about where.
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    if not (math.isfinite(min_jump) and min_jump >= 0):
        raise ValueError(f"min_jump must be a finite number >= 0, got {min_jump!r}")
    P, (y,) = _prepare(P, y)
    P, y = _finite(P, y)
    if P.size < 2:
        return Located("jump", None, None, False, None, {"reason": "fewer than 2 finite points"})
    d = direction * np.diff(y)
    i = int(np.argmax(d))
    span = float(np.ptp(y))
    detail = {
        "jump": float(d[i]),
        "mid": float(0.5 * (y[i] + y[i + 1])),
        "y_below": float(y[i]),
        "y_above": float(y[i + 1]),
        "sharpness": float(d[i] / span) if span > 0 else 0.0,
    }
    if d[i] <= min_jump:
        return Located("jump", None, None, False, None, {**detail, "reason": "no step > min_jump"})
    P_star = math.sqrt(P[i] * P[i + 1])
    if P[i + 1] - P[i] > 1.0 + 1e-9:  # not resolved to neighbouring integers: interpolate
        P_star = _interp_log(P[i], P[i + 1], y[i], y[i + 1], detail["mid"])
    br = (float(P[i]), float(P[i + 1]))
    return Located("jump", float(P_star), br, True, None, detail, grid=br)


def locate_level(P, y, level: float, *, direction: int = 1, scale: str = "log") -> Located:
    """First ``P`` where ``y`` crosses ``level`` upwards (``direction=1``) or downwards,
    interpolated linearly in ``log P`` (``scale='linear'``: in ``P``); the grid error is the hull
    with the three-point interpolants' crossings (the module's docstring)."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    if scale not in ("log", "linear"):
        raise ValueError(f"scale must be 'log' or 'linear', got {scale!r}")
    if not math.isfinite(level):
        raise ValueError(f"level must be a finite number, got {level!r}")
    P, (y,) = _prepare(P, y)
    P, y = _finite(P, y)
    if P.size < 2:
        return Located("level", None, None, False, None, {"reason": "fewer than 2 finite points"})
    above = direction * (y - level) >= 0
    detail = {"level": float(level)}
    if above[0]:
        return _outside("level", "below", P, detail)
    if not above.any():
        return _outside("level", "above", P, detail)
    j = int(np.argmax(above))
    P_star, grid = _crossing_grid(P, direction * y, j, direction * level, scale)
    return Located("level", P_star, (float(P[j - 1]), float(P[j])), True, None, detail, grid=grid)


def locate_max_slope(P, y) -> Located:
    """Crossover: ``argmax_P dy/dlog P`` (docs/theory.md §5, ``P*_cG`` with ``y = psi``).

    Slopes of neighbouring points sit at the midpoints (in ``log P``) of their intervals; the
    vertex of the parabola through the largest slope and its two neighbours is ``log P_star``
    (clipped to their span). A maximum at the first or last interval is not bracketed:
    ``side`` says where the true maximum may lie. A crossover is the curve's dominant change: an
    inner maximum whose rise (the lowest value up to it to the highest after it) is less than half
    the curve's range is a wiggle on a falling or flat curve, and nothing is located (a curve
    that starts high where attention is off, falls and then rises through its crossover is
    located). The grid error is the hull with the maximum of
    the cubic through four slopes (each side where a fourth exists; else the parabola's vertex
    in ``P``), inside the three slopes' span.
    """
    P, (y,) = _prepare(P, y)
    P, y = _finite(P, y)
    if P.size < 3:
        return Located("max_slope", None, None, False, None, {"reason": "fewer than 3 points"})
    t = np.log(P)
    s = np.diff(y) / np.diff(t)
    m = 0.5 * (t[:-1] + t[1:])
    k = int(np.argmax(s))
    detail = {"slope_max": float(s[k]), "slopes": [float(v) for v in s]}
    if s[k] <= 0:
        return Located("max_slope", None, None, False, None, {**detail, "reason": "no rise"})
    if k == 0:
        return _outside("max_slope", "below", P, detail)
    if k == len(s) - 1:
        return _outside("max_slope", "above", P, detail)
    rise = float(np.max(y[k + 1 :]) - np.min(y[: k + 1]))
    if rise < 0.5 * float(np.ptp(y)):
        return Located(
            "max_slope",
            None,
            None,
            False,
            None,
            {**detail, "rise": rise, "reason": "rise under half the curve's range"},
        )
    x = m[k - 1 : k + 2]
    t_star = _vertex(x, s[k - 1 : k + 2])
    alt = [
        _cubic_max(m[i : i + 4], s[i : i + 4], x[0], x[-1])
        for i in (k - 2, k - 1)
        if i >= 0 and i + 4 <= s.size
    ]
    if not alt:  # no fourth slope: the same parabola in P
        alt = [math.log(_vertex(np.exp(x), s[k - 1 : k + 2]))]
    pts = [t_star, *alt]
    detail["slope_neighbours"] = [float(v) for v in s[k - 1 : k + 2]]
    return Located(
        "max_slope",
        math.exp(t_star),
        (float(P[k - 1]), float(P[k + 2])),
        True,
        None,
        detail,
        grid=(math.exp(min(pts)), math.exp(max(pts))),
    )


def locate_onset(P, y, *, tol: float) -> Located:
    """Second-order onset: the ``P`` where ``|y|`` (an order parameter, zero in the symmetric
    phase) exceeds the noise level ``tol`` and stays above it up to the end of the grid.

    The bracket is ``[last P with |y| <= tol, the next P]`` and ``P_star`` its geometric mean;
    the bracket is also the grid error (the threshold says only that the onset lies inside it).
    ``detail['P_landau']`` extrapolates the Landau law ``y^2 \\propto P - P*`` through the first
    two points above the onset (a diagnostic, kept only when it falls inside the bracket).
    """
    if not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    P, (y,) = _prepare(P, y)
    P, y = _finite(P, y)
    if P.size < 2:
        return Located("onset", None, None, False, None, {"reason": "fewer than 2 finite points"})
    a = np.abs(y)
    tol = float(tol)
    above = a > tol
    detail: dict[str, Any] = {"tol": tol}
    if not above.any():
        return _outside("onset", "above", P, detail)
    # the onset is the start of the last run of points above tol that reaches the end of the grid
    below_idx = np.flatnonzero(~above)
    if below_idx.size == 0:
        return _outside("onset", "below", P, detail)
    j = int(below_idx[-1]) + 1
    if j >= P.size:
        return _outside("onset", "above", P, detail)
    P_lo, P_hi = float(P[j - 1]), float(P[j])
    P_star = math.sqrt(P_lo * P_hi)
    if j + 1 < P.size:
        y2 = a[j : j + 2] ** 2
        if y2[1] > y2[0]:
            P_l = float(P[j] - y2[0] * (P[j + 1] - P[j]) / (y2[1] - y2[0]))
            detail["P_landau"] = P_l if P_lo <= P_l <= P_hi else None
    return Located("onset", P_star, (P_lo, P_hi), True, None, detail, grid=(P_lo, P_hi))


def locate_crossing(P, U_a, U_b, *, valid=None, per_sequence: bool = True) -> Located:
    """Where branch ``a``'s objective stops being the lower one: ``U_a - U_b`` changes sign
    from negative to positive (docs/theory.md §5: the two minima's values cross at ``P*_aG``).

    ``U`` is extensive in ``P``; with ``per_sequence`` the difference is divided by ``P`` before
    the linear interpolation in ``log P``. ``valid`` (``[nP]`` or ``[nP, n_seeds]`` booleans,
    all of a row's seeds must hold) masks out points where the two runs did not stay on distinct
    branches (there the difference is noise around 0). With several upward sign changes the one
    with the largest rise is taken and ``detail['n_crossings']`` says how many there were. The
    grid error is the hull with the three-point interpolants' zeros (the module's docstring).
    """
    P0 = np.asarray(P, dtype=float)
    P, (Ua, Ub) = _prepare(P0, U_a, U_b, name="U")
    if valid is not None:
        v = np.asarray(valid, dtype=bool)
        if v.shape[0] != P0.size or v.ndim not in (1, 2):
            raise ValueError(f"valid must have shape [nP] or [nP, n_seeds], got {v.shape}")
        v = v.all(axis=1) if v.ndim == 2 else v
        v = v[np.argsort(P0)]
    else:
        v = np.ones(P.size, bool)
    d = (Ua - Ub) / (P if per_sequence else 1.0)
    keep = v & np.isfinite(d)
    P, d = P[keep], d[keep]
    detail: dict[str, Any] = {
        "n_valid": int(P.size),
        "dU": [float(x) for x in d],
        "P_valid": [float(x) for x in P],
    }
    if P.size < 2:
        return Located("crossing", None, None, False, None, {**detail, "reason": "< 2 valid P"})
    up = np.flatnonzero((d[:-1] < 0) & (d[1:] >= 0))
    detail["n_crossings"] = int(up.size)
    if up.size == 0:
        side = "above" if np.all(d < 0) else "below" if np.all(d >= 0) else None
        if side is None:  # only downward sign changes
            return Located("crossing", None, None, False, None, {**detail, "reason": "no rise"})
        return _outside("crossing", side, P, detail)
    k = int(up[np.argmax(d[up + 1] - d[up])])
    cr = crossing(P, -d)  # the one crossing rule; its d falls through 0 (no MC error: a MAP)
    _, grid = _crossing_grid(P, d, k + 1, 0.0)
    return Located("crossing", cr.P_star, cr.bracket, True, None, detail, grid=grid)


# ---------------------------------------------------------------------------------------------
# Grid proposals


def integer_grid(lo: float, hi: float, n: int) -> np.ndarray:
    """About ``n`` distinct log-spaced integers in ``[max(lo, 1), hi]``."""
    return np.unique(np.round(np.geomspace(max(lo, 1.0), max(hi, 1.0), n)).astype(int))


def refine_grid(bracket, *, n_new: int = 3, existing=(), integer: bool = True) -> np.ndarray:
    """Up to ``n_new`` new ``P`` strictly inside ``bracket``, log-spaced, not in ``existing``.

    With ``integer`` the values are rounded to ints; an empty result means the bracket is
    resolved (no integer left between its ends).
    """
    if bracket is None:
        return np.zeros(0)
    lo, hi = (float(b) for b in bracket)
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"bracket must be (P_lo, P_hi) with 0 < P_lo < P_hi, got {bracket!r}")
    if not (isinstance(n_new, int) and n_new >= 1):
        raise ValueError(f"n_new must be an int >= 1, got {n_new!r}")
    cand = np.geomspace(lo, hi, n_new + 2)[1:-1]
    if integer:
        cand = np.round(cand)
        # a narrow bracket: fill it with the integers it holds
        inner = np.arange(math.floor(lo) + 1, math.ceil(hi))
        if inner.size <= n_new:
            cand = inner.astype(float)
    have = {float(x) for x in np.asarray(existing, dtype=float).ravel()}
    cand = np.unique(cand[(cand > lo) & (cand < hi)])
    return np.asarray([c for c in cand if c not in have])


def extend_grid(
    located: Located, *, factor: float = 2.0, P_min: float = 1.0, P_max: float = math.inf
) -> np.ndarray:
    """One new ``P`` beyond the edge of the grid on the side an unbracketed feature lies
    (``edge * factor`` or ``edge / factor``), within ``[P_min, P_max]``; empty if bracketed,
    absent, or out of range."""
    if not (math.isfinite(factor) and factor > 1):
        raise ValueError(f"factor must be a finite number > 1, got {factor!r}")
    if located.bracketed or located.side is None:
        return np.zeros(0)
    edge = float(located.detail["edge"])
    new = edge * factor if located.side == "above" else edge / factor
    new = float(np.round(new))
    if located.side == "above":
        new = max(new, edge + 1.0)
        return np.asarray([new]) if new <= P_max else np.zeros(0)
    new = min(new, edge - 1.0)
    return np.asarray([new]) if new >= P_min else np.zeros(0)
