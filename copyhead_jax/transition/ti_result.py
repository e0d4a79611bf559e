"""The result of branch TI (:mod:`.search`) from its seeds' records: a seed's SMC cross-check
from the copy weights at its bracket's ends (:func:`smc_cross_check`), the seeds assembled into
P* with its interval, the cross-check and the flags (:func:`assemble`), and the seconds its
groups took (:func:`group_seconds`). Host-side, JSON in and out."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..config import Config
from .root import combine_seeds, crossing


def smc_cross_check(seed: int, bracket, pts: list[dict], n_particles: int) -> dict:
    """The SMC cross-check of one seed's root from the copy weights at its bracket's ends
    (``pts``: :func:`~.branch_group.smc_weight`'s records with ``P``): ``F_copy - F_pool`` read
    from each weight (clipped to the resolution of ``n_particles``) and their crossing. A
    collapsed population's weight is no cross-check: then ``P_star`` is None (refused) and
    ``collapsed`` names it, a line per bracket end."""
    eps = 1 / (2 * n_particles)  # a weight the particles cannot resolve
    w = np.clip([p["w_copy"] for p in pts], eps, 1 - eps)
    lo = -np.log(w / (1 - w))  # F_copy - F_pool read from the weights
    c = crossing(bracket, lo, [0.0, 0.0])
    bad = [
        f"seed {seed} P={p['P']} SMC collapsed: {'; '.join(p['collapsed'])}"
        for p in pts
        if p["collapsed"]
    ]
    return {
        "P": list(bracket),
        "w_copy": [p["w_copy"] for p in pts],
        "dF_smc": lo.tolist(),
        "P_star": None if bad else c.P_star,
        "collapsed": bad,
        "points": pts,
    }


def assemble(
    cfg: Config, per_seed: list[dict], th: dict, a_thr: float, settings, grid, wall: float
) -> dict:
    """The JSON-ready result of branch TI from its seeds' records: ``P_star`` and its interval
    over seeds (:func:`~.root.combine_seeds`), the SMC cross-check's and the MAP U crossing's
    per seed and mean, the theory's points (``th``), the branch threshold ``a_thr``, the MAP
    ``grid``, every flag, the settings and config, the seeds, ``wall`` seconds and
    :func:`group_seconds`."""
    cr = [p["crossing"] for p in per_seed]
    f = lambda k: [math.nan if c[k] is None else c[k] for c in cr]  # noqa: E731
    mean = combine_seeds(f("log_P"), f("err_mc"), f("err_sys"))
    smc = [p["smc"]["P_star"] if p["smc"] and p["smc"]["P_star"] else math.nan for p in per_seed]
    ok = np.isfinite(smc)
    mu = [p["map_U_crossing"] or math.nan for p in per_seed]
    return {
        "attention": cfg.model.attention,
        "quantity": "P_aG",
        "P_star": mean["P_star"],
        "interval": [mean["lo"], mean["hi"]],
        "summary": mean,
        "per_seed": [c["P_star"] for c in cr],
        "cross_check": {
            "method": "tempered SMC copy weight at each seed's bracket ends",
            "per_seed": smc,
            "P_star": float(np.exp(np.mean(np.log(np.asarray(smc)[ok])))) if ok.any() else None,
        },
        "map_U_crossing": {
            "per_seed": mu,
            "mean": float(np.nanmean(mu)) if np.isfinite(mu).any() else None,
        },
        "theory": th,
        "a_thr": a_thr,
        "map_grid": list(grid),
        "flagged": [x for p in per_seed for x in p["flagged"]],
        "settings": dataclasses.asdict(settings),
        "config": cfg.to_dict(),
        "seeds": per_seed,
        "wall_seconds": wall,
        "group_seconds": group_seconds(per_seed),
    }


def group_seconds(per_seed: list) -> float:
    """Wall seconds of every TI group and SMC cross-check, as each recorded when it ran (a
    resumed run's ``wall_seconds`` counts only what it computed itself)."""
    return float(
        sum((g.get("seconds") or 0.0) for p in per_seed for g in p["probes"])
        + sum((x.get("seconds") or 0.0) for p in per_seed if p["smc"] for x in p["smc"]["points"])
    )
