"""Chain health of a sweep's posterior: per-run R-hat/ESS arrays, Var(U) check, warnings.

``run.run_sampler`` is the only caller.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..config import HMC_RUN, SGLD_RUN
from ..results import PosteriorResult
from .sgld import ChainHealth, chain_health, health_warnings


class _HealthInput(NamedTuple):
    potential: np.ndarray
    accept_prob: np.ndarray
    finite: np.ndarray
    draw_distance: np.ndarray
    draw_potential: np.ndarray
    init_potential: np.ndarray


#: Reduced sweeps: in a Gaussian posterior of n weights U - U_min ~ Gamma(n/2), Var U = n/2; a
#: ratio outside this range flags a non-Gaussian posterior or a biased chain (measured on the
#: small default: linear attention at P = 32, NUTS 0.9, whitened SGLD at eta = 0.02 19).
GAUSS_VAR_RANGE = (0.5, 2.0)


def var_U_ratio(a: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Posterior variance of U over the finite chains, per run, in units of ``n / 2``."""
    U = np.where(a["finite"][..., None], a["draws"][..., 0], np.nan)
    with np.errstate(all="ignore"):
        return np.nanvar(U.reshape(U.shape[:2] + (-1,)), axis=-1) / (n / 2)


def health_arrays(a: dict[str, np.ndarray], names: tuple[str, str]) -> dict[str, np.ndarray]:
    """Split R-hat and ESS of U and of each order parameter (named ``names``, e.g. ``a1``,
    ``aG``) over each run's chains, acceptance, distance, ..."""
    U = a["draws"][..., 0]
    h = chain_health(_HealthInput(U, a["accept"], a["finite"], a["distance"], U, a["U0"]))
    out = {
        "rhat": h.rhat,
        "ess": h.ess,
        "accept_mean": h.accept_prob,
        "distance_mean": h.distance,
        "frac_below_start": h.frac_below_start,
    }
    for name, k in zip(names, (2, 3)):
        x = a["draws"][..., k]
        hk = chain_health(_HealthInput(x, a["accept"], a["finite"], a["distance"], U, a["U0"]))
        out[f"rhat_{name}"], out[f"ess_{name}"] = hk.rhat, hk.ess
    return out


def target_arrays(a: dict[str, np.ndarray], names: tuple[str, str], mc) -> dict[str, np.ndarray]:
    """Per run: ``ess_reached`` (the smallest ESS of U and the order parameters), ``rhat_reached``
    (the largest split R-hat) and, with a target (``mc.ess_target > 0``), ``target_met``: every
    chain finite and both within the target (:func:`.rounds.met`)."""
    from .rounds import met

    e = np.stack([a["ess"]] + [a[f"ess_{n}"] for n in names])
    r = np.stack([a["rhat"]] + [a[f"rhat_{n}"] for n in names])
    out = {"ess_reached": e.min(0), "rhat_reached": r.max(0)}  # NaN stays NaN
    if mc.ess_target:
        out["target_met"] = met(out["ess_reached"], out["rhat_reached"], a["finite"], mc)
    return out


def target_meta(mc) -> dict | None:
    """The target of a run in rounds (``None``: fixed length): ESS, R-hat, draws per round and
    the cap in draws per chain."""
    if not mc.ess_target:
        return None
    return {
        "ess": mc.ess_target,
        "rhat": mc.rhat_target,
        "round_draws": mc.round_draws,
        "cap_draws": mc.n_rounds * mc.round_draws,
    }


