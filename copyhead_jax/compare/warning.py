r"""Early warning, defined once (docs/theory.md §9.10, its criterion §13.9): does the posterior
variance of an order parameter grow on the approach to a transition point ``P*``?

Growth ratio: per seed, the variance at ``hi P*`` over the variance at ``lo P*`` (``lo, hi =
0.5, 0.9``; each read off the sampled grid by linear interpolation in ``(log P, log Var)``,
never extrapolated); its 95% confidence interval is the Student-t interval of the mean log ratio
over seeds. The criterion: a basin that only sharpens with ``P`` (its curvature per sequence
along the order parameter does not fall) has ``Var = 1/(k0 + P k)`` and cannot grow, so growth
above :data:`GROWTH_NULL` = 1 means the basin softens ahead of a fold or crossover. A
**signal** is a growth ratio whose whole interval lies above 1; **no signal** when the whole
interval lies below it; otherwise **inconclusive**. Beside it, route B's predicted growth
(``theory.bayes.predicted_growth``) says whether the measurement has the size the theory gives
(:func:`as_predicted`). The window can be placed at any ``P*`` (the MAP one, the Bayesian one):
the caller says which.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..theory.scaling import t_quantile
from .errors import GROWTH_NULL

#: the window, as fractions of P*: far enough below P* to be outside the transition's own
#: width on the paper's grids, close enough that a susceptibility peak at P* shows
WINDOW = (0.5, 0.9)


def interp_loglog(P, y, P0: float) -> float:
    """``y(P0)`` interpolated linearly in ``(log P, log y)``; NaN outside the grid or if y <= 0."""
    P, y = np.asarray(P, float), np.asarray(y, float)
    ok = np.isfinite(y) & (y > 0)
    P, y = P[ok], y[ok]
    if P.size < 2 or not (P[0] <= P0 <= P[-1]):
        return float("nan")
    return float(np.exp(np.interp(math.log(P0), np.log(P), np.log(y))))


def signal_of(ci, threshold: float = GROWTH_NULL) -> str:
    """``'signal'``, ``'no signal'`` or ``'inconclusive'`` for a growth-ratio interval ``ci``
    (``'undetermined'`` without one)."""
    if not ci or ci[0] is None or ci[1] is None:
        return "undetermined"
    return "signal" if ci[0] > threshold else "no signal" if ci[1] < threshold else "inconclusive"


def as_predicted(ci, predicted: float | None) -> str | None:
    """``'as predicted'`` when the growth interval ``ci`` contains the theory's ``predicted``
    growth, ``'above the prediction'`` / ``'below the prediction'`` otherwise; None without
    both."""
    if not ci or ci[0] is None or ci[1] is None or predicted is None:
        return None
    if ci[0] <= predicted <= ci[1]:
        return "as predicted"
    return "above the prediction" if ci[0] > predicted else "below the prediction"


def early_warning(
    P,
    var,
    P_star: float | None,
    *,
    window=WINDOW,
    threshold: float = GROWTH_NULL,
    level: float = 0.95,
) -> dict[str, Any]:
    """The growth ratio of ``var[nP, n_seeds]`` (posterior variance per ``P`` and seed) over
    ``[window[0] P*, window[1] P*]`` with its CI: ``signal`` (:func:`signal_of`, against
    ``threshold``) and ``verdict``, where the interval lies against 1 (``grows`` / ``flat`` /
    ``shrinks``). Fewer than 2 seeds with both ends inside the grid, or no ``P*``:
    ``undetermined``."""
    lo, hi = window
    if not 0 < lo < hi:
        raise ValueError(f"window must be (lo, hi) with 0 < lo < hi, got {window!r}")
    out: dict[str, Any] = {
        "P_star": None if P_star is None else float(P_star),
        "window": [lo, hi],
        "threshold": threshold,
        "var_ratio": None,
        "var_ratio_ci": None,
        "n_seeds": 0,
        "signal": "undetermined",
        "verdict": "undetermined",
        "ci_method": f"{level:.0%} Student-t over seeds of log(Var(hi P*) / Var(lo P*))",
    }
    if P_star is None or not math.isfinite(P_star):
        return {**out, "reason": "no P*"}
    P = np.asarray(P, float)
    v = np.asarray(var, float).reshape(P.size, -1)
    a = np.array([interp_loglog(P, v[:, s], lo * P_star) for s in range(v.shape[1])])
    b = np.array([interp_loglog(P, v[:, s], hi * P_star) for s in range(v.shape[1])])
    with np.errstate(all="ignore"):
        lr = np.log(b / a)
    out.update(
        P_lo=lo * P_star,
        P_hi=hi * P_star,
        var_lo=a.tolist(),
        var_hi=b.tolist(),
        log_ratio=lr.tolist(),
    )
    x = lr[np.isfinite(lr)]
    out["n_seeds"] = int(x.size)
    if x.size < 2:
        return {
            **out,
            "reason": f"window [{lo * P_star:.4g}, {hi * P_star:.4g}] not on the "
            f"sampled grid [{P.min():.4g}, {P.max():.4g}] for 2 seeds",
        }
    m = float(x.mean())
    h = t_quantile(0.5 + level / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    ci = [math.exp(m - h), math.exp(m + h)]
    out.update(var_ratio=math.exp(m), var_ratio_ci=ci, signal=signal_of(ci, threshold))
    out["verdict"] = "grows" if ci[0] > 1 else "shrinks" if ci[1] < 1 else "flat"
    return out


__all__ = ["GROWTH_NULL", "WINDOW", "as_predicted", "early_warning", "interp_loglog", "signal_of"]
