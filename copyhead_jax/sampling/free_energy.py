r"""Free energy $F=-\log Z$ by thermodynamic integration (TI), and WBIC as a cross-check.

Tempered posteriors $p_\beta(w)\propto\varphi(w)\,e^{\beta\ell(w)}$, $\ell=-nL_n$ the total
log-likelihood, interpolate between the prior ($\beta=0$) and the posterior ($\beta=1$). Since
$\frac{d}{d\beta}\log Z_\beta=\mathbb E_\beta[\ell]$ and
$\frac{d^2}{d\beta^2}\log Z_\beta=\mathrm{Var}_\beta[\ell]$,

$$\log Z=\int_0^1\mathbb E_\beta[\ell]\,d\beta
\approx\sum_k\frac{\Delta_k}2\big(m_k+m_{k+1}\big)-\frac{\Delta_k^2}{12}\big(v_{k+1}-v_k\big),$$

the trapezoid rule with the Euler-Maclaurin end correction from the variances $v_k$ (Friel,
Hurn & Wyse 2014; error $O(\Delta^4)$ instead of $O(\Delta^2)$). $m_k$ changes fastest near
$\beta=0$ (on the scale $1/n$), so the default ladder is power-spaced, $\beta_k=(k/K)^5$ (Friel &
Pettitt 2008). The prior energy $\Phi=-\log\varphi$ is needed only up to a constant (it cancels
in $Z_\beta/Z_0$), but $L_n$ must be the **normalised** per-sample negative log-likelihood. The
standard error treats the rungs as independent: $\mathrm{se}^2=\sum_k c_k^2\,\mathrm{se}(m_k)^2+
\sum_k d_k^2\,\mathrm{se}(v_k)^2$ with the quadrature weights $c_k$, $d_k$; it excludes the
quadrature error and SGLD's $O(\eta)$ bias.

The chains (:func:`make_runner`, shared with :mod:`.llc`): SGLD at temperature 1 on a tempered,
localised potential split into data and prior parts,
$U_\beta(w)=n\beta\,L_n(w)+\Phi(w)+\tfrac\gamma2\|w-w^*\|^2$ ($\Phi$ optional, up to a constant;
$\gamma$ an optional localisation), recording $L_n$ at every draw; $n\beta$ and the step size are
traced, so one compilation serves a whole $\beta$ ladder.

WBIC (Watanabe 2013): $\mathrm{WBIC}=\mathbb E_{\beta_0}[nL_n]$ at $\beta_0=1/\log n$, with
$\mathrm{WBIC}=F+O_p(\sqrt{\log n})$ in general and $F+O_p(1)$ for regular models.

References: N. Friel and A. N. Pettitt, *Marginal likelihood estimation via power posteriors*,
JRSS B 70 (2008). N. Friel, M. Hurn and J. Wyse, *Improving power posterior estimation of
statistical evidence*, Stat. Comput. 24 (2014). S. Watanabe, *A widely applicable Bayesian
information criterion*, JMLR 14 (2013).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_float, check_int
from .sgld import sgld_chains
from .stats import ess, mcse_mean, split_rhat, susceptibility

__all__ = [
    "TIResult",
    "WBICResult",
    "beta_ladder",
    "thermodynamic_integration",
    "ti_quadrature",
    "wbic",
]

PyTree = Any


class ChainSummary(NamedTuple):
    """Health of one set of chains (the recorded quantity is $L_n$ at the draws)."""

    rhat: float  # split R-hat of L_n over the finite chains
    ess: float  # effective sample size of L_n, finite chains pooled
    accept: float  # mean MALA acceptance proxy after burn-in, finite chains
    finite: np.ndarray  # (C,) the chain never produced a non-finite U, MALA ratio or L_n


class TemperedDraws(NamedTuple):
    loss: np.ndarray  # (C, S) L_n at the draws, float64
    health: ChainSummary
    last: PyTree  # positions after the last step, leaves (C, ...): warm start of the next rung


def _sq_dist(w: PyTree, c: PyTree) -> jax.Array:
    return sum(jnp.sum(jnp.square(a - b)) for a, b in zip(jax.tree.leaves(w), jax.tree.leaves(c)))


def make_runner(
    nll_fn: Callable[..., jax.Array],
    *,
    prior_fn: Callable[[PyTree], jax.Array] | None,
    gamma: float,
    center: PyTree | None,
    n_steps: int,
    burn_in: int,
    thin: int,
    n_chains: int,
    preconditioner: PyTree | None,
) -> Callable[..., TemperedDraws]:
    """``run(key, init, nbeta, step_size, args, per_chain_init) -> TemperedDraws``."""
    n_steps = check_int("n_steps", n_steps, lo=1)
    burn_in = check_int("burn_in", burn_in, lo=0, hi=n_steps - 1)
    thin = check_int("thin", thin, lo=1, hi=n_steps - burn_in)
    n_chains = check_int("n_chains", n_chains, lo=1)
    gamma = check_float("gamma", gamma, lo=0.0, lo_open=False)
    if not callable(nll_fn):
        raise ValueError(f"nll_fn must be callable (w, *args) -> L_n(w), got {nll_fn!r}")
    if prior_fn is not None and not callable(prior_fn):
        raise ValueError(f"prior_fn must be None or callable w -> -log prior, got {prior_fn!r}")
    if gamma > 0 and center is None:
        raise ValueError("gamma > 0 needs a center w* to localise at")

    def potential(w, nbeta, *args):
        u = nbeta * nll_fn(w, *args)
        if prior_fn is not None:
            u = u + prior_fn(w)
        if gamma > 0:
            u = u + 0.5 * gamma * _sq_dist(w, center)
        return u

    def record(w, nbeta, *args):
        return nll_fn(w, *args)

    def chains(key, init, nbeta, eta, args, per_chain_init):
        return sgld_chains(
            key,
            init,
            potential,
            n_steps=n_steps,
            step_size=eta,
            burn_in=burn_in,
            thin=thin,
            n_chains=n_chains,
            args=(nbeta, *args),
            preconditioner=preconditioner,
            per_chain_init=per_chain_init,
            draw_fn=record,
        )

    jitted = jax.jit(chains, static_argnums=5)

    def run(key, init, nbeta, eta, args: tuple = (), per_chain_init: bool = False):
        eta = check_float("step_size", eta, lo=0.0)
        check_float("nbeta", nbeta, lo=0.0, lo_open=False)
        if not isinstance(args, tuple):
            raise ValueError(f"args must be a tuple of extra nll_fn arguments, got {args!r}")
        res = jitted(key, init, float(nbeta), eta, args, per_chain_init)  # weak: traced
        loss = np.asarray(res.draws, np.float64)
        finite = np.asarray(res.finite) & np.isfinite(loss).all(-1)
        acc = np.asarray(res.accept_prob, np.float64)[:, burn_in:]
        ok = loss[finite]
        with np.errstate(all="ignore"):
            health = ChainSummary(
                rhat=float(split_rhat(ok)) if len(ok) and ok.shape[1] >= 4 else float("nan"),
                ess=float(ess(ok)) if len(ok) and ok.shape[1] >= 4 else float("nan"),
                accept=float(acc[finite].mean()) if finite.any() else float("nan"),
                finite=finite,
            )
        return TemperedDraws(loss, health, res.last_state.z)

    return run


def finite_mean(loss: np.ndarray, finite: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean of ``loss[C, S]`` over the finite chains (NaN if none) and those chains' draws."""
    ok = loss[finite]
    return (float(ok.mean()) if ok.size else float("nan")), ok


