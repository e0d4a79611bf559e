r"""Locating a transition $P^*$ from a free-energy difference measured at a few $P$ (host NumPy).

$d(P)=F_{\rm copy}-F_{\rm pool}$ (or any difference whose sign flips at the transition) is
measured at probes chosen one at a time by :func:`next_probe`: widen geometrically until $d$
changes sign, then bisect (in $\log P$) the bracket until it is narrower than a ratio.
:func:`crossing` interpolates the root linearly in $t=\log P$ and gives its error budget
(docs/theory.md §9.9): Monte-Carlo (the probes' standard errors propagated), quadrature (the TI's
Euler-Maclaurin term as a systematic bound on each $d$), and interpolation (the linear root
against the quadratic one through the nearest third probe). :func:`bracket_slope` and
:func:`anchored_root` place a later seed's root from one probe and the slope of ``d`` its
earlier seeds' brackets measured. :func:`combine_seeds` averages seeds in
$\log P$ with an interval that adds the seed spread, the Monte-Carlo errors and the systematic
parts. Generic: nothing here knows the copy task.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

#: Fallback interpolation allowance (in log P, as a fraction of the bracket) when the bracket
#: has no third probe: a quarter of its width (a root of a monotone d whose curvature is
#: unknown is placed no better than that by two points).
TWO_POINT_ALLOWANCE = 0.25
#: An anchored root's allowance for its borrowed slope, as a fraction of the slope: the slope
#: of this seed at its root may differ from the earlier seeds' bracket secants by the seeds'
#: spread and by the curvature of ``d`` between the secant's probes and the root (on the paper
#: preset the three seeds' secants agree to 2% and the curvature moves the slope ~7% over
#: +-4% in P; docs/theory.md §9.9): a quarter, several times both.
ANCHOR_SLOPE_REL = 0.25


def _sorted(P, d, *rest):
    P = np.asarray(P, float)
    o = np.argsort(P)
    return (P[o], np.asarray(d, float)[o], *(np.asarray(r, float)[o] for r in rest))


def sign_change(P, d) -> int | None:
    """Index ``i`` of the sorted probes with ``d[i] > 0 >= d[i + 1]`` (the largest drop if
    several), else ``None``."""
    P, d = _sorted(P, d)
    ok = np.isfinite(d)
    idx = [i for i in range(len(d) - 1) if ok[i] and ok[i + 1] and d[i] > 0 >= d[i + 1]]
    if not idx:
        return None
    return max(idx, key=lambda i: d[i] - d[i + 1])


def next_probe(P, d, *, grow: float = 1.25, refine_ratio: float = 1.25, P_floor: int = 1,
               P_ceil: int = 10**7, slope=None, max_jump: float = 2.0) -> int | None:  # fmt: skip
    """The next ``P`` to measure, or ``None`` when done.

    Widening (no sign change yet): above the largest probe while every ``d > 0``, below the
    smallest while every ``d <= 0``, by the secant extrapolation of the two outermost probes'
    root, its factor clipped to ``[grow, grow^3]`` (``grow`` with one probe or a slope of the
    wrong sign). Refining (a bracket ``[lo, hi]``): the linear root in ``log P`` (regula falsi),
    or the log midpoint when that root is already measured, until ``hi / lo <= refine_ratio``
    or the bracket holds adjacent integers. ``None`` also when the widening leaves
    ``[P_floor, P_ceil]``.

    ``slope`` (optional, one per probe, NaN where unknown): an estimate of ``dd / dlog P`` at
    each probe. It only moves the probes, never the root of :func:`crossing`. Widening from an
    outer probe with a slope of the right sign takes the Newton step, its factor clipped to
    ``[grow, max_jump]`` (where d steepens with P, as the branch free energies' difference
    does, Newton overshoots the root and so brackets it);
    refining with slopes at both ends takes the root of the cubic Hermite interpolant, moved
    a quarter of ``log refine_ratio`` towards the bracket's middle (so the probe tends to land
    on the far side of the root and the bracket closes from both ends)."""
    P, d, sl = _sorted(P, d, np.full(len(P), np.nan) if slope is None else slope)
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


def hermite_root(t0, t1, d0, d1, s0, s1, fallback: float, none=None) -> float:
    """The root in ``(t0, t1)`` of the cubic with values ``d0, d1`` and slopes ``s0, s1`` at
    the ends (the one nearest ``fallback`` if several; ``none``, default ``fallback``, if
    none)."""
    h = t1 - t0
    # d(t0 + h u) = h00 d0 + h10 h s0 + h01 d1 + h11 h s1, coefficients in u
    c3 = 2 * d0 + h * s0 - 2 * d1 + h * s1
    c2 = -3 * d0 - 2 * h * s0 + 3 * d1 - h * s1
    c1, c0 = h * s0, d0
    roots = [r.real for r in np.roots([c3, c2, c1, c0]) if abs(r.imag) < 1e-9 and 0 < r.real < 1]
    if not roots:
        return fallback if none is None else none
    return t0 + h * min(roots, key=lambda u: abs(t0 + h * u - fallback))


def crossing(P, d, se, sys=None, slope=None) -> dict:
    r"""The root of ``d`` by linear interpolation in ``t = log P`` across the sign change, with
    its error budget in ``t``: ``mc`` (``se`` propagated), ``quad`` (``sys``, a bound on each
    ``|d|`` error, propagated linearly), ``interp`` (linear against quadratic root through the
    nearest third probe; with no third probe, linear against the cubic Hermite root when
    ``slope`` (``dd / dlog P`` per probe, NaN where unknown) is finite at both ends, else
    ``TWO_POINT_ALLOWANCE`` of the bracket). Noisy slopes only widen that term on average (the
    true curvature over a narrow bracket is small). Returns ``P_star`` (None if unbracketed),
    ``bracket``, ``log_P``, ``err_mc``, ``err_sys``."""
    sys = np.zeros(len(P)) if sys is None else sys
    sl = np.full(len(P), np.nan) if slope is None else slope
    P, d, se, sys, sl = _sorted(P, d, se, sys, sl)
    i = sign_change(P, d)
    if i is None:
        side = "above" if np.all(d[np.isfinite(d)] > 0) else "below"
        return {"P_star": None, "bracket": None, "side": side, "log_P": None,
                "err_mc": None, "err_sys": None}  # fmt: skip
    t = np.log(P)
    t0, t1, d0, d1 = t[i], t[i + 1], d[i], d[i + 1]
    D, dt = d0 - d1, t1 - t0
    ts = t0 + dt * d0 / D
    g0, g1 = dt * (-d1) / D**2, dt * d0 / D**2  # d t* / d d0, d t* / d d1
    mc = math.hypot(g0 * se[i], g1 * se[i + 1])
    quad = abs(g0) * sys[i] + abs(g1) * sys[i + 1]
    third = [j for j in (i - 1, i + 2) if 0 <= j < len(P) and np.isfinite(d[j])]
    if third:
        j = min(third, key=lambda j: abs(t[j] - ts))
        idx = sorted([i, i + 1, j])
        c = np.polyfit(t[idx], d[idx], 2)
        roots = [r.real for r in np.roots(c) if abs(r.imag) < 1e-12 and t0 <= r.real <= t1]
        interp = min((abs(r - ts) for r in roots), default=TWO_POINT_ALLOWANCE * dt)
    elif np.isfinite(sl[i]) and np.isfinite(sl[i + 1]):
        herm = hermite_root(t0, t1, d0, d1, sl[i], sl[i + 1], ts, none=math.nan)
        interp = abs(herm - ts) if math.isfinite(herm) else TWO_POINT_ALLOWANCE * dt
    else:
        interp = TWO_POINT_ALLOWANCE * dt
    return {"P_star": float(math.exp(ts)), "bracket": [float(P[i]), float(P[i + 1])],
            "side": None, "log_P": float(ts), "err_mc": float(mc),
            "err_quad": float(quad), "err_interp": float(interp),
            "err_sys": float(quad + interp)}  # fmt: skip


def combine_seeds(log_P, err_mc, err_sys, *, level: float = 0.95) -> dict:
    r"""Seeds' roots ``log_P[s]`` into one ``P*`` (geometric mean) with an interval in ``log P``:
    half-width
    $q\sqrt{s_t^2/n+\sum_s\sigma_{{\rm mc},s}^2/n^2}+\overline{\sigma_{\rm sys}}$, $q$ the
    Student quantile with $n-1$ degrees of freedom (normal for one seed, whose interval then has
    no seed spread). NaN seeds (unbracketed) are left out and counted."""
    t, m, s = (np.asarray(x, float) for x in (log_P, err_mc, err_sys))
    ok = np.isfinite(t)
    n = int(ok.sum())
    if n == 0:
        return {"P_star": None, "lo": None, "hi": None, "n": 0, "n_missing": int(t.size)}
    t, m, s = t[ok], m[ok], s[ok]
    spread = float(t.std(ddof=1)) if n > 1 else 0.0
    q = (
        float(stats.t.ppf(0.5 + level / 2, n - 1))
        if n > 1
        else float(stats.norm.ppf(0.5 + level / 2))
    )
    rand = math.sqrt(spread**2 / n + float(np.sum(m**2)) / n**2)
    half = q * rand + float(s.mean())
    c = float(t.mean())
    return {"P_star": math.exp(c), "lo": math.exp(c - half), "hi": math.exp(c + half),
            "n": n, "n_missing": int((~ok).sum()), "level": level, "half_width_log": half,
            "seed_sd_log": spread, "mc_log": math.sqrt(float(np.sum(m**2))) / n,
            "sys_log": float(s.mean()), "quantile": q}  # fmt: skip


def bracket_slope(P, d, se) -> tuple[float, float] | None:
    """``(slope, se)``: the secant ``dd / dlog P`` across the sign change of ``d`` and its
    Monte-Carlo error (``se`` of the two ends in quadrature), or ``None`` without a sign
    change."""
    P, d, se = _sorted(P, d, se)
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


def anchored_root(P: float, d: float, se: float, sys: float, slope: tuple[float, float, int],
                  max_step: float) -> dict | None:  # fmt: skip
    r"""The root of ``d`` from one probe and a slope measured elsewhere (``slope``:
    :func:`pooled_slope`'s ``(s, se_s, n)``): $t^*=\log P-d/s$, or ``None`` when
    $|d/s|>$ ``max_step`` (farther than the slope was measured: bracket it instead). Error
    budget in $t$ as :func:`crossing`'s: ``mc`` from ``se`` and ``se_s``
    ($|d|\,\mathrm{se}_s/s^2$), ``quad`` ``sys / |s|``, ``interp``
    ``ANCHOR_SLOPE_REL |d / s|`` (the borrowed slope's model error). Same keys as
    :func:`crossing` (``bracket`` ``None``) plus ``anchor``."""
    s, s_se, n = slope
    step = -d / s
    if not (math.isfinite(step) and abs(step) <= max_step):
        return None
    ts = math.log(P) + step
    mc = math.hypot(se / s, d * s_se / s**2)
    quad, interp = abs(sys / s), ANCHOR_SLOPE_REL * abs(step)
    return {"P_star": float(math.exp(ts)), "bracket": None, "side": None, "log_P": float(ts),
            "err_mc": float(mc), "err_quad": float(quad), "err_interp": float(interp),
            "err_sys": float(quad + interp),
            "anchor": {"P": float(P), "slope": s, "slope_se": s_se, "n_slopes": n}}  # fmt: skip
