r"""Exact width reduction of the joint MAP with trained embeddings (docs/theory.md §2d).

At a stationary point of $U$ over every weight, $W^G$ and the rows of $\hat W^O$ lie in the
span $S$ of the embeddings ($\dim S\le D=V+L$). With $Q$ an orthonormal $N\times D$ basis of a
$D$-dimensional space holding $S$, $\tilde U=UQ$, $A=Q^\top W^GQ$, $B=\hat W^OQ$, the width-$N$
energy is that of $(\tilde U,A,B)$ with $M=\tilde UA\tilde U^\top/N$,
$R=B\tilde U^\top/\sqrt{\chi N}$ and the same Gaussian priors: $N$ is a number. The reduced head
stores the embeddings $\sqrt{D/N}\,\tilde U$ (as the quenched reduction of
:mod:`._reduce` does), so it computes the same logits and outputs as an ordinary width-$D$ head;
the solver's coordinates are $\tilde U$ itself, in which the map to width $N$ is an isometry
(gradient norms and Hessian eigenvalues are the width-$N$ network's, restricted to $S$).
"""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._head import AbstractHead


def check_trained_width(width: float, D: int) -> None:
    """The joint-MAP reduction needs a finite width ``N >= D = V + L``."""
    if not (math.isfinite(width) and width >= D):
        raise ValueError(
            f"ModelConfig.width must be finite and >= V + L = {D} for the joint MAP with trained "
            f"embeddings under engine='reduced' (the embedding prior variance scales as D / N), "
            f"got {width}"
        )


def embedding_scale(head: AbstractHead, width: float) -> float:
    r"""$c=\sqrt{n/N}$: the head (of width $n$) stores $c\,\tilde U$ for a width-$N$ network."""
    return math.sqrt(head.width / width)


def joint_split(head: AbstractHead, obj, *, width: float):
    r"""``(x0, unflatten, inv_var)`` for ``fit.solve_map``: the flat coordinates
    $(\tilde U, W^G, \hat W^O)$ of the width-``width`` network whose reduced image is ``head``
    ($\tilde U$ = head embeddings $/c$, :func:`embedding_scale`; at ``width == head.width`` they
    are the head's own weights), and their inverse prior variances ($1/\sigma_e^2$ on the token
    rows, $1/\sigma_p^2$ on the positional rows, $1/\sigma_G^2$, $1/\sigma_O^2$ with ``obj``'s
    scales). $U$ over them is the width-$N$ energy, embedding prior included."""
    U = head.embeddings()
    D, n = U.shape
    V = head.W_E.shape[1]
    c = embedding_scale(head, width)
    sizes = (U.size, head.W_G.size, head.W_O_hat.size)
    x0 = jnp.concatenate([(U / c).ravel(), head.W_G.ravel(), head.W_O_hat.ravel()])
    dt = x0.dtype

    def unflatten(x):
        Ut = c * x[: sizes[0]].reshape(D, n)
        W_G = x[sizes[0] : sizes[0] + sizes[1]].reshape(head.W_G.shape)
        W_O = x[sizes[0] + sizes[1] :].reshape(head.W_O_hat.shape)
        leaves = (Ut[:V].T, Ut[V:].T, W_G, W_O)
        return eqx.tree_at(lambda h: (h.W_E, h.b, h.W_G, h.W_O_hat), head, leaves)

    inv_var = jnp.concatenate(
        [
            jnp.full((V * n,), 1.0 / obj.sigma_e**2, dt),
            jnp.full(((D - V) * n,), 1.0 / obj.sigma_p**2, dt),
            jnp.full((sizes[1],), 1.0 / obj.sigma_G**2, dt),
            jnp.full((sizes[2],), 1.0 / obj.sigma_O**2, dt),
        ]
    )
    return x0, unflatten, inv_var


def scaled_objective(obj, *, width: float, head_width: int):
    r"""``obj`` with the embedding prior variances times $n/N$: the ordinary energy
    (``objective.neg_log_posterior``) of the width-$n$ reduced head under it is the width-$N$
    energy (docs/theory.md §2d: a width-$N$ joint MAP is a width-$D$ one with embedding priors
    $\sigma_e^2D/N$, $\sigma_p^2D/N$)."""
    s = math.sqrt(head_width / width)
    return dataclasses.replace(obj, sigma_e=obj.sigma_e * s, sigma_p=obj.sigma_p * s)


def expand_trained(red: AbstractHead, like: AbstractHead, key: Array) -> AbstractHead:
    r"""The width-$N$ head (``like``'s width and class) whose reduced image is ``red``: a
    random orthonormal $Q$ ($N\times D$, from ``key``), $U=\tilde UQ^\top$, $W^G=QAQ^\top$,
    $\hat W^O=BQ^\top$, nothing off the span (as at every stationary point)."""
    N, D = like.width, red.width
    if N < D:
        raise ValueError(f"like.width must be >= the reduced width {D}, got {N}")
    dt = red.W_G.dtype
    Q, _ = jnp.linalg.qr(jax.random.normal(key, (N, D), dt))
    Ut = red.embeddings() / embedding_scale(red, N)
    U = Ut @ Q.T
    V = red.W_E.shape[1]
    leaves = (U[:V].T, U[V:].T, Q @ red.W_G @ Q.T, red.W_O_hat @ Q.T)
    return eqx.tree_at(lambda h: (h.W_E, h.b, h.W_G, h.W_O_hat), like, leaves)


def off_span_fraction(head: AbstractHead) -> tuple[Float[Array, ""], Float[Array, ""]]:
    r"""The off-span fractions $\lVert W^G-PW^GP\rVert/\lVert W^G\rVert$ and
    $\lVert\hat W^O(I-P)\rVert/\lVert\hat W^O\rVert$, $P$ the projector on the span of the
    embeddings (rank by a relative cut of $10^{-10}$ on the singular values): zero at every
    stationary point of the joint energy (docs/theory.md §2d)."""
    U = head.embeddings()
    u, s, _ = jnp.linalg.svd(U.T, full_matrices=False)  # columns of u span S in R^N
    keep = s > 1e-10 * s[0]
    Qs = u * keep[None, :]
    Pm = Qs @ Qs.T
    G, O = head.W_G, head.W_O_hat
    fG = jnp.linalg.norm(G - Pm @ G @ Pm) / jnp.maximum(jnp.linalg.norm(G), 1e-300)
    fO = jnp.linalg.norm(O - O @ Pm) / jnp.maximum(jnp.linalg.norm(O), 1e-300)
    return fG, fO