def beta_ladder(n_rungs: int = 16, power: float = 5.0) -> np.ndarray:
    r"""$\beta_k=(k/K)^{p}$, $k=0..K$ (``n_rungs`` $=K\ge1$, ``power`` $=p\ge1$)."""
    K = check_int("n_rungs", n_rungs, lo=1)
    p = check_float("power", power, lo=1.0, lo_open=False)
    return (np.arange(K + 1) / K) ** p


def _check_betas(betas) -> np.ndarray:
    b = np.asarray(betas, np.float64)
    if b.ndim != 1 or b.size < 2 or not np.all(np.isfinite(b)):
        raise ValueError(f"betas must be a 1-D ladder of >= 2 finite values, got {betas!r}")
    if b[0] != 0.0 or b[-1] != 1.0 or np.any(np.diff(b) <= 0):
        raise ValueError(f"betas must increase strictly from 0 to 1, got {b}")
    return b


def ti_quadrature(betas, mean, var=None, mean_se=None, var_se=None) -> tuple[float, float]:
    r"""$\int_0^1 m(\beta)\,d\beta$ from values $m_k$ (and slopes $v_k=m'(\beta_k)$) on ``betas``.

    Trapezoid, plus $-\frac{\Delta_k^2}{12}(v_{k+1}-v_k)$ when ``var`` is given. Returns the
    integral and its standard error from ``mean_se`` (and ``var_se``), rungs independent (0 if
    no errors are given).
    """
    b = _check_betas(betas)
    m = np.asarray(mean, np.float64)
    if m.shape != b.shape:
        raise ValueError(f"mean must have the shape of betas {b.shape}, got {m.shape}")
    h = np.diff(b)
    c = np.zeros_like(b)  # integral = c @ m + d @ v
    c[:-1] += h / 2
    c[1:] += h / 2
    total, err2 = float(c @ m), 0.0
    if mean_se is not None:
        err2 += float(np.sum((c * np.asarray(mean_se, np.float64)) ** 2))
    if var is not None:
        d = np.zeros_like(b)
        d[:-1] += h**2 / 12
        d[1:] -= h**2 / 12
        total += float(d @ np.asarray(var, np.float64))
        if var_se is not None:
            err2 += float(np.sum((d * np.asarray(var_se, np.float64)) ** 2))
    return total, math.sqrt(err2)


