r"""How far trained embeddings moved: relative changes of the embedding Gram (docs/theory.md §2e).

The network sees its embeddings only through the Gram $C=UU^\top/N$ of $U=[W^{E\top};b^\top]$
($D\times N$, $D=V+L$; docs/theory.md §2c), whose blocks are the token Gram
$C_{EE}=W^{E\top}W^E/N$, the positional Gram $C_{PP}=b^\top b/N$ and the cross term
$C_{EP}=W^{E\top}b/N$. A run is *effectively quenched* when
$\delta_X=\|C_X^{\rm trained}-C_X^{\rm init}\|_F/\|C_X^{\rm init}\|_F$ is small for every block $X$
(the cross block, whose prior mean is zero, is measured against the whole initial Gram).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jaxtyping import Array, Float

from .._types import Gram

#: the blocks reported by :func:`gram_change` (``all`` is the whole D x D Gram)
GRAM_BLOCKS = ("all", "token", "position", "cross")


def embedding_gram(W_E: Float[Array, "N V"], b: Float[Array, "N L"]) -> Gram:
    r"""$C=UU^\top/N$, rows and columns: the V tokens, then the L positions."""
    U = jnp.concatenate([W_E.T, b.T], axis=0)
    return U @ U.T / U.shape[1]


def gram_change(
    W_E0: Float[Array, "N V"],
    b0: Float[Array, "N L"],
    W_E1: Float[Array, "N V"],
    b1: Float[Array, "N L"],
) -> dict[str, Array]:
    r"""Relative Frobenius change of each block of $C$ from ``(W_E0, b0)`` to ``(W_E1, b1)``.

    ``token``, ``position``: $\|\Delta C_X\|_F/\|C_X^{(0)}\|_F$; ``cross``:
    $\|\Delta C_{EP}\|_F/\|C^{(0)}\|_F$ (its own initial norm is $O(N^{-1/2})$);
    ``all``: $\|\Delta C\|_F/\|C^{(0)}\|_F$."""
    if W_E0.shape != W_E1.shape or b0.shape != b1.shape or W_E0.shape[0] != b0.shape[0]:
        raise ValueError(
            f"embeddings must have matching shapes [N, V], [N, L], got {W_E0.shape}, "
            f"{b0.shape} -> {W_E1.shape}, {b1.shape}"
        )
    V = W_E0.shape[1]
    C0, C1 = embedding_gram(W_E0, b0), embedding_gram(W_E1, b1)
    dC = C1 - C0
    f = lambda x: jnp.sqrt(jnp.sum(x**2))
    return dict(
        all=f(dC) / f(C0),
        token=f(dC[:V, :V]) / f(C0[:V, :V]),
        position=f(dC[V:, V:]) / f(C0[V:, V:]),
        cross=f(dC[:V, V:]) * math.sqrt(2.0) / f(C0),  # both off-diagonal blocks
    )


def adam_step_bound(lr_sum: float, b1: float = 0.9, b2: float = 0.999) -> float:
    r"""Largest move of one weight after Adam steps whose learning rates sum to ``lr_sum``.

    An Adam update is $\eta_t\,\hat m_t/(\sqrt{\hat v_t}+\epsilon)$. By Cauchy-Schwarz on
    $m_t=(1-\beta_1)\sum_j\beta_1^jg_{t-j}$ against $v_t=(1-\beta_2)\sum_j\beta_2^jg_{t-j}^2$,
    $|m_t|/\sqrt{v_t}\le(1-\beta_1)/\sqrt{(1-\beta_2)(1-\beta_1^2/\beta_2)}$ (7.27 at the
    defaults; attained by gradients growing like $(\beta_2/\beta_1)^t$), and bias correction
    only lowers it for $t\ge1$ at these $\beta$; a gradient of steady sign gives 1. Requires
    $\beta_1^2<\beta_2$ (docs/theory.md §2e)."""
    if not 0.0 <= b1**2 < b2 < 1.0:
        raise ValueError(f"adam_step_bound needs 0 <= b1^2 < b2 < 1, got b1={b1}, b2={b2}")
    return lr_sum * (1.0 - b1) / math.sqrt((1.0 - b2) * (1.0 - b1**2 / b2))


__all__ = ["GRAM_BLOCKS", "adam_step_bound", "embedding_gram", "gram_change"]
