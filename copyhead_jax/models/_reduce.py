r"""Exact width reduction with quenched embeddings (docs/theory.md §2c).

With the embeddings frozen, a width-$N$ head depends on $(W^G,\hat W^O)$ only through
$M=\tilde UW^G\tilde U^\top$ and $R=\hat W^O\tilde U^\top/\sqrt\chi$, $\tilde U=U/\sqrt N$
($D\times N$, $D=V+L$). With $TT^\top=C=\tilde U\tilde U^\top$, $A=Q^\top W^GQ$, $B=\hat W^OQ$
($Q$ an orthonormal basis of $\mathrm{span}\,\tilde U^\top$, $T=\tilde UQ$), the head is *exactly*
the same head at width $D$ with frozen embeddings $\sqrt D\,T$ and weights $(A,B)$; everything off
the span stays at its prior. The reduced head is therefore an ordinary :class:`AbstractHead` of
width $D$: training, sampling and measurement code runs on it unchanged.

Sources of the Gram's root $T$:

* :func:`realised_root`: the embeddings a full-width run draws (same key, same numbers);
* :func:`wishart_root`: $NC\sim\mathrm{Wishart}(N,\Sigma)$ by the Bartlett decomposition, never
  forming an $N$-sized array;
* :func:`prior_root`: $N=\infty$, $C=\Sigma=\mathrm{diag}(\sigma_e^2I_V,\sigma_p^2I_L)$.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..config import Config, ModelConfig, TaskConfig, TrainConfig
from ..conventions import readout_prior_std
from ._head import AbstractHead, head_class

Root = Float[Array, "D D"]  # T with T T^T = C; rows: V tokens, then L positions


def prior_root(model: ModelConfig, *, V: int, L: int, dtype=jnp.float64) -> Root:
    r"""$T=\Sigma^{1/2}$: the $N\to\infty$ limit of the embedding Gram."""
    s = jnp.concatenate([jnp.full((V,), model.sigma_e), jnp.full((L,), model.sigma_p)])
    return jnp.diag(s.astype(dtype))


def draw_embeddings(key: Array, model: ModelConfig, *, V: int, L: int):
    """``(W_E [N, V], b [N, L])`` exactly as :func:`~copyhead_jax.models.init_head` draws them
    from the same key (float32), so a reduced run sees the embeddings of the full run."""
    kE, kb, _, _ = jax.random.split(key, 4)
    N = int(model.width)
    W_E = model.sigma_e * jax.random.normal(kE, (N, V), dtype=jnp.float32)
    b = model.sigma_p * jax.random.normal(kb, (N, L), dtype=jnp.float32)
    return W_E, b


def realised_root(W_E: Float[Array, "N V"], b: Float[Array, "N L"], dtype=jnp.float64) -> Root:
    r"""Cholesky root of the realised Gram $C=UU^\top/N$ (computed in ``dtype``)."""
    U = jnp.concatenate([W_E.T, b.T], axis=0).astype(dtype)
    return jnp.linalg.cholesky(U @ U.T / U.shape[1])


def wishart_root(key: Array, model: ModelConfig, *, V: int, L: int, dtype=jnp.float64) -> Root:
    r"""A root of $C$ with $NC\sim\mathrm{Wishart}(N,\Sigma)$ (Bartlett decomposition).

    $NC=\Sigma^{1/2}WW^\top\Sigma^{1/2}$ with $W$ lower triangular,
    $W_{ii}=\sqrt{c_i}$, $c_i\sim\chi^2_{N-i+1}$, $W_{ij}\sim\mathcal N(0,1)$ for $i>j$; cost
    $O(D^2)$ whatever $N$ (Bartlett 1933; e.g. Anderson, *An Introduction to Multivariate
    Statistical Analysis*, Thm. 7.2.1). Requires $N\ge D$."""
    D = V + L
    N = model.width
    k_diag, k_off = jax.random.split(jax.random.fold_in(key, 0x5EED))
    df = N - jnp.arange(D, dtype=dtype)
    diag = jnp.sqrt(2.0 * jax.random.gamma(k_diag, df / 2.0, dtype=dtype))  # chi^2 = 2 Gamma
    W = jnp.tril(jax.random.normal(k_off, (D, D), dtype=dtype), -1) + jnp.diag(diag)
    return prior_root(model, V=V, L=L, dtype=dtype) @ W / math.sqrt(N)


@runtime_checkable
class StartSpec(Protocol):
    """What a reduced head's start reads of a config: its model, train and task sections (a
    ``Config``, or the exact solver's start specification carrying the three)."""

    model: ModelConfig
    train: TrainConfig
    task: TaskConfig


