r"""General actions ``S(G)`` on a full ``L x L`` matrix (docs/theory.md §2b, §3).

One code path serves every form. The data enter only through two sufficient statistics of the
one-hot tokens, ``S4[b,v,c,w] = mean_alpha x^b_v x^c_w`` and ``S2[b,v] = mean_alpha x^b_v``:

* EK / data-averaged form (ii): their expectations, ``S4 = delta_bc (I/V - J/V^2) + J/V^2``,
  ``S2 = 1/V`` (docs/theory.md §1 moments);
* exact finite-P form (i): their values on a training set (:func:`dataset_stats`).

With ``Z = [X, I_L]`` (``L x D``, ``D = V + L``) and ``B = A^T A``, ``C = A^T G*``, the moments are
``M = mean Z^T B Z`` and ``m = mean Z^T C X`` (because ``Y = G* X``). A Gram matrix
``Gamma = R R^T`` of the ``D`` features turns them into ``calA = R^T M R``, ``b = R^T m``: the prior
Gram ``diag(sigma_e^2 I_V, sigma_p^2 I_L)`` gives docs/theory.md §3 (``Psi = Z R``); a realised
embedding Gram ``U U^T / N`` gives the finite-width theory of §2b. The logit prior covariance is
``Cbar = Zh Gamma Zh^T`` with rows ``zh_a = (1_V/V, e_a)`` (the token-independent part of
``h^a``), which is ``sigma_p^2 I + sigma_e^2 J/V`` for the prior Gram.

These functions compute in the dtype of their inputs: call them under ``jax.enable_x64(True)``
(or with float64 arrays) for the identities of §7.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

from .. import conventions as conv
from .._checks import check_choice
from .._types import AttnMatrix, Gram, LogitMatrix, Scalar, TokenBatch
from ._common import OBJECTIVES, as_float
from .heads import theory_of
from .params import TheoryParams

# ---------------------------------------------------------------------------------------------
# Basis, projections


def shift_matrix(L: int) -> AttnMatrix:
    """``G*_{ab} = delta_{a-1,b}`` (indices mod L): the copy pattern (:mod:`..conventions`)."""
    return conv.shift_matrix(L)


def basis(L: int) -> tuple[AttnMatrix, AttnMatrix]:
    """The unit-Frobenius (non-orthogonal) basis ``B1 = J/L``, ``B2 = G*/sqrt(L)`` (§4)."""
    return conv.basis(L)


def from_coefficients(c1, cG, L: int) -> AttnMatrix:
    """``c1 B1 + cG B2``."""
    B1, B2 = basis(L)
    return c1 * B1 + cG * B2


def project(G: AttnMatrix) -> dict[str, Scalar]:
    """Least-squares coefficients on ``{B1, B2}`` and the subspace cosine (docs/theory.md §6).

    Returns ``c1, cG`` and ``cosine = <G, Pi G>/(||G|| ||Pi G||)`` (nan for G=0), from
    :func:`copyhead_jax.conventions.project`.
    """
    pr = conv.project(G)
    return {"c1": pr.c1, "cG": pr.cG, "cosine": pr.coverage}


# ---------------------------------------------------------------------------------------------
# Feature Grams


def prior_gram(params: TheoryParams) -> Gram:
    """``diag(sigma_e^2 I_V, sigma_p^2 I_L)``: the ``N -> infinity`` embedding Gram (§3.1)."""
    return jnp.diag(
        jnp.concatenate(
            [
                jnp.full((params.V,), params.sigma_e**2),
                jnp.full((params.L,), params.sigma_p**2),
            ]
        )
    )


def embedding_gram(W_E, b) -> Gram:
    """``U U^T / N`` with ``U = [W_E^T ; b^T]`` (``W_E: N x V``, ``b: N x L``), theory §2b."""
    U = jnp.concatenate([W_E.T, b.T], axis=0)
    return U @ U.T / W_E.shape[0]


def gram_root(gram: Gram):
    """``R`` with ``R R^T = gram`` (symmetric eigen-root; a rank-deficient Gram is allowed)."""
    w, Qm = jnp.linalg.eigh(0.5 * (gram + gram.T))
    return Qm * jnp.sqrt(jnp.clip(w, 0.0))[None, :]


def logit_cov(gram: Gram, L: int) -> AttnMatrix:
    """``Cbar = Zh Gram Zh^T``: prior covariance factor of the token-independent logits (§3.2)."""
    V = gram.shape[0] - L
    Zh = jnp.concatenate([jnp.full((L, V), 1.0 / V), jnp.eye(L)], axis=1)
    return Zh @ gram @ Zh.T


# ---------------------------------------------------------------------------------------------
# Data statistics


class DatasetStats(NamedTuple):
    """Sufficient statistics of a training set of one-hot sequences (P is a float array)."""

    S4: jax.Array  # [L, V, L, V]: mean_alpha x^b_v x^c_w
    S2: jax.Array  # [L, V]: mean_alpha x^b_v
    P: jax.Array  # number of sequences


def dataset_stats(tokens: TokenBatch, V: int) -> DatasetStats:
    """Statistics of a token batch ``[P, L]`` (ints in ``[0, V)``), for the finite-P form (i)."""
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be an int array [P, L], got shape {tokens.shape}")
    X = jax.nn.one_hot(tokens, V, dtype=jnp.result_type(float))
    P = tokens.shape[0]
    return DatasetStats(
        S4=jnp.einsum("pbv,pcw->bvcw", X, X) / P, S2=jnp.mean(X, axis=0), P=as_float(P)
    )


def ek_stats(L: int, V: int) -> tuple[jax.Array, jax.Array]:
    """Expected ``S4, S2`` under i.i.d. uniform tokens (docs/theory.md §1)."""
    eye_L, eye_V = jnp.eye(L), jnp.eye(V)
    S4 = (
        eye_L[:, None, :, None] * (eye_V / V - 1.0 / V**2)[None, :, None, :]
        + jnp.ones((L, V, L, V)) / V**2
    )
    return S4, jnp.full((L, V), 1.0 / V)


def moments(A: AttnMatrix, S4, S2, w=None) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``M = mean Z^T A^T W A Z`` ``[D, D]``, ``m = mean Z^T A^T W G* X`` ``[D, V]``, mean
    ``sum_a w_a |y^a|^2``; ``w`` ``[L]``: the loss weight of each position (``None``: all 1,
    ``W = I``; the causal mask drops ``a = 0``, docs/theory.md §12)."""
    L = A.shape[0]
    if w is not None:
        return _weighted_moments(A, S4, S2, w)
    B = A.T @ A
    C = A.T @ shift_matrix(L)
    M_XX = jnp.einsum("bc,bvcw->vw", B, S4)
    M_XI = S2.T @ B
    M = jnp.block([[M_XX, M_XI], [M_XI.T, B]])
    m = jnp.concatenate([jnp.einsum("bc,bvcw->vw", C, S4), C @ S2], axis=0)
    ysq = jnp.einsum("bvbv->", S4)  # = L for one-hot tokens
    return M, m, ysq


