r"""Monte-Carlo statistics of scalar traces ``x[..., chain, draw]`` (host side, NumPy, float64):
split R-hat, effective sample size, the MCSE of a mean and the susceptibility, the one
implementation of the package (chain health, estimators, branch TI and SGLD diagnostics use it).

Every function reduces the last two axes (chains ``M``, draws ``N``) and keeps the leading ones,
so a whole sweep ``[P, seed, chain, draw]`` is one call.

* :func:`split_rhat`: split $\hat R$, Gelman et al., *Bayesian Data Analysis* (BDA3), 3rd ed.,
  §11.4: each chain is cut in halves, $W$ is the mean within-half variance and
  $\widehat{\mathrm{var}}^+=\frac{N-1}{N}W+\frac BN$, $\hat R=\sqrt{\widehat{\mathrm{var}}^+/W}$
  (ArviZ's ``rhat(method="split")``, tested).
* :func:`ess`: effective sample size, BDA3 §11.5 with Geyer's initial monotone sequence (as
  Stan and NumPyro): $\hat\rho_t=1-(W-\bar\gamma_t)/\widehat{\mathrm{var}}^+$ from the chains'
  mean autocovariance $\bar\gamma_t$, pairs $\hat\rho_{2k}+\hat\rho_{2k+1}$ truncated at the first
  negative one and made non-increasing, $\hat\tau=-1+2\sum_k(\hat\rho_{2k}+\hat\rho_{2k+1})$,
  $\mathrm{ESS}=MN/\hat\tau$ (ArviZ's ``ess(method="mean")`` up to its end term, tested).
* :func:`mcse_mean`: $\mathrm{se}(\bar x)=s_x/\sqrt{\mathrm{ESS}(x)}$.
* :func:`susceptibility`: $\chi=n\,\widehat{\mathrm{Var}}(x)$ with the delta-method standard
  error $n\,s_{q}/\sqrt{\mathrm{ESS}(q)}$, $q=(x-\bar x)^2$ (the sample variance is the mean of
  $q$; the error of $\bar x$ inside $q$ is of higher order). This is the error ArviZ's
  ``mcse(method="sd")`` propagates for the standard deviation (Vehtari et al. 2021, §4.2).

Own code, not ArviZ's: ArviZ is an optional extra, and these reduce leading run axes in one call.

References: A. Gelman et al., *Bayesian Data Analysis*, 3rd ed. (2013), §11.4-11.5.
C. J. Geyer, *Practical Markov chain Monte Carlo*, Stat. Sci. 7 (1992). A. Vehtari et al.,
*Rank-normalization, folding, and localization: an improved R-hat*, Bayesian Anal. 16 (2021).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._checks import check_float

__all__ = [
    "PerTrace",
    "Susceptibility",
    "check_trace",
    "ess",
    "mcse_mean",
    "split_rhat",
    "susceptibility",
]

#: one value per leading index: an array, or one NumPy number for a single ``(chain, draw)`` trace
PerTrace = np.ndarray | np.floating


def check_trace(x, name: str, min_draws: int) -> np.ndarray:
    """``x`` as float64 ``(..., chain, draw)``; ValueError unless >= 1 chain and ``min_draws``
    draws."""
    x = np.asarray(x, np.float64)
    if x.ndim < 2 or x.shape[-2] < 1 or x.shape[-1] < min_draws:
        raise ValueError(
            f"{name} must have shape (..., chain, draw) with >= 1 chain and >= {min_draws} "
            f"draws, got {x.shape}"
        )
    return x


def _variances(x: np.ndarray) -> tuple[PerTrace, PerTrace]:
    """$W$ (mean within-chain variance) and $\\widehat{var}^+$ over the last two axes."""
    N = x.shape[-1]
    W = x.var(-1, ddof=1).mean(-1)
    B_over_N = x.mean(-1).var(-1, ddof=1) if x.shape[-2] > 1 else np.zeros_like(W)
    return W, (N - 1) / N * W + B_over_N


def split_rhat(x) -> PerTrace:
    """Split R-hat of ``x[..., chain, draw]`` (``>= 4`` draws; BDA3 §11.4); NaN if W = 0."""
    x = check_trace(x, "x", 4)
    h = x.shape[-1] // 2
    halves = np.concatenate([x[..., :h], x[..., -h:]], axis=-2)
    W, var_plus = _variances(halves)
    with np.errstate(all="ignore"):
        return np.sqrt(var_plus / W)


def _autocov(x: np.ndarray) -> np.ndarray:
    """Biased autocovariance $\\gamma_t=\\frac1N\\sum_s(x_s-\\bar x)(x_{s+t}-\\bar x)$ (FFT)."""
    N = x.shape[-1]
    nfft = 1 << (2 * N - 1).bit_length()
    f = np.fft.rfft(x - x.mean(-1, keepdims=True), n=nfft)
    return np.fft.irfft(f * np.conj(f), n=nfft)[..., :N] / N


def ess(x) -> PerTrace:
    """Effective sample size of ``x[..., chain, draw]``, chains pooled (BDA3 §11.5, Geyer's
    initial monotone sequence); NaN for a constant trace."""
    x = check_trace(x, "x", 4)
    M, N = x.shape[-2:]
    W, var_plus = _variances(x)
    if M == 1:  # one chain: rho_t = gamma_t / gamma_0 exactly (Stan, NumPyro)
        W = var_plus
    with np.errstate(all="ignore"):
        rho = 1.0 - (W[..., None] - _autocov(x).mean(-2)) / var_plus[..., None]
    rho[..., 0] = 1.0
    pairs = rho[..., : N - N % 2 : 2] + rho[..., 1 : N - N % 2 : 2]
    head = pairs[..., :1]
    rest = np.minimum.accumulate(np.clip(pairs[..., 1:], 0.0, None), axis=-1)
    tau = -1.0 + 2.0 * (head.sum(-1) + rest.sum(-1))
    with np.errstate(all="ignore"):
        out = M * N / tau
    return np.where(var_plus > 0, out, np.nan)


def mcse_mean(x) -> PerTrace:
    r"""Monte-Carlo standard error of the posterior mean: $s_x/\sqrt{\mathrm{ESS}(x)}$."""
    x = check_trace(x, "x", 4)
    flat = x.reshape(*x.shape[:-2], -1)
    with np.errstate(all="ignore"):
        return flat.std(-1, ddof=1) / np.sqrt(ess(x))


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
