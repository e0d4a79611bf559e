r"""First order or crossover, and $P^*$, from profiles measured at a few $P$ (host NumPy).

Per probe $P$ the profile gives (:mod:`copyhead_jax.transition.profile`): bimodal or not, the
barrier, the basin weights split at the barrier top,
$d(P)=F_{\rm copy}-F_{\rm pool}=-\log(w_{\rm copy}/w_{\rm pool})$ and the posterior mean
$\bar a(P)$, each with its replica error.

* **First order** when at least one usable probe is bimodal. $P^*$ is the root of $d$ in
  $\log P$ (:func:`~.root.crossing`, the package's one crossing rule: linear between the
  bracketing probes, the quadratic through a third as the interpolation error). At a probe
  where the profile is unimodal (one basin gone) the dividing surface is the barrier top of
  the nearest bimodal probe. The **coexistence range** is the span of bimodal probes (at least
  that span, at most the span to the unimodal neighbours ``coexistence_outer``).
* **Crossover** when no probe is bimodal: $P^*$ is where $\bar a(P)$ passes midway between its
  values at the lowest and highest probe (the same root rule on $a_{\rm mid}-\bar a$); the
  steepest point (largest $\Delta\bar a/\Delta\log P$ between neighbours) is reported beside it.

**Errors.** Replica standard errors are multiplied by $t_{0.975,R-1}/z_{0.975}$ before they enter
the root's budget (an error from $R$ replicas has $R-1$ degrees of freedom); the dividing
surface's sensitivity (``d_sys``, the profile's basins) is a systematic term. **Mixing**: a
probe with a window that did not mix enters with widened errors and is named; a probe whose
range misses a tail (its normalisation may lack a basin) is left out; without a bracket of
usable probes the verdict is ``undecided`` with the reason, and so is a crossover while a probe
left out is bimodal, a usable one has a positive barrier of unknown error, or no probe's posterior
mean lies inside the step (``STEP_RESOLVED``: a jump between two probes is then not ruled out;
its $P^*$ the crossover's reading). Over seeds: each seed's root on its
own, then :func:`~.root.combine_seeds`. It stands beside the crossing rule because it judges
measured numbers alone: ``copyhead transition`` decides with it, and the claims matrix judges a
committed profile result with it (:func:`from_record`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats

from .root import Crossing, combine_seeds, crossing

FIRST_ORDER, CROSSOVER, UNDECIDED = "first order", "crossover", "undecided"
#: a crossover is called only where some probe's posterior mean lies this far between the end
#: probes' means (a fraction of the way): else the step between two probes may be a jump
STEP_RESOLVED = (0.2, 0.8)


@dataclasses.dataclass(frozen=True)
class Probe:
    """What the verdict needs of one profile at ``P``: ``flagged`` windows that did not mix
    (errors already widened), ``short`` a range that misses a tail."""

    P: int
    bimodal: bool
    barrier: float
    barrier_se: float
    a_pool: float
    a_top: float
    a_copy: float
    w_copy: float
    w_copy_se: float
    d: float
    d_se: float
    d_sys: float
    mean_a: float
    mean_a_se: float
    n_replicas: int
    flagged: tuple[str, ...] = ()
    short: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return not self.short and self.n_replicas >= 2

    @property
    def barrier_unknown(self) -> bool:
        """A positive barrier whose error no two replicas define (NaN): neither one basin nor
        two."""
        return not self.bimodal and self.barrier > 0 and not math.isfinite(self.barrier_se)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One seed's verdict: ``kind`` (:data:`FIRST_ORDER`, :data:`CROSSOVER`, :data:`UNDECIDED`),
    the evidence lines, ``P_star`` and ``crossing`` (the root's :class:`Crossing`, errors in
    log P; ``None`` with fewer than two usable probes),
    the coexistence span ``[lo, hi]`` of bimodal probes with its unimodal neighbours ``outer``,
    the crossover's midpoint and steepest point (also for a first-order verdict, beside it),
    and the probes."""

    kind: str
    evidence: tuple[str, ...]
    P_star: float | None
    crossing: Crossing | None
    coexistence: tuple[float, float] | None
    coexistence_outer: tuple[float | None, float | None] | None
    P_mid: float | None
    P_steepest: float | None
    probes: tuple[Probe, ...]


