r"""The copy sum $C=\sum_{\alpha a}k_{\alpha a}A^\alpha_{a,a-1}$ (each kept row's attention on its
previous position: the copy order parameter's numerator) on the blocks of query rows of
:mod:`._features`, and its cotangent in their backward pass.

$C$ reads one entry of each attention row, so its cotangent $g$ adds $g$ to $\delta A_{a,a-1}$:
every activation's backward is linear in $\delta A$, so the feature moments' backward
(:func:`~._features.feature_moments_grad`, ``copy``) returns the gradient of any function of
the moments plus $g\,C$ in one pass over the logits, where autodiff of $C$ would run the
attention's backward a second time.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

RowWeights = Float[Array, "P L"]
Block = Float[Array, "L a P"]  # one block of query rows: [b, a, p]


def copy_probs(X: Block, c, prev) -> Float[Array, "a P"]:
    """``[a, p]``: $A^p_{a,a-1}$ of a block of query rows (``A = X c``; ``prev[a]`` the key
    $a-1$ of each)."""
    return X[prev, jnp.arange(X.shape[1])] * jnp.broadcast_to(c, X.shape[1:])


def with_copy(X: Block, c, Wp: Block, rows: dict, copy):
    r"""``(Wp, extra)``: ``Wp`` $=\sqrt k\,\delta A$ on the positional keys with the cotangent
    ``copy`` of :func:`copy_sum` added where it reads $A$ (key $a-1$ of row $a$:
    $\sqrt k\,$ ``copy``), and ``extra`` $=\sqrt k\sum_b A\,\delta A$ of that term
    (``(Wp, None)`` without ``copy``)."""
    if copy is None:
        return Wp, None
    g = rows["rk"] * copy  # [a, p]
    hit = (jnp.arange(X.shape[0])[:, None] == rows["prev"][None, :])[:, :, None]  # [b, a, 1]
    return Wp + jnp.where(hit, g[None], 0.0), g * copy_probs(X, c, rows["prev"])


def copy_sum(res, k: RowWeights) -> Float[Array, ""]:
    r"""$C$ (module docstring) from the residuals of :func:`~._features.feature_moments` (its
    blocks of query rows, in order): no pass over the logits."""
    L = k.shape[1]
    total, a0 = jnp.zeros((), k.dtype), 0
    for X, c, _, _ in res:
        n = X.shape[1]
        prev = (jnp.arange(a0, a0 + n) - 1) % L
        total = total + jnp.sum(k.T[a0 : a0 + n] * copy_probs(X, c, prev))
        a0 += n
    return total
