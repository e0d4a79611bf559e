"""Softmax attention's theory (docs/theory.md §3-§5): logits ``beta G*``."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ... import conventions as conv
from .._common import weights
from .._solvers import asinh_grid, minima_1d
from ..potentials import ansatz, soft_cost, soft_V
from .base import COPY_START, N_KEEP, HeadTheory, J_term, R_soft, causal_keys

# ---------------------------------------------------------------------------------------------
# Softmax attention: logits beta G*

N_BETA = 513  # grid in beta


class SoftmaxTheory(HeadTheory):
    """Softmax attention over keys (docs/theory.md §3-§5): logits ``beta G*``, a first-order
    copy transition ``P_aG`` between two wells, with spinodals."""

    name = "softmax"
    order_names = ("a1", "aG")
    order_labels = ("$a_1$", "$a_G$")
    two_branches = True
    transition_key = "P_aG"
    gauge_fix = False  # the softmax is not odd: no sign symmetry
    coords = ("beta",)
    fields = ("beta", "aG", "a1", "p")
    minima_fields = ("beta", "aG")
    phase_field = ("p", "$p = A_{a,a-1}$")
    point_keys = ("P_aG",)

    @staticmethod
    def attention(G, causal=False):
        if causal:
            G = jnp.where(causal_keys(G.shape[-1]), G, -jnp.inf)
        return jax.nn.softmax(G, axis=-1)

    @classmethod
    def prior(cls, G, *, cbar, params, causal=False):
        return {"R": R_soft(G, cbar=cbar, sigma_G=params.sigma_G), "J": J_term(G, causal)}

    @classmethod
    def logits(cls, x, L):
        return x[..., 0, None, None] * conv.shift_matrix(L, x.dtype)

    @classmethod
    def span(cls, x, L):
        _, a1, aG = ansatz(x[..., 0], L)
        return a1, aG

    @classmethod
    def named(cls, x, L):
        p, a1, aG = ansatz(x[..., 0], L)
        return {"beta": x[..., 0], "aG": aG, "a1": a1, "p": p}

    @classmethod
    def potential(cls, x, P, p, objective="map", pushforward=False):
        return soft_V(x[..., 0], P, p, objective, pushforward)

    @classmethod
    def _grid(cls, P, p, n, objective, pushforward):
        _, w_J = weights(objective, pushforward)
        V0 = soft_V(jnp.zeros_like(P), P, p, objective)
        b_max = 1.05 * jnp.sqrt(jnp.maximum(V0, 0.0) / soft_cost(p)) + 1.0
        # J <= 0 falls like -L (L-1) beta: its mode sits at beta = O(L sigma_G^2 sigma_p^4)
        b_max = b_max + w_J * (2.0 * p.L * p.sigma_G**2 * p.sigma_p**4 + 2.0 * jnp.log(p.L))
        return asinh_grid(-b_max, b_max, 2.0, n)

    @classmethod
    def minima(cls, P, p, *, objective="map", pushforward=False, n_keep=N_KEEP, coarse=False):
        n, n_iter = (257, 25) if coarse else (N_BETA, 40)  # bracketed Newton: 25 steps suffice
        beta, fx, valid, n_min = _soft_minima(
            P, p, objective, pushforward, n=n, n_iter=n_iter, n_keep=n_keep
        )
        return beta[:, None], fx, valid, n_min

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep, S0):
        b = x_max[0] + 1.0
        beta, fx, valid, _ = minima_1d(
            lambda z: f(z[None]), asinh_grid(-b, b, 2.0, N_BETA), n_keep=n_keep
        )
        return beta[:, None], fx, valid

    @classmethod
    def start(cls, copy, dtype):
        return jnp.full((1,), COPY_START if copy else 0.0, dtype)

    @classmethod
    def estimate(cls, p):
        r"""Leading-order ``sigma^2 ln^2 L / (chi sigma_G^2 sigma_p^4 (1 - 1/V))`` (§5)."""
        sigma2, chi = p.sigma2_chi
        Pe = sigma2 * jnp.log(p.L) ** 2 / (chi * p.sigma_G**2 * p.sigma_p**4 * (1.0 - 1.0 / p.V))
        return Pe * conv.noise_factor(p.L, p.likelihood)


@functools.partial(jax.jit, static_argnums=(2, 3), static_argnames=("n", "n_iter", "n_keep"))
def _soft_minima(P, p, objective, pushforward, *, n, n_iter, n_keep):
    grid = SoftmaxTheory._grid(P, p, n, objective, pushforward)
    f = lambda b: soft_V(b, P, p, objective, pushforward)  # noqa: E731
    return minima_1d(f, grid, n_keep=n_keep, n_iter=n_iter)
