r"""The free-energy profile $F(a)=-\log p(a\mid{\rm data})$ from weighted draws, and its basins.

On bins of width $h$: $F_j=-\log\big(\sum_{n\in j}w_n/h\big)$ (weights of :mod:`.mbar`,
normalised: $\int e^{-F}da=1$). **Basins**: for a split bin $j$ the barrier is
$B_j=F_j-\max(\min_{i<j}F_i,\min_{i>j}F_i)$ and the profile's barrier is $B=\max_jB_j$ at
$j^*$ (the prominence of the shallower basin; $B\le0$ when $F$ is unimodal). The dividing surface
is the centre $a^*$ of bin $j^*$: $w_{\rm copy}=\sum_n w_n\mathbf 1[a_n\ge a^*]$ and
$$d=F_{\rm copy}-F_{\rm pool}=-\log\frac{w_{\rm copy}}{1-w_{\rm copy}} .$$
**Errors**: every quantity is computed per independent replica (with the pooled run's
dividing surface and bins) and its standard error is the replicas' standard deviation over
$\sqrt R$. With few replicas that spread can come out far too small (seen: 0.05 nat where
repeated runs scatter by 0.2), so ${\rm se}(d)$ and ${\rm se}(B)$ are floored by the error the
windows themselves allow (:func:`path_error`, umbrella integration's propagation): a window's
mean force $\kappa(c_k-\langle a\rangle_k)$ is known to $\kappa\,{\rm se}\langle a\rangle_k$
(${\rm se}$ from the window's ESS), and a free-energy difference between $a_0$ and $a_1$ sums it
over the windows between them, $\sigma\approx\kappa h\,(\sum_k{\rm se}_k^2)^{1/2}$ ($h$ the
spacing). A flagged profile (a window that did not mix) has its errors taken as the
replicas' standard deviation instead of its standard error (``widen``: the replicas are then
trusted as single draws, not averaged). The **verdict** "bimodal" needs
$B>t_{R-1}\,{\rm se}(B)$ (one-sided 97.5% Student quantile) with each replica's barrier measured at
the pooled split bin ($R$ the replicas that define it; with fewer than two the error is unknown,
NaN, and the profile is not called bimodal: the verdict treats a positive barrier of unknown
error as undetermined, not as one basin). **Unreached tail**: where the windows reach a bound of
the order parameter but the draws stop short of it, the strip between holds weight the bins
miss; $F$ extended linearly (never falling) from its two outermost bins there gives that weight
relative to the basin on its side (:func:`unreached_tail`), and $|\log(1+m)|$ is added to the
systematic error of $d$.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats
from scipy.special import logsumexp


def profile_on_bins(a: np.ndarray, log_w: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``F[B]`` on the bins ``edges[B + 1]`` (``inf`` where a bin holds no draw)."""
    idx = np.digitize(a, edges) - 1
    h = np.diff(edges)
    F = np.full(len(h), np.inf)
    for j in range(len(h)):
        sel = idx == j
        if sel.any():
            F[j] = -(logsumexp(log_w[sel]) - math.log(h[j]))
    return F


def split(F: np.ndarray) -> tuple[int | None, float]:
    """``(j*, B)``: the split bin and barrier of the module docstring (``None, -inf`` for fewer
    than three finite bins)."""
    ok = np.isfinite(F)
    best, jb = -np.inf, None
    for j in range(1, len(F) - 1):
        if not ok[j]:
            continue
        left, right = F[:j][ok[:j]], F[j + 1 :][ok[j + 1 :]]
        if left.size == 0 or right.size == 0:
            continue
        b = F[j] - max(left.min(), right.min())
        if b > best:
            best, jb = b, j
    return jb, float(best)


def barrier_at(F: np.ndarray, j: int) -> float:
    """$B_j$ of the module docstring."""
    left, right = F[:j][np.isfinite(F[:j])], F[j + 1 :][np.isfinite(F[j + 1 :])]
    if left.size == 0 or right.size == 0 or not np.isfinite(F[j]):
        return math.nan
    return float(F[j] - max(left.min(), right.min()))


def copy_weight(a: np.ndarray, log_w: np.ndarray, a_star: float) -> float:
    """$w_{\\rm copy}=\\sum_nw_n\\mathbf 1[a_n\\ge a^*]$."""
    hi = a >= a_star
    return float(np.exp(logsumexp(log_w[hi]))) if hi.any() else 0.0


