"""The head-theory contract :class:`HeadTheory` and the terms every kind shares (the
logit priors R, the pushforward J, the causal mask of the keys)."""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

from ... import conventions as conv
from ..._types import AttnMatrix, LogitMatrix, Scalar

N_KEEP = 4  # local-minimum slots returned per P


def causal_keys(L: int):
    """``[a, b]``: True where query ``a`` sees key ``b`` (``b <= a``), as ``models.causal_keys``."""
    return jnp.tril(jnp.ones((L, L), dtype=bool))


# ---------------------------------------------------------------------------------------------
# Priors of a full L x L logit matrix (docs/theory.md §3.2)


def R_lin(A: AttnMatrix, *, cbar, sigma_G) -> Scalar:
    r"""``tr(Cbar^{-1} G Cbar^{-1} G^T) / (2 sigma_G^2)``: the prior of logits without a gauge
    (linear attention's ``R_lin``, docs/theory.md §3)."""
    cf = cho_factor(cbar)
    return jnp.sum(cho_solve(cf, A) * cho_solve(cf, A.T).T) / (2.0 * sigma_G**2)


def R_soft(G: LogitMatrix, *, cbar, sigma_G) -> Scalar:
    r"""Gauge-fixed softmax prior ``tr(Cbar^{-1} G (Pi Cbar Pi)^+ G^T) / (2 sigma_G^2)`` (§3).

    For the prior Gram ``(Pi Cbar Pi)^+ = Pi / sigma_p^2``, docs/theory.md's ``R_soft``; the general
    pseudo-inverse is the exact marginal over the row-constant gauge for any ``Cbar``.
    """
    L = G.shape[0]
    J = jnp.ones((L, L)) / L
    Pi = jnp.eye(L) - J
    Kp = Pi @ jnp.linalg.solve(Pi @ cbar @ Pi + J, Pi)
    return jnp.sum(cho_solve(cho_factor(cbar), G) * (G @ Kp)) / (2.0 * sigma_G**2)


def J_term(G: LogitMatrix, causal: bool = False) -> Scalar:
    r"""``J(A) = sum_ab log A_ab``, ``A = softmax_b(G)``: pushforward to the density of A (§3);
    with ``causal`` the sum and the softmax run over ``b <= a`` (§12)."""
    if not causal:
        return jnp.sum(jax.nn.log_softmax(G, axis=1))
    keys = causal_keys(G.shape[0])
    return jnp.sum(jnp.where(keys, jax.nn.log_softmax(jnp.where(keys, G, -jnp.inf), axis=1), 0.0))


# ---------------------------------------------------------------------------------------------


class HeadTheory:
    """The theory of one attention kind: class constants and hooks (module docstring)."""

    name: ClassVar[str]
    order_names: ClassVar[tuple[str, str]]
    order_labels: ClassVar[tuple[str, str]]  # mathtext
    two_branches: ClassVar[bool]
    transition_key: ClassVar[str]  # the MAP / Bayesian P* of ``copyhead transition``
    gauge_fix: ClassVar[bool]
    coords: ClassVar[tuple[str, ...]]
    fields: ClassVar[tuple[str, ...]]  # named quantities of a minimiser (:meth:`named`)
    minima_fields: ClassVar[tuple[str, ...]]  # and those reported for every local minimum
    phase_field: ClassVar[tuple[str, str]]  # the phase diagram's colour: (field, label)
    point_keys: ClassVar[tuple[str, ...]]  # the P* a figure marks
    landscape_axes: ClassVar[tuple[str, ...]] = ()  # a 2-d landscape's axes (:meth:`from_axes`)

    # ---- full L x L (docs/theory.md §3) ----

    @staticmethod
    def attention(G, causal: bool = False):
        """``A`` of logits ``G`` (query rows on the second-last axis); ``causal``: keys
        ``b > a`` get weight 0 (docs/theory.md §12)."""
        raise NotImplementedError

    @classmethod
    def prior(cls, G: LogitMatrix, *, cbar, params, causal: bool = False) -> dict[str, Scalar]:
        """``R`` (the prior of the logits, weight space) and ``J`` (the pushforward term, 0 if
        the kind has none) at ``G``; ``cbar`` the logit covariance factor."""
        raise NotImplementedError

    @classmethod
    def copy_logits(cls, L: int, logit, dtype=None) -> LogitMatrix:
        """The positional logits of the copy branch's start: ``logit * G*``."""
        return logit * conv.shift_matrix(L, dtype)

    # ---- the ansatz (docs/theory.md §4) ----

    @classmethod
    def logits(cls, x, L: int) -> LogitMatrix:
        """The ansatz's ``L x L`` logit matrix at coordinates ``x`` (linear: ``A`` itself)."""
        raise NotImplementedError

    @classmethod
    def span(cls, x, L):
        """``(c1, cG)``: the attention at ``x`` is exactly ``c1 B1 + cG B2``."""
        raise NotImplementedError

    @classmethod
    def named(cls, x, L) -> dict:
        """The quantities ``fields`` of the minimiser at ``x`` (arrays over ``x``'s lead axes)."""
        raise NotImplementedError

    @classmethod
    def potential(cls, x, P, p, objective: str = "map", pushforward: bool = False):
        """The reduced EK potential at ``x``."""
        raise NotImplementedError

    @classmethod
    def minima(
        cls,
        P,
        p,
        *,
        objective: str = "map",
        pushforward: bool = False,
        n_keep: int = N_KEEP,
        coarse: bool = False,
    ):
        """Every local minimum of :meth:`potential` at one ``P``: ``x[n_keep, d]``, values,
        ``valid``, ``n_min`` (sorted by value; ``coarse``: grids that find the global one)."""
        raise NotImplementedError

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep: int, S0):
        """Local minima of a finite-P action ``f(x)`` whose prior bounds ``|x_i| <= x_max[i]``
        for every minimum below ``S0 = S(A = 0)``: ``x[n_keep, d]``, values, ``valid``."""
        raise NotImplementedError

    @classmethod
    def from_axes(cls, a, b, L):
        """Coordinates ``x`` at the landscape's axes values ``(a, b)``."""
        return jnp.stack([a, b], axis=-1)

    @classmethod
    def start(cls, copy: bool, dtype) -> jax.Array:
        """Coordinates of a continuation start: zero logits, or the copy start's logits
        (:meth:`copy_logits` with ``COPY_START``)."""
        return jnp.zeros(len(cls.coords), dtype)

    @classmethod
    def estimate(cls, p):
        """A leading-order estimate of the transition (the centre of the P* scans)."""
        raise NotImplementedError


COPY_START = 8.0  # descending branches start from the copy logits at this scale (aG ~ 1)
