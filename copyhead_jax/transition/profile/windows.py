r"""One free-energy profile $F(a;P)$: windows placed, prepared, sampled, joined and analysed.

1. **Windows**: centres $c_k$ every ``spacing`` over ``[a_lo, a_hi]``, force constant
   $\kappa=(\text{kappa\_factor}/\text{spacing})^2$: alone, a window has a standard deviation
   $\le\text{spacing}/\text{kappa\_factor}$ in $a$, so neighbours overlap wherever the profile's
   curvature is below $\kappa$ (checked on MBAR's overlap matrix).
2. **Starts**: each window's chains start around its restrained minimum under the stiffer
   $\kappa_{\rm prep}=$ ``prep_stiffness`` $\kappa$, found from two starts, the model's start for
   the centre (for the copy head: logits $\beta G^*$ with $a_G(\beta G^*)=c_k$) and the previous
   window's minimum (continuation); the lower biased energy is kept.
3. **Whitening** per window (:func:`.landscape.restrain`): the energy's Hessian at every
   ``whiten_every``-th window's minimum (the anchors; the nearest in $c$ serves its neighbours)
   plus the window's own restraint curvature $\kappa\nabla a\nabla a^\top$ at its minimum.
4. **Chains** (:mod:`.umbrella`), **MBAR** (:mod:`.mbar`), **profile and basins**
   (:mod:`.basins`), per replica and pooled.
5. **Range**: the profile must rise ``tail_rise`` nats above its minimum at both ends of the
   sampled range unless that end reaches the order parameter's bound (or its windows do: the
   next centre would pass the bound, so no window can be added there); while it does not,
   ``extend_by`` more windows are added at that end (at most ``max_extend`` times), sampled and
   joined with the others. A range still short is flagged.
6. **Mixing**: per window the split $\hat R$ and ESS of $a$ over its chains; a window with
   $\hat R>$ ``rhat_max`` or ESS $<$ ``ess_min``, or a neighbour overlap below ``overlap_min``,
   is named in ``flagged``, and the profile's errors become the replicas' standard deviation
   instead of their standard error (:mod:`.basins`): a window that did not mix widens the
   errors, it never leaves them as they were. Windows sampled until a target
   (``UmbrellaSettings.ess_target``, :mod:`.umbrella`) that reached the cap without meeting it
   are flagged the same way.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import jax
import numpy as np

from ...config import PROFILE_WINDOW
from .basins import (
    Basins,
    basins,
    path_error,
    profile_on_bins,
    sd_of,
    se_of,
    unreached_tail,
    weighted_mean,
)
from .landscape import (
    Landscape,
    energy_hessian,
    order_gradient,
    restrain,
    restrained_minimum,
    root_of_inverse,
)
from .mbar import join, neighbour_overlap
from .umbrella import (
    UmbrellaSettings,
    WindowDraws,
    round_progress,
    run_windows,
    window_target,
)


@dataclasses.dataclass(frozen=True)
class ProfileSettings:
    """Where the windows go and how each profile is judged (module docstring).

    ``a_lo``, ``a_hi``: the first and last centre; ``spacing`` between centres;
    ``kappa_factor``: $\\kappa=(\\text{kappa\\_factor}/\\text{spacing})^2$; ``bin_width`` of the
    profile (default half a spacing); ``rhat_max``, ``ess_min`` (per window, chains pooled),
    ``overlap_min`` (neighbouring windows): the mixing flags; ``tail_rise``, ``a_bounds``,
    ``extend_by``, ``max_extend``: the range (module docstring); ``prep_stiffness``,
    ``whiten_every``: starts and whitenings; ``umbrella``: the chains."""

    a_lo: float = -0.1
    a_hi: float = 2.6
    spacing: float = 0.1
    kappa_factor: float = 1.0
    bin_width: float | None = None
    rhat_max: float = PROFILE_WINDOW.rhat_max
    ess_min: float = PROFILE_WINDOW.ess_min
    overlap_min: float = 0.03
    tail_rise: float = 4.0
    a_bounds: tuple[float | None, float | None] = (None, None)
    extend_by: int = 3
    max_extend: int = 3
    prep_stiffness: float = 10.0
    whiten_every: int = 3
    umbrella: UmbrellaSettings = UmbrellaSettings()

    def __post_init__(self):
        if not (self.a_hi > self.a_lo and self.spacing > 0 and self.kappa_factor > 0):
            raise ValueError("ProfileSettings needs a_hi > a_lo, spacing > 0, kappa_factor > 0")
        if self.n_windows < 3:
            raise ValueError(f"ProfileSettings gives {self.n_windows} windows; need >= 3")
        if not (
            isinstance(self.extend_by, int)
            and self.extend_by >= 1
            and isinstance(self.max_extend, int)
            and self.max_extend >= 0
        ):
            raise ValueError("ProfileSettings needs extend_by >= 1 and max_extend >= 0 (ints)")

    @property
    def n_windows(self) -> int:
        return int(math.floor((self.a_hi - self.a_lo) / self.spacing + 1e-9)) + 1

    @property
    def centers(self) -> np.ndarray:
        return self.a_lo + self.spacing * np.arange(self.n_windows)

    @property
    def kappa(self) -> float:
        return (self.kappa_factor / self.spacing) ** 2

    def edges(self, centers: np.ndarray) -> np.ndarray:
        """Bins of width ``bin_width`` over the centres and three spacings beyond."""
        h = self.bin_width or 0.5 * self.spacing
        lo, hi = centers[0] - 3 * self.spacing, centers[-1] + 3 * self.spacing
        return lo + h * np.arange(int(math.ceil((hi - lo) / h - 1e-9)) + 1)


@dataclasses.dataclass(frozen=True)
class WindowHealth:
    """Per window: restrained minimum's ``a``, split R-hat and ESS of ``a`` (and of ``U``),
    mean acceptance, step, overlap with the next window (NaN for the last), draws per chain and,
    sampled until a target, whether the window met it (``None`` without a target)."""

    a_min: np.ndarray
    rhat: np.ndarray
    ess: np.ndarray
    accept: np.ndarray
    step: np.ndarray
    overlap_next: np.ndarray
    rhat_U: np.ndarray | None = None
    ess_U: np.ndarray | None = None
    n_draws: np.ndarray | None = None
    target_met: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class Profile:
    """One measured profile: bins ``edges``, pooled ``F`` and its error ``F_se`` (``F_rep[R, B]``
    per replica, each normalised), the posterior mean of ``a`` with its error, the basins,
    window ``centers`` and ``kappa``, their health, ``flagged`` lines (not mixed: the errors
    are widened), ``short`` (the range missed a tail after every extension), the basins' per-row
    copy probabilities (``rows``), CPU seconds (``seconds``: prepare, sample, join), the
    windows' target (``None``: fixed length; else ESS, R-hat, round and cap in draws)."""

    edges: np.ndarray
    F: np.ndarray
    F_se: np.ndarray
    F_rep: np.ndarray
    mean_a: float
    mean_a_se: float
    basins: Basins
    health: WindowHealth
    flagged: tuple[str, ...]
    short: tuple[str, ...]
    rows: dict
    seconds: dict
    centers: np.ndarray
    kappa: float
    target: dict | None = None

    @property
    def mixed(self) -> bool:
        return not self.flagged


