"""Where a Bayesian transition's groups go (:mod:`.posterior_transition`): the padded size of a
group, a later seed's first probes. Host-side, pure."""

from __future__ import annotations

import math

import numpy as np

#: Groups are padded to a quarter-octave ladder anchored at the grid's top (compiled once per
#: rung of it) when the top group holds at least this many P L^2 (attention entries): there
#: a group's chains cost minutes and the padding of a low probe to the top costs up to the
#: grid's span; below it one padded shape for every P (compiling costs more than padding).
BUCKET_MIN = 200_000
#: A later seed's first two probes: the earlier seeds' mean root divided and multiplied by this.
SEED_SPAN = 1.04


def pad_of(P: int, P_top: int, L: int) -> int:
    """Rows the group at ``P`` is padded to (``>= P``): ``P_top`` for a small configuration and
    ``P <= P_top``, else the smallest ``ceil(P_top 2^(k/4)) >= P`` (``k`` any integer)."""
    if P <= P_top and P_top * L * L < BUCKET_MIN:
        return int(P_top)
    k = math.floor(4 * math.log2(P / P_top))
    while (pad := int(math.ceil(P_top * 2 ** (k / 4) - 1e-9))) < P:
        k += 1
    return pad


def first_probes(log_roots, fallback: float) -> list[int]:
    """A seed's first probes: ``SEED_SPAN`` either side of the earlier seeds' mean root (in log
    P; None entries, unbracketed seeds, left out), else ``[fallback]``."""
    roots = [r for r in log_roots if r is not None]
    if not roots:
        return [max(2, int(round(fallback)))]
    c = math.exp(float(np.mean(roots)))
    return sorted({max(2, int(round(c / SEED_SPAN))), max(2, int(round(c * SEED_SPAN)))})
