r"""Split R-hat, effective sample size and the MCSE of a mean of scalar traces
``x[..., chain, draw]`` (host side, NumPy, float64): the one implementation of the package
(``bayes.stats`` re-exports it, ``sgld.diagnostics`` and the sweep sampler's health use it).

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

Own code, not ArviZ's: ArviZ is an optional extra, and these reduce leading run axes in one call.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PerTrace", "check_trace", "ess", "mcse_mean", "split_rhat"]

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
