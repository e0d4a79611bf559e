r"""SGLD chains on a tempered, localised potential split into data and prior parts (private).

$$U_\beta(w)=n\beta\,L_n(w)+\Phi(w)+\tfrac\gamma2\|w-w^*\|^2 ,$$

with $L_n$ the per-sample negative log-likelihood (``nll_fn``), $\Phi=-\log\varphi$ the prior
energy (``prior_fn``, optional, up to a constant) and $\gamma$ a localisation (optional). The
chains run :func:`~copyhead_jax.sgld.run_chains` at temperature 1 on $U_\beta$ and record
$L_n$ at every draw. $n\beta$ and the step size are traced: one compilation serves a whole
$\beta$ ladder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_float, check_int
from ..sgld import run_chains
from .stats import ess, split_rhat

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
        return run_chains(
            key, init, potential, n_steps=n_steps, step_size=eta, burn_in=burn_in, thin=thin,
            n_chains=n_chains, args=(nbeta, *args), preconditioner=preconditioner,
            per_chain_init=per_chain_init, draw_fn=record,
        )  # fmt: skip

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