def _weighted_moments(A, S4, S2, w):
    """:func:`moments` with the loss weights ``W = diag(w)`` (docs/theory.md §12)."""
    Gs = shift_matrix(A.shape[0]).astype(A.dtype)
    WA = w[:, None] * A
    B, C = A.T @ WA, WA.T @ Gs
    M_XX = jnp.einsum("bc,bvcw->vw", B, S4)
    M_XI = S2.T @ B
    M = jnp.block([[M_XX, M_XI], [M_XI.T, B]])
    m = jnp.concatenate([jnp.einsum("bc,bvcw->vw", C, S4), C @ S2], axis=0)
    ysq = jnp.einsum("bc,bvcv->", Gs.T @ (w[:, None] * Gs), S4)  # sum_a w_a |x^{a-1}|^2
    return M, m, ysq


def causal_weights(L: int, dtype=None):
    """Loss weight of each position under the causal mask: 0 at ``a = 0``, else 1 (§12)."""
    return jnp.ones((L,), dtype or jnp.result_type(float)).at[0].set(0.0)


def attention_of(G: LogitMatrix, attention: str, causal: bool = False) -> AttnMatrix:
    """``A`` of logits ``G`` for the attention kind ``attention`` (:mod:`.heads`); with ``causal``
    query ``a`` sees keys ``b <= a`` only (docs/theory.md §12)."""
    return theory_of(attention).attention(G, causal)


# ---------------------------------------------------------------------------------------------
# Terms of the action


def _spd_solve(K, b):
    """``K^{-1} b`` for symmetric positive definite ``K`` (Cholesky).

    Derivatives by implicit differentiation (``custom_linear_solve``): every order reuses one
    factorisation and solves with ``b``'s columns, instead of differentiating the Cholesky
    factor (values are those of ``cho_solve(cho_factor(K), b)``).
    """
    cf = cho_factor(jax.lax.stop_gradient(K))
    return jax.lax.custom_linear_solve(
        lambda x: K @ x, b, lambda _, x: cho_solve(cf, x), symmetric=True
    )


def _QD(M, m, ysq, *, R, P, params: TheoryParams):
    """``Q`` and ``D`` of docs/theory.md §3 (i)/(ii) from the moments and a Gram root ``R``."""
    return solve_QD(R.T @ M @ R, R.T @ m, ysq, P=P, params=params)


def solve_QD(calA, bvec, ysq, *, P, params: TheoryParams):
    """``Q`` and ``D`` from the rotated moments ``calA = R^T M R``, ``b = R^T m`` (§3; ``P`` is
    the raw number of sequences, the likelihood convention gives the effective one, §2b)."""
    Pe = conv.effective_P(P, L=params.L, likelihood=params.likelihood)
    sigma2, chi = params.sigma2_chi  # the chi switches, §2b
    lam = sigma2 / (Pe * params.sigma_O**2)
    K = calA + lam * jnp.eye(calA.shape[0], dtype=calA.dtype)
    fit = jnp.sum(bvec * _spd_solve(K, bvec))
    Q = chi * Pe / (2.0 * sigma2) * (ysq - fit)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diag(cho_factor(K)[0])))
    D = 0.5 * params.V * (logdet - calA.shape[0] * jnp.log(lam))
    return Q, D