class TIResult(NamedTuple):
    """Per-rung arrays have one entry per ``betas``; ``ell`` is the log-likelihood -n L_n."""

    log_evidence: float  # log Z = -F
    mcse: float  # Monte-Carlo standard error of log Z (rungs independent)
    free_energy: float  # F = -log Z
    betas: np.ndarray  # (K+1,) the ladder, 0 .. 1
    mean_loglik: np.ndarray  # (K+1,) E_beta[ell]
    var_loglik: np.ndarray  # (K+1,) Var_beta[ell] = d E_beta[ell] / d beta
    mean_se: np.ndarray  # (K+1,) MCSE of E_beta[ell]
    var_se: np.ndarray  # (K+1,) MCSE of Var_beta[ell] (delta method)
    rhat: np.ndarray  # (K+1,) split R-hat of L_n per rung
    ess: np.ndarray  # (K+1,) ESS of L_n per rung
    accept: np.ndarray  # (K+1,) mean MALA acceptance proxy per rung
    finite: np.ndarray  # (K+1, C) chains that stayed finite


def _step_sizes(step_size, b: np.ndarray) -> list[float]:
    if callable(step_size):
        etas = [step_size(float(x)) for x in b]
    elif np.ndim(step_size) == 0:
        etas = [step_size] * len(b)
    else:
        etas = list(np.asarray(step_size, np.float64))
        if len(etas) != len(b):
            raise ValueError(f"step_size needs one value per beta ({len(b)}), got {len(etas)}")
    return [check_float("step_size", float(e), lo=0.0) for e in etas]


