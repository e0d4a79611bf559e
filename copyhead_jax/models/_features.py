r"""Readout features of the collapsed posterior (docs/theory.md §9.1) on token indices, with a
hand-written gradient.

Per sequence the readout sees $F = A\Phi$ ($\Phi = [X, I_L]$, $L\times D$, $D = V + L$): its
row $a$ is $\sum_b A_{ab}\phi^b$. The collapsed energy needs only the moments of $F$ over the
kept rows (weights $k_{\alpha a}$: the run's mask times the causal target weights),
$$S_F=\sum_\alpha F_\alpha^\top K_\alpha F_\alpha,\qquad
B_F=\sum_\alpha F_\alpha^\top K_\alpha Y_\alpha .$$
For any function of $(S_F, B_F)$ with gradients $(G_S, G_B)$, the chain rule through
$F = A\Phi$, the activation and $s = \Phi M\Phi^\top$ gives
$$\delta F = K F (G_S + G_S^\top) + K Y G_B^\top,\quad
\delta A = \delta F\,\Phi^\top,\quad \delta s = \mathrm{act}^*(s, A, \delta A),\quad
\delta M = \sum_\alpha\Phi^\top\delta s\,\Phi .$$
Everything is in the query-major layout ``[P, a, b]``: the logits come from the key-major
selects of ``_compute`` applied to $M^\top$ ($s = (s^\top)$ of the transpose), so no
$P\times L\times L$ array is transposed; $\Phi^\top\delta s\,\Phi$ is three flat GEMMs over the
$P L$ rows and one per-sequence product. Measured against autodiff of the one-hot form it
replaced (``benchmarks/bench_collapsed.py``, L = 25, V = 5, float32, 2-core CPU): the gradient
of the collapsed energy 1.5-1.8x faster, its XLA temporaries 1.5-2x smaller.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._types import Gram, TokenBatch
from ._compute import logits_T, pick, pick_minor
from ._mask import causal_keys

#: ``[P, L]`` weight of each query row in the moments (mask times target weight)
RowWeights = Float[Array, "P L"]
AttnRows = Float[Array, "P L L"]  # A[alpha, a, b], query-major


def softmax_rows(s: AttnRows, causal: bool = False) -> AttnRows:
    """Softmax over keys (the minor axis); ``causal``: keys ``b > a`` get weight 0."""
    if causal:
        s = jnp.where(causal_keys(s.shape[-1])[None], s, -jnp.inf)
    e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def softmax_rows_vjp(s: AttnRows, A: AttnRows, dA: AttnRows) -> AttnRows:
    r"""$\delta s = A\odot(\delta A - \sum_b A\,\delta A)$ (masked keys have $A = 0$)."""
    del s  # the softmax's backward needs its output only
    return A * (dA - jnp.sum(A * dA, axis=-1, keepdims=True))


def linear_rows(s: AttnRows, scale: float, causal: bool = False) -> AttnRows:
    """``scale * s``; ``causal``: 0 for keys ``b > a``."""
    if causal:
        s = jnp.where(causal_keys(s.shape[-1])[None], s, 0.0)
    return scale * s


def linear_rows_vjp(s: AttnRows, A: AttnRows, dA: AttnRows, scale: float,
                    causal: bool = False) -> AttnRows:  # fmt: skip
    del s, A  # linear: the backward is the forward's transpose
    if causal:
        dA = jnp.where(causal_keys(dA.shape[-1])[None], dA, 0.0)
    return scale * dA


def feature_moments(act, M: Gram, t: TokenBatch, k: RowWeights):
    """``(S_F [D, D], B_F [D, V], residuals)`` for the activation ``act`` (module docstring)."""
    D = M.shape[0]
    V = D - t.shape[1]
    s = logits_T(M.T, t, V)  # logits_T of M^T is s, query-major
    A = act(s)
    X = jax.nn.one_hot(t, V, dtype=M.dtype)
    F = jnp.concatenate([jnp.einsum("pab,pbu->pau", A, X), A], axis=-1)  # [P, a, D]
    Fk = (F * k[..., None]).reshape(-1, D)
    Y = jax.nn.one_hot(jnp.roll(t, 1, axis=1), V, dtype=M.dtype)  # y^a = x^{a-1}
    S = Fk.T @ jnp.concatenate([F, Y], axis=-1).reshape(-1, D + V)  # one pass over the rows
    return S[:, :D], S[:, D:], (s, A, Fk)


def feature_moments_grad(act_vjp, res, t: TokenBatch, k: RowWeights, G_S: Gram,
                         G_B: Float[Array, "D V"]) -> Gram:  # fmt: skip
    r"""$\delta M$ of a function of $(S_F, B_F)$ with gradients ``(G_S, G_B)``."""
    s, A, Fk = res
    P, L = t.shape
    D = G_S.shape[0]
    V = D - L
    dF = (Fk @ (G_S + G_S.T)).reshape(P, L, D)
    dF = dF + k[..., None] * pick(G_B.T, jnp.roll(t, 1, axis=1))  # K Y G_B^T
    dA = dF[..., V:] + pick_minor(dF[:, :, None, :V], t[:, None, :])  # dF Phi^T
    ds = act_vjp(s, A, dA)
    X = jax.nn.one_hot(t, V, dtype=ds.dtype).reshape(-1, V)
    Q = jnp.einsum("pab,pbv->pav", ds, X.reshape(P, L, V))  # ds X
    return jnp.block([[X.T @ Q.reshape(-1, V), X.T @ ds.reshape(-1, L)],
                      [jnp.sum(Q, axis=0), jnp.sum(ds, axis=0)]])  # fmt: skip
