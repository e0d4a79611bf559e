"""Theory curves and transition marks laid over measured sweeps (the ``copyhead sweep``
figure)."""

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


def softmax_marks(results) -> dict:
    """The marks of the sweep figure (``plots.sweeps.sweep_figure``'s ``marks``): ``P_aG``, the
    geometric mean over seeds of the measured branch crossing, where a head with two branches
    was swept from both starts and a seed located it; ``spinodals``, the EK theory's (i.i.d.
    tokens, no mask; the closed-form theory points)."""
    from ..theory import theory_of
    from ..theory.points import transition_points
    from .pstar import seeds_summary, softmax_points

    starts = {(r.config.model.attention, r.config.train.init_attention): r for r in results}
    for (att, init), pool in starts.items():
        if not theory_of(att).two_branches or init == "copy" or (att, "copy") not in starts:
            continue
        cfg = pool.config
        crossing = seeds_summary(softmax_points(pool, starts[att, "copy"])["P_aG"])
        out = {"P_aG": crossing["P_star"] if crossing["n"] else None}
        if is_iid(cfg.task) and not cfg.model.causal:
            out["spinodals"] = transition_points(TheoryParams.from_config(cfg), att)["spinodals"]
        return out
    return {}