def embedding_root(key: Array, cfg: StartSpec, dtype=jnp.float64) -> Root:
    """The root ``T`` of a reduced run's embedding Gram, per ``cfg.model`` (width, ``gram``)."""
    m, V, L = cfg.model, cfg.task.V, cfg.task.L
    if math.isinf(m.width):
        return prior_root(m, V=V, L=L, dtype=dtype)
    if m.gram == "wishart":
        return wishart_root(key, m, V=V, L=L, dtype=dtype)
    return realised_root(*draw_embeddings(key, m, V=V, L=L), dtype=dtype)


def reduced_head(
    T: Root, W_G: Float[Array, "D D"], W_O_hat: Float[Array, "V D"], like: AbstractHead
) -> AbstractHead:
    r"""The width-$D$ head with embeddings $\sqrt D\,T$ and weights $(A, B)$ = ``(W_G, W_O_hat)``;
    ``like`` gives the class and static fields (``chi``, linear ``scale``)."""
    V = W_O_hat.shape[0]
    U = math.sqrt(T.shape[0]) * T
    return eqx_replace(like, W_E=U[:V].T, b=U[V:].T, W_G=W_G, W_O_hat=W_O_hat)


def eqx_replace(head: AbstractHead, **leaves) -> AbstractHead:
    """``head`` with the named array leaves replaced (shapes may change)."""
    import equinox as eqx

    names = tuple(leaves)
    return eqx.tree_at(lambda h: tuple(getattr(h, n) for n in names), head, tuple(leaves.values()))


def root_of(head: AbstractHead) -> Root:
    """``T`` of a reduced head (its embeddings are ``sqrt(D) T``)."""
    U = head.embeddings()
    return U / math.sqrt(U.shape[0])


class Reduction(NamedTuple):
    """A width-``N`` head's reduced image and the basis that maps it back."""

    head: AbstractHead  # width D = V + L
    Q: Float[Array, "N D"]  # orthonormal basis of span U~^T
    U_perp: Float[Array, ""]  # prior energy of the off-span part of W^G and W_O_hat


def reduce_head(head: AbstractHead, *, sigma_G: float = 1.0, sigma_O: float = 1.0) -> Reduction:
    r"""The exact width-$D$ image of a width-$N$ head with frozen embeddings.

    docs/theory.md §2c; tested as its §7 identity 12.

    $Q$ from the QR decomposition of $\tilde U^\top$, $T=\tilde UQ$, $A=Q^\top W^GQ$,
    $B=\hat W^OQ$. Also returns $U_\perp$, the prior energy of what lies off the span:
    $U=U_D(A,B)+U_\perp$ (embedding prior terms are in both)."""
    U = head.embeddings()
    D, N = U.shape
    if N < D:
        raise ValueError(f"head width must be >= V + L = {D} to reduce, got {N}")
    Q, _ = jnp.linalg.qr(U.T / math.sqrt(N))  # [N, D]
    T = U @ Q / math.sqrt(N)
    A = Q.T @ head.W_G @ Q
    B = head.W_O_hat @ Q
    off_G = jnp.sum(head.W_G**2) - jnp.sum(A**2)
    off_O = jnp.sum(head.W_O_hat**2) - jnp.sum(B**2)
    U_perp = off_G / (2 * sigma_G**2) + off_O / (2 * sigma_O**2)
    return Reduction(reduced_head(T, A, B, head), Q, U_perp)


