r"""Equinox attention heads with muP scaling (THEORY.md §2).

For one sequence with one-hot rows $x^a$,
$$h^a = W^E x^a + b^a,\quad s_{ab} = \tfrac1N h^{a\top} W^G h^b,\quad
f^a = W^O \textstyle\sum_b A_{ab} h^b,\quad W^O = \hat W^O/\sqrt{\chi N}.$$
One-hot structure: $h^a = U^\top\phi^a$ with $U=[W^{E\top}; b^\top]\in\mathbb R^{(V+L)\times N}$ and
$\phi^a=(x^a, e_a)$, so every logit is an entry of the $(V+L)\times(V+L)$ matrix
$M = U W^G U^\top/N$ and every output a row of $R = W^O U^\top$. Both are computed once per
parameter value (they do not depend on the data), which makes the per-step cost
$O((V+L)N^2)$ for the weights plus $O(PL^2V)$ for the data, never $O(PLN^2)$.
"""

from __future__ import annotations

import abc
import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._types import AttnMatrix, Gram, LogitMatrix, OneHotSeq
from ..config import ModelConfig


class AbstractHead(eqx.Module):
    """Embedding, positional bias, key-query and readout; subclasses set the activation."""

    W_E: Float[Array, "N V"]  # token embedding
    b: Float[Array, "N L"]  # positional bias, column a is b^a
    W_G: Float[Array, "N N"]  # key-query matrix
    W_O_hat: Float[Array, "V N"]  # readout, W^O = W_O_hat / sqrt(chi N)
    chi: float = eqx.field(static=True)

    @property
    def width(self) -> int:
        return self.W_G.shape[0]

    def embeddings(self) -> Float[Array, "D N"]:
        """``U = [W^E^T; b^T]``: the V token embeddings, then the L positional biases."""
        return jnp.concatenate([self.W_E.T, self.b.T], axis=0)

    def logit_gram(self) -> Gram:
        """``M = U W^G U^T / N``: every logit ``s_ab = phi^a . M phi^b``."""
        U = self.embeddings()
        return (U @ self.W_G) @ U.T / self.width

    def readout_map(self) -> Float[Array, "V D"]:
        """``R = W^O U^T``: output of a unit attention weight on feature ``phi``."""
        return (self.W_O_hat @ self.embeddings().T) / math.sqrt(self.chi * self.width)

    def logits(self, x: OneHotSeq, M: Gram | None = None) -> LogitMatrix:
        """``s = X M_EE X^T + X M_EP + M_PE X^T + M_PP`` (blocks of ``M``)."""
        M = self.logit_gram() if M is None else M
        V = x.shape[-1]
        T = x @ M[:V, :V] + M[V:, :V]  # [L, V]
        return T @ x.T + x @ M[:V, V:] + M[V:, V:]

    @abc.abstractmethod
    def activation(self, s: LogitMatrix) -> AttnMatrix:
        """Attention weights from logits (row a is query position a)."""

    def attention(self, x: OneHotSeq, M: Gram | None = None) -> AttnMatrix:
        return self.activation(self.logits(x, M))

    def __call__(self, x: OneHotSeq, M: Gram | None = None, R=None) -> OneHotSeq:
        """``f = A Phi R^T`` with ``Phi = [X, I_L]``, for one sequence ``x`` [L, V]."""
        R = self.readout_map() if R is None else R
        V = x.shape[-1]
        A = self.attention(x, M)
        return (A @ x) @ R[:, :V].T + A @ R[:, V:].T


class LinearHead(AbstractHead):
    """Linear attention ``A = s`` (``linear_scale='none'``) or ``A = s / L`` (``'inv_L'``)."""

    scale: float = eqx.field(static=True, default=1.0)

    def activation(self, s: LogitMatrix) -> AttnMatrix:
        return s * self.scale


class SoftmaxHead(AbstractHead):
    """Softmax attention over keys, no causal mask."""

    def activation(self, s: LogitMatrix) -> AttnMatrix:
        return jax.nn.softmax(s, axis=-1)


def head_class(attention: str) -> type[AbstractHead]:
    return {"linear": LinearHead, "softmax": SoftmaxHead}[attention]


def init_head(key: Array, model: ModelConfig, *, L: int, V: int, chi: float) -> AbstractHead:
    """Draw every weight from its prior (THEORY.md §2 table), readout reparametrised."""
    N = model.width
    kE, kb, kG, kO = jax.random.split(key, 4)
    normal = lambda k, shape, s: s * jax.random.normal(k, shape, dtype=jnp.float32)
    weights = dict(
        W_E=normal(kE, (N, V), model.sigma_e),
        b=normal(kb, (N, L), model.sigma_p),
        W_G=normal(kG, (N, N), model.sigma_G),
        W_O_hat=normal(kO, (V, N), model.sigma_O),
        chi=float(chi),
    )
    if model.attention == "linear":
        return LinearHead(**weights, scale=1.0 / L if model.linear_scale == "inv_L" else 1.0)
    return SoftmaxHead(**weights)


def trainable_filter(head: AbstractHead, *, train_embeddings: bool) -> AbstractHead:
    """Boolean pytree: which leaves the optimiser moves (embeddings frozen when quenched)."""
    spec = jax.tree_util.tree_map(lambda _: True, head)
    if not train_embeddings:
        spec = eqx.tree_at(lambda h: (h.W_E, h.b), spec, (False, False))
    return spec