def _terms(
    G, S4, S2, P, *, gram, params: TheoryParams, attention: str, causal: bool = False
) -> dict[str, Scalar]:
    L = params.L
    if G.shape != (L, L):
        raise ValueError(f"G must have shape (L, L) = ({L}, {L}), got {G.shape}")
    kind = theory_of(attention)
    if gram is None:
        gram = prior_gram(params)
        R = jnp.diag(jnp.sqrt(jnp.diag(gram)))
    else:
        gram = jnp.asarray(gram)
        if gram.shape != (params.V + L, params.V + L):
            raise ValueError(f"gram must have shape (V+L, V+L) = {(params.V + L,) * 2}")
        R = gram_root(gram)
    cbar = logit_cov(gram, L)
    A = kind.attention(G, causal)
    w = causal_weights(L, A.dtype) if causal else None
    Q, D = _QD(*moments(A, S4, S2, w), R=R, P=P, params=params)
    return {"Q": Q, "D": D, **kind.prior(G, cbar=cbar, params=params, causal=causal)}


def _combine(t, objective: str, pushforward: bool) -> Scalar:
    check_choice("objective", objective, OBJECTIVES)
    out = t["Q"] + t["R"]
    if objective == "post":
        out = out + t["D"]
    return out + t["J"] if pushforward else out


def ek_terms(
    G: LogitMatrix,
    *,
    P,
    params: TheoryParams,
    attention: str = "linear",
    gram: Gram | None = None,
    stats: tuple[jax.Array, jax.Array] | None = None,
    causal: bool = False,
) -> dict[str, Scalar]:
    """``Q, D, R, J`` of the EK form (ii) at ``G`` (``A = G`` linear, ``softmax_b(G)`` softmax).

    ``stats``: the expected ``(S4, S2)`` of the token source (default i.i.d. uniform,
    :func:`ek_stats`; a Markov chain: :func:`.markov.markov_stats`); ``causal``: the mask and
    the non-periodic target of docs/theory.md §12."""
    S4, S2 = ek_stats(params.L, params.V) if stats is None else stats
    return _terms(G, S4, S2, P, gram=gram, params=params, attention=attention, causal=causal)


def ek_action(
    G: LogitMatrix,
    *,
    P,
    params: TheoryParams,
    attention: str = "linear",
    objective: str = "map",
    pushforward: bool = False,
    gram: Gram | None = None,
    stats: tuple[jax.Array, jax.Array] | None = None,
    causal: bool = False,
) -> Scalar:
    r"""EK action (ii): ``Q + R`` (map) or ``Q + D + R`` (post), ``[+ J]`` (docs/theory.md §3).

    For linear attention ``G`` is the attention matrix ``A`` (with ``linear_scale='inv_L'`` its
    prior scale is ``sigma_G / L``, ``'inv_sqrt_L'``: ``sigma_G / sqrt L``); for softmax ``G``
    is the logit matrix. ``stats``, ``causal``: the source and the mask (:func:`ek_terms`, §12).
    """
    t = ek_terms(G, P=P, params=params, attention=attention, gram=gram, stats=stats, causal=causal)
    return _combine(t, objective, pushforward)


def as_stats(tokens, V: int) -> DatasetStats:
    """``tokens`` as :class:`DatasetStats` (given stats pass through)."""
    return tokens if isinstance(tokens, DatasetStats) else dataset_stats(tokens, V)


def finite_terms(
    G: LogitMatrix,
    *,
    tokens: TokenBatch | DatasetStats,
    params: TheoryParams,
    attention: str = "linear",
    gram: Gram | None = None,
    causal: bool = False,
) -> dict[str, Scalar]:
    """``Q, D, R, J`` of the exact finite-P form (i) on a training set (docs/theory.md §3, §2b;
    ``causal``: §12). Any token source: the statistics are the training set's own."""
    st = as_stats(tokens, params.V)
    return _terms(
        G, st.S4, st.S2, st.P, gram=gram, params=params, attention=attention, causal=causal
    )


def finite_action(
    G: LogitMatrix,
    *,
    tokens: TokenBatch | DatasetStats,
    gram: Gram | None = None,
    params: TheoryParams,
    attention: str = "linear",
    objective: str = "map",
    pushforward: bool = False,
    causal: bool = False,
) -> Scalar:
    r"""Exact finite-P action (i) on a training set, at finite width if ``gram`` is given.

    ``tokens``: int ``[P, L]`` token indices (or their :func:`dataset_stats`); ``gram``: the
    realised embedding Gram ``U U^T / N`` ``[(V+L), (V+L)]`` (rows: V tokens, then L positions), or
    ``None`` for the ``N -> infinity`` prior Gram. Under A1 this is the exact objective of the
    quenched MAP protocol (docs/theory.md §2, §2b).
    """
    t = finite_terms(G, tokens=tokens, params=params, attention=attention, gram=gram, causal=causal)
    return _combine(t, objective, pushforward)
