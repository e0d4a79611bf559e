r"""Posterior of a reduced sweep (docs/theory.md §2c): SGLD in whitened coordinates, and NUTS.

With frozen embeddings the posterior of $\theta=(W^G,\hat W^O)$ of a reduced run has about a
thousand dimensions whose curvatures span several decades (data-pinned logit directions against
prior-only ones), so plain SGLD either diverges or never moves (issue 11). A **constant**
preconditioner is allowed (docs/theory.md §2): with $H$ the Hessian of $U$ at the fitted point,
$H=V\Lambda V^\top$, $\Lambda_c=\max(\Lambda,\lambda_{\rm floor})$ and $C=V\Lambda_c^{-1/2}$, the
chain runs on $w$ with $\theta=\theta^*+Cw$,
$$w_{t+1}=w_t-\eta\,C^\top\nabla U(\theta_t)+\sqrt{2\eta}\,\xi_t ,$$
i.e. SGLD on $\theta$ with the constant preconditioner $CC^\top=H_c^{-1}$ (drift and noise alike).
A linear change of variables has a constant Jacobian, so the stationary law is still
$e^{-U}$ up to the $O(\eta)$ discretisation bias; near a quadratic minimum the whitened target
is a standard normal, whose stationary variance under SGLD is $1/(1-\eta/2)$.
$\lambda_{\rm floor}=1/\max(\sigma_G^2,\sigma_O^2)$, the smallest prior curvature, guards
against a fit that is not a minimum (negative curvature).

:func:`nuts_reference` samples the same posterior with NumPyro's NUTS (imported lazily): the
gold standard against which SGLD's bias is measured.

**The default sampler: collapsed HMC** (:func:`collapsed_chains`). Whitened SGLD fails for linear
attention (issue 11): its posterior has the bilinear valley $(M,R)\to(cM,R/c)$ and its mass lies
far from the fit (small default, P = 32: MAP c1 = 0.6, posterior c1 = 8.6 +- 5.4), where a
preconditioner fitted at the MAP is wrong by up to 50x per direction. Both heads are *linear in
the readout*: given $W^G$, $U$ is an exact quadratic in $\hat W^O$, whose rows are i.i.d.
Gaussian, $\hat W^O_v\mid W^G\sim\mathcal N(\Lambda^{-1}b_v,\Lambda^{-1})$ with
$$\Lambda=2w\sum_{\alpha a}g^{\alpha a}g^{\alpha a\top}+\sigma_O^{-2}I,\qquad
b_v=2w\sum_{\alpha a}g^{\alpha a}y^{\alpha a}_v,\qquad
g^{\alpha a}=U^\top\textstyle\sum_bA^\alpha_{ab}\phi^{\alpha b}/\sqrt{\chi N}$$
($w$ the likelihood weight, $g$ the readout features:
$f^{\alpha a}_v=\hat W^O_v\cdot g^{\alpha a}$).
So $\hat W^O$ is integrated out exactly: the chain runs on $W^G$ alone with the marginal
$$U_m(W^G)=\frac{|W^G|^2}{2\sigma_G^2}-\tfrac12\sum_v b_v^\top\Lambda^{-1}b_v
+\tfrac V2\log\det(\sigma_O^2\Lambda)+w\sum|y|^2$$
($e^{-U_m}=\int e^{-U}\,d\hat W^O/(2\pi\sigma_O^2)^{VN/2}$), and each draw completes
$(W^G,\hat W^O)$ with an exact draw of $\hat W^O\mid W^G$: the pair is an exact draw of $e^{-U}$
whenever $W^G$ is one of $e^{-U_m}$. The valley is gone ($U_m$ has no scale symmetry); what stays
is a posterior whose bulk is far from the fit. Hence three phases per run, all chains at once:

1. ``burn_in`` steps of unadjusted Langevin on $U_m$ (step ``WARMUP_ETA``) in the whitening of
   $U_m$ at the fit: this only carries the chains to the typical set and is discarded;
2. the whitening is recomputed at the end point of chain 0 (a constant preconditioner again,
   from a point of the typical set, eigenvalues floored at the prior curvature);
3. ``n_iter`` iterations of HMC (:mod:`copyhead_jax.sampling.hmc`: ``LEAPFROG`` leapfrog steps
   of the adapted step times a uniform jitter in [0.8, 1.2], a diagonal mass adapted on top of
   (or, ``adapt_mass=False``, unit mass in) the whitened
   coordinates) with a Metropolis correction: exact for $e^{-U_m}$, no step-size bias.

$U_m$, its hand-written gradient, the readout draws and the whitening of $U_m$ live in
:mod:`copyhead_jax.sampling.collapsed`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float

from .._types import Mask, TokenBatch
from ..fit import hessian, quenched_energy, split_weights
from ..models import AbstractHead
from ..objective import Objective
from .collapsed import draw_readout, marginal_energy, with_WG
from .hmc import HMC_ADAPT, LEAPFROG, TARGET_ACCEPT, hmc_chain

Whitening = Float[Array, "n n"]


#: The whitening Hessian is computed on at most this many of a run's sequences (the first ones:
#: datasets are nested), its data part rescaled by P / n_used. Any constant SPD preconditioner
#: leaves the posterior unchanged; this one costs ~1,000 Hessian-vector products on <= 256
#: sequences instead of P, and its curvatures are off by ~ 1/sqrt(256) = 6% at large P.
PRECOND_SEQS = 256


def whitening(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective
) -> tuple[Float[Array, " n"], Whitening]:
    r"""``(theta*, C)``: the flat fitted weights and $C=V\Lambda_c^{-1/2}$ from the dense Hessian
    at them (one Hessian-vector product per weight, on at most ``PRECOND_SEQS`` sequences; run
    in float64)."""

    theta, _ = split_weights(head)
    n = min(PRECOND_SEQS, tokens.shape[0])
    n_valid = jnp.sum(mask > 0)
    used = jnp.maximum(jnp.sum(mask[:n] > 0), 1)
    w = obj.likelihood_weight * n_valid / used
    sub = dataclasses.replace(obj, likelihood_weight=1.0)
    H = _hessian_weighted(head, tokens[:n], mask[:n], sub, w)
    lam, vec = jnp.linalg.eigh(0.5 * (H + H.T))
    floor = 1.0 / max(obj.sigma_G**2, obj.sigma_O**2)
    return theta, vec * (jnp.maximum(lam, floor) ** -0.5)[None, :]


def _hessian_weighted(head, tokens, mask, obj_unit, w):
    """Hessian of ``w * data + prior`` (``obj_unit`` has likelihood weight 1; ``w`` may be
    traced): the prior part of U in ``(W^G, W_O_hat)`` is diagonal, ``1/sigma_G^2, 1/sigma_O^2``."""
    H_all = hessian(head, tokens, mask, obj_unit)
    prior = jnp.concatenate([
        jnp.full((head.W_G.size,), 1.0 / obj_unit.sigma_G**2, H_all.dtype),
        jnp.full((head.W_O_hat.size,), 1.0 / obj_unit.sigma_O**2, H_all.dtype),
    ])  # fmt: skip
    return w * (H_all - jnp.diag(prior)) + jnp.diag(prior)


def whitened_potential(head: AbstractHead, obj: Objective):
    """``(U_w, head_of)``: ``U_w(w, theta, C, tokens, mask)`` is the quenched ``U`` at
    ``theta + C w`` and ``head_of(w, theta, C)`` the head there (embeddings of ``head``)."""
    _, unflatten = split_weights(head)

    def head_of(w, theta, C):
        return unflatten(theta + C @ w)

    def U_w(w, theta, C, tokens, mask):
        return quenched_energy(head_of(w, theta, C), tokens, mask, obj)

    return U_w, head_of


def nuts_reference(
    key: Array,
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    observe,
    *,
    n_warmup: int = 500,
    n_samples: int = 1000,
    n_chains: int = 2,
) -> Float[Array, "C S k"]:
    """NUTS draws of ``observe(head)`` (any vector of observables) from the same posterior,
    sampled in the whitened coordinates of :func:`whitening` (NUTS adapts its own diagonal mass
    on top). Returns ``[chain, draw, k]``."""
    from numpyro.infer import MCMC, NUTS

    theta, C = whitening(head, tokens, mask, obj)
    U_w, head_of = whitened_potential(head, obj)
    kernel = NUTS(potential_fn=lambda w: U_w(w, theta, C, tokens, mask))
    mcmc = MCMC(
        kernel, num_warmup=n_warmup, num_samples=n_samples, num_chains=n_chains,
        chain_method="sequential", progress_bar=False,
    )  # fmt: skip
    init = jnp.zeros((n_chains, theta.size) if n_chains > 1 else (theta.size,), theta.dtype)
    mcmc.run(key, init_params=init)
    w = mcmc.get_samples(group_by_chain=True)  # [C, S, n]
    obs = jax.vmap(jax.vmap(lambda x: observe(head_of(x, theta, C))))(w)
    return obs


# ---------------------------------------------------------------------------------------------
# Collapsed sampler: the readout integrated out exactly (module docstring)
# ---------------------------------------------------------------------------------------------

#: Unadjusted Langevin step of the warm-up (whitened at the fit), phase 1.
WARMUP_ETA = 0.1
class CollapsedStats(NamedTuple):
    """One run's chains (``C`` chains, ``S`` draws)."""

    draws: Array  # [C, S, k]: observe(head) at each draw
    accept: Array  # [C, S]: mean Metropolis acceptance probability of the thin iterations
    distance: Array  # [C, S]: || W_G - W_G at the fit ||
    finite: Bool[Array, " C"]  # no non-finite energy along the chain
    step_size: Array  # [C]: the leapfrog step after adaptation
    energy: Array  # [C, S]: the Hamiltonian U_m + |p|^2 / 2 at each draw (whitened momentum)


