r"""Locating a transition $P^*$ from a free-energy difference measured at a few $P$ (host NumPy).

$d(P)=F_{\rm copy}-F_{\rm pool}$ (or any difference whose sign flips at the transition) is
measured at probes chosen one at a time by :func:`next_probe`: widen geometrically until $d$
changes sign, then bisect (in $\log P$) the bracket until it is narrower than a ratio. The root
and its error budget are the package's one crossing rule,
:func:`copyhead_jax.compare.root.crossing` (re-exported here). :func:`bracket_slope` and
:func:`anchored_root` place a later seed's root from one probe and the slope of ``d`` its
earlier seeds' brackets measured; the seeds combine by
:func:`copyhead_jax.compare.root.combine_seeds` (re-exported here). Generic: nothing here knows
the copy task.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..compare.root import (
    Crossing,
    combine_seeds,
    crossing,
    hermite_root,
    sign_change,
    sorted_probes,
)

__all__ = ["Crossing", "combine_seeds", "crossing", "hermite_root", "sign_change"]

#: An anchored root's allowance for its borrowed slope, as a fraction of the slope: the slope
#: of this seed at its root may differ from the earlier seeds' bracket secants by the seeds'
#: spread and by the curvature of ``d`` between the secant's probes and the root (on the paper
#: preset the three seeds' secants agree to 2% and the curvature moves the slope ~7% over
#: +-4% in P; docs/theory.md §9.9): a quarter, several times both.
ANCHOR_SLOPE_REL = 0.25


def next_probe(
    P,
    d,
    *,
    grow: float = 1.25,
    refine_ratio: float = 1.25,
    P_floor: int = 1,
    P_ceil: int = 10**7,
    slope=None,
    max_jump: float = 2.0,
    edge_guard: float = 0.0,
) -> int | None:
    """The next ``P`` to measure, or ``None`` when done.

    Widening (no sign change yet): above the largest probe while every ``d > 0``, below the
    smallest while every ``d <= 0``, by the secant extrapolation of the two outermost probes'
    root, its factor clipped to ``[grow, grow^3]`` (``grow`` with one probe or a slope of the
    wrong sign). Refining (a bracket ``[lo, hi]``): the linear root in ``log P`` (regula falsi),
    or the log midpoint when that root is already measured, until ``hi / lo <= refine_ratio``
    or the bracket holds adjacent integers. ``None`` also when the widening leaves
    ``[P_floor, P_ceil]``. ``edge_guard`` (a fraction < 1/2): that root is kept at least this
    fraction of the bracket (in ``log P``) from either end, so a step-like ``d``, whose regula
    falsi creeps in from one end a little per probe, is closed from both at a guaranteed rate.

    ``slope`` (optional, one per probe, NaN where unknown): an estimate of ``dd / dlog P`` at
    each probe. It only moves the probes, never the root of :func:`crossing`. Widening from an
    outer probe with a slope of the right sign takes the Newton step, its factor clipped to
    ``[grow, max_jump]`` (where d steepens with P, as the branch free energies' difference
    does, Newton overshoots the root and so brackets it);
    refining with slopes at both ends takes the root of the cubic Hermite interpolant, moved
    a quarter of ``log refine_ratio`` towards the bracket's middle (so the probe tends to land
    on the far side of the root and the bracket closes from both ends)."""
    if not 0 <= edge_guard < 0.5:
        raise ValueError(f"edge_guard must be in [0, 0.5), got {edge_guard!r}")
    P, d, sl = sorted_probes(P, d, np.full(len(P), np.nan) if slope is None else slope)
    ok = np.isfinite(d)
    P, d, sl = P[ok], d[ok], sl[ok]
    if P.size == 0:
        return None
    t = np.log(P)
    i = sign_change(P, d)
    if i is not None:
        lo, hi = P[i], P[i + 1]
        if hi / lo <= refine_ratio:
            return None
        root = t[i] + (t[i + 1] - t[i]) * d[i] / (d[i] - d[i + 1])
        gap = edge_guard * (t[i + 1] - t[i])
        root = min(max(root, t[i] + gap), t[i + 1] - gap)
        if np.isfinite(sl[i]) and np.isfinite(sl[i + 1]):
            root = hermite_root(t[i], t[i + 1], d[i], d[i + 1], sl[i], sl[i + 1], root)
            mid = 0.5 * (t[i] + t[i + 1])
            root += math.copysign(min(0.25 * math.log(refine_ratio), abs(mid - root)), mid - root)
        for cand in (int(round(math.exp(root))), int(round(math.sqrt(lo * hi)))):
            if lo < cand < hi and cand not in P:
                return cand
        return None
    up = bool(np.all(d > 0))
    if not up and not np.all(d <= 0):
        return None  # only upward sign changes: not this kind of transition
    step = math.log(grow)
    j = -1 if up else 0  # the outer probe
    if np.isfinite(sl[j]) and sl[j] < 0:
        step = float(np.clip(abs(d[j] / sl[j]), math.log(grow), math.log(max_jump)))
    elif P.size >= 2:
        jj = (-2, -1) if up else (1, 0)  # the outer probe last
        slope2 = (d[jj[1]] - d[jj[0]]) / (t[jj[1]] - t[jj[0]])
        if slope2 < 0:  # d falls with P: its root lies beyond the outer probe
            step = float(np.clip(abs(d[jj[1]] / slope2), step, 3 * step))
    if up:
        nxt = int(math.ceil(P[-1] * math.exp(step)))
        return nxt if nxt <= P_ceil else None
    nxt = int(math.floor(P[0] / math.exp(step)))
    return nxt if P_floor <= nxt < P[0] else None


def bracket_slope(P, d, se) -> tuple[float, float] | None:
    """``(slope, se)``: the secant ``dd / dlog P`` across the sign change of ``d`` and its
    Monte-Carlo error (``se`` of the two ends in quadrature), or ``None`` without a sign
    change."""
    P, d, se = sorted_probes(P, d, se)
    i = sign_change(P, d)
    if i is None:
        return None
    dt = math.log(P[i + 1] / P[i])
    return float((d[i + 1] - d[i]) / dt), float(math.hypot(se[i], se[i + 1]) / dt)


def pooled_slope(slopes) -> tuple[float, float, int] | None:
    """``(mean, se, n)`` of per-seed ``(slope, se)`` pairs (``None`` entries left out; ``None``
    when none is left or the mean is not negative: ``d`` must fall with ``P``)."""
    ok = [s for s in slopes if s is not None and all(map(math.isfinite, s))]
    if not ok:
        return None
    m = float(np.mean([s for s, _ in ok]))
    if not m < 0:
        return None
    return m, math.sqrt(sum(e * e for _, e in ok)) / len(ok), len(ok)


def anchored_root(
    P: float,
    d: float,
    se: float,
    sys: float,
    slope: tuple[float, float, int],
    max_step: float,
    *,
    level: float = 0.95,
) -> Crossing | None:
    r"""The root of ``d`` from one probe and a slope measured elsewhere (``slope``:
    :func:`pooled_slope`'s ``(s, se_s, n)``): $t^*=\log P-d/s$, or ``None`` when
    $|d/s|>$ ``max_step`` (farther than the slope was measured: bracket it instead). Error
    budget in $t$ as :func:`crossing`'s: ``mc`` from ``se`` and ``se_s``
    ($|d|\,\mathrm{se}_s/s^2$), ``quad`` ``sys / |s|``, ``interp``
    ``ANCHOR_SLOPE_REL |d / s|`` (the borrowed slope's model error); a
    :class:`~copyhead_jax.compare.root.Crossing` without a bracket, with ``anchor``."""
    s, s_se, n = slope
    step = -d / s
    if not (math.isfinite(step) and abs(step) <= max_step):
        return None
    ts = math.log(P) + step
    mc = math.hypot(se / s, d * s_se / s**2)
    quad, interp = abs(sys / s), ANCHOR_SLOPE_REL * abs(step)
    half = float(stats.norm.ppf(0.5 + level / 2)) * mc + quad + interp
    anchor = {"P": float(P), "slope": s, "slope_se": s_se, "n_slopes": n}
    return Crossing(
        float(math.exp(ts)),
        None,
        None,
        float(ts),
        float(mc),
        float(quad),
        float(interp),
        math.exp(ts - half),
        math.exp(ts + half),
        level,
        anchor=anchor,
    )
