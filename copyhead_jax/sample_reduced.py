r"""Posterior of a reduced sweep (THEORY.md §2c): SGLD in whitened coordinates, and NUTS.

With frozen embeddings the posterior of $\theta=(W^G,\hat W^O)$ of a reduced run has about a
thousand dimensions whose curvatures span several decades (data-pinned logit directions against
prior-only ones), so plain SGLD either diverges or never moves (issue 11). A **constant**
preconditioner is allowed (THEORY.md §2): with $H$ the Hessian of $U$ at the fitted point,
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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._types import Mask, TokenBatch
from .models import AbstractHead
from .posterior import Objective
from .solve import _split, hessian, quenched_energy

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
    import dataclasses

    theta, _ = _split(head)
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
    _, unflatten = _split(head)

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