@dataclasses.dataclass(frozen=True)
class Anchors:
    """Energy Hessians ``H[j]`` at window minima whose order parameter is ``at[j]``, measured
    with data weight ``weight`` (P). :meth:`rescaled` carries them to another P: the data part
    of the Hessian grows in proportion to the data, $H'=fI+\\frac{P'}P(H-fI)$ ($f$ the prior
    curvature), a preconditioner for a nearby P without n Hessian-vector products."""

    at: tuple[float, ...]
    H: tuple[np.ndarray, ...]
    weight: float

    def rescaled(self, weight: float, floor: float) -> Anchors:
        r = weight / self.weight
        eye = np.eye(self.H[0].shape[0])
        return Anchors(self.at, tuple(floor * eye + r * (h - floor * eye) for h in self.H), weight)

    def plus(self, other: Anchors) -> Anchors:
        return Anchors(self.at + other.at, self.H + other.H, self.weight)


def prepare(
    ls: Landscape,
    params,
    s: ProfileSettings,
    centers: np.ndarray,
    start: Callable[[float], np.ndarray],
    anchors: Anchors | None = None,
    weight: float = 1.0,
    prev: np.ndarray | None = None,
):
    """``(x0[K, n], C[K, n, n], a_min[K], anchors)``: restrained minima (in the order of
    ``centers``, each also tried from the previous one's, the first from ``prev`` if given)
    and whitenings; ``anchors`` (optional) energy Hessians to use (new ones are measured at
    every ``whiten_every``-th window when none lies within ``whiten_every`` spacings)."""
    xs, am = [], []
    kp = s.prep_stiffness * s.kappa
    for c in centers:
        r = restrained_minimum(ls, params, float(c), kp, start(float(c)), gtol=1e-3)
        if prev is not None:
            r2 = restrained_minimum(ls, params, float(c), kp, prev, gtol=1e-3)
            r = r if r.Ub <= r2.Ub else r2
        prev = r.x
        xs.append(r.x)
        am.append(r.a)
    K = len(xs)
    reach = s.whiten_every * s.spacing
    new_at, new_H = [], []
    for k in range(min(s.whiten_every // 2, K - 1), K, s.whiten_every):
        have = (anchors.at if anchors else ()) + tuple(new_at)
        if not have or min(abs(a - float(centers[k])) for a in have) > reach:
            new_at.append(float(centers[k]))
            new_H.append(energy_hessian(ls, params, xs[k]))
    if new_at:
        fresh = Anchors(tuple(new_at), tuple(new_H), weight)
        anchors = fresh if anchors is None else anchors.plus(fresh)
    roots = [root_of_inverse(h, ls.floor) for h in anchors.H]
    Cs = []
    for k in range(K):
        j = int(np.argmin([abs(a - float(centers[k])) for a in anchors.at]))
        Cs.append(restrain(roots[j], order_gradient(ls, params, xs[k]), s.kappa))
    return np.stack(xs), np.stack(Cs), np.array(am), anchors


def row_summary(dr: WindowDraws, log_w: np.ndarray, a_top: float) -> dict:
    """Per-row copy probabilities $p_a$ of the draws, reweighted to the posterior, in each
    basin: the weighted mean and standard deviation over draws of every row's $p_a$, and the
    weighted mean over draws of the spread across rows ($\\max_a p_a-\\min_a p_a$): a basin in
    which some rows copy while others pool has a spread near 1."""
    if np.shape(dr.extra)[-1] == 0:  # a landscape that records nothing per row
        return {}
    ex = np.asarray(dr.extra, np.float64).reshape(-1, dr.extra.shape[-1])
    K, R, S = np.shape(dr.a)
    own = np.arange(S)[None, None, :] < dr.lengths()[:, None, None]  # each window's draws
    ok = (np.asarray(dr.finite, bool)[:, :, None] & own).reshape(-1)
    ex = ex[ok]
    a = np.asarray(dr.a, np.float64).reshape(-1)[ok]
    out = {}
    if ex.shape[1] == 0:
        return out
    for name, sel in (("pool", a < a_top), ("copy", a >= a_top)):
        if not sel.any():
            continue
        w = np.exp(log_w[sel] - log_w[sel].max())
        w /= w.sum()
        m = w @ ex[sel]
        sd = np.sqrt(np.maximum(w @ (ex[sel] - m) ** 2, 0.0))
        spread = ex[sel].max(1) - ex[sel].min(1)
        out[name] = {
            "p_mean": m.tolist(),
            "p_sd": sd.tolist(),
            "spread_mean": float(w @ spread),
            "spread_max": float(spread.max()),
        }
    return out


def tail_rise(F: np.ndarray, edges: np.ndarray, s: ProfileSettings, centers: np.ndarray) -> dict:
    """Per end (``low``, ``high``): how far the profile's last finite bin lies above its
    minimum; ``inf`` when that end reaches the order parameter's bound, i.e. its last bin lies
    within a spacing of the bound or no further window fits before it (the next centre would
    pass it: the windows reach as far as they can, and the range cannot grow there)."""
    mid, fin, out = 0.5 * (edges[1:] + edges[:-1]), np.flatnonzero(np.isfinite(F)), {}
    for end, j, bound, sign in (
        ("low", fin[0], s.a_bounds[0], -1),
        ("high", fin[-1], s.a_bounds[1], 1),
    ):
        edge = centers.min() if sign < 0 else centers.max()
        full = bound is not None and sign * (edge + sign * s.spacing - bound) >= 0
        at_bound = bound is not None and abs(mid[j] - bound) <= s.spacing
        out[end] = math.inf if (at_bound or full) else float(F[j] - F[fin].min())
    return out


def analyse(
    dr: WindowDraws, s: ProfileSettings, centers: np.ndarray, a_min=None, a_top: float | None = None
) -> dict:
    """Join, profile and basins of sampled windows at ``centers`` (pooled and per replica):
    the :class:`Profile` fields but ``seconds``."""
    K, R, S = dr.a.shape
    kappa, edges = s.kappa, s.edges(centers)
    ok = np.asarray(dr.finite, bool)  # [K, R]
    a = np.asarray(dr.a, np.float64)
    n = dr.lengths()  # each window's own draws (windows sampled in rounds: NaN past them)
    pooled = join([a[k][ok[k]][:, : n[k]].ravel() for k in range(K)], centers, kappa)
    F = profile_on_bins(pooled.a, pooled.log_w, edges)
    reps, F_rep, means = [], [], []
    for r in range(R):
        if not ok[:, r].all():
            continue
        jr = join([a[k, r, : n[k]] for k in range(K)], centers, kappa)
        reps.append((jr.a, jr.log_w))
        F_rep.append(profile_on_bins(jr.a, jr.log_w, edges))
        means.append(weighted_mean(jr.a, jr.log_w))
    F_rep = np.array(F_rep)
    rhat, ess = dr.rhat(), dr.ess()
    ov = np.r_[neighbour_overlap(pooled.overlap), np.nan]
    flagged = []
    for k in range(K):
        if not (rhat[k] <= s.rhat_max and ess[k] >= s.ess_min):
            flagged.append(
                f"window {k} (c = {centers[k]:.2f}): R-hat {rhat[k]:.3f}, ESS {ess[k]:.0f}"
            )
        if k < K - 1 and not ov[k] >= s.overlap_min:
            flagged.append(f"windows {k}-{k + 1}: overlap {ov[k]:.3f}")
    um = s.umbrella
    tgt = window_target(dr, um) if um.ess_target else None
    for k in np.flatnonzero(~tgt["met"]) if tgt is not None else ():
        flagged.append(
            f"window {k} (c = {centers[k]:.2f}): target ESS >= {um.ess_target:g}, "
            f"R-hat <= {um.rhat_target:g} not met at the cap of {n[k]} draws "
            f"(ESS {tgt['ess_min'][k]:.0f}, R-hat {tgt['rhat_max'][k]:.3f})"
        )
    if not ok.all():
        flagged.append(f"{int((~ok).sum())} chain(s) not finite (left out)")
    if len(reps) < 2:
        flagged.append(f"{len(reps)} replica(s) with every window finite")
    se = sd_of if flagged else se_of
    with np.errstate(invalid="ignore"):
        F_se = (
            np.array([se(F_rep[:, j]) for j in range(F.size)])
            if len(reps)
            else np.full(F.size, np.nan)
        )
    se_a = np.array([a[k][ok[k]][:, : n[k]].std() for k in range(K)]) / np.sqrt(
        np.maximum(ess, 1.0)
    )
    mid = 0.5 * (edges[1:] + edges[:-1])
    if np.isfinite(F).any():  # F relative to its minimum: floored like d (basins.path_error)
        a0 = float(mid[np.nanargmin(np.where(np.isfinite(F), F, np.nan))])
        floor = np.array([path_error(centers, se_a, kappa, m, a0) for m in mid])
        F_se = np.where(np.isfinite(F_se), np.maximum(F_se, floor), F_se)
    b = basins(
        edges,
        F,
        pooled.a,
        pooled.log_w,
        F_rep,
        reps,
        a_top=a_top,
        windows=(centers, se_a, kappa),
        widen=bool(flagged),
    )
    reach = tail_rise(F, edges, s, np.asarray(centers))  # inf: that end's windows reach its bound
    ends = [
        v for end, v in zip(("low", "high"), s.a_bounds) if v is not None and reach[end] == math.inf
    ]
    tail = sum(math.log1p(unreached_tail(F, edges, v, b.a_top)) for v in ends)
    b = dataclasses.replace(b, d_split_sys=b.d_split_sys + tail)
    health = WindowHealth(
        np.full(K, np.nan) if a_min is None else np.asarray(a_min),
        rhat,
        ess,
        np.asarray(dr.accept).mean(1),
        np.asarray(dr.step).mean(1),
        ov,
        dr.rhat("U"),
        dr.ess("U"),
        n,
        None if tgt is None else tgt["met"],
    )
    target = (
        None
        if not um.ess_target
        else {
            "ess": um.ess_target,
            "rhat": um.rhat_target,
            "round_draws": um.round_draws,
            "cap_draws": um.n_rounds * um.round_draws,
        }
    )
    short = tuple(
        f"range: the profile's {end} end lies {r:.1f} nats above its minimum "
        f"(< {s.tail_rise}): the windows miss a tail"
        for end, r in reach.items()
        if r < s.tail_rise
    )
    return dict(
        edges=edges,
        F=F,
        F_se=F_se,
        F_rep=F_rep,
        mean_a=weighted_mean(pooled.a, pooled.log_w),
        mean_a_se=se(np.array(means)) if len(means) > 1 else math.nan,
        basins=b,
        health=health,
        flagged=tuple(flagged),
        short=short,
        rows=row_summary(dr, pooled.log_w, b.a_top),
        centers=np.asarray(centers),
        kappa=kappa,
        target=target,
    )


@dataclasses.dataclass(frozen=True)
class Sampled:
    """A profile's raw material: window ``centers``, restrained minima ``x0`` and their ``a``,
    the ``draws`` (for a re-analysis with another dividing surface)."""

    centers: np.ndarray
    x0: np.ndarray
    a_min: np.ndarray
    draws: WindowDraws


def measure_profile(
    key,
    ls: Landscape,
    params,
    s: ProfileSettings,
    start: Callable[[float], np.ndarray],
    *,
    a_top: float | None = None,
    anchors: Anchors | None = None,
    weight: float = 1.0,
    ckpt_dir=None,
    log: Callable[[str], None] | None = None,
) -> tuple[Profile, Sampled, Anchors]:
    """The profile of ``ls`` at ``params`` (module docstring); ``start(c)`` a flat start for
    the centre ``c``; ``a_top`` forces the dividing surface (else the profile's barrier top);
    ``anchors``/``weight``: :func:`prepare`; ``ckpt_dir``: where the windows' rounds and draws
    are kept (:func:`.umbrella.run_windows`); ``log``: a line per window round sampled until
    the target (how many windows are still short). Returns the profile, its windows' draws and
    the whitening Hessians (for the next P)."""
    t0 = time.process_time()
    c = s.centers
    x0, C, a_min, anchors = prepare(ls, params, s, c, start, anchors, weight)
    t1 = time.process_time()
    on_round = None if log is None else round_progress(log, s.umbrella, t0)
    dr = run_windows(key, ls, params, x0, C, c, s.kappa, s.umbrella, ckpt_dir, on_round)
    t2 = time.process_time()
    fields = analyse(dr, s, c, a_min, a_top)
    t_prep, t_samp = t1 - t0, t2 - t1
    for i in range(s.max_extend):
        rise = tail_rise(fields["F"], fields["edges"], s, c)
        grow = [end for end, r in rise.items() if r < s.tail_rise]
        added = False
        for end in grow:
            t3 = time.process_time()
            step = -s.spacing if end == "low" else s.spacing
            edge = c[0] if end == "low" else c[-1]
            new = edge + step * np.arange(1, s.extend_by + 1)
            lo, hi = s.a_bounds
            new = new[[(lo is None or v > lo) and (hi is None or v < hi) for v in new]]
            if new.size == 0:
                continue
            added = True
            seed_x = x0[0] if end == "low" else x0[-1]
            nx, nC, na, anchors = prepare(ls, params, s, new, start, anchors, weight, seed_x)
            t4 = time.process_time()
            nd = run_windows(
                jax.random.fold_in(key, 1 + 2 * i + (end == "high")),
                ls,
                params,
                nx,
                nC,
                new,
                s.kappa,
                s.umbrella,
                ckpt_dir,
                on_round,
            )
            t_prep += t4 - t3
            t_samp += time.process_time() - t4
            if end == "low":  # windows kept in increasing order of their centres
                new, nx, na, nd = new[::-1], nx[::-1], na[::-1], nd.reversed()
                c, x0, a_min, dr = (
                    np.r_[new, c],
                    np.concatenate([nx, x0]),
                    np.r_[na, a_min],
                    dr.concat(nd, before=True),
                )
            else:
                c, x0, a_min, dr = (
                    np.r_[c, new],
                    np.concatenate([x0, nx]),
                    np.r_[a_min, na],
                    dr.concat(nd),
                )
        if not added:
            break
        fields = analyse(dr, s, c, a_min, a_top)
    t6 = time.process_time()
    sec = {"prepare": t_prep, "sample": t_samp, "join": t6 - t_prep - t_samp - t0}
    return Profile(**fields, seconds=sec), Sampled(c, x0, a_min, dr), anchors
