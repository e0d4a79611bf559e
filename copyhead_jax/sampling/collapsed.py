r"""The collapsed posterior of a reduced head (docs/theory.md §9.1): the readout integrated out.

Given $W^G$ the rows of $\hat W^O$ are i.i.d. $\mathcal N(\Lambda^{-1}b_v, \Lambda^{-1})$ with
$$\Lambda=\alpha\,E^\top S_F E+\sigma_O^{-2}I,\qquad B=\beta\,E^\top B_F,\qquad
\alpha=\frac{2w}{\chi N},\ \beta=\frac{2w}{\sqrt{\chi N}},$$
$E$ the ``[D, N]`` embeddings, $w$ the likelihood weight and $(S_F, B_F)$ the moments of the
readout features over the kept rows (:mod:`copyhead_jax.models._features`). The marginal energy
$$U_m(W^G)=\frac{\lVert W^G\rVert^2}{2\sigma_G^2}-\tfrac12\operatorname{tr}B^\top\Lambda^{-1}B
+\tfrac V2\log\det(\sigma_O^2\Lambda)+w\textstyle\sum\lvert y\rvert^2 .$$
Its data part is a ``custom_jvp`` with the gradient written out: with $Z=\Lambda^{-1}B$,
$G_\Lambda=\tfrac12(ZZ^\top+V\Lambda^{-1})$ and $G_B=-Z$,
$$\partial_{S_F}=\alpha\,E G_\Lambda E^\top,\quad \partial_{B_F}=\beta\,E G_B,\quad
\partial_E=2\alpha\,S_F E G_\Lambda+\beta\,B_F G_B^\top ,$$
and $\partial_M$ from the features' backward. The tangent map is linear, so reverse mode and
the whitening's Hessian (forward over reverse: the gradient formulas are themselves
differentiable) stay available. Not differentiable in the tokens or row weights.
$\Lambda$ is D x D: in the energy, $\Lambda^{-1}$ and $\log\det\Lambda$ come from Gauss-Jordan
sweeps over its D pivots in one ``lax.fori_loop`` (:func:`spd_inverse`; a Cholesky factor and
three triangular solves took four such loops); the readout draw keeps the Cholesky factor. No
jaxlib LAPACK call inside vmapped chains: see ``_runtime``.
"""

from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float

from .._types import Mask, TokenBatch
from ..models import (
    AbstractHead,
    attention_sum,
    copy_sum,
    feature_moments,
    feature_moments_grad,
    moments_and_attention,
    target_weights,
)
from ..objective import Objective

#: Sequences used for the marginal's whitening Hessians (any constant SPD preconditioner leaves
#: the posterior unchanged; the data part is rescaled by P / n_used).
MARGINAL_PRECOND_SEQS = 256


def cholesky(A: Float[Array, "n n"]) -> Float[Array, "n n"]:
    """Lower Cholesky factor, column by column (``fori_loop``: no LAPACK call)."""
    n = A.shape[-1]
    idx = jnp.arange(n)

    def body(j, L):
        v = A[:, j] - L @ L[j, :]
        return L.at[:, j].set(jnp.where(idx >= j, v / jnp.sqrt(v[j]), 0.0))

    return lax.fori_loop(0, n, body, jnp.zeros_like(A))


def spd_inverse(A: Float[Array, "n n"]) -> tuple[Float[Array, "n n"], Float[Array, ""]]:
    r"""$(A^{-1}, \log\det A)$ of a symmetric positive-definite $A$ by Gauss-Jordan sweeps on
    the pivots in order (``fori_loop``: no LAPACK call). Without pivoting this is stable for SPD
    matrices: the pivots are the diagonal of $A = LDL^\top$, all positive, and their logs sum
    to $\log\det A$. One loop of n steps, where a Cholesky factor and the solves for
    $\Lambda^{-1}B$ and $\Lambda^{-1}$ take four."""
    n = A.shape[-1]
    idx = jnp.arange(n)

    def sweep(k, carry):
        X, logdet = carry
        d = X[k, k]
        row = jnp.where(idx == k, 1.0, X[k]) / d  # row k after the sweep
        col = jnp.where(idx == k, 0.0, X[:, k])
        X = jnp.where(
            (idx == k)[:, None],
            row[None],
            jnp.where((idx == k)[None], 0.0, X) - col[:, None] * row[None],
        )
        return X, logdet + jnp.log(d)

    X, logdet = lax.fori_loop(0, n, sweep, (A, jnp.zeros((), A.dtype)))
    return 0.5 * (X + X.T), logdet


