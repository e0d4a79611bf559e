r"""The softmax copy order parameter $a_G$ with its gradient written out.

For a softmax head the rows of the mean attention sum to one, so its projection on the basis of
docs/theory.md §4 has $r=1$ and
$$a_G=\sqrt L\,\frac{L\bar p-1}{L-1},\qquad
\bar p=\frac1{nL}\sum_\alpha m_\alpha\sum_aA^\alpha_{a,a-1},$$
$n=\sum_\alpha m_\alpha$ the kept rows, $A^\alpha={\rm softmax}_b(s^\alpha_{ab})$ with logits
$s^\alpha_{ab}=\phi^{a\top}M\phi^b$, $\phi^a=(e_{t_a},e_a)$. The gradient in the logits is
$$\frac{\partial\bar p}{\partial s^\alpha_{ab}}
=c_\alpha\,p^\alpha_a\,(\delta_{b,a-1}-A^\alpha_{ab}),
\qquad c_\alpha=\frac{m_\alpha}{nL},\ p^\alpha_a=A^\alpha_{a,a-1},$$
and in $M$ it is $\sum_\alpha\Phi_\alpha^\top G^\alpha\Phi_\alpha$, $\Phi_\alpha=[X_\alpha,I_L]$,
by blocks (token-token $X^\top GX$, token-position $X^\top G$, position-token $GX$,
position-position $G$). Autodiff of the package's gather-based logits (scatters in reverse)
cost 2.9x this on the CPU at $L=15$, $P=53$, hence written out.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


def _logits(M, X):
    V = X.shape[-1]
    Me, Mep, Mpe, Mpp = M[:V, :V], M[:V, V:], M[V:, :V], M[V:, V:]
    return (
        jnp.einsum("pau,pbu->pab", X @ Me, X)
        + X @ Mep
        + jnp.einsum("au,pbu->pab", Mpe, X)
        + Mpp[None]
    )


def _prev(L: int):
    return (jnp.arange(L) - 1) % L


def _forward(M, X, m):
    L = X.shape[1]
    A = jax.nn.softmax(_logits(M, X), axis=-1)
    p = A[:, jnp.arange(L), _prev(L)]
    c = m / (jnp.maximum(jnp.sum(m), 1.0) * L)
    return jnp.sum(c[:, None] * p), (A, p, c, X)


@jax.custom_vjp
def mean_copy_prob(
    M: Float[Array, "D D"], X: Float[Array, "P L V"], m: Float[Array, " P"]
) -> Float[Array, ""]:
    r"""$\bar p$ (module docstring) from the logit Gram ``M``, one-hot tokens ``X`` and the row
    mask ``m``; differentiable in ``M`` only."""
    return _forward(M, X, m)[0]


def _bwd(res, g):
    A, p, c, X = res
    L = X.shape[1]
    shift = jax.nn.one_hot(_prev(L), L, dtype=A.dtype)[None]
    G = g * (c[:, None, None] * p[:, :, None]) * (shift - A)
    GX = G @ X
    dM = jnp.concatenate(
        [
            jnp.concatenate([jnp.einsum("pav,pau->vu", X, GX), jnp.einsum("pav,pab->vb", X, G)], 1),
            jnp.concatenate([jnp.sum(GX, 0), jnp.sum(G, 0)], 1),
        ],
        0,
    )
    return dM, jnp.zeros_like(X), jnp.zeros_like(c)


mean_copy_prob.defvjp(lambda M, X, m: _forward(M, X, m), _bwd)


def a_G_of_pbar(pbar, L: int):
    """$a_G=\\sqrt L(L\\bar p-1)/(L-1)$."""
    return math.sqrt(L) * (L * pbar - 1.0) / (L - 1)
