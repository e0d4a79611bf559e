r"""The causal mask: query ``a`` attends to keys ``b <= a`` only.

With the mask the target is not periodic: position ``a = 0`` has no previous token, so it is
dropped from the loss (weight 0 in the squared-error sum, the test loss and the copy accuracy);
positions ``1..L-1`` keep ``y^a = x^{a-1}``. Softmax attention normalises over ``b <= a``;
linear attention sets ``s_ab = 0`` for ``b > a`` before its scale. Without the mask
(``causal=False``) every path is today's, op for op.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float


def causal_keys(L: int) -> Bool[Array, "L L"]:
    """``[a, b]``: True where query ``a`` may attend to key ``b`` (``b <= a``)."""
    return jnp.arange(L)[None, :] <= jnp.arange(L)[:, None]


def causal_keys_T(L: int) -> Bool[Array, "L L"]:
    """The key-major transpose ``[b, a]`` of :func:`causal_keys` (the batched path's layout)."""
    return causal_keys(L).T


def target_weights(L: int, causal: bool) -> Float[Array, " L"]:
    """Weight of each position in the loss: 1, except 0 at ``a = 0`` under the causal mask."""
    w = jnp.ones((L,), jnp.float32)
    return w.at[0].set(0.0) if causal else w


def mask_logits(s: Float[Array, "... L L"], fill: float) -> Float[Array, "... L L"]:
    """``s_ab`` where ``b <= a``, ``fill`` elsewhere (``-inf`` for softmax, 0 for linear)."""
    L = s.shape[-1]
    keys = causal_keys(L).reshape((1,) * (s.ndim - 2) + (L, L))
    return jnp.where(keys, s, jnp.asarray(fill, s.dtype))
