"""Sigmoid attention's theory (docs/theory.md §4b): logits ``u J + beta G*``."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ... import conventions as conv
from .._common import weights
from .._solvers import asinh_grid, minima_2d
from ..potentials import QD, R_lin_of, lam1_of
from .base import COPY_START, N_KEEP, HeadTheory, R_lin, causal_keys
from .linear import FINITE_ITER, FINITE_SEEDS
from .softmax import SoftmaxTheory

# ---------------------------------------------------------------------------------------------
# Sigmoid attention: A = sigmoid(G - log L) entrywise, logits u J + beta G*, coordinates (r, beta)
# with r = L u + beta the row sum of the logits (the prior is diagonal in (r, beta)).

N_SIG_R, N_SIG_B = 65, 129  # EK grid in (r, beta), neither symmetric
SIG_WIDTH = 2.0  # the asinh grids are fine within this distance of 0 (the logits' O(1) scale)


def sigmoid_bias(L):
    """The sigmoid's logit offset ``log L``: at zero logits a row sums to ``L/(L+1)``, about
    one, as a softmax row (Ramapuram et al. 2024 use the bias ``-log n``)."""
    return jnp.log(L)


def _sig_parts(x, L):
    """``u, t0, t1``: the uniform logit and the offset logits of the other and the copy
    entries, ``A_ab = sigmoid(t0)`` for ``b != a-1`` and ``sigmoid(t1)`` on ``G*``."""
    r, beta = x[..., 0], x[..., 1]
    u = (r - beta) / L
    return u, u - sigmoid_bias(L), u + beta - sigmoid_bias(L)


def _log_dsigmoid(t):
    """``log sigmoid'(t) = log sigmoid(t) + log sigmoid(-t)``."""
    return jax.nn.log_sigmoid(t) + jax.nn.log_sigmoid(-t)


