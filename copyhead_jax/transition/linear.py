r"""The linear head's posterior crossover: where the posterior mean of the copy fraction
$\psi$ (docs/theory.md §5) passes $\tfrac12$ (§9.9), from collapsed-HMC draws
(:func:`~copyhead_jax.sampling.run.run_sampler`) on an exact-MAP sweep; per seed by log-P
interpolation with the MCSE of $\psi$ propagated, over seeds by
:func:`~copyhead_jax.transition.root.combine_seeds`. The grid is widened (one sweep beyond it)
when a seed's $\psi$ does not cross 1/2 on it.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from ..config import TRANSITION_RUN, Config, HMCConfig
from ..sampling import REDUCED_HMC_LINEAR, run_mean, run_sampler
from ..sweep import run_sweep
from .root import combine_seeds, crossing


def _psi_runs(cfg: Config, grid, out: Path | None, progress: bool, sg, tag: str):
    c = cfg.replace(sweep=dict(P=tuple(grid)), train=dict(init_attention="prior"))
    sw = run_sweep(
        c, keep_params=True, out=None if out is None else out / f"map_{tag}.npz", progress=False
    )
    post = run_sampler(
        sw, sg, out=None if out is None else out / f"posterior_{tag}.npz", progress=progress
    )
    m, se, _ = run_mean(post, "psi")
    rhat = np.asarray(post["rhat"], float)
    return np.asarray(sw.P, float), m, se, rhat, np.asarray(post["ess"], float)


def linear_transition(
    cfg: Config,
    grid,
    th: dict,
    *,
    out=None,
    progress=True,
    seed=0,
    sampler: HMCConfig | None = None,
) -> dict:
    """Posterior ``psi = 1/2`` per seed and over seeds (module docstring); ``sampler``: the
    collapsed-HMC settings (default ``REDUCED_HMC_LINEAR``, its seed set to ``seed``)."""
    if sampler is not None and not isinstance(sampler, HMCConfig):
        raise ValueError(f"sampler must be an HMCConfig, got {type(sampler).__name__}")
    sg = dataclasses.replace(REDUCED_HMC_LINEAR if sampler is None else sampler, seed=seed)
    t0 = time.time()
    P, m, se, rhat, ess = _psi_runs(cfg, grid, out, progress, sg, "a")
    lo_need = np.any(m[0] >= 0.5)
    hi_need = np.any(m[-1] < 0.5)
    if lo_need or hi_need:  # widen once beyond the side that misses the level
        g2 = [
            p
            for p in (
                np.geomspace(max(2, P[0] / 8), P[0] / 1.5, 4)
                if lo_need
                else np.geomspace(P[-1] * 1.5, P[-1] * 8, 4)
            )
        ]
        g2 = sorted({max(2, int(round(p))) for p in g2} - {int(p) for p in P})
        if g2:
            P2, m2, se2, r2, e2 = _psi_runs(cfg, g2, out, progress, sg, "b")
            P, m, se = np.r_[P, P2], np.r_[m, m2], np.r_[se, se2]
            rhat, ess = np.r_[rhat, r2], np.r_[ess, e2]
    o = np.argsort(P)
    P, m, se, rhat, ess = P[o], m[o], se[o], rhat[o], ess[o]
    per = [crossing(P, 0.5 - m[:, s], se[:, s]).to_dict() for s in range(m.shape[1])]
    f = lambda k: [math.nan if c[k] is None else c[k] for c in per]  # noqa: E731
    mean = combine_seeds(f("log_P"), f("err_mc"), f("err_sys"))
    mixed = TRANSITION_RUN.mixed
    flagged = [
        f"seed {s} P={int(P[i])}: R-hat {np.nanmax(rhat[i, s]):.3f}, ESS {np.nanmin(ess[i, s]):.0f}"
        for i in range(len(P))
        for s in range(m.shape[1])
        if not mixed(np.nanmax(rhat[i, s]), np.nanmin(ess[i, s]))
    ]
    return {
        "attention": cfg.model.attention,
        "quantity": "P_cG_half (posterior psi = 1/2)",
        "P_star": mean["P_star"],
        "interval": [mean["lo"], mean["hi"]],
        "summary": mean,
        "per_seed": [c["P_star"] for c in per],
        "seeds": per,
        "P": P.tolist(),
        "psi_mean": m.tolist(),
        "psi_mcse": se.tolist(),
        "theory": th,
        "cross_check": None,
        "flagged": flagged,
        "config": cfg.to_dict(),
        "wall_seconds": time.time() - t0,
    }