def solve_lower(L, B):
    """``L X = B`` by forward substitution."""

    def body(i, X):
        return X.at[i].set((B[i] - L[i] @ X) / L[i, i])

    return lax.fori_loop(0, L.shape[0], body, jnp.zeros_like(B))


def solve_upper(L, B):
    """``L^T X = B`` by back substitution."""
    n = L.shape[0]

    def body(k, X):
        i = n - 1 - k
        return X.at[i].set((B[i] - L[:, i] @ X) / L[i, i])

    return lax.fori_loop(0, n, body, jnp.zeros_like(B))


def row_weights(head: AbstractHead, tokens: TokenBatch, mask: Mask, dtype) -> Array:
    """``[P, L]``: 1 on the kept sequences' target rows (the causal mask drops position 0)."""
    keep = (mask > 0).astype(dtype)
    return keep[:, None] * target_weights(tokens.shape[1], head.causal).astype(dtype)[None]


def _constants(head: AbstractHead, obj: Objective) -> tuple[float, float, float]:
    return float(obj.likelihood_weight), float(head.chi), float(obj.sigma_O)


def _scales(consts, N: int) -> tuple[float, float]:
    """``(alpha, beta)`` of the module docstring."""
    w, chi, _ = consts
    return 2 * w / (chi * N), 2 * w / math.sqrt(chi * N)


def _precision(SF, BF, E, consts):
    """``(Lambda, B)`` from the feature moments (module docstring)."""
    N = E.shape[1]
    alpha, beta = _scales(consts, N)
    Lam = alpha * (E.T @ SF @ E) + jnp.eye(N, dtype=SF.dtype) / consts[2] ** 2
    return Lam, beta * (E.T @ BF)


def readout_conditional(head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective):
    r"""``(Lam, B, c)``: given ``head.W_G``, the readout rows are i.i.d.
    $\hat W^O_v\sim\mathcal N(\Lambda^{-1}B_{:,v},\Lambda^{-1})$ (module docstring), and
    ``c = w sum |y|^2`` over the kept rows."""
    M = head.logit_gram()
    k = row_weights(head, tokens, mask, M.dtype)
    SF, BF, _ = feature_moments(head.feature_activation(), M, tokens, k)
    Lam, B = _precision(SF, BF, head.embeddings(), _constants(head, obj))
    return Lam, B, obj.likelihood_weight * jnp.sum(k)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def collapsed_data(act, consts, M, E, t, k) -> Float[Array, ""]:
    r"""$-\tfrac12\operatorname{tr}B^\top\Lambda^{-1}B+\tfrac V2\log\det(\sigma_O^2\Lambda)$ as a
    function of ``(M, E)`` (``act``: the head's ``feature_activation()``, ``consts``:
    ``(w, chi, sigma_O)``, ``k`` the row weights)."""
    return _collapsed(act, consts, M, E, t, k, grad=False)[0]


def _collapsed(act, consts, M, E, t, k, grad: bool):
    """``(value, dM, dE, (S_F, B_F, residuals))`` of :func:`collapsed_data` (``grad=False``:
    the gradients ``None``)."""
    SF, BF, res = feature_moments(act, M, t, k)
    value, Li, Z = _value(SF, BF, E, consts)
    if not grad:
        return value, None, None, (SF, BF, res)
    gM, gE = _grads(act, consts, E, t, k, (SF, BF, res), Li, Z)
    return value, gM, gE, (SF, BF, res)


def _value(SF, BF, E, consts):
    """``(value, Lambda^-1, Lambda^-1 B)`` of :func:`collapsed_data` from the moments."""
    Lam, B = _precision(SF, BF, E, consts)
    V, N = B.shape[1], E.shape[1]
    Li, logdet = spd_inverse(Lam)
    Z = Li @ B
    return -0.5 * jnp.sum(B * Z) + 0.5 * V * (logdet + 2 * N * math.log(consts[2])), Li, Z


def _grads(act, consts, E, t, k, moments, Li, Z, g=1.0, copy=None):
    """``(dM, dE)`` of ``g`` times :func:`collapsed_data` plus ``copy`` times the copy sum
    (:func:`~copyhead_jax.models.copy_sum`), one backward pass over the blocks."""
    SF, BF, res = moments
    V, N = Z.shape[1], E.shape[1]
    alpha, beta = _scales(consts, N)
    G_L = 0.5 * (Z @ Z.T + V * Li)
    gM = feature_moments_grad(
        act, res, t, k, g * alpha * (E @ G_L @ E.T), -g * beta * (E @ Z), copy
    )
    gE = g * (2 * alpha * (SF @ E @ G_L) - beta * (BF @ Z.T))
    return gM, gE


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def collapsed_data_and_copy(act, consts, M, E, t, k) -> tuple[Array, Array]:
    r"""``(collapsed_data(...), copy_sum)``: the data part of $U_m$ and
    $\sum_{\alpha a}k_{\alpha a}A^\alpha_{a,a-1}$ (the copy order parameter's numerator) from
    one forward pass, their reverse-mode gradient in ``(M, E)`` from one backward pass for any
    cotangents of the two (autodiff would run the attention's backward twice). Reverse mode
    only: the whitening's Hessians (forward over reverse) use :func:`collapsed_data`."""
    return _data_and_copy_fwd(act, consts, M, E, t, k)[0]