def replica_factor(R: int) -> float:
    """$t_{0.975,R-1}/z_{0.975}$."""
    return float(stats.t.ppf(0.975, max(R - 1, 1)) / stats.norm.ppf(0.975))


def _midpoint_root(ps: list[Probe]) -> tuple[float | None, Crossing, float | None]:
    P = [p.P for p in ps]
    a = np.array([p.mean_a for p in ps])
    mid = 0.5 * (a[0] + a[-1])
    f = [replica_factor(p.n_replicas) for p in ps]
    cr = crossing(P, mid - a, [p.mean_a_se * k for p, k in zip(ps, f)])
    slope = np.diff(a) / np.diff(np.log(P))
    j = int(np.argmax(slope)) if len(slope) else None
    steep = None if j is None else float(math.exp(0.5 * (math.log(P[j]) + math.log(P[j + 1]))))
    return cr.P_star, cr, steep


def decide(probes: list[Probe]) -> Verdict:
    """The verdict of one seed (module docstring)."""
    ps = sorted(probes, key=lambda p: p.P)
    used = [p for p in ps if p.usable]
    ev = [
        f"P={p.P}: left out ({(p.short or ('fewer than 2 replicas',))[0]})"
        for p in ps
        if not p.usable
    ]
    ev += [
        f"P={p.P}: {len(p.flagged)} window(s) not mixed (errors widened to the replicas' sd): "
        f"{p.flagged[0]}{' ...' if len(p.flagged) > 1 else ''}"
        for p in used
        if p.flagged
    ]
    bim = [p for p in used if p.bimodal]
    P_mid, cr_mid, steep = _midpoint_root(used) if len(used) >= 2 else (None, None, None)
    if len(used) < 2:
        return Verdict(
            UNDECIDED,
            tuple(ev + ["fewer than two usable probes"]),
            None,
            None,
            None,
            None,
            None,
            None,
            tuple(ps),
        )
    if bim:
        kind = FIRST_ORDER
        for p in bim:
            ev.append(
                f"P={p.P}: bimodal, barrier {p.barrier:.2f} +- {p.barrier_se:.2f} nats "
                f"at a = {p.a_top:.2f} (minima {p.a_pool:.2f}, {p.a_copy:.2f}), "
                f"w_copy {p.w_copy:.3f} +- {p.w_copy_se:.3f}"
            )
        lo, hi = min(p.P for p in bim), max(p.P for p in bim)
        below = [p.P for p in used if p.P < lo and not p.bimodal]
        above = [p.P for p in used if p.P > hi and not p.bimodal]
        coex, outer = (lo, hi), (max(below) if below else None, min(above) if above else None)
        f = [replica_factor(p.n_replicas) for p in used]
        cr = crossing(
            [p.P for p in used],
            [p.d for p in used],
            [p.d_se * k for p, k in zip(used, f)],
            [p.d_sys for p in used],
        )
        P_star = cr.P_star
        if P_star is None:
            ev.append(
                f"the basin weights do not cross between the probes (d {cr.side} 0 at "
                "every usable probe)"
            )
            kind = UNDECIDED
    else:
        coex = outer = None
        kind = CROSSOVER
        ev.append(
            "no usable probe bimodal: "
            + ", ".join(
                f"P={p.P} barrier {p.barrier:+.2f} +- {p.barrier_se:.2f} at a = {p.a_top:.2f}"
                for p in used
            )
        )
        P_star, cr = P_mid, cr_mid
        if P_star is None:
            ev.append("the posterior mean does not pass midway between the probes")
            kind = UNDECIDED
        for p in (p for p in ps if not p.usable and p.bimodal):
            ev.append(
                f"P={p.P}: bimodal (barrier {p.barrier:.2f} +- {p.barrier_se:.2f} nats) but left "
                "out: first order is not ruled out (P* is the crossover's reading)"
            )
            kind = UNDECIDED
        a = [p.mean_a for p in used]
        frac = [(x - a[0]) / (a[-1] - a[0]) for x in a] if a[-1] != a[0] else []
        if frac and not any(STEP_RESOLVED[0] <= f <= STEP_RESOLVED[1] for f in frac):
            j = next(i for i, f in enumerate(frac) if f > STEP_RESOLVED[1])
            ev.append(
                f"the posterior mean steps from {a[j - 1]:.3f} at P={used[j - 1].P} to "
                f"{a[j]:.3f} at P={used[j].P} with no probe inside the step: a jump (first order, "
                "its coexistence between those probes) is not ruled out (P* is the crossover's "
                "reading)"
            )
            kind = UNDECIDED
        for p in (p for p in used if p.barrier_unknown):
            ev.append(
                f"P={p.P}: barrier {p.barrier:.2f} nats with no error (fewer than two replicas "
                "define it): first order is not ruled out (P* is the crossover's reading)"
            )
            kind = UNDECIDED
    return Verdict(kind, tuple(ev), P_star, cr, coex, outer, P_mid, steep, tuple(ps))