class SigmoidTheory(HeadTheory):
    """Sigmoid attention ``A = sigmoid(G - log L)`` entrywise (docs/theory.md §4b): no row
    gauge, so the prior is linear attention's ``R_lin`` of the logits; on the logits
    ``u J + beta G*`` the attention lies in the span, two coordinates ``(r, beta)``; a
    first-order copy transition ``P_aG`` between two wells, as softmax."""

    name = "sigmoid"
    order_names = ("a1", "aG")
    order_labels = ("$a_1$", "$a_G$")
    two_branches = True
    transition_key = "P_aG"
    gauge_fix = False  # sigmoid(-t) = 1 - sigmoid(t): no sign symmetry
    coords = ("r", "beta")
    fields = ("beta", "aG", "a1", "p", "r")
    minima_fields = ("r", "beta", "aG")
    phase_field = ("p", "$p = A_{a,a-1}$")
    point_keys = ("P_aG",)
    landscape_axes = ("r", "beta")

    @staticmethod
    def attention(G, causal=False):
        A = jax.nn.sigmoid(G - sigmoid_bias(G.shape[-1]))
        return jnp.where(causal_keys(G.shape[-1]), A, 0.0) if causal else A

    @classmethod
    def prior(cls, G, *, cbar, params, causal=False):
        # no gauge: every logit is seen (a masked one only through the prior, as linear's, §12)
        J = _log_dsigmoid(G - sigmoid_bias(G.shape[-1]))
        J = jnp.sum(jnp.where(causal_keys(G.shape[-1]), J, 0.0) if causal else J)
        return {"R": R_lin(G, cbar=cbar, sigma_G=params.sigma_G), "J": J}

    @classmethod
    def logits(cls, x, L):
        u, beta = (x[..., 0] - x[..., 1]) / L, x[..., 1]
        J = jnp.ones((L, L), x.dtype)
        return u[..., None, None] * J + beta[..., None, None] * conv.shift_matrix(L, x.dtype)

    @classmethod
    def span(cls, x, L):
        _, t0, t1 = _sig_parts(x, L)
        s0, s1 = jax.nn.sigmoid(t0), jax.nn.sigmoid(t1)
        return L * s0, jnp.sqrt(L) * (s1 - s0)

    @classmethod
    def named(cls, x, L):
        a1, aG = cls.span(x, L)
        p = jax.nn.sigmoid(_sig_parts(x, L)[2])
        return {"beta": x[..., 1], "aG": aG, "a1": a1, "p": p, "r": x[..., 0]}

    @classmethod
    def potential(cls, x, P, p, objective="map", pushforward=False):
        w_D, w_J = weights(objective, pushforward)
        L = p.L
        _, t0, t1 = _sig_parts(x, L)
        Q, D = QD(*cls.span(x, L), P, p)
        R = R_lin_of(x[..., 0] - x[..., 1], jnp.sqrt(L) * x[..., 1], p, sigma_G=p.sigma_G)
        J = L * _log_dsigmoid(t1) + L * (L - 1.0) * _log_dsigmoid(t0)
        return Q + R + w_D * D + w_J * J

    @classmethod
    def _grids(cls, P, p, n_r, n_b, objective, pushforward):
        r"""Grids that hold every minimum below ``V(0)``: there ``R <= V(0) - J`` (Q, D >= 0),
        ``R >= a r^2 + b beta^2`` and ``-J <= sum_ab (|t_ab| + 2 log 2)
        <= L |r| + 2 L |beta| + L^2 (log L + 2 log 2)``, which bounds ``|r|`` and ``|beta|``."""
        w_J = float(bool(pushforward))
        L = p.L
        a = 1.0 / (2.0 * p.sigma_G**2 * lam1_of(p) ** 2)
        b = (L - 1.0) / (2.0 * p.sigma_G**2 * p.sigma_p**4)
        k = w_J * L
        W = cls.potential(jnp.zeros(2, P.dtype), P, p, objective)
        W = W + w_J * L**2 * (jnp.log(L) + 2.0 * jnp.log(2.0))
        W_r, W_b = W + k**2 / b, W + k**2 / (4.0 * a)  # the other coordinate's linear slack
        r_max = 1.05 * (k + jnp.sqrt(k**2 + 4.0 * a * W_r)) / (2.0 * a)
        b_max = 1.05 * (2.0 * k + jnp.sqrt(4.0 * k**2 + 4.0 * b * W_b)) / (2.0 * b)
        return (
            asinh_grid(-r_max, r_max, SIG_WIDTH * jnp.sqrt(L), n_r),
            asinh_grid(-b_max, b_max, SIG_WIDTH, n_b),
        )

    @classmethod
    def minima(cls, P, p, *, objective="map", pushforward=False, n_keep=N_KEEP, coarse=False):
        n_r, n_b, n_iter = (33, 65, 20) if coarse else (N_SIG_R, N_SIG_B, 30)
        return _sig_minima(
            P, p, objective, bool(pushforward), n_r=n_r, n_b=n_b, n_iter=n_iter, n_keep=n_keep
        )

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep, S0):
        r_grid = asinh_grid(-x_max[0], x_max[0], SIG_WIDTH, N_SIG_R)
        b_grid = asinh_grid(-x_max[1], x_max[1], SIG_WIDTH, N_SIG_B)
        x, fx, valid, _ = minima_2d(
            f, r_grid, b_grid, n_keep=max(FINITE_SEEDS, n_keep), n_iter=FINITE_ITER, z2=False
        )
        return x[:n_keep], fx[:n_keep], valid[:n_keep]

    @classmethod
    def start(cls, copy, dtype):
        return jnp.full((2,), COPY_START if copy else 0.0, dtype)  # the copy logits: r = beta

    @classmethod
    def estimate(cls, p):
        """Softmax's leading-order balance (§5): the copy gain against the ``beta ~ ln L``
        logit cost of ``G*``, the same in both kinds."""
        return SoftmaxTheory.estimate(p)


@functools.partial(
    jax.jit, static_argnums=(2, 3), static_argnames=("n_r", "n_b", "n_iter", "n_keep")
)
def _sig_minima(P, p, objective, pushforward, *, n_r, n_b, n_iter, n_keep):
    r_grid, b_grid = SigmoidTheory._grids(P, p, n_r, n_b, objective, pushforward)
    f = lambda x: SigmoidTheory.potential(x, P, p, objective, pushforward)  # noqa: E731
    return minima_2d(f, r_grid, b_grid, n_keep=n_keep, n_iter=n_iter, z2=False)


# ---------------------------------------------------------------------------------------------
