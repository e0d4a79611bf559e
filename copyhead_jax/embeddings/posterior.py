r"""The posterior with the embeddings sampled too, exactly reduced to width D (docs/theory.md §2f).

The full network's posterior $e^{-U(\Theta)}$ over *every* weight, embeddings included, depends
on $N$ only through the law of the Gram root. Whiten, $U^\top=Z\Sigma^{1/2}$, and take the QR
decomposition $Z=Q_zW^\top$ ($W$ lower triangular, positive diagonal); under the
prior $Q_z$ is Haar and independent of the Bartlett factor $W$ ($W_{ii}^2\sim\chi^2_{N-i}$, i
counted from 0; $W_{ij}\sim\mathcal N(0,1)$, $i>j$), and $A=Q^\top W^GQ$, $B=\hat W^OQ$ are i.i.d.
prior draws given $Q=Q_z$. The data term sees only $(T,A,B)$ with $T=\Sigma^{1/2}W/\sqrt N$
(§2c), so the posterior of $(W,A,B)$ is, exactly,
$$U_N(z,\ell,A,B)=\tfrac12\|\ell\|^2+\sum_i\big(\tfrac12e^{2z_i}-(N-i)z_i\big)
+\frac{\|A\|^2}{2\sigma_G^2}+\frac{\|B\|^2}{2\sigma_O^2}+w\,E_{\rm data}(T,A,B)$$
in the unconstrained coordinates $z_i=\log W_{ii}$ (the $\chi_{N-i}$ density times the Jacobian
$W_{ii}$) and $\ell$, the strictly-lower entries of $W$: $D(D+1)/2+D^2+VD$ numbers at any $N$.
Everything off the span keeps its prior; the embeddings' own prior energy is $\tfrac12\|W\|_F^2$.
The quenched posterior is the same density with $T$ held fixed.

:func:`nuts_chains` samples any such flat log density with BlackJAX's NUTS after its window
adaptation (step size and diagonal mass), chains ``vmap``-ed; :func:`embedded_draws` runs it on
the reduced (embeddings sampled), quenched or full width-N posterior of a head and records the
order parameters and the embedding Gram at each draw.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float

from .._types import Mask, Scalar, TokenBatch
from ..config import Config
from ..data import masked_mean
from ..models import AbstractHead, head_template, init_head, reduced_head
from ..objective import Objective, neg_log_posterior
from ..observables import attention_matrices, order_parameters


class EmbeddedPoint(NamedTuple):
    """A point of the reduced posterior with sampled embeddings (unconstrained coordinates)."""

    log_diag: Float[Array, " D"]  # z_i = log W_ii
    lower: Float[Array, " K"]  # the K = D(D-1)/2 strictly-lower entries of W (tril order)
    W_G: Float[Array, "D D"]  # A = Q^T W^G Q
    W_O_hat: Float[Array, "V D"]  # B = W_O_hat Q


def prior_scales(V: int, L: int, sigma_e: float, sigma_p: float) -> Float[Array, " D"]:
    r"""The diagonal of $\Sigma^{1/2}$: ``sigma_e`` for the V tokens, ``sigma_p`` for the L
    positions."""
    return jnp.concatenate([jnp.full((V,), sigma_e), jnp.full((L,), sigma_p)])


def bartlett_factor(p: EmbeddedPoint) -> Float[Array, "D D"]:
    """``W``: lower triangular with diagonal ``exp(log_diag)``."""
    D = p.log_diag.shape[0]
    rows, cols = jnp.tril_indices(D, -1)
    return jnp.diag(jnp.exp(p.log_diag)).at[rows, cols].set(p.lower)


def gram_root(
    p: EmbeddedPoint, scales: Float[Array, " D"], width: float | Array
) -> Float[Array, "D D"]:
    r"""$T=\Sigma^{1/2}W/\sqrt N$: $C=TT^\top$ is the embedding Gram $UU^\top/N$."""
    return scales[:, None] * bartlett_factor(p) / jnp.sqrt(width)  # width may be traced


def embedded_energy(
    p: EmbeddedPoint,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    *,
    like: AbstractHead,
    scales: Float[Array, " D"],
    width: float | Array,
    jacobian: bool = True,
) -> Scalar:
    r"""$U_N$ of the module docstring (``jacobian=False``: without the $-\sum_i(N-i)z_i$ term,
    i.e. $U$ of the full network minus the prior energy $U_\perp$ of everything off the span).

    ``like`` gives the head class and static fields (``models.head_template``)."""
    D = p.log_diag.shape[0]
    if isinstance(width, int | float) and width < D:
        raise ValueError(f"width must be >= V + L = {D} (a full-rank Gram), got {width}")
    head = reduced_head(gram_root(p, scales, width), p.W_G, p.W_O_hat, like)
    data = obj.likelihood_weight * head.squared_error_sum(tokens, mask)
    emb = 0.5 * jnp.sum(p.lower**2) + 0.5 * jnp.sum(jnp.exp(2 * p.log_diag))
    if jacobian:
        emb = emb - jnp.sum((width - jnp.arange(D)) * p.log_diag)
    prior = jnp.sum(p.W_G**2) / (2 * obj.sigma_G**2) + jnp.sum(p.W_O_hat**2) / (2 * obj.sigma_O**2)
    return data + emb + prior


def from_full(
    head: AbstractHead, scales: Float[Array, " D"], *, sigma_G: float = 1.0, sigma_O: float = 1.0
) -> tuple[EmbeddedPoint, Scalar]:
    r"""The reduced coordinates of a width-$N$ head and $U_\perp$, the prior energy of the part of
    $W^G$, $\hat W^O$ off the span: $U(\Theta)=U_N(\text{point};\,\text{no Jacobian})+U_\perp$."""
    U = head.embeddings()  # [D, N]
    D, N = U.shape
    if N < D:
        raise ValueError(f"head width must be >= V + L = {D}, got {N}")
    Q, R = jnp.linalg.qr((U / scales[:, None]).T)  # Z^T = Q R, W = R^T
    sign = jnp.sign(jnp.diag(R))  # QR's sign convention: make W's diagonal positive
    Q, R = Q * sign[None, :], R * sign[:, None]
    W = R.T
    A, B = Q.T @ head.W_G @ Q, head.W_O_hat @ Q
    rows, cols = jnp.tril_indices(D, -1)
    p = EmbeddedPoint(jnp.log(jnp.diag(W)), W[rows, cols], A, B)
    off = (jnp.sum(head.W_G**2) - jnp.sum(A**2)) / (2 * sigma_G**2) + (
        jnp.sum(head.W_O_hat**2) - jnp.sum(B**2)
    ) / (2 * sigma_O**2)
    return p, off


def prior_point(key: Array, *, V: int, L: int, width: float, sigma_G: float, sigma_O: float):
    """A draw of every coordinate from the prior (the Bartlett law; the Gram of a width-N draw)."""
    D = V + L
    kd, kl, kG, kO = jax.random.split(key, 4)
    chi2 = 2.0 * jax.random.gamma(kd, (width - jnp.arange(D)) / 2.0)
    return EmbeddedPoint(
        0.5 * jnp.log(chi2),
        jax.random.normal(kl, (D * (D - 1) // 2,)),
        sigma_G * jax.random.normal(kG, (D, D)),
        sigma_O * jax.random.normal(kO, (V, D)),
    )


class NUTSDraws(NamedTuple):
    """Observables per chain and draw, and NUTS's health."""

    observed: Float[Array, "C S k"]
    acceptance: Float[Array, " C"]  # mean acceptance probability after warm-up
    divergent: Float[Array, " C"]  # fraction of divergent transitions after warm-up
    step_size: Float[Array, " C"]