def _data_and_copy_fwd(act, consts, M, E, t, k):
    SF, BF, res = feature_moments(act, M, t, k)
    value, Li, Z = _value(SF, BF, E, consts)
    return (value, copy_sum(res, k)), (E, t, k, (SF, BF, res), Li, Z)


def _data_and_copy_bwd(act, consts, saved, cot):
    E, t, k, moments, Li, Z = saved
    gM, gE = _grads(act, consts, E, t, k, moments, Li, Z, cot[0], cot[1])
    return gM, gE, None, None


collapsed_data_and_copy.defvjp(_data_and_copy_fwd, _data_and_copy_bwd)


@collapsed_data.defjvp
def _collapsed_data_jvp(act, consts, primals, tangents):
    M, E, t, k = primals
    value, gM, gE, _ = _collapsed(act, consts, M, E, t, k, grad=True)
    return value, jnp.sum(gM * tangents[0]) + jnp.sum(gE * tangents[1])


def marginal_energy(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective, weight_scale=1.0
):
    r"""$U_m(W^G)=-\log\int e^{-U}d\hat W^O/(2\pi\sigma_O^2)^{VN/2}$ (quenched ``U``; the
    readout of ``head`` is ignored). ``weight_scale`` multiplies every kept row's weight (the
    whitening's subsample stands for all rows)."""
    M = head.logit_gram()
    k = weight_scale * row_weights(head, tokens, mask, M.dtype)
    data = collapsed_data(
        head.feature_activation(), _constants(head, obj), M, head.embeddings(), tokens, k
    )
    return _with_prior(data, head, k, obj)


def _with_prior(data, head: AbstractHead, k, obj: Objective):
    r"""$U_m$ from its data part (:func:`collapsed_data`): plus the prior of ``W_G`` and
    ``w sum k`` (the targets' $w\sum\lvert y\rvert^2$, one-hot)."""
    prior = jnp.sum(head.W_G**2) / (2 * obj.sigma_G**2)
    return prior + data + obj.likelihood_weight * jnp.sum(k)


def marginal_energy_and_copy(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective
) -> tuple[Array, Array]:
    r"""``(U_m, C)``: :func:`marginal_energy` and the copy sum
    $C=\sum_{\alpha a}k_{\alpha a}A^\alpha_{a,a-1}$ over the kept rows, whose reverse-mode
    gradient (any function of the two) takes one backward pass over the data
    (:func:`collapsed_data_and_copy`): an energy restrained in the copy order parameter, as a
    profile's umbrella windows sample it, at about the cost of the energy alone."""
    M = head.logit_gram()
    k = row_weights(head, tokens, mask, M.dtype)
    data, C = collapsed_data_and_copy(
        head.feature_activation(), _constants(head, obj), M, head.embeddings(), tokens, k
    )
    return _with_prior(data, head, k, obj), C


def marginal_value_grad(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective, with_attention=True
):
    r"""``(U_m, dU_m/dW^G, moments)`` at ``head.W_G`` in one pass: :func:`marginal_energy`
    and its gradient by the same formulas (what autodiff of it evaluates), and
    ``moments = (S_F, B_F, sum_p A_p)`` over the kept rows and sequences, from which
    :func:`observed_from_moments` draws the readout and observes it with no further pass.
    ``with_attention`` (a bool, may be traced): where false the attention sum is zeros, its
    reduction over the ``P x L x L`` attention skipped."""
    M, pullback = jax.vjp(lambda W: eqx.tree_at(lambda h: h.W_G, head, W).logit_gram(), head.W_G)
    k = row_weights(head, tokens, mask, M.dtype)
    act, E = head.feature_activation(), head.embeddings()
    value, gM, _, (SF, BF, res) = _collapsed(act, _constants(head, obj), M, E, tokens, k, True)
    keep = (mask > 0).astype(M.dtype)
    L = tokens.shape[1]
    A_sum = lax.cond(
        with_attention,
        lambda r: attention_sum(r, keep),
        lambda r: jnp.zeros((L, L), M.dtype),
        res,
    )
    U = _with_prior(value, head, k, obj)
    grad = pullback(gM)[0] + head.W_G / obj.sigma_G**2
    return U, grad, (SF, BF, A_sum)


