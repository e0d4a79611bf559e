r"""The local learning coefficient (LLC) $\hat\lambda$ in devinterp's conventions.

Lau, Furman, Wang, Murfet & Wei (2023/2025) estimate the learning coefficient of a trained
network at $w^*$ by

$$\hat\lambda(w^*)=n\beta\,\big(\mathbb E^\beta_{w\mid w^*,\gamma}[L_n(w)]-L_n(w^*)\big),\qquad
p(w)\propto\exp\!\big(-n\beta\,L_n(w)-\tfrac\gamma2\|w-w^*\|^2\big),$$

with $L_n$ the per-sample negative log-likelihood, inverse temperature $n\beta$ (default
$\beta=1/\log n$, Watanabe's WBIC temperature) and localisation $\gamma$. For a regular model
with $d$ parameters $\hat\lambda\to d/2$; for $K(w)=w^{2k}$, $\hat\lambda\to1/(2k)$ (the RLCT).

**Conventions.** devinterp's SGLD step is
$\Delta w=\frac\epsilon2\big(-\frac{n\beta}{m}\sum_{i\le m}\nabla\ell_i(w)-\gamma(w-w^*)\big)
+\mathcal N(0,\epsilon\sigma_{\rm noise}^2)$ with ``lr`` $=\epsilon$, ``nbeta`` $=n\beta$,
``localization`` $=\gamma$ and ``noise_level`` $\sigma_{\rm noise}=1$. Ours (docs/theory.md §2,
:mod:`copyhead_jax.sampling.sgld`) is $\Delta w=-\eta\nabla U+\sqrt{2\eta}\,\xi$ at temperature 1 on
$U(w)=n\beta L_n(w)+\frac\gamma2\|w-w^*\|^2$ (+ the prior energy if ``prior_fn`` is given, which
devinterp omits), so **$\eta=\epsilon/2$**: the same chain, full batch ($m=n$). devinterp
defaults ``nbeta`` to $m/\log m$ with $m$ the *batch* size; here $n$ is the data size.

For the copy head, $U=\frac{\chi}{2\sigma^2}\sum_\alpha\|f_\alpha-y_\alpha\|^2+\Phi$ (docs/theory.md
§2) is the posterior at $\beta n=n$, i.e. $\beta=1$: the per-sample negative log-likelihood of
$P=n$ sequences with $k$ Gaussian outputs of variance $\sigma^2/\chi$ each is
$L_n=\frac1n\big[\frac{\chi}{2\sigma^2}\sum_\alpha\|f_\alpha-y_\alpha\|^2\big]
+\frac k2\log(2\pi\sigma^2/\chi)$, the data part of $U$ divided by $n$ plus a constant (which
cancels in $\hat\lambda$). SGLD on $U$ with step $\eta$ is devinterp's sampler at ``nbeta = n``,
``localization = 0``, ``lr`` $=2\eta$, with the prior added.
A mean-squared-error loss $\frac1n\sum\|f-y\|^2$ handed to devinterp is
$\frac{2\sigma^2}{\chi}L_n$ + const, so devinterp's $\hat\lambda$ at ``nbeta`` $=b$ with that
loss is ours at $n\beta=2\sigma^2b/\chi$ (twice $b$ at the paper's $\sigma^2=\chi$).

References: E. Lau et al., *The local learning coefficient: a singularity-aware complexity
measure*, AISTATS 2025 (arXiv:2308.12108); S. Watanabe, *A widely applicable Bayesian
information criterion*, JMLR 14 (2013); devinterp (timaeus-research/devinterp), ``SGLD``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from .._checks import check_float, check_int
from .free_energy import ChainSummary, finite_mean, make_runner
from .stats import mcse_mean

__all__ = ["LLCResult", "default_nbeta", "local_learning_coefficient"]

PyTree = Any


def default_nbeta(n: int) -> float:
    r"""$n\beta$ at Watanabe's $\beta=1/\log n$: $n/\log n$ (``n >= 2``)."""
    n = check_int("n", n, lo=2)
    return n / math.log(n)


class LLCResult(NamedTuple):
    llc: float  # lambda-hat = n beta (mean L_n over the draws of the finite chains - L_n(w*))
    mcse: float  # n beta * MCSE of that mean (ESS of L_n)
    nbeta: float  # the inverse temperature n beta used
    init_loss: float  # L_n(w*)
    loss: np.ndarray  # (C, S) L_n at the draws
    health: ChainSummary


def local_learning_coefficient(
    key: jax.Array,
    w_star: PyTree,
    nll_fn: Callable[..., jax.Array],
    *,
    n: int,
    step_size: float,
    n_steps: int,
    burn_in: int = 0,
    thin: int = 1,
    n_chains: int = 4,
    nbeta: float | None = None,
    gamma: float = 100.0,
    prior_fn: Callable[[PyTree], jax.Array] | None = None,
    args: tuple = (),
    preconditioner: PyTree | None = None,
) -> LLCResult:
    r"""$\hat\lambda(w^*)$ from ``n_chains`` SGLD chains started at ``w_star``.

    Args:
      nll_fn: $L_n(w)$ = ``nll_fn(w, *args)``, the mean negative log-likelihood per sample.
      n: the number of samples in $L_n$; sets ``nbeta = n / log n`` unless given.
      step_size: $\eta$ on $U$ (devinterp's ``lr`` is $2\eta$). The stationary law of SGLD is
        biased by $O(\eta)$: on a Gaussian of curvature $a$ its variance is inflated by
        $1/(1-\eta a/2)$, so keep $\eta\,n\beta\,\lambda_{\max}(\nabla^2L_n)\ll1$.
      gamma: localisation strength $\gamma\ge0$ (devinterp's ``localization``).
      prior_fn: optional prior energy $-\log\varphi(w)$ added to the potential (not devinterp's
        estimator; Watanabe's tempered posterior).
      burn_in, thin, n_chains, preconditioner: as in
        :func:`~copyhead_jax.sampling.sgld.sgld_chains`.

    The MCSE is $n\beta\,s_L/\sqrt{\mathrm{ESS}(L_n)}$; it does not include the $O(\eta)$ bias.
    """
    n = check_int("n", n, lo=2)
    nbeta = default_nbeta(n) if nbeta is None else check_float("nbeta", nbeta, lo=0.0)
    run = make_runner(
        nll_fn,
        prior_fn=prior_fn,
        gamma=gamma,
        center=w_star,
        n_steps=n_steps,
        burn_in=burn_in,
        thin=thin,
        n_chains=n_chains,
        preconditioner=preconditioner,
    )
    draws = run(key, w_star, nbeta, step_size, args)
    init_loss = float(nll_fn(w_star, *args))
    mean, ok = finite_mean(draws.loss, draws.health.finite)
    se = float(mcse_mean(ok)) if ok.size and ok.shape[1] >= 4 else float("nan")
    return LLCResult(
        llc=nbeta * (mean - init_loss),
        mcse=nbeta * se,
        nbeta=nbeta,
        init_loss=init_loss,
        loss=draws.loss,
        health=draws.health,
    )