def warmup_chains(keys, head, tokens, mask, obj, C, n_steps: int, eta: float = WARMUP_ETA):
    """Phase 1: unadjusted Langevin on ``U_m`` in the whitening ``C`` from ``head.W_G``, one
    chain per key; returns the end points ``[chains, n]`` (flat ``W_G``)."""
    x0 = head.W_G.ravel()
    U = lambda w: marginal_energy(with_WG(head, x0 + C @ w), tokens, mask, obj)
    grad = jax.grad(U)
    sd = math.sqrt(2 * eta)

    def chain(key):
        def step(w, i):
            xi = jax.random.normal(jax.random.fold_in(key, i), w.shape, w.dtype)
            w1 = w - eta * grad(w) + sd * xi
            return jnp.where(jnp.all(jnp.isfinite(w1)), w1, w), None

        w, _ = lax.scan(step, jnp.zeros_like(x0), jnp.arange(n_steps))
        return x0 + C @ w

    return jax.vmap(chain)(keys)


def collapsed_chains(
    keys, head, tokens, mask, obj, x_init, C, observe, *,
    n_iter: int, thin: int, step_size: float, n_leap: int = LEAPFROG,
    n_adapt: int = HMC_ADAPT, target_accept: float = TARGET_ACCEPT, adapt_mass: bool = False,
) -> CollapsedStats:  # fmt: skip
    """Phase 3: HMC on ``U_m`` in the whitened coordinates ``x = x_init[c] + C w``,
    Metropolis-corrected: :func:`.hmc.hmc_chain`, one chain per key. The first
    ``n_adapt`` iterations tune each chain's step from ``step_size`` towards acceptance
    ``target_accept`` (dual averaging) and, with ``adapt_mass``, a diagonal mass in ``w``
    (unit mass without), and are discarded; step and mass are then frozen, so the
    ``n_iter`` iterations that follow are an exact HMC chain. At every ``thin``-th of them the
    readout is drawn exactly given ``W_G`` and ``observe(head)`` recorded. ``x_init``: one start
    per chain (flat ``W_G``)."""
    x_fit = head.W_G.ravel()

    def chain(key, xs):
        U = lambda w: marginal_energy(with_WG(head, xs + C @ w), tokens, mask, obj)

        def record(w, j):
            x = xs + C @ w
            h = draw_readout(jax.random.fold_in(key, -1 - j), with_WG(head, x), tokens, mask,
                             obj)  # fmt: skip
            return observe(h), jnp.linalg.norm(x - x_fit)

        c = hmc_chain(key, U, jnp.zeros_like(xs), record, n_iter=n_iter, thin=thin,
                      step_size=step_size, n_leap=n_leap, n_adapt=n_adapt,
                      target_accept=target_accept, adapt_mass=adapt_mass)  # fmt: skip
        obs, dist = c.records
        finite = c.finite & jnp.all(jnp.isfinite(obs))
        return CollapsedStats(obs, c.accept, dist, finite, c.step_size, c.energy)

    return jax.vmap(chain)(keys, x_init)