def thermodynamic_integration(
    key: jax.Array,
    init: PyTree,
    nll_fn: Callable[..., jax.Array],
    prior_fn: Callable[[PyTree], jax.Array],
    *,
    n: int,
    step_size: float | Sequence[float] | Callable[[float], float],
    n_steps: int,
    burn_in: int = 0,
    thin: int = 1,
    n_chains: int = 4,
    betas=None,
    warm_start: bool = True,
    args: tuple = (),
    preconditioner: PyTree | None = None,
) -> TIResult:
    r"""$\log Z=\int_0^1\mathbb E_\beta[-nL_n]\,d\beta$ with SGLD chains on every rung.

    Args:
      init: start of the chains (e.g. a MAP of one branch).
      nll_fn: normalised per-sample negative log-likelihood $L_n(w)$ = ``nll_fn(w, *args)``.
      prior_fn: prior energy $-\log\varphi(w)$ up to a constant; the prior must be proper.
      step_size: $\eta$, one for all rungs, one per rung, or a function of $\beta$ (the
        curvature grows with $\beta$: a step that suits the posterior may be needlessly small
        for the prior, and one that suits the prior unstable for the posterior).
      betas: the ladder (default :func:`beta_ladder`); it must run from 0 to 1.
      warm_start: rungs run from $\beta=1$ down to 0, each chain started where it ended on the
        rung above, so that chains started in one branch stay in it while the barrier holds
        (``False``: every rung starts at ``init``).
    """
    n = check_int("n", n, lo=1)
    if not callable(prior_fn):
        raise ValueError(f"prior_fn must be callable w -> -log prior(w), got {prior_fn!r}")
    if not isinstance(warm_start, bool):
        raise ValueError(f"warm_start must be a bool, got {warm_start!r}")
    b = _check_betas(beta_ladder() if betas is None else betas)
    etas = _step_sizes(step_size, b)
    C = check_int("n_chains", n_chains, lo=1)
    run = make_runner(
        nll_fn,
        prior_fn=prior_fn,
        gamma=0.0,
        center=None,
        n_steps=n_steps,
        burn_in=burn_in,
        thin=thin,
        n_chains=C,
        preconditioner=preconditioner,
    )
    start = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), (C, *np.shape(x))), init)
    K = len(b)
    mean, var, mse, vse = (np.full(K, np.nan) for _ in range(4))
    rhat, n_eff, acc = (np.full(K, np.nan) for _ in range(3))
    finite = np.zeros((K, C), bool)
    for k in range(K - 1, -1, -1):
        d = run(jax.random.fold_in(key, k), start, n * b[k], etas[k], args, True)
        h: ChainSummary = d.health
        rhat[k], n_eff[k], acc[k], finite[k] = h.rhat, h.ess, h.accept, h.finite
        m, ok = finite_mean(d.loss, h.finite)
        mean[k] = -n * m
        if ok.size and ok.shape[1] >= 4:
            mse[k] = n * float(mcse_mean(ok))
            s = susceptibility(ok, n=float(n) ** 2)  # Var[ell] = n^2 Var[L_n]
            var[k], vse[k] = float(s.value), float(s.mcse)
        if warm_start:
            start = d.last
    logz, se = ti_quadrature(b, mean, var, mse, vse)
    return TIResult(logz, se, -logz, b, mean, var, mse, vse, rhat, n_eff, acc, finite)


class WBICResult(NamedTuple):
    wbic: float  # E_{beta0}[n L_n], an estimate of F = -log Z
    mcse: float  # n * MCSE of the mean of L_n
    nbeta: float  # n beta0 = n / log n
    loss: np.ndarray  # (C, S) L_n at the draws
    health: ChainSummary


def wbic(
    key: jax.Array,
    init: PyTree,
    nll_fn: Callable[..., jax.Array],
    prior_fn: Callable[[PyTree], jax.Array],
    *,
    n: int,
    step_size: float,
    n_steps: int,
    burn_in: int = 0,
    thin: int = 1,
    n_chains: int = 4,
    args: tuple = (),
    preconditioner: PyTree | None = None,
) -> WBICResult:
    r"""$\mathrm{WBIC}=\mathbb E_{\beta_0}[nL_n]$, $p_{\beta_0}\propto\varphi\,e^{-n\beta_0L_n}$,
    $\beta_0=1/\log n$ (Watanabe 2013), from SGLD chains started at ``init``."""
    n = check_int("n", n, lo=2)
    if not callable(prior_fn):
        raise ValueError(f"prior_fn must be callable w -> -log prior(w), got {prior_fn!r}")
    nbeta = n / math.log(n)
    run = make_runner(
        nll_fn,
        prior_fn=prior_fn,
        gamma=0.0,
        center=None,
        n_steps=n_steps,
        burn_in=burn_in,
        thin=thin,
        n_chains=n_chains,
        preconditioner=preconditioner,
    )
    d = run(key, init, nbeta, step_size, args)
    m, ok = finite_mean(d.loss, d.health.finite)
    se = float(mcse_mean(ok)) if ok.size and ok.shape[1] >= 4 else float("nan")
    return WBICResult(n * m, n * se, nbeta, d.loss, d.health)
