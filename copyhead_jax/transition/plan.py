"""Where a Bayesian transition's groups go (:mod:`.search`): the padded size of a
group, a later seed's first probes, and one seed's probing loop (:func:`seed_probes`, over any
``measure(P)``). Host-side."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .root import Crossing, anchored_root, next_probe

#: Groups are padded to a ladder of ``PAD_STEPS`` rungs an octave anchored at the grid's top
#: (compiled once per rung of it) when the top group holds at least this many P L^2
#: (attention entries): there a group's chains cost minutes and the padding of a low probe to
#: the top costs up to the grid's span; below it one padded shape for every P (compiling costs
#: more than padding).
BUCKET_MIN = 200_000
#: Rungs of the padding ladder an octave: at most 4.4% of a group's rows are padding (on the
#: paper preset a group's rungs compile in ~6 CPU-s and its reference draws' program in ~3,
#: its chains run ~3 CPU-min: ``benchmarks/profile_transition_group.py``; so a finer ladder
#: than a quarter octave, up to 19% padding, pays).
PAD_STEPS = 16
#: A later seed's first two probes: the earlier seeds' mean root divided and multiplied by this
#: (and the farthest an anchored root may lie from its one probe).
SEED_SPAN = 1.04
#: Probes per seed at most (widening and bisection together); the widening factor (the k-th
#: probe on one side steps by GROW^k) and the bracket ratio at which bisection stops (the
#: interpolation error of docs/theory.md §9.9 covers what is left).
MAX_PROBES, GROW, REFINE_RATIO = 8, 1.25, 1.25


def pad_of(P: int, P_top: int, L: int) -> int:
    """Rows the group at ``P`` is padded to (``>= P``): ``P_top`` for a small configuration and
    ``P <= P_top``, else the smallest ``ceil(P_top 2^(k / PAD_STEPS)) >= P`` (``k`` any
    integer)."""
    if P <= P_top and P_top * L * L < BUCKET_MIN:
        return int(P_top)
    k = math.floor(PAD_STEPS * math.log2(P / P_top))
    while (pad := int(math.ceil(P_top * 2 ** (k / PAD_STEPS) - 1e-9))) < P:
        k += 1
    return pad


def first_probes(log_roots, fallback: float, *, anchored: bool = False) -> list[int]:
    """A seed's first probes: ``SEED_SPAN`` either side of the earlier seeds' mean root (in log
    P; None entries, unbracketed seeds, left out), or that root alone when ``anchored`` (a slope
    measured by the earlier seeds places the root from one probe:
    :func:`~copyhead_jax.transition.root.anchored_root`), else ``[fallback]``."""
    roots = [r for r in log_roots if r is not None]
    if not roots:
        return [max(2, int(round(fallback)))]
    c = math.exp(float(np.mean(roots)))
    if anchored:
        return [max(2, int(round(c)))]
    return sorted({max(2, int(round(c / SEED_SPAN))), max(2, int(round(c * SEED_SPAN)))})


def seed_probes(
    measure: Callable[[int], dict],
    probes: list[int],
    anchor: tuple[float, float, int] | None = None,
) -> tuple[dict, Crossing | None]:
    """One seed's probes, measured one at a time: ``measure(P)`` returns a dict with ``dF``
    (the difference whose root is sought), ``se``, ``sys`` and optionally ``slope``. From
    ``probes`` on, :func:`~copyhead_jax.transition.root.next_probe` widens and refines to a
    bracket; with ``anchor`` (a pooled slope, :func:`~copyhead_jax.transition.root.
    pooled_slope`) a seed with one probe whose anchored root lies within ``SEED_SPAN`` stops
    there, else its second probe lies past that root (half the step again, at most a factor 2).
    Returns the groups by P and the anchored root (``None`` unless the seed stopped on it)."""
    groups: dict[int, dict] = {}
    probes = list(probes)
    while probes and len(groups) < MAX_PROBES:
        P = probes.pop(0)
        if P in groups:
            continue
        groups[P] = g = measure(P)
        if not probes and anchor is not None and len(groups) == 1:
            if not math.isfinite(g["dF"]):
                return groups, None
            root = anchored_root(P, g["dF"], g["se"], g["sys"], anchor, math.log(SEED_SPAN))
            if root is not None:
                return groups, root
            step = -g["dF"] / anchor[0]
            step = math.copysign(min(1.5 * abs(step), math.log(2.0)), step)
            probes = [max(2, int(round(P * math.exp(step))))]
        if not probes:
            Ps = sorted(groups)
            nxt = next_probe(
                Ps,
                [groups[p]["dF"] for p in Ps],
                grow=GROW,
                refine_ratio=REFINE_RATIO,
                slope=[groups[p].get("slope") or math.nan for p in Ps],
            )
            probes = [] if nxt is None else [nxt]
    return groups, None