def expand_head(
    red: AbstractHead,
    full_like: AbstractHead,
    key: Array,
    *,
    sigma_G: float = 1.0,
    sigma_O: float = 1.0,
) -> AbstractHead:
    r"""Map a reduced head back to the width of ``full_like`` (whose embeddings it was reduced
    from): the span part is $QAQ^\top$, $BQ^\top$; the off-span part is drawn from its prior
    (zero at a MAP would also do: it carries no data term)."""
    U = full_like.embeddings()
    D, N = U.shape
    Q, _ = jnp.linalg.qr(U.T / math.sqrt(N))
    T = U @ Q / math.sqrt(N)
    # the reduced head may use another root T' of the same Gram: T' = T O with O orthogonal
    O = jnp.linalg.solve(T, root_of(red))
    A = O @ red.W_G @ O.T
    B = red.W_O_hat @ O.T
    kG, kO = jax.random.split(key)
    ZG = sigma_G * jax.random.normal(kG, (N, N), dtype=U.dtype)
    ZO = sigma_O * jax.random.normal(kO, (B.shape[0], N), dtype=U.dtype)
    P = jnp.eye(N, dtype=U.dtype) - Q @ Q.T
    W_G = Q @ A @ Q.T + (ZG - Q @ (Q.T @ ZG @ Q) @ Q.T)
    W_O_hat = B @ Q.T + ZO @ P
    return eqx_replace(full_like, W_G=W_G, W_O_hat=W_O_hat)


def copy_start(T: Root, *, V: int, L: int, logit: float, attention: str) -> Float[Array, "D D"]:
    r"""$A$ whose logits are the head's copy logits (``logit`` $\cdot G^*$ for linear and softmax,
    :meth:`AbstractHead.copy_logits`) on the positional block and zero elsewhere:
    $A=T^{-1}M^*T^{-\top}$ (the reduced image of the full engine's minimum-norm copy start)."""
    M_star = head_class(attention).copy_logits(L, logit, jnp.float32)  # as the full engine's
    M = jnp.zeros((V + L, V + L), T.dtype).at[V:, V:].set(M_star)
    Ti = jnp.linalg.inv(T)
    return Ti @ M @ Ti.T


def init_reduced(key: Array, cfg: StartSpec, like: AbstractHead, dtype=jnp.float64) -> AbstractHead:
    """A reduced run's starting head: its Gram root from ``key`` (per ``cfg.model``), ``W^G``
    and ``W_O_hat`` from the prior (their span components are i.i.d. prior draws, exactly), or
    the branch start ``cfg.train.init_attention`` (``zero`` logits / ``copy`` logits)."""
    return reduced_head(*init_reduced_arrays(key, cfg, dtype), like)


def init_reduced_arrays(key: Array, cfg, dtype=jnp.float64):
    """``(T, W_G, W_O_hat)`` of :func:`init_reduced`; ``cfg`` needs only ``model``, ``train``,
    ``task`` and ``posterior`` (for the readout prior alone)."""
    m, t, V, L = cfg.model, cfg.train, cfg.task.V, cfg.task.L
    D = V + L
    _, _, kG, kO = jax.random.split(key, 4)
    T = embedding_root(key, cfg, dtype)
    A = m.sigma_G * jax.random.normal(kG, (D, D), dtype=dtype)
    if t.init_attention == "zero":
        A = jnp.zeros_like(A)
    elif t.init_attention == "copy":
        A = copy_start(T, V=V, L=L, logit=t.init_copy_logit, attention=m.attention)
    p = cfg.posterior
    std = readout_prior_std(m.sigma_O, p.chi, chi_in_readout_prior=p.chi_in_readout_prior)
    B = std * jax.random.normal(kO, (V, D), dtype=dtype)
    return T, A, B


def head_template(cfg: Config) -> AbstractHead:
    """A placeholder head of the config's class and static fields (arrays are dummies)."""
    V, L = cfg.task.V, cfg.task.L
    z = lambda *s: jnp.zeros(s, jnp.float32)
    w = dict(W_E=z(1, V), b=z(1, L), W_G=z(1, 1), W_O_hat=z(V, 1))
    return head_class(cfg.model.attention).from_config(cfg, **w)