def posterior_warnings(res: PosteriorResult) -> list[str]:
    """One line per unhealthy run of ``res`` (non-finite chains, R-hat, ESS, acceptance, NaN
    diagnostics, a target not met at the cap), runs named by ``P`` and seed; from the health
    arrays of :func:`health_arrays` (each run's own draws)."""
    a = res.arrays
    h = ChainHealth(
        a["rhat"],
        a["ess"],
        a["accept_mean"],
        a["distance_mean"],
        a["frac_below_start"],
        np.asarray(a["finite"], bool),
    )
    reduced = res.config.model.engine == "reduced"
    if reduced:  # HMC: a Metropolis acceptance, and the stricter mixing bar (config.HMC_RUN)
        bar = HMC_RUN
        msgs = health_warnings(
            h, rhat_max=bar.rhat_max, ess_min=bar.ess_min, accept_min=bar.accept_min
        )
        msgs = [m.replace("MALA acceptance proxy", "HMC acceptance") for m in msgs]
        for name in res.order_names:
            for idx in np.ndindex(a[f"rhat_{name}"].shape):
                r, e = float(a[f"rhat_{name}"][idx]), float(a[f"ess_{name}"][idx])
                if r > bar.rhat_max:
                    msgs.append(
                        f"run {idx}, split R-hat of {name} = {r:.3f} > "
                        f"{bar.rhat_max}: chains disagree"
                    )
                if e < bar.ess_min:
                    msgs.append(
                        f"run {idx}, ESS of {name} = {e:.1f} < {bar.ess_min}: "
                        "too few independent draws"
                    )
    else:
        msgs = health_warnings(h)
    # name runs by (P, seed) rather than by array index
    P = res.P
    out = []
    for m in msgs:
        for i, p in enumerate(P):
            for s in range(res.config.sweep.n_seeds):
                m = m.replace(f"run ({i}, {s})", f"run P={p} seed={s}")
        out.append(m)
    for i, p in enumerate(P):  # NaN is not "healthy": too few draws, or no finite chain
        for s in range(res.config.sweep.n_seeds):
            bad = [k for k in _diagnostic_keys(res) if not np.isfinite(a[k][i, s])]
            if bad and np.any(a["finite"][i, s]):
                out.append(
                    f"run P={p} seed={s}: {', '.join(bad)} is NaN (under 4 draws per "
                    "chain?): the chains cannot be judged; raise --steps"
                )
    if "target_met" in a:
        t = res.meta.get("target") or {}
        for (i, s), ok in np.ndenumerate(a["target_met"]):
            if not ok:
                e, r = a["ess_reached"][i, s], a["rhat_reached"][i, s]
                out.append(
                    f"run P={P[i]} seed={s}: target not met at the cap of "
                    f"{int(a['n_draws'][i, s])} draws per chain (ESS {e:.0f} < "
                    f"{t.get('ess')} or R-hat {r:.3f} > {t.get('rhat')}, or a chain not "
                    "finite)"
                )
    if reduced and "var_U_ratio" in a:
        for i, p in enumerate(P):
            for s, r in enumerate(a["var_U_ratio"][i]):
                if not GAUSS_VAR_RANGE[0] <= r <= GAUSS_VAR_RANGE[1]:
                    out.append(
                        f"run P={p} seed={s}: posterior variance of U is {r:.2f} x n/2, the "
                        "value of a Gaussian posterior in n weights: the posterior is far from "
                        "Gaussian or the step too large for the whitening; check the means "
                        "against NUTS (sampling.nuts_reference) before trusting them"
                    )
    return out


def _diagnostic_keys(res: PosteriorResult) -> list[str]:
    keys = ["rhat", "ess"] + [f"{d}_{n}" for n in res.order_names for d in ("rhat", "ess")]
    return [k for k in keys if k in res.arrays]


def run_flags(res: PosteriorResult) -> np.ndarray:
    """``[P, seed]`` bool: runs whose chains cannot be trusted: a non-finite chain, a NaN
    R-hat or ESS, R-hat/ESS/acceptance past the thresholds of :func:`posterior_warnings`, or a
    target (:mod:`.rounds`) not met at the cap."""
    a = res.arrays
    bar = HMC_RUN if res.config.model.engine == "reduced" else SGLD_RUN
    rhat_max, ess_min = bar.rhat_max, bar.ess_min
    bad = ~np.all(np.asarray(a["finite"], bool), axis=-1)
    with np.errstate(invalid="ignore"):
        for k in _diagnostic_keys(res):
            x = np.asarray(a[k], float)
            bad |= ~np.isfinite(x) | (x > rhat_max if k.startswith("rhat") else x < ess_min)
    if "target_met" in a:
        bad |= ~np.asarray(a["target_met"], bool)
    return bad
