r"""The collapsed action of the attention weights with token-dependent logits (no approximation A1).

docs/theory.md §13.1. At width $N=\infty$ (prior Gram $\Sigma=\mathrm{diag}(\sigma_e^2I_V,
\sigma_p^2I_L)$, root $T=\Sigma^{1/2}$) the head is exactly its width-$D$ image (docs/theory.md
§2c) with weights $W\in\mathbb R^{D\times D}$, $W_{ij}\sim\mathcal N(0,\sigma_G^2)$ a priori, logits
$$s_{ab}(X)=\phi_a^\top M\phi_b,\qquad M=TWT^\top,\qquad \phi_a=(x_a,e_a),$$
so $s_{ab}=M_{x_ax_b}+M_{x_a,V+b}+M_{V+a,x_b}+M_{V+a,V+b}$: the four blocks of $M$ are the logit
sectors $T,H,K,G$ before the gauge is removed. The readout integrated out exactly
(docs/theory.md §3.3) leaves
$$\mathcal S(W)=\mathcal Q(\mathcal A,\mathbf b)+\mathcal D(\mathcal A)
+\frac{\lVert W\rVert^2}{2\sigma_G^2},\qquad
\mathcal A=\frac1S\sum_\alpha\Psi_\alpha^\top A_\alpha^\top A_\alpha\Psi_\alpha,\quad
\mathbf b=\frac1S\sum_\alpha\Psi_\alpha^\top A_\alpha^\top Y_\alpha ,$$
$\Psi_\alpha=[\sigma_eX_\alpha,\sigma_pI_L]$, over a set of $S$ sequences;
$\mathcal Q,\mathcal D$ are
evaluated at a given $P$ (``theory.action.solve_QD``). With the training set itself ($S=P$) this
is the exact finite-$P$ collapsed energy $U_m$ of docs/theory.md §9.1 up to a constant (tested
against ``collapsed.marginal_energy``); with a large sample standing in for the token law it is
the EK action (ii) on all $D^2$ weights, which route A (:mod:`.loop`) differentiates.
At token-independent logits it equals ``theory.action.finite_action`` (A1 is then exact).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from copyhead_jax.theory.action import shift_matrix, solve_QD
from copyhead_jax.theory.heads import theory_of
from copyhead_jax.theory.params import TheoryParams

Tokens = Int[Array, "S L"]
Weights = Float[Array, "D D"]


def gram_root_diag(params: TheoryParams) -> Float[Array, " D"]:
    """Diagonal of $T=\\Sigma^{1/2}$: ``sigma_e`` (V tokens), then ``sigma_p`` (L positions)."""
    return jnp.concatenate(
        [jnp.full((params.V,), params.sigma_e), jnp.full((params.L,), params.sigma_p)]
    )


def logit_matrix(W: Weights, params: TheoryParams) -> Weights:
    """$M=TWT^\\top$."""
    t = gram_root_diag(params).astype(W.dtype)
    return t[:, None] * W * t[None, :]


def weights_of_logits(M: Weights, params: TheoryParams) -> Weights:
    """Inverse of :func:`logit_matrix`."""
    t = gram_root_diag(params).astype(M.dtype)
    return M / (t[:, None] * t[None, :])


def copy_weights(beta, params: TheoryParams, dtype=None) -> Weights:
    r"""$W$ whose logits are $\beta G^*$ on the positional block, zero elsewhere (§4 ansatz)."""
    D, V = params.V + params.L, params.V
    M = jnp.zeros((D, D), dtype or jnp.result_type(float))
    M = M.at[V:, V:].set(beta * shift_matrix(params.L).astype(M.dtype))
    return weights_of_logits(M, params)


def sequence_logits(M: Weights, tokens: Int[Array, " L"], V: int) -> Float[Array, "L L"]:
    r"""$s_{ab}=\phi_a^\top M\phi_b$ of one sequence (query-major)."""
    L = tokens.shape[0]
    pos = V + jnp.arange(L)
    return (
        M[tokens[:, None], tokens[None, :]]
        + M[tokens[:, None], pos[None, :]]
        + M[pos[:, None], tokens[None, :]]
        + M[pos[:, None], pos[None, :]]
    )


def attention(
    W: Weights, tokens: Tokens, params: TheoryParams, kind: str = "softmax"
) -> Float[Array, "S L L"]:
    """Attention of every sequence: ``softmax_b(s)`` or, ``kind='linear'``, ``ell * s`` with
    the linear scale of docs/theory.md §2b."""
    M = logit_matrix(W, params)
    s = jax.vmap(lambda t: sequence_logits(M, t, params.V))(tokens)
    if not theory_of(kind).two_branches:  # linear attention: the logits, scaled
        from copyhead_jax import conventions as conv

        return s / conv.linear_scale_divisor(params.L, params.linear_scale)
    return jax.nn.softmax(s, axis=-1)


def ridge_stats(W: Weights, tokens: Tokens, params: TheoryParams, kind: str = "softmax"):
    r"""$(\mathcal A,\mathbf b,\overline{|Y|^2})$: sample means over the ``S`` sequences."""
    V = params.V
    A = attention(W, tokens, params, kind)
    X = jax.nn.one_hot(tokens, V, dtype=W.dtype)  # [S, L, V]
    Y = jnp.roll(X, 1, axis=1)  # y^a = x^{a-1}
    F = jnp.concatenate(
        [params.sigma_e * jnp.einsum("sab,sbv->sav", A, X), params.sigma_p * A], axis=-1
    )  # [S, L, D]
    S = tokens.shape[0]
    Fr = F.reshape(-1, F.shape[-1])
    calA = Fr.T @ Fr / S
    b = Fr.T @ Y.reshape(-1, V) / S
    return calA, b, jnp.asarray(params.L, W.dtype)


def action_terms(W: Weights, tokens: Tokens, P, params: TheoryParams) -> dict:
    """``Q, D, R`` of the module docstring at ``P`` (``R`` the prior of all ``D^2`` weights)."""
    calA, b, ysq = ridge_stats(W, tokens, params)
    Q, D = solve_QD(calA, b, ysq, P=P, params=params)
    return {"Q": Q, "D": D, "R": jnp.sum(W**2) / (2.0 * params.sigma_G**2)}


def action(W: Weights, tokens: Tokens, P, params: TheoryParams):
    r"""$\mathcal S(W)=\mathcal Q+\mathcal D+\lVert W\rVert^2/2\sigma_G^2$ (module docstring)."""
    t = action_terms(W, tokens, P, params)
    return t["Q"] + t["D"] + t["R"]


def mean_copy_probability(W: Weights, tokens: Tokens, params: TheoryParams):
    r"""$\bar p=\frac1{SL}\sum_{\alpha,a}A^\alpha_{a,a-1}$, so $a_G=\sqrt L(L\bar p-1)/(L-1)$ of the
    mean attention (a softmax $\bar A$ has unit row sums, docs/theory.md §4)."""
    A = attention(W, tokens, params)
    L = params.L
    return jnp.mean(A[:, jnp.arange(L), (jnp.arange(L) - 1) % L])


def shifted_sample(tokens: Tokens) -> Int[Array, "n L"]:
    """Every cyclic shift of every sequence: ``[S * L, L]``. The empirical law is then exactly
    invariant under the translations of docs/theory.md §7 (identity 6)."""
    L = tokens.shape[1]
    return jnp.concatenate([jnp.roll(tokens, k, axis=1) for k in range(L)], axis=0)
