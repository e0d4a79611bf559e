r"""Exact data statistics of a stationary Markov chain over V tokens.

For a chain with row-stochastic transition matrix $T$ started from its stationary law $\pi$
($\pi T=\pi$), every position has marginal $\pi$ and the one-hot pair moments depend only on the
lag: for $c\ge b$,
$$E[x^b_v\,x^c_w]=\pi_v\,(T^{c-b})_{vw},$$
and the transpose for $c<b$. These are the statistics ``S4[b, v, c, w]``, ``S2[b, v]`` through
which the general action takes the data (:mod:`.action`, docs/theory.md §3); for
$T=J/V$ (i.i.d. uniform tokens) they are :func:`.action.ek_stats` exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Float

from ..sources import stationary_law as stationary_law  # one solver, next to the chain sampler

Transition = Float[np.ndarray, "V V"]


def lag_moments(T: Transition, L: int) -> Float[np.ndarray, "L V V"]:
    r"""``K[k, v, w]`` $=E[x^b_v x^{b+k}_w]=\pi_v (T^k)_{vw}$ for lags $k=0..L-1$ (float64)."""
    T = np.asarray(T, dtype=np.float64)
    pi = stationary_law(T)
    out = np.empty((L,) + T.shape)
    Tk = np.eye(T.shape[0])
    for k in range(L):
        out[k] = pi[:, None] * Tk
        Tk = Tk @ T
    return out


def markov_stats(T: Transition, L: int) -> tuple[jax.Array, jax.Array]:
    """Expected ``S4[b, v, c, w] = E x^b_v x^c_w`` and ``S2[b, v] = E x^b_v`` of the stationary
    chain ``T`` over ``L`` positions, in the layout of :func:`.action.ek_stats` (default float
    dtype: float64 under ``jax.enable_x64``)."""
    K = lag_moments(T, L)
    b, c = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    lag = np.abs(c - b)
    S4 = np.where((c >= b)[:, :, None, None], K[lag], np.swapaxes(K[lag], -1, -2))  # [b, c, v, w]
    S4 = np.transpose(S4, (0, 2, 1, 3))
    S2 = np.broadcast_to(stationary_law(T), (L, T.shape[0]))
    dt = jnp.result_type(float)
    return jnp.asarray(S4, dt), jnp.asarray(S2, dt)