def nuts_chains(
    key: Array,
    logdensity: Callable[[Array], Scalar],
    init: Float[Array, "C n"],
    observe: Callable[[Array], Array],
    *,
    n_warmup: int,
    n_samples: int,
) -> NUTSDraws:
    """NUTS (BlackJAX) from each row of ``init``: window adaptation (Stan's, ``n_warmup``
    steps, diagonal mass), then ``n_samples`` draws of ``observe(position)`` per chain."""
    import blackjax  # lazily: only samplers need it

    def one(k, x0):
        k_adapt, k_run = jax.random.split(k)
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, target_acceptance_rate=0.8)
        (state, params), _ = adapt.run(k_adapt, x0, num_steps=n_warmup)
        kernel = blackjax.nuts(logdensity, **params).step

        def body(s, kk):
            s, info = kernel(kk, s)
            return s, (observe(s.position), info.acceptance_rate, info.is_divergent)

        _, (obs, acc, div) = jax.lax.scan(body, state, jax.random.split(k_run, n_samples))
        return obs, jnp.mean(acc), jnp.mean(div.astype(jnp.float32)), params["step_size"]

    keys = jax.random.split(key, init.shape[0])
    obs, acc, div, eps = jax.vmap(one)(keys, init)
    return NUTSDraws(obs, acc, div, eps)


