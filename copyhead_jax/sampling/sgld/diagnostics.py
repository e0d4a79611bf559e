r"""Health of SGLD chains from a :class:`~copyhead_jax.sampling.sgld.SGLDResult` (host side, NumPy).

Per run (any leading axes of the result, e.g. a sweep's runs) and chain:

* split $\hat R$ and the effective sample size of the potential $U$ over the post-burn-in steps
  (Gelman et al., *Bayesian Data Analysis*, 3rd ed., §11.4-11.5; the ESS with Geyer's initial
  monotone sequence, as Stan and ``numpyro.diagnostics`` compute them), over the chains that
  stayed finite;
* the mean Metropolis-adjusted (MALA) acceptance probability after burn-in. SGLD never rejects;
  this is a **proxy** for the discretisation error: the probability MALA would have accepted
  each SGLD move, from $U$ and $\nabla U$ at consecutive states (``SGLDState.accept_prob``). It is
  near 1 when $\eta$ is small on the scale of the posterior and falls as the $O(\eta)$ bias of
  the stationary law grows (Roberts & Tweedie 1996), but it **saturates near 0.5** once
  $\log\alpha$ spreads symmetrically about 0: on a standard Gaussian in 50 dimensions it is
  0.998 at $\eta=0.01$, 0.94 at $\eta=0.1$ and 0.78 at $\eta=0.3$ (stationary variance
  inflated by 5% and 18%), 0.55 at $\eta=1$ and about 0.5 up to the stability limit $\eta=2$.
  It also falls with the dimension at fixed $\eta$ (MALA's $D^{-1/3}$ scaling), so it is
  conservative for large models. With minibatches it is itself noisy;
* the mean distance of the draws from the warm start $\Theta_0$, and the fraction of draws with
  $U$ below $U(\Theta_0)$ (from a MAP warm start, typical draws sit about $D/2$ above the minimum;
  a fraction near 1 says the fit had not converged);
* whether the chain stayed finite (no NaN/inf in $U$ or in the MALA log-ratio).

:func:`health_warnings` turns these into messages naming the run and chain.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..._checks import check_float, check_int
from ...config import SGLD_RUN  # the bars (config/health.py)
from .. import stats  # the one R-hat/ESS of the package

__all__ = [
    "ChainHealth",
    "chain_health",
    "ess",
    "health_warnings",
    "split_rhat",
]


class ChainHealth(NamedTuple):
    """Leading axes ``...`` are the result's run axes; ``C`` chains."""

    rhat: np.ndarray  # (...,) split R-hat of U after burn-in (finite chains)
    ess: np.ndarray  # (...,) effective sample size of U after burn-in, chains pooled
    accept_prob: np.ndarray  # (..., C) mean MALA acceptance proxy after burn-in
    distance: np.ndarray  # (..., C) mean || Theta_draw - Theta_0 || over the draws
    frac_below_start: np.ndarray  # (..., C) fraction of draws with U < U(Theta_0)
    finite: np.ndarray  # (..., C) the chain never produced a non-finite U or MALA log-ratio


def _trace_stat(stat, x: np.ndarray) -> float:
    """``stat`` of a scalar trace ``x[chain, draw]`` in float64; NaN unless ``>= 4`` draws."""
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 4:
        return float("nan")
    with np.errstate(all="ignore"):
        return float(stat(x))


def split_rhat(x: np.ndarray) -> float:
    """Split R-hat of a scalar trace ``x[chain, draw]`` (needs ``>= 4`` draws, else NaN)."""
    return _trace_stat(stats.split_rhat, x)


def ess(x: np.ndarray) -> float:
    """Effective sample size of a scalar trace ``x[chain, draw]``, chains pooled (NaN if < 4)."""
    return _trace_stat(stats.ess, x)


def chain_health(result, *, burn_in: int = 0) -> ChainHealth:
    """Diagnostics of ``result = sgld_chains(...)`` (or a vmap of it) with the same ``burn_in``."""
    u = np.asarray(result.potential, np.float64)  # (..., C, T)
    if u.ndim < 2:
        raise ValueError(f"result.potential must have shape (..., C, T), got {u.shape}")
    burn_in = check_int("burn_in", burn_in, lo=0, hi=u.shape[-1] - 1)
    batch = u.shape[:-2]
    u_post = u[..., burn_in:]
    acc = np.asarray(result.accept_prob, np.float64)[..., burn_in:]
    finite = np.asarray(result.finite, bool)  # sgld_chains folds U's finiteness in when recorded
    with np.errstate(all="ignore"):
        accept_prob = acc.mean(-1)
        distance = np.asarray(result.draw_distance, np.float64).mean(-1)
        below = np.asarray(result.draw_potential) < np.asarray(result.init_potential)[..., None]
    rhat, n_eff = np.full(batch, np.nan), np.full(batch, np.nan)
    for idx in np.ndindex(batch):
        ok = finite[idx]
        if ok.any():
            rhat[idx] = split_rhat(u_post[idx][ok])
            n_eff[idx] = ess(u_post[idx][ok])
    return ChainHealth(rhat, n_eff, accept_prob, distance, below.mean(-1), finite)


def _run_name(idx: tuple[int, ...]) -> str:
    if not idx:
        return ""
    return f"run {idx[0] if len(idx) == 1 else idx}, "


def health_warnings(
    health: ChainHealth,
    *,
    rhat_max: float = SGLD_RUN.rhat_max,
    ess_min: float = SGLD_RUN.ess_min,
    accept_min: float = SGLD_RUN.accept_min,
    below_start_max: float | None = None,
) -> list[str]:
    """Messages for every unhealthy run/chain; empty when all is well.

    A chain is flagged when it is non-finite (diverged), or finite with a mean acceptance proxy
    below ``accept_min`` or (if given) a fraction of draws below the start above
    ``below_start_max``; a run when its split R-hat exceeds ``rhat_max`` or its pooled ESS is
    below ``ess_min`` (NaN R-hat/ESS, from too short a trace or no finite chain, is not flagged
    by these two; the divergence message covers the latter).
    """
    check_float("rhat_max", rhat_max, lo=1.0)
    check_float("ess_min", ess_min, lo=0.0, lo_open=False)
    check_float("accept_min", accept_min, lo=0.0, hi=1.0, lo_open=False)
    if below_start_max is not None:
        check_float("below_start_max", below_start_max, lo=0.0, hi=1.0, lo_open=False)
    finite = np.asarray(health.finite)
    out = []
    for idx in np.ndindex(finite.shape[:-1]):
        run = _run_name(idx)
        rhat, n_eff = float(health.rhat[idx]), float(health.ess[idx])
        if rhat > rhat_max:
            out.append(f"{run}split R-hat of U = {rhat:.3f} > {rhat_max}: chains disagree")
        if n_eff < ess_min:
            out.append(f"{run}ESS of U = {n_eff:.1f} < {ess_min}: too few independent draws")
        for c in range(finite.shape[-1]):
            where = f"{run}chain {c}: "
            if not finite[idx + (c,)]:
                out.append(f"{where}non-finite U or MALA log-ratio (diverged)")
                continue
            acc = float(health.accept_prob[idx + (c,)])
            if acc < accept_min:
                out.append(
                    f"{where}mean MALA acceptance proxy {acc:.3f} < {accept_min}: step size "
                    "large on the posterior's scale"
                )
            below = float(health.frac_below_start[idx + (c,)])
            if below_start_max is not None and below > below_start_max:
                out.append(
                    f"{where}{below:.0%} of draws have U below the warm start "
                    f"(> {below_start_max:.0%}): the start was not a minimum"
                )
    return out
