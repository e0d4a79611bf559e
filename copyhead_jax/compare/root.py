r"""The package's one crossing rule: where a difference $d(P)$ measured at a few $P$ turns sign,
with its interval (host NumPy; docs/theory.md §9.9).

$d$ falls through zero at the crossing ($d>0$ below, $d\le 0$ above, e.g.
$F_{\rm copy}-F_{\rm pool}$; a caller with the opposite sign passes $-d$). The root is the
linear interpolation in $t=\log P$ across the sign change (the largest drop if several). Its
error budget in $t$, each part a one-sided bound that only widens the interval:

* **Monte Carlo** (``se``, one standard error per probe, independent between probes): the two
  bracketing probes' errors propagated linearly. Where a bracket end's own $z\,{\rm se}$
  straddles zero the root may lie in the neighbouring bracket, which a linear propagation
  cannot see: that side of the interval reaches out to the root of $d\mp z\,{\rm se}$ followed
  across the probes (off the grid it is unbounded).
* **Quadrature** (``sys``, a bound on each $|d|$ error): propagated linearly, and where an end's
  $z\,{\rm se}+{\rm sys}$ straddles zero, followed the same way beyond the MC part.
* **Interpolation** (:func:`three_point_roots`, the rule the locators' grid error uses too):
  the linear root against the quadratic one through the bracket and each neighbouring probe;
  with two probes, against the cubic Hermite root where ``slope`` ($dd/d\log P$) is known at
  both ends. Where neither places a root inside the bracket (no curvature known), the grid
  bracket itself: the root of a monotone $d$ may lie anywhere between its two probes, so the
  error is the larger distance from the linear root to a bracket end.

The interval at ``level`` is $t^*\pm(z\,\sigma_{\rm mc}+\sigma_{\rm quad}+\sigma_{\rm interp})$
with $\sigma_{\rm mc}$, $\sigma_{\rm quad}$ the larger side of each part (symmetric, so that seeds
combine in :func:`combine_seeds`). Nothing here knows the copy task:
the transition's probes, the branch free energies' seed means and the MAP's $U$ crossing all
locate their root here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats


@dataclasses.dataclass(frozen=True)
class Crossing:
    """A located root (:func:`crossing`). Unbracketed: ``P_star`` ``None`` and ``side``
    ``"above"`` (``d > 0`` at every probe: the root lies above them) or ``"below"``. Errors are
    in ``log P``; ``err_mc`` is one standard error, ``err_quad``, ``err_interp`` bounds; an
    error or edge the probes cannot bound is infinite (``lo`` 0, ``hi`` inf). ``straddles``:
    a bracket end's own error reaches across zero (the interval was followed past it).
    ``anchor``: where an anchored root (one probe and a borrowed slope) came from."""

    P_star: float | None
    bracket: tuple[float, float] | None = None
    side: str | None = None
    log_P: float | None = None
    err_mc: float | None = None
    err_quad: float | None = None
    err_interp: float | None = None
    lo: float | None = None
    hi: float | None = None
    level: float = 0.95
    straddles: bool = False
    anchor: dict | None = None

    @property
    def err_sys(self) -> float | None:
        """The systematic part: quadrature plus interpolation."""
        if self.err_quad is None:
            return None
        return self.err_quad + self.err_interp

    @property
    def bracketed(self) -> bool:
        return self.bracket is not None

    def to_dict(self) -> dict:
        """The fields and ``err_sys`` (JSON: a bracket as a list)."""
        d = dataclasses.asdict(self)
        d["bracket"] = None if self.bracket is None else list(self.bracket)
        d["err_sys"] = self.err_sys
        return d


def sorted_probes(P, d, *rest):
    """``P``, ``d`` and any per-probe arrays as float arrays sorted by ``P``."""
    P = np.asarray(P, float)
    o = np.argsort(P)
    return (P[o], np.asarray(d, float)[o], *(np.asarray(r, float)[o] for r in rest))


def sign_change(P, d) -> int | None:
    """Index ``i`` of the sorted probes with ``d[i] > 0 >= d[i + 1]`` (the largest drop if
    several), else ``None``."""
    P, d = sorted_probes(P, d)
    ok = np.isfinite(d)
    idx = [i for i in range(len(d) - 1) if ok[i] and ok[i + 1] and d[i] > 0 >= d[i + 1]]
    if not idx:
        return None
    return max(idx, key=lambda i: d[i] - d[i + 1])


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


def _followed(t, y, i: int, up: bool) -> float:
    """The root of ``y`` followed from the bracket ``[i, i + 1]``: ``up`` (``y`` is ``d``
    shifted up, ``y[i] > 0``) to the right until ``y`` falls to <= 0, else (shifted down,
    ``y[i + 1] <= 0``) to the left until ``y > 0``; linear in ``t`` within the bracket reached
    (an infinite end gives that bracket's far edge), +-inf off the grid."""
    n = len(t)
    j = i
    if up:
        while j + 1 < n and y[j + 1] > 0:
            j += 1
        if j + 1 >= n:
            return math.inf
    else:
        while j >= 0 and y[j] <= 0:
            j -= 1
        if j < 0:
            return -math.inf
    a, b = y[j], y[j + 1]
    f = 1.0 if not math.isfinite(a) else 0.0 if not math.isfinite(b) else a / (a - b)
    return float(t[j] + (t[j + 1] - t[j]) * f)


def three_point_roots(x, y, i: int, level: float = 0.0) -> list[float]:
    """The interpolation rule's alternatives to the linear root of ``y - level`` in
    ``[x[i], x[i + 1]]``: for each neighbour ``i - 1``, ``i + 2`` that exists, the root there of
    the parabola through the bracket's two points and that neighbour (the one nearest the
    bracket's linear root if two); where that parabola has no root in the bracket, both bracket
    ends (a monotone ``y`` may cross anywhere between its probes). Empty without a neighbour.
    The crossing rule's interpolation error and the locators' grid error are both this hull."""
    x, y = np.asarray(x, float), np.asarray(y, float) - level
    x0, x1 = float(x[i]), float(x[i + 1])
    lin = x0 + (x1 - x0) * y[i] / (y[i] - y[i + 1]) if y[i] != y[i + 1] else 0.5 * (x0 + x1)
    out: list[float] = []
    for j in (i - 1, i + 2):
        if not 0 <= j < len(x):
            continue
        idx = sorted((i, i + 1, j))
        a, b, c = np.polyfit(x[idx], y[idx], 2)
        r = np.roots([a, b, c]) if abs(a) > 1e-300 else (np.array([-c / b]) if b else np.zeros(0))
        r = np.real(r[np.abs(np.imag(r)) <= 1e-12 * (1.0 + np.abs(r))])
        r = r[(r >= x0 - 1e-12 * abs(x0)) & (r <= x1 + 1e-12 * abs(x1))]
        if r.size:
            out.append(float(np.clip(r[np.argmin(np.abs(r - lin))], x0, x1)))
        else:
            out.extend([x0, x1])
    return out


def _interp_error(t, d, sl, i: int, ts: float) -> float:
    """The interpolation part of the budget (module docstring)."""
    t0, t1 = t[i], t[i + 1]
    bracket = float(max(ts - t0, t1 - ts))
    alt = three_point_roots(t, d, i)
    if alt:
        return float(max(abs(a - ts) for a in alt))
    if np.isfinite(sl[i]) and np.isfinite(sl[i + 1]):
        herm = hermite_root(t0, t1, d[i], d[i + 1], sl[i], sl[i + 1], ts, none=math.nan)
        return float(abs(herm - ts)) if math.isfinite(herm) else bracket
    return bracket


def crossing(P, d, se=None, sys=None, slope=None, *, level: float = 0.95) -> Crossing:
    r"""The root of ``d`` across its sign change in ``log P`` and its interval at ``level``
    (module docstring). ``se``: one standard error per probe (NaN: unknown, unbounded where it
    matters: infinite at a bracket end; past the bracket such a probe counts by its value);
    ``sys``: a bound on each ``|d|`` error; ``slope``: ``dd / dlog P`` per probe (NaN
    where unknown), used only for the two-probe interpolation error. Probes with a non-finite
    ``d`` are left out."""
    n = len(P)
    zeros = np.zeros(n)
    se = zeros if se is None else se
    sys = zeros if sys is None else sys
    sl = np.full(n, np.nan) if slope is None else slope
    P, d, se, sys, sl = sorted_probes(P, d, se, sys, sl)
    ok = np.isfinite(d)
    P, d, se, sys, sl = P[ok], d[ok], se[ok], sys[ok], sl[ok]
    known = np.isfinite(se) & np.isfinite(sys)
    se = np.where(np.isfinite(se), np.abs(se), math.inf)
    sys = np.where(np.isfinite(sys), np.abs(sys), math.inf)
    i = sign_change(P, d)
    if i is None:
        side = "above" if np.all(d > 0) else "below"
        return Crossing(None, side=side, level=level)
    z = float(stats.norm.ppf(0.5 + level / 2))
    t = np.log(P)
    t0, t1, d0, d1 = t[i], t[i + 1], d[i], d[i + 1]
    D, dt = d0 - d1, t1 - t0
    ts = float(t0 + dt * d0 / D)
    g0, g1 = dt * (-d1) / D**2, dt * d0 / D**2  # d t* / d d0, d t* / d d1 (both >= 0)
    mc = math.hypot(g0 * se[i], g1 * se[i + 1])
    quad = g0 * sys[i] + g1 * sys[i + 1]

    def reach(e) -> tuple[float, float, bool]:
        """How far below / above ``ts`` the root of ``d -+ e`` lies where a bracket end's ``e``
        straddles zero (0 on a side where it does not). Past the bracket a probe whose error is
        unknown counts by its value alone (no error is invented for it); at a bracket end an
        unknown error is infinite."""
        low, high = bool(d0 - e[i] <= 0), bool(d1 + e[i + 1] > 0)
        e = np.where(known | (np.arange(len(e)) == i) | (np.arange(len(e)) == i + 1), e, 0.0)
        below = ts - _followed(t, d - e, i, up=False) if low else 0.0
        above = _followed(t, d + e, i, up=True) - ts if high else 0.0
        return float(below), float(above), low or high

    b_lo, b_hi, s_mc = reach(z * se)
    mc_side = max(z * mc, b_lo, b_hi)
    q_lo, q_hi, s_q = reach(z * se + sys)
    err_mc = mc_side / z
    err_quad = max(quad, q_lo - mc_side, q_hi - mc_side)
    interp = _interp_error(t, d, sl, i, ts)
    half = mc_side + err_quad + interp
    return Crossing(
        float(math.exp(ts)),
        (float(P[i]), float(P[i + 1])),
        None,
        ts,
        float(err_mc),
        float(err_quad),
        float(interp),
        float(math.exp(ts - half)),
        float(math.exp(ts + half)),
        level,
        bool(s_mc or s_q),
    )


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
    return {
        "P_star": math.exp(c),
        "lo": math.exp(c - half),
        "hi": math.exp(c + half),
        "n": n,
        "n_missing": int((~ok).sum()),
        "level": level,
        "half_width_log": half,
        "seed_sd_log": spread,
        "mc_log": math.sqrt(float(np.sum(m**2))) / n,
        "sys_log": float(s.mean()),
        "quantile": q,
    }
