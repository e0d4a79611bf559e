"""Theory curves laid over measured sweeps (the ``copyhead sweep`` figure)."""

from __future__ import annotations

import numpy as np

from ..sources import is_iid
from ..theory.minima import theory_curve
from ..theory.params import TheoryParams


def theory_overlay(results, n: int = 80) -> dict:
    """EK MAP theory curves (docs/theory.md §4, N -> infinity) over each sweep's P range; none
    for a sweep on Markov tokens or with the causal mask (the theory assumes neither yet)."""
    out = {}
    for res in results:
        if res.config.model.causal or not is_iid(res.config.task):
            continue
        P = np.geomspace(res.P[0], res.P[-1], n)
        att = res.config.model.attention
        out[att] = theory_curve(TheoryParams.from_config(res.config), P, att)
    return out