def log_odds(a: np.ndarray, log_w: np.ndarray, a_star: float) -> float:
    """$d=\\log\\sum_{a_n<a^*}w_n-\\log\\sum_{a_n\\ge a^*}w_n$, the same $d$ as
    :func:`d_of` of :func:`copy_weight` but from the two sides' log-masses, so finite whenever
    both sides hold draws (far from the transition $w_{\\rm copy}$ rounds to 0 or 1 in float64
    while $|d|$ is only ~40 nats); infinite when one side is empty."""
    hi = a >= a_star
    lo_mass = logsumexp(log_w[~hi]) if (~hi).any() else -math.inf
    hi_mass = logsumexp(log_w[hi]) if hi.any() else -math.inf
    if hi_mass == -math.inf:
        return math.inf
    return float(lo_mass - hi_mass)


def d_of(w: float) -> float:
    """$d=-\\log(w/(1-w))$ (infinite at 0 and 1)."""
    if w <= 0.0:
        return math.inf
    if w >= 1.0:
        return -math.inf
    return -math.log(w / (1.0 - w))


@dataclasses.dataclass(frozen=True)
class Basins:
    """Basin analysis of one profile (module docstring). ``bimodal``: the barrier exceeds its
    Student bound; ``a_pool``, ``a_copy`` the minima left and right of ``a_top`` (the dividing
    surface); ``barrier`` in nats above the higher minimum; ``w_copy``, ``d`` and their
    replica errors; ``d_split_sys``: how far ``d`` moves when the dividing surface moves one bin
    either way (a systematic allowance), plus, once :func:`.windows.analyse` has added it, the
    unreached tails' log(1 + m) (module docstring)."""

    bimodal: bool
    a_pool: float
    a_top: float
    a_copy: float
    barrier: float
    barrier_se: float
    w_copy: float
    w_copy_se: float
    d: float
    d_se: float
    d_split_sys: float


def se_of(x: np.ndarray) -> float:
    """Standard error of the mean of replica values (NaN-aware; ``inf`` if any is infinite)."""
    x = np.asarray(x, np.float64)
    if np.any(np.isinf(x)):
        return math.inf
    x = x[np.isfinite(x)]
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan


def sd_of(x: np.ndarray) -> float:
    """Standard deviation of replica values (:func:`se_of` times the square root of their
    number): the error of one replica."""
    x = np.asarray(x, np.float64)
    n = int(np.isfinite(x).sum())
    return se_of(x) * math.sqrt(max(n, 1))


def student(R: int) -> float:
    """The 97.5% Student quantile with ``R - 1`` degrees of freedom."""
    return float(stats.t.ppf(0.975, max(R - 1, 1)))