def over_seeds(verdicts: list[Verdict]) -> dict:
    """Every seed measured on its own, combined by ``combine_seeds``; the kinds listed (the
    overall kind is theirs when they agree, else ``undecided``)."""
    get = lambda v, k: getattr(v.crossing, k) if v.P_star else math.nan  # noqa: E731
    t, m, s = (
        [math.nan if get(v, k) is None else get(v, k) for v in verdicts]
        for k in ("log_P", "err_mc", "err_sys")
    )
    out = combine_seeds(t, m, s)
    kinds = [v.kind for v in verdicts]
    out["kinds"] = kinds
    out["kind"] = kinds[0] if len(set(kinds)) == 1 else UNDECIDED
    out["per_seed"] = [v.P_star for v in verdicts]
    return out


def flagged_windows(lines) -> tuple[str, ...]:
    """The distinct windows that flag lines name, in order (``"seed 0 P=1295: window 8"``, or
    ``"window 8"`` within one probe): a window that missed both the mixing bar and its round
    target has a line for each; a probe's range lines name no window."""
    return tuple(dict.fromkeys(x.split(" (c = ")[0] for x in lines if " (c = " in x))


def other_flags(lines) -> tuple[str, ...]:
    """The distinct flag lines that name no window not mixed (windows overlapping little, a
    range short of a tail)."""
    return tuple(dict.fromkeys(x for x in lines if " (c = " not in x))


def window_count(result: dict) -> int:
    """The windows of a saved profile result (``copyhead transition``'s JSON), over its seeds
    and probes."""
    return sum(
        len(p.get("centers") or []) for s in result.get("seeds", []) for p in s["profiles"].values()
    )


def flagged_probes(lines) -> tuple[str, ...]:
    """The distinct probes (``"seed 0 P=1295"``) that seed-prefixed flag lines name, in order."""
    return tuple(dict.fromkeys(x.split(": ")[0] for x in lines))


def probe_from_json(record: dict) -> Probe:
    """A :class:`Probe` from its JSON record (lists as tuples, ``null`` as NaN)."""
    return Probe(
        **{
            k: tuple(x) if isinstance(x, list) else math.nan if x is None else x
            for k, x in record.items()
        }
    )


def from_record(result: dict) -> tuple[list[Verdict], dict]:
    """Each seed's verdict and :func:`over_seeds` of a saved profile result (the JSON of
    ``copyhead transition``: ``seeds[i]["probes"]``), decided by this module's rule whatever
    rule the run printed with."""
    verdicts = [decide([probe_from_json(p) for p in s["probes"]]) for s in result["seeds"]]
    return verdicts, over_seeds(verdicts)
