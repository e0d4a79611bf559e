r"""Monte-Carlo statistics of scalar traces ``x[..., chain, draw]`` (host side, NumPy, float64).

Every function reduces the last two axes (chains ``M``, draws ``N``) and keeps the leading ones,
so a whole sweep ``[P, seed, chain, draw]`` is one call.

* :func:`split_rhat` (split $\hat R$, BDA3 §11.4), :func:`ess` (BDA3 §11.5, Geyer's initial
  monotone sequence), :func:`mcse_mean` ($s_x/\sqrt{\mathrm{ESS}}$): re-exported from
  :mod:`copyhead_jax.kernels.mcstats`, the one implementation (tested against ArviZ).
* :func:`susceptibility`: $\chi=n\,\widehat{\mathrm{Var}}(x)$ with the delta-method standard
  error $n\,s_{q}/\sqrt{\mathrm{ESS}(q)}$, $q=(x-\bar x)^2$ (the sample variance is the mean of
  $q$; the error of $\bar x$ inside $q$ is of higher order). This is the error ArviZ's
  ``mcse(method="sd")`` propagates for the standard deviation (Vehtari et al. 2021, §4.2).

References: A. Gelman et al., *Bayesian Data Analysis*, 3rd ed. (2013), §11.4-11.5.
C. J. Geyer, *Practical Markov chain Monte Carlo*, Stat. Sci. 7 (1992). A. Vehtari et al.,
*Rank-normalization, folding, and localization: an improved R-hat*, Bayesian Anal. 16 (2021).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._checks import check_float
from ..kernels.mcstats import check_trace, ess, mcse_mean, split_rhat

__all__ = ["Susceptibility", "ess", "mcse_mean", "split_rhat", "susceptibility"]


def _check_n(n, lead: tuple[int, ...]) -> np.ndarray | np.floating:
    if np.ndim(n) == 0:
        return np.float64(check_float("n", n, lo=0.0))
    arr = np.asarray(n, np.float64)
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"n must hold finite real numbers > 0, got {n!r}")
    try:
        return np.broadcast_to(arr, lead)
    except ValueError:
        raise ValueError(f"n of shape {arr.shape} does not broadcast to the runs {lead}") from None


class Susceptibility(NamedTuple):
    """``n`` times the posterior variance of an observable, per leading index."""

    value: np.ndarray  # n Var(x), the variance over all chains and draws (ddof = 1)
    mcse: np.ndarray  # n s_q / sqrt(ESS(q)), q = (x - mean)^2 (delta method)
    ess: np.ndarray  # ESS of x
    ess_sq: np.ndarray  # ESS of q = (x - mean)^2, the one that sets the error


def susceptibility(draws, n=1.0) -> Susceptibility:
    r"""$\chi=n\,\widehat{\mathrm{Var}}_{\rm post}(x)$ from ``draws[..., chain, draw]``.

    The error bar is the delta-method MCSE of the variance, $n\,s_q/\sqrt{\mathrm{ESS}(q)}$ with
    $q=(x-\bar x)^2$: the variance is the mean of $q$, whose autocorrelation (not that of $x$)
    sets the error; for Gaussian AR(1) draws with coefficient $\phi$, $q$ has $\phi^2$. ``n`` is
    the sample size to scale by (the number of training sequences P): a number, or an array
    that broadcasts against the leading axes (e.g. ``P[:, None]`` for ``draws[P, seed, c, s]``).
    """
    x = check_trace(draws, "draws", 4)
    n = _check_n(n, x.shape[:-2])
    flat = x.reshape(*x.shape[:-2], -1)
    m = flat.mean(-1)
    q = np.square(x - m[..., None, None])
    N = flat.shape[-1]
    value = n * q.reshape(flat.shape).sum(-1) / (N - 1)
    ess_q = ess(q)
    with np.errstate(all="ignore"):
        se = n * q.reshape(flat.shape).std(-1, ddof=1) / np.sqrt(ess_q)
    return Susceptibility(value, se, ess(x), ess_q)