def basins(
    edges: np.ndarray,
    F: np.ndarray,
    a: np.ndarray,
    log_w: np.ndarray,
    F_rep: np.ndarray,
    reps: list[tuple[np.ndarray, np.ndarray]],
    a_top: float | None = None,
    windows: tuple | None = None,
    widen: bool = False,
) -> Basins:
    """Basins of the pooled profile ``F`` with replica profiles ``F_rep[R, B]`` and replica
    draws ``reps[r] = (a, log_w)``; ``a_top`` forces the dividing surface (else the profile's
    own split, or the global minimum's bin edge... for a unimodal profile: its split anyway,
    flagged ``bimodal=False``); ``windows = (centers, se_a, kappa)`` floors the errors of
    ``d`` and of the barrier by :func:`path_error`; ``widen``: errors are the replicas'
    standard deviation (module docstring)."""
    se = sd_of if widen else se_of
    mid = 0.5 * (edges[1:] + edges[:-1])
    j, B = split(F)
    if a_top is None:
        if j is None:
            raise ValueError("the profile has fewer than three finite bins")
        a_top = float(mid[j])
    else:
        j = int(np.clip(np.digitize(a_top, edges) - 1, 1, len(mid) - 2))
        B = barrier_at(F, j)
    Bs = np.array([barrier_at(Fr, j) for Fr in F_rep])
    n_B = int(np.isfinite(Bs).sum())  # replicas with draws at the split and on both sides
    B_se = se(Bs)  # NaN below two such replicas: the error is unknown, and stays so
    left, right = F[:j], F[j + 1 :]
    a_pool = (
        float(mid[:j][np.nanargmin(np.where(np.isfinite(left), left, np.nan))])
        if np.isfinite(left).any()
        else math.nan
    )
    a_copy = (
        float(mid[j + 1 :][np.nanargmin(np.where(np.isfinite(right), right, np.nan))])
        if np.isfinite(right).any()
        else math.nan
    )
    floor_d = 0.0
    if windows is not None and np.isfinite(a_pool) and np.isfinite(a_copy):
        c, se_a, kappa = windows
        # the barrier: from the higher minimum to the top; d: from one basin's mass to the other's
        a_hi_min = (
            a_pool
            if F[:j][np.isfinite(left)].min() >= F[j + 1 :][np.isfinite(right)].min()
            else a_copy
        )
        if math.isfinite(B_se):
            B_se = max(B_se, path_error(c, se_a, kappa, a_hi_min, float(a_top)))
        floor_d = path_error(c, se_a, kappa, a_pool, a_copy)
    bimodal = bool(np.isfinite(B) and B > 0 and math.isfinite(B_se) and B > student(n_B) * B_se)
    w = copy_weight(a, log_w, a_top)
    ws = np.array([copy_weight(ar, lr, a_top) for ar, lr in reps])
    ds = np.array([log_odds(ar, lr, a_top) for ar, lr in reps])
    h = float(np.mean(np.diff(edges)))
    d = log_odds(a, log_w, a_top)
    d_shift = [log_odds(a, log_w, a_top + s * h) for s in (-1, 1)]
    d_se = max(se(ds), floor_d) if np.isfinite(se(ds)) else se(ds)
    w_se = max(se(ws), w * (1 - w) * floor_d)
    return Basins(
        bimodal,
        a_pool,
        float(a_top),
        a_copy,
        float(B),
        B_se,
        w,
        w_se,
        d,
        d_se,
        float(max(abs(x - d) for x in d_shift)),
    )


def path_error(centers: np.ndarray, se_a: np.ndarray, kappa: float, a0: float, a1: float) -> float:
    """$\\kappa h(\\sum_k{\\rm se}_k^2)^{1/2}$ over the windows whose centres lie between
    ``a0`` and ``a1`` (module docstring; ``h`` the centres' spacing)."""
    lo, hi = min(a0, a1), max(a0, a1)
    h = float(np.mean(np.diff(centers)))
    sel = (centers >= lo - 0.5 * h) & (centers <= hi + 0.5 * h)
    return float(kappa * h * math.sqrt(np.sum(np.asarray(se_a)[sel] ** 2)))


def weighted_mean(x: np.ndarray, log_w: np.ndarray) -> float:
    """$\\sum_nw_nx_n$."""
    return float(np.sum(np.exp(log_w) * x))


def unreached_tail(F: np.ndarray, edges: np.ndarray, bound: float, a_top: float) -> float:
    """The weight of the strip between the profile's outermost bin with draws and ``bound`` (the
    order parameter's lower bound when it lies below the bins, else its upper one), relative to
    the basin on that side of ``a_top``: $F$ continued from the outermost two finite bins with
    the slope between them (flat where it would fall towards the bound; module docstring)."""
    mid, h = 0.5 * (edges[1:] + edges[:-1]), np.diff(edges)
    fin = np.flatnonzero(np.isfinite(F))
    low = bound < mid[fin[0]]
    j0, j1 = (fin[0], fin[1]) if low else (fin[-1], fin[-2])
    width = edges[j0] - bound if low else bound - edges[j0 + 1]
    if width <= 0:
        return 0.0
    Fm = F[fin].min()
    k = max((F[j0] - F[j1]) / abs(mid[j0] - mid[j1]), 0.0)  # the rise per unit towards the bound
    strip = math.exp(-(F[j0] - Fm)) * (width if k == 0 else -math.expm1(-k * width) / k)
    side = (mid < a_top) if low else (mid >= a_top)
    basin = float(np.sum(np.where(side & np.isfinite(F), np.exp(-(F - Fm)) * h, 0.0)))
    return strip / basin if basin > 0 else math.inf