def draw_readout(key, head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective):
    """``head`` with ``W_O_hat`` drawn exactly from its Gaussian conditional given ``W_G``."""
    Lam, B, _ = readout_conditional(head, tokens, mask, obj)
    return eqx.tree_at(lambda h: h.W_O_hat, head, _gaussian_draw(key, Lam, B).T)


def _gaussian_draw(key, Lam, B) -> Float[Array, "N V"]:
    r"""Columns drawn from $\mathcal N(\Lambda^{-1}B_{:,v},\Lambda^{-1})$ through the Cholesky
    factor of $\Lambda$."""
    L = cholesky(Lam)
    mean = solve_upper(L, solve_lower(L, B))
    return mean + solve_upper(L, jax.random.normal(key, mean.shape, mean.dtype))


def draw_observed(key, head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective):
    r"""``(head, U, loss, A)``: ``head`` with ``W_O_hat`` drawn as :func:`draw_readout` draws
    it, and there the quenched energy U, the training loss (mean over the kept sequences of
    $\lvert f-y\rvert^2$) and the kept sequences' mean attention matrix, from one pass over the
    data (:func:`~copyhead_jax.models.moments_and_attention`, then
    :func:`observed_from_moments`)."""
    M = head.logit_gram()
    k = row_weights(head, tokens, mask, M.dtype)
    keep = (mask > 0).astype(M.dtype)
    moments = moments_and_attention(head.feature_activation(), M, tokens, k, keep)
    return observed_from_moments(key, head, moments, tokens, mask, obj)


def observed_from_moments(
    key, head: AbstractHead, moments, tokens: TokenBatch, mask: Mask, obj: Objective
):
    r""":func:`draw_observed`'s ``(head, U, loss, A)`` from the data's moments at ``head.W_G``
    (``moments = (S_F, B_F, sum_p A_p)``, as :func:`marginal_value_grad` returns them), with
    no pass over the data. With $\hat W^O$ ``[V, N]`` and $Q=E\hat W^{O\top}/\sqrt{\chi N}$
    (``[D, V]``: $f^{\alpha a}=Q^\top F^{\alpha a}$) the kept rows' squared errors sum to
    $\operatorname{tr}Q^\top S_FQ-2\operatorname{tr}Q^\top B_F+\sum k$ ($\lvert y\rvert=1$)."""
    SF, BF, A_sum = moments
    k = row_weights(head, tokens, mask, SF.dtype)
    E = head.embeddings()
    W = _gaussian_draw(key, *_precision(SF, BF, E, _constants(head, obj)))  # [N, V]
    head = eqx.tree_at(lambda h: h.W_O_hat, head, W.T)
    Q = E @ W / math.sqrt(head.chi * E.shape[1])
    sq = jnp.sum(Q * (SF @ Q)) - 2 * jnp.sum(Q * BF) + jnp.sum(k)
    prior = jnp.sum(head.W_G**2) / (2 * obj.sigma_G**2) + jnp.sum(W**2) / (2 * obj.sigma_O**2)
    n = jnp.maximum(jnp.sum(mask), 1.0)
    return head, obj.likelihood_weight * sq + prior, sq / n, A_sum / n


def with_WG(head: AbstractHead, x):
    """``head`` with ``W_G`` set to the flat vector ``x`` (reshaped)."""
    return eqx.tree_at(lambda h: h.W_G, head, x.reshape(head.W_G.shape))


def marginal_whitening(
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    n_seqs: int = MARGINAL_PRECOND_SEQS,
):
    r"""$C=V\Lambda_c^{-1/2}$ for the flat ``W_G`` from the Hessian of :func:`marginal_energy`
    at ``head.W_G`` on at most ``n_seqs`` sequences (every row's weight scaled by
    P / n_used), eigenvalues floored at the prior curvature ``1/sigma_G^2``."""
    n = min(n_seqs, tokens.shape[0])
    used = jnp.maximum(jnp.sum(mask[:n] > 0), 1)
    scale = jnp.sum(mask > 0) / used
    t, m = tokens[:n], mask[:n]
    x0 = head.W_G.ravel()
    g = jax.grad(lambda x: marginal_energy(with_WG(head, x), t, m, obj, scale))
    eye = jnp.eye(x0.size, dtype=x0.dtype)
    H = lax.map(lambda v: jax.jvp(g, (x0,), (v,))[1], eye, batch_size=32)
    lam, vec = jnp.linalg.eigh(0.5 * (H + H.T))
    return vec * (jnp.maximum(lam, obj.sigma_G**-2) ** -0.5)[None, :]