__all__ = [
    "EmbeddedPoint",
    "NUTSDraws",
    "bartlett_factor",
    "embedded_energy",
    "from_full",
    "gram_root",
    "nuts_chains",
    "prior_point",
    "prior_scales",
]


def gram_observer(cfg: Config, tokens, mask, head_of):
    """``position -> (a1, aG, d, C.flat)``: order parameters and the Gram at a draw."""
    V, L = cfg.task.V, cfg.task.L
    Sigma = jnp.diag(prior_scales(V, L, cfg.model.sigma_e, cfg.model.sigma_p) ** 2)

    def observe(x):
        head, C = head_of(x)
        A = masked_mean(attention_matrices(head, tokens), mask)
        o = order_parameters(A)
        d = jnp.linalg.norm(C - Sigma) / jnp.linalg.norm(Sigma)
        return jnp.concatenate([jnp.stack([o.c1, o.cG, d]), C.ravel()])

    return observe


@functools.partial(jax.jit, static_argnames=("kind", "cfg", "n_warmup", "n_samples"))
def embedded_draws(key, init, tokens, mask, width, T, *, kind, cfg, n_warmup, n_samples):
    """NUTS draws of ``(a1, aG, d, C.flat)`` from ``init[chain]``: ``kind`` ``annealed``
    (embeddings sampled, reduced), ``quenched`` (the Gram root ``T`` held fixed) or ``full``
    (every weight of the width-N network); ``width`` and ``T`` are traced (one compiled program
    per kind serves every width and P)."""
    obj, like = Objective.from_config(cfg), head_template(cfg)
    V, L = cfg.task.V, cfg.task.L
    scales = prior_scales(V, L, cfg.model.sigma_e, cfg.model.sigma_p)
    unravel = ravel_pytree(sampled_point(kind, cfg))[1]
    if kind == "annealed":
        energy = lambda p: embedded_energy(
            p, tokens, mask, obj, like=like, scales=scales, width=width
        )

        def head_of(x):
            p = unravel(x)
            R = gram_root(p, scales, width)
            return reduced_head(R, p.W_G, p.W_O_hat, like), R @ R.T
    elif kind == "quenched":  # the Gram root T held fixed
        energy = lambda ab: neg_log_posterior(reduced_head(T, *ab, like), tokens, mask, obj)
        head_of = lambda x: (reduced_head(T, *unravel(x), like), T @ T.T)
    else:  # the full width-N network, every weight: the reference of the reduction
        energy = lambda h: neg_log_posterior(h, tokens, mask, obj)

        def head_of(x):
            h = unravel(x)
            U = h.embeddings()
            return h, U @ U.T / U.shape[1]

    return nuts_chains(
        key,
        lambda x: -energy(unravel(x)),
        init,
        gram_observer(cfg, tokens, mask, head_of),
        n_warmup=n_warmup,
        n_samples=n_samples,
    )


def sampled_point(kind: str, cfg: Config, key=None, width=None):
    """A point of the sampled space (a prior draw when ``key`` is given)."""
    obj = Objective.from_config(cfg)
    V, L = cfg.task.V, cfg.task.L
    key = jax.random.key(0) if key is None else key
    if kind == "annealed":
        w = cfg.model.width if width is None else width
        return prior_point(key, V=V, L=L, width=w, sigma_G=obj.sigma_G, sigma_O=obj.sigma_O)
    if kind == "quenched":
        return (
            obj.sigma_G * jax.random.normal(key, (V + L, V + L)),
            obj.sigma_O * jax.random.normal(jax.random.fold_in(key, 1), (V, V + L)),
        )
    return init_head(key, cfg.model, L=L, V=V, chi=cfg.posterior.chi)


def prior_gram_rms(Sigma: np.ndarray, width: float) -> float:
    r"""$\sqrt{E\|C-\Sigma\|_F^2}/\|\Sigma\|_F$ under the prior: $NC\sim W(N,\Sigma)$ gives
    $E\|C-\Sigma\|_F^2=((\mathrm{tr}\Sigma)^2+\mathrm{tr}\Sigma^2)/N$ (docs/theory.md §2f)."""
    tr, tr2 = np.trace(Sigma), np.trace(Sigma @ Sigma)
    return float(math.sqrt((tr**2 + tr2) / width) / np.linalg.norm(Sigma))
