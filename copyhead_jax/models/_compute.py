r"""The batched compute path of the heads: token indices in, no one-hot products, hand-written
gradients in ``(M, R)`` (see :mod:`copyhead_jax.models._head` for the maths)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._types import Gram, TokenBatch
from ._mask import causal_keys_T, target_weights

# ---- the batched compute path --------------------------------------------------------------
#
# Layout. Tokens ``t[P, L]``; per-sequence arrays put the sequence axis first. Outputs are kept
# transposed, ``fT[P, V, L]``, and the softmax block key-major, ``A^T[P, b, a]``: with this
# layout every per-sequence product is a plain batched matmul (no transposed operand, which
# XLA:CPU would copy) and the softmax normalises over a middle axis, which XLA:CPU vectorises
# along the query axis (measured ~1.5-2x faster than a minor-axis softmax over rows of 25).
# One-hot products with a contraction of size V (``X @ M_E``, ``X @ R_E^T``) are written as
# selects: a K=V dot is dispatched to a GEMM library and measured 5-10x slower than the select.


def pick(table: Array, t: Array) -> Array:
    """``table[t]`` along a small leading axis (the V tokens), as a chain of selects.

    Shape ``t.shape + table.shape[1:]``; fuses into its consumer, unlike a gather."""
    lead = (1,) * t.ndim
    tt = t.reshape(t.shape + (1,) * (table.ndim - 1))
    row = lambda u: table[u].reshape(lead + table.shape[1:])
    out = jnp.where(tt == 0, row(0), 0.0)
    for u in range(1, table.shape[0]):
        out = jnp.where(tt == u, row(u), out)
    return out


def pick_minor(table: Array, t: Array) -> Array:
    """``table[..., t]`` along the minor axis (the V tokens); ``t`` broadcasts against
    ``table[..., 0]`` (same rank)."""
    out = jnp.where(t == 0, table[..., 0], 0.0)
    for u in range(1, table.shape[-1]):
        out = jnp.where(t == u, table[..., u], out)
    return out


def targets_T(t: TokenBatch, V: int) -> Float[Array, "P V L"]:
    """``Y^T``: ``y^a = x^{a-1}`` (periodic), transposed per sequence."""
    return jnp.swapaxes(jax.nn.one_hot(jnp.roll(t, 1, axis=1), V, dtype=jnp.float32), 1, 2)


def values(R: Float[Array, "V D"], t: TokenBatch) -> Float[Array, "P L V"]:
    """``val[alpha, b] = R phi^b = R_E[:, t_b] + R_P[:, b]``: the output of attending to key b."""
    V = R.shape[0]
    return pick(R[:, :V].T, t) + R[:, V:].T[None]


def _values_T(R: Float[Array, "V D"], t: TokenBatch) -> Float[Array, "P V L"]:
    """``val^T``, built directly in this layout: a transposed operand would send the batched
    product to a slower GEMM path (measured ~2x on the ``f = A val`` product)."""
    V = R.shape[0]
    return pick_minor(R[None, :, None, :V], t[:, None, :]) + R[None, :, V:]


def _one_hot_T(t: TokenBatch, V: int) -> Float[Array, "P V L"]:
    """``X^T`` per sequence, built directly in this layout (same reason as ``_values_T``)."""
    return (t[:, None, :] == jnp.arange(V)[None, :, None]).astype(jnp.float32)


def logits_T(M: Gram, t: TokenBatch, V: int) -> Float[Array, "P L L"]:
    """``s^T[alpha, b, a]``: every logit of every sequence, key-major."""
    M_EE, M_EP, M_PE, M_PP = M[:V, :V], M[:V, V:], M[V:, :V], M[V:, V:]
    # s^T[b, a] = M_EE[t_a, t_b] + M_EP[t_a, b] + M_PE[a, t_b] + M_PP[a, b], by selects
    # (selects: a gather from the L x L x V x V table of all logits measured 1.4x slower)
    K = pick(M_EE.T, t) + M_EP.T[None]  # [P, b, u]: M_EE[u, t_b] + M_EP[u, b]
    return pick_minor(K[:, :, None, :], t[:, None, :]) + pick(M_PE.T, t) + M_PP.T[None]


def softmax_forward(M: Gram, R, t: TokenBatch, causal: bool = False):
    """``fT[P, V, L]`` and the residuals ``(A^T, val)`` of the softmax head (``causal``: keys
    ``b > a`` get zero weight)."""
    V = R.shape[0]
    sT = logits_T(M, t, V)
    if causal:
        sT = jnp.where(causal_keys_T(t.shape[1])[None], sT, -jnp.inf)
    E = jnp.exp(sT - jnp.max(sT, axis=1, keepdims=True))
    AT = E / jnp.sum(E, axis=1, keepdims=True)  # softmax over keys b (axis 1)
    val = values(R, t)
    fT = jnp.einsum("pvb,pba->pva", _values_T(R, t), AT)  # f = A val
    return fT, (AT, val)


def softmax_energy(M: Gram, R, t: TokenBatch, keep: Bool[Array, " P"], causal: bool = False):
    r"""Masked squared-error sum and its gradient in $(M, R)$, written out by hand (``causal``:
    the masked softmax, and position 0 dropped from the sum, see :mod:`._mask`).

    With $e = f - y$, $\delta f = 2e$ (0 on padding rows), $\delta A = \delta f\,\mathrm{val}^\top$,
    the softmax backward is $\delta s = A\odot(\delta A - c)$ with
    $c_a = \sum_b A_{ab}\delta A_{ab} = \delta f^a\cdot f^a$ (no extra pass over $A$). Then
    $\delta M = \sum_\alpha \Phi^\top\delta s\,\Phi$ and
    $\delta R = \sum_\alpha (A^\top\delta f)^\top\Phi$ with $\Phi=[X, I_L]$,
    i.e. blocks $X^\top\delta s X$, $X^\top\delta s$, $\delta s X$, $\delta s$.
    """
    V = R.shape[0]
    X = jax.nn.one_hot(t, V, dtype=jnp.float32)  # [P, L, V]
    fT, (AT, val) = softmax_forward(M, R, t, causal)
    e = fT - targets_T(t, V)
    if causal:
        e = e * target_weights(t.shape[1], causal)[None, None, :]
    err = jnp.sum(e * e, axis=(1, 2))
    loss = jnp.sum(jnp.where(keep, err, 0.0))
    k3 = keep[:, None, None]
    dfT = jnp.where(k3, 2.0 * e, 0.0)  # [P, v, a]
    # value side: dval = A^T df (masked again: 0 * non-finite A on a padding row stays 0)
    dval = jnp.where(k3, jnp.einsum("pba,pva->pbv", AT, dfT), 0.0)  # [P, b, v]
    dR_E = jnp.einsum("pbv,pbu->vu", dval, X)
    dR_P = jnp.sum(dval, axis=0).T
    # logit side
    dAT = jnp.einsum("pbv,pva->pba", val, dfT)
    c = jnp.sum(dfT * fT, axis=1, keepdims=True)  # [P, 1, a]
    dsT = jnp.where(k3, AT * (dAT - c), 0.0)  # ds^T[b, a]
    dM = _logit_grad(dsT, X, t, V)
    return loss, (dM, jnp.concatenate([dR_E, dR_P], axis=1))


def _logit_grad(dsT: Float[Array, "P L L"], X, t: TokenBatch, V: int) -> Gram:
    r"""$\delta M=\sum_\alpha\Phi^\top\delta s\,\Phi$ from $\delta s^\top$, by blocks."""
    dM_PP = jnp.sum(dsT, axis=0).T
    dM_EP = jnp.sum(jnp.einsum("pba,pau->pbu", dsT, X), axis=0).T  # X^T ds
    Zq = jnp.einsum("pvb,pba->pva", _one_hot_T(t, V), dsT)  # (ds X)^T
    dM_PE = jnp.sum(Zq, axis=0).T
    dM_EE = jnp.einsum("pau,pva->uv", X, Zq)  # X^T ds X
    return jnp.block([[dM_EE, dM_EP], [dM_PE, dM_PP]])


def linear_forward(M: Gram, R, t: TokenBatch, scale: float):
    r"""``fT[P, V, L]`` of the linear head without forming $s$.

    $f = c\,\Phi M \Phi^\top \mathrm{val} = c\,\Phi H$ with $K = \Phi^\top\mathrm{val}$
    ($D\times V$: the token-summed values, then the values themselves) and $H = M K$: per sequence
    $O(DV(L + D))$ work instead of $O(L^2 V)$, and ``H`` for all sequences is one GEMM.
    """
    V = R.shape[0]
    P, L = t.shape
    D = V + L
    X = jax.nn.one_hot(t, V, dtype=jnp.float32)  # [P, b, u]
    valT = jnp.swapaxes(values(R, t), 1, 2)  # [P, v, b]
    KT = jnp.concatenate([jnp.einsum("pvb,pbu->pvu", valT, X), valT], axis=-1)  # [P, v, D]
    HT = (KT.reshape(P * V, D) @ M.T).reshape(P, V, D)  # (M K)^T
    fT = scale * (HT[:, :, V:] + pick_minor(HT[:, :, None, :V], t[:, None, :]))
    return fT, (X, KT)


def linear_energy(M: Gram, R, t: TokenBatch, keep: Bool[Array, " P"], scale: float):
    """Masked squared-error sum and its gradient in ``(M, R)`` for the reassociated linear head
    (the transposes of the two GEMMs and the selects of ``linear_forward``)."""
    V = R.shape[0]
    P, L = t.shape
    D = V + L
    fT, (X, KT) = linear_forward(M, R, t, scale)
    e = fT - targets_T(t, V)
    err = jnp.sum(e * e, axis=(1, 2))
    loss = jnp.sum(jnp.where(keep, err, 0.0))
    dfT = jnp.where(keep[:, None, None], (2.0 * scale) * e, 0.0)  # d loss / d H^T rows
    dHT = jnp.concatenate([jnp.einsum("pva,pau->pvu", dfT, X), dfT], axis=-1).reshape(P * V, D)
    dM = dHT.T @ KT.reshape(P * V, D)
    dKT = (dHT @ M).reshape(P, V, D)
    dvalT = dKT[:, :, V:] + pick_minor(dKT[:, :, None, :V], t[:, None, :])  # [P, v, b]
    dR_E = jnp.einsum("pvb,pbu->vu", dvalT, X)
    dR_P = jnp.sum(dvalT, axis=0)
    return loss, (dM, jnp.concatenate([dR_E, dR_P], axis=1))


def linear_causal_forward(M: Gram, R, t: TokenBatch, scale: float):
    r"""``fT[P, V, L]`` and the residuals ``(A^T, val)`` of the causal linear head, in the direct
    form $A = c\,(s\odot\mathrm{tril})$ (the mask breaks the reassociation of
    ``linear_forward``: $O(L^2V)$ per sequence, as the softmax head)."""
    V = R.shape[0]
    AT = scale * jnp.where(causal_keys_T(t.shape[1])[None], logits_T(M, t, V), 0.0)
    fT = jnp.einsum("pvb,pba->pva", _values_T(R, t), AT)  # f = A val
    return fT, (AT, values(R, t))


def linear_causal_energy(M: Gram, R, t: TokenBatch, keep: Bool[Array, " P"], scale: float):
    r"""Masked squared-error sum of the causal linear head (position 0 dropped) and its gradient:
    as ``softmax_energy`` with the linear backward $\delta s = c\,\delta A\odot\mathrm{tril}$."""
    V = R.shape[0]
    L = t.shape[1]
    X = jax.nn.one_hot(t, V, dtype=jnp.float32)  # [P, L, V]
    fT, (AT, val) = linear_causal_forward(M, R, t, scale)
    e = (fT - targets_T(t, V)) * target_weights(L, True)[None, None, :]
    err = jnp.sum(e * e, axis=(1, 2))
    loss = jnp.sum(jnp.where(keep, err, 0.0))
    dfT = jnp.where(keep[:, None, None], 2.0 * e, 0.0)  # [P, v, a]
    dval = jnp.einsum("pba,pva->pbv", AT, dfT)  # [P, b, v]
    dR = jnp.concatenate([jnp.einsum("pbv,pbu->vu", dval, X), jnp.sum(dval, axis=0).T], axis=1)
    dAT = jnp.einsum("pbv,pva->pba", val, dfT)
    dsT = scale * jnp.where(causal_keys_T(L)[None], dAT, 0.0)
    return loss, (_logit_grad(dsT, X, t, V), dR)


#: Sequences per block of the fused data term (``None``: all at once). Under ``vmap`` over R runs
#: a block's arrays are ``R x 64 x L x L``: they stay in this CPU's 32 MB L3 for R <= 64, where
#: the whole ``R x P x L x L`` set (160 MB at R = 64, P = 1000) streams from DRAM. Measured per
#: run-step at N = 64, P = 1000: 1.3x faster (softmax) and 1.4x (linear) at R = 64, 1.1x at
#: R = 16, 0.95x at R = 1 (scan overhead).
SEQ_BLOCK: int | None = 64


def _blocked(energy: Callable, M, R, t, keep):
    """``energy`` summed over blocks of ``SEQ_BLOCK`` sequences (a ``lax.scan``), so that the
    ``L x L`` arrays of a block stay in cache when many runs are batched; the last block is
    padded with masked rows, which contribute exactly nothing."""
    P = t.shape[0]
    if SEQ_BLOCK is None or P <= SEQ_BLOCK:
        return energy(M, R, t, keep)
    n = -(-P // SEQ_BLOCK)
    pad = n * SEQ_BLOCK - P
    t = jnp.concatenate([t, jnp.zeros((pad, t.shape[1]), t.dtype)]).reshape(n, SEQ_BLOCK, -1)
    keep = jnp.concatenate([keep, jnp.zeros((pad,), bool)]).reshape(n, SEQ_BLOCK)

    def body(acc, blk):
        loss, (gM, gR) = energy(M, R, *blk)
        return (acc[0] + loss, acc[1] + gM, acc[2] + gR), None

    zero = (jnp.zeros((), M.dtype), jnp.zeros_like(M), jnp.zeros_like(R))
    loss, gM, gR = jax.lax.scan(body, zero, (t, keep))[0]
    return loss, (gM, gR)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def fused_sq_error(energy, M, R, t, keep):
    """Data term of U as a function of ``(M, R)``; its JVP reuses the hand-written gradient.

    A JVP rule (rather than a VJP) keeps forward mode and second derivatives available: the
    tangent map ``<dM, gM> + <dR, gR>`` is linear, JAX transposes it for reverse mode, and the
    gradient formulas are themselves differentiable."""
    return _blocked(energy, M, R, t, keep)[0]


@fused_sq_error.defjvp
def _fused_sq_error_jvp(energy, primals, tangents):
    M, R, t, keep = primals
    tM, tR = tangents[0], tangents[1]
    loss, (gM, gR) = _blocked(energy, M, R, t, keep)
    return loss, jnp.sum(gM * tM) + jnp.sum(gR * tR)
