r"""Measurements on attention matrices (docs/theory.md §4, §6): pure functions of ``A`` or a head.

Basis (unit Frobenius, *not* orthogonal): $B_1 = J_L/L$ (pooling), $B_2 = G^*/\sqrt L$ (copying),
$G^*_{ab}=\delta_{a-1,b}$. Coefficients come from least squares with the Gram matrix
$\begin{pmatrix}1 & L^{-1/2}\\ L^{-1/2} & 1\end{pmatrix}$.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from . import conventions
from ._types import AttnMatrix, Mask, Scalar, TokenBatch
from .data import masked_mean
from .models import AbstractHead, target_weights
from .objective import predictions, squared_errors


def shift_operator(L: int) -> AttnMatrix:
    """``G*_{ab} = delta_{a-1, b}`` (indices mod L): query ``a`` reads key ``a-1`` (float32)."""
    return conventions.shift_matrix(L, jnp.float32)


def ansatz_basis(L: int) -> Float[Array, "2 L L"]:
    """``(B_1, B_2) = (J/L, G*/sqrt(L))`` (float32)."""
    return jnp.stack(conventions.basis(L, jnp.float32))


class OrderParameters(NamedTuple):
    """Least-squares coefficients on ``(B_1, B_2)`` and how much of ``A`` the span covers."""

    c1: Scalar  # pooling coefficient (a1 for softmax)
    cG: Scalar  # copying coefficient (aG for softmax)
    r: Scalar  # row sum c1 + cG / sqrt(L)
    psi: Scalar  # copy fraction (1 - 1/L) cG^2 / (r^2 + (1 - 1/L) cG^2), docs/theory.md §5
    coverage: Scalar  # cosine between A and its projection on the span


def order_parameters(A: AttnMatrix, *, gauge_fix: bool = False) -> OrderParameters:
    """Project ``A`` on span{B_1, B_2}; ``gauge_fix`` flips the Z2 sign so that ``r > 0``."""
    return OrderParameters(*conventions.project(A, gauge_fix=gauge_fix))


def attention_matrices(head: AbstractHead, tokens: TokenBatch) -> Float[Array, "P L L"]:
    """``A(X_alpha)`` for every sequence (``M`` computed once; logits by selects)."""
    return head.attention_rows(tokens)


def positional_logits(head: AbstractHead) -> Float[Array, "L L"]:
    """The learned positional block ``b^T W^G b / N`` of the logits."""
    V = head.W_E.shape[1]
    return head.logit_gram()[V:, V:]


def copy_accuracy(head: AbstractHead, tokens: TokenBatch) -> Scalar:
    """Fraction of positions where ``argmax f^a`` is the previous token."""
    V = head.W_E.shape[1]
    return copy_accuracy_of(predictions(head, tokens, V), tokens, head.causal)


def copy_accuracy_of(f: Float[Array, "P L V"], tokens: TokenBatch, causal: bool) -> Scalar:
    """Fraction of positions where ``argmax f^a`` is the previous token; under the causal mask
    of positions ``a >= 1`` only (position 0 has no previous token, see ``models._mask``)."""
    hit = jnp.argmax(f, -1) == jnp.roll(tokens, 1, axis=-1)
    if causal:
        w = target_weights(tokens.shape[-1], True)
        return jnp.sum(jnp.where(w[None] > 0, hit, False)) / (hit.shape[0] * jnp.sum(w))
    return jnp.mean(hit)


class Measurement(NamedTuple):
    """Everything measured on one run (docs/theory.md §6)."""

    mean_attention: AttnMatrix  # \bar A over the training set
    order: OrderParameters  # of \bar A (Z2 gauge fixed for linear heads)
    sample_coverage: Scalar  # mean over samples of the span cosine of A(X_alpha)
    positional_logits: Float[Array, "L L"]
    train_loss: Scalar  # mean ||f - y||^2 per sequence (docs/theory.md §4 bracket: L -> 0)
    test_loss: Scalar
    copy_accuracy: Scalar  # on the test set


def measure(
    head: AbstractHead, train: TokenBatch, mask: Mask, test: Int[Array, "Pt L"]
) -> Measurement:
    """All observables of a fitted head on its (masked) training set and a test set."""
    V = head.W_E.shape[1]
    A = attention_matrices(head, train)
    A_bar = masked_mean(A, mask)
    per_sample = jax.vmap(lambda a: order_parameters(a).coverage)(A)
    return Measurement(
        mean_attention=A_bar,
        order=order_parameters(A_bar, gauge_fix=head.gauge_fix),
        sample_coverage=masked_mean(jnp.nan_to_num(per_sample), mask),
        positional_logits=positional_logits(head),
        train_loss=masked_mean(squared_errors(head, train, V), mask),
        test_loss=jnp.mean(squared_errors(head, test, V)),
        copy_accuracy=copy_accuracy(head, test),
    )
