r"""Where the chains of ``copyhead sample`` start, and what chains from different starts say.

Chains that all start on one branch cannot see the other: above the Bayesian transition, chains
started on the copy branch stay there and report $\hat R=1.00$. ``HMCConfig.starts``:

* ``fit``: every chain from the run's fitted ``W^G`` (one start group);
* ``both``: half the chains from each branch start of the head, pooling ($W^G=0$: zero logits)
  and copy ($W^G=T^{-1}M^*T^{-\top}$, logits ``init_copy_logit`` $\cdot G^*$ on the positional
  block: :func:`copyhead_jax.models.copy_start`), the starts ``copyhead sweep`` fits softmax from;
* ``prior``: each chain from its own draw $W^G\sim\mathcal N(0,\sigma_G^2 I)$ (``n_chains``
  groups).

Per run: the **branch weight** $\hat w=\frac1{CS}\sum_{c,s}\mathbf 1[a_G\ge a_{\rm thr}]$ (all
chains pooled) with its MCSE $s_{\mathbf 1}/\sqrt{\mathrm{ESS}(\mathbf 1)}$, the weight per start
group, and the **between-start** $\hat R$ of $a_G$: split $\hat R$ with each start group's chains
concatenated into one sequence (within-start against between-start variance). Above
``RHAT_BETWEEN_MAX`` the starts disagree: the chains have not crossed between the branches and
the pooled weight is the starts' ratio, not the posterior's.
"""

from __future__ import annotations

import math

import numpy as np

from ..config import BETWEEN_STARTS, Config, HMCConfig
from .stats import mcse_mean, split_rhat

#: Between-start R-hat above this: chains from different starts disagree (config.BETWEEN_STARTS).
RHAT_BETWEEN_MAX = BETWEEN_STARTS.rhat_max
#: ``default_starts``: a sweep is near the coexistence window when one of its P lies within
#: this factor of the MAP theory's spinodals (both branches are minima between them, §5).
NEAR_FACTOR = 2.0


def n_groups(mc: HMCConfig) -> int:
    """Start groups: 1 (``fit``), 2 (``both``), ``n_chains`` (``prior``)."""
    return {"fit": 1, "both": 2, "prior": mc.n_chains}[mc.starts]


def start_points(
    cfg: Config, mc: HMCConfig, W_G: np.ndarray, roots: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``[G, runs, D, D]``: the start ``W^G`` of each group for every run; ``W_G[runs, D, D]``
    the fits, ``roots[runs, D, D]`` each run's Gram root ``T``."""
    if mc.starts == "fit":
        return np.asarray(W_G)[None]
    if mc.starts == "prior":
        from ..objective import Objective

        s = Objective.from_config(cfg).sigma_G
        return s * rng.standard_normal((mc.n_chains, *np.shape(W_G))).astype(np.float32)
    import jax
    import jax.numpy as jnp

    from ..models import copy_start

    L, V = cfg.task.L, cfg.task.V
    logit = cfg.train.init_copy_logit
    with jax.enable_x64(True):  # T^{-1}: the Gram root may be ill conditioned
        with_copy = np.stack(
            [
                np.asarray(
                    copy_start(
                        jnp.asarray(T, jnp.float64),
                        V=V,
                        L=L,
                        logit=logit,
                        attention=cfg.model.attention,
                    )
                )
                for T in roots
            ]
        )
    return np.stack([np.zeros_like(with_copy), with_copy]).astype(np.float32)


def branch_arrays(aG: np.ndarray, finite: np.ndarray, mc: HMCConfig) -> dict[str, np.ndarray]:
    """Per run from ``aG[P, seed, chain, draw]``: ``branch_weight``, ``branch_weight_mcse``,
    ``branch_weight_by_start[P, seed, G]`` and ``rhat_between`` (NaN with one start group)."""
    G = n_groups(mc)
    x = np.where(np.asarray(finite, bool)[..., None], np.asarray(aG, np.float64), np.nan)
    hit = (x >= mc.branch_threshold).astype(np.float64)
    hit[np.isnan(x)] = np.nan
    nP, nS, C, S = x.shape
    with np.errstate(all="ignore"):
        w = np.nanmean(hit, axis=(-2, -1))
        by = np.nanmean(hit.reshape(nP, nS, G, C // G * S), axis=-1)
        se = np.full((nP, nS), np.nan)
        rhat = np.full((nP, nS), np.nan)
        for i, s in np.ndindex(nP, nS):
            ok = np.asarray(finite[i, s], bool)
            if ok.sum() and S >= 4:
                se[i, s] = float(mcse_mean(hit[i, s][ok]))
                if np.all(hit[i, s][ok] == hit[i, s][ok].flat[0]):
                    se[i, s] = 0.0  # every draw on one branch: no spread to estimate
            if G > 1 and ok.all() and S >= 2:
                rhat[i, s] = float(split_rhat(x[i, s].reshape(G, C // G * S)))
    return {
        "branch_weight": w,
        "branch_weight_mcse": se,
        "branch_weight_by_start": by,
        "rhat_between": rhat,
    }


def start_warnings(arrays: dict[str, np.ndarray], P, mc: HMCConfig, name: str) -> list[str]:
    """One line per run whose start groups disagree (between-start R-hat of ``name``)."""
    if "rhat_between" not in arrays:
        return []
    out = []
    for (i, s), r in np.ndenumerate(arrays["rhat_between"]):
        if r > RHAT_BETWEEN_MAX:
            by = ", ".join(f"{b:.2f}" for b in arrays["branch_weight_by_start"][i, s])
            out.append(
                f"run P={P[i]} seed={s}: chains from different starts ({mc.starts}) disagree "
                f"(between-start R-hat of {name} = {r:.3f} > {RHAT_BETWEEN_MAX}; copy-branch "
                f"weight per start {by}): the chains did not cross between the branches, so "
                "the pooled branch weight is not the posterior's; use branch free energies "
                "(transition.branch_log_z) for the weights"
            )
    return out


def default_starts(cfg: Config) -> str:
    """``both`` for a two-branch head (softmax) on a reduced sweep one of whose P lies within
    ``NEAR_FACTOR`` of the MAP theory's coexistence window (both branches minima), else
    ``fit``."""
    from ..theory import TheoryParams, theory_of, transition_points

    if not theory_of(cfg.model.attention).two_branches or cfg.model.engine != "reduced":
        return "fit"
    spin = transition_points(TheoryParams.from_config(cfg), cfg.model.attention).get("spinodals")
    if not spin or not all(v is not None and math.isfinite(v) for v in spin):
        return "fit"
    lo, hi = spin[0] / NEAR_FACTOR, spin[1] * NEAR_FACTOR
    return "both" if any(lo <= p <= hi for p in cfg.sweep.P) else "fit"
