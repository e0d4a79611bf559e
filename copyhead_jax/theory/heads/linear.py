"""Linear attention's theory (docs/theory.md §3-§5): coordinates ``(r, s)``."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ... import conventions as conv
from .._common import sigma_G_lin
from .._solvers import asinh_grid, minima_2d
from ..potentials import c0_lam, lam1_of, lin_V
from .base import N_KEEP, HeadTheory, R_lin, causal_keys

# ---------------------------------------------------------------------------------------------
# Linear attention: coordinates (r, s), r = c1 + cG/sqrt(L) (row sum), s = sqrt(1-1/L) cG.

N_R, N_S = 48, 97  # EK grid in (r, s): r >= 0 (Z2), s symmetric
ASINH_FRACTION = 60.0  # finite-P grids are fine within 1/60 of their half-width of 0
FINITE_SEEDS, FINITE_ITER = 8, 30  # finite-P: grid minima refined by Newton, and its iterations
S0_RTOL = 1e-12  # finite-P: minima are kept if S <= S(0) (1 + S0_RTOL)


def to_c(r, s, L):
    """``(c1, cG)`` from the linear coordinates ``(r, s)``."""
    cG = s / jnp.sqrt(1.0 - 1.0 / L)
    return r - cG / jnp.sqrt(L), cG


class LinearTheory(HeadTheory):
    """Linear attention ``A = G`` (docs/theory.md §3-§5): the pooling onset ``P_c1`` (second
    order, Z2) and the copy crossover ``P_cG``."""

    name = "linear"
    order_names = ("c1", "cG")
    order_labels = ("$c_1$", "$c_G$")
    two_branches = False
    transition_key = "P_cG_half"
    gauge_fix = True  # (W^G, W^O) -> (-W^G, -W^O) leaves f unchanged: fix r > 0
    coords = ("r", "s")
    fields = ("c1", "cG", "r", "psi")
    minima_fields = ("c1", "cG")
    phase_field = ("psi", "copy fraction $\\psi$")
    point_keys = ("P_c1", "P_cG", "P_cG_half")
    landscape_axes = ("c1", "cG")

    @staticmethod
    def attention(G, causal=False):
        return jnp.where(causal_keys(G.shape[-1]), G, 0.0) if causal else G

    @classmethod
    def prior(cls, G, *, cbar, params, causal=False):
        # the prior sees every entry of A; the mask only the likelihood (§12)
        sG = params.sigma_G / conv.linear_scale_divisor(params.L, params.linear_scale)  # §2b
        R = R_lin(G, cbar=cbar, sigma_G=sG)
        return {"R": R, "J": jnp.zeros_like(R)}

    @classmethod
    def logits(cls, x, L):
        B1, B2 = conv.basis(L, x.dtype)
        c1, cG = to_c(x[..., 0], x[..., 1], L)
        return c1[..., None, None] * B1 + cG[..., None, None] * B2

    @classmethod
    def span(cls, x, L):
        return to_c(x[..., 0], x[..., 1], L)

    @classmethod
    def from_axes(cls, a, b, L):
        return jnp.stack([a + b / jnp.sqrt(L), jnp.sqrt(1.0 - 1.0 / L) * b], axis=-1)

    @classmethod
    def named(cls, x, L):
        c1, cG = to_c(x[..., 0], x[..., 1], L)
        return {"c1": c1, "cG": cG, "r": x[..., 0], "psi": conv.copy_fraction(c1, cG, L)}

    @classmethod
    def potential(cls, x, P, p, objective="map", pushforward=False):
        return lin_V(*to_c(x[..., 0], x[..., 1], p.L), P, p, objective)

    @classmethod
    def _grids(cls, P, p, n_r, n_s):
        gam = sigma_G_lin(p) ** 2
        c0, _ = c0_lam(P, p)
        V0 = c0 * p.L  # V_lin(0) = Q(0) (D(0) = 0)
        lam1 = lam1_of(p)
        chi = p.sigma2_chi[1]
        r_max = 1.05 * lam1 * jnp.sqrt(2.0 * gam * V0)
        s_max = 1.05 * p.sigma_p**2 * jnp.sqrt(2.0 * gam * V0)
        # natural amplitudes of the pooled and copying states (large-P balance of Q against R)
        r_nat = (gam * lam1 * chi * p.L / (p.sigma_O**2 * p.V)) ** 0.25
        s_nat = (
            chi * (p.L - 1.0) * p.V * gam * p.sigma_p**4 / (2.0 * p.sigma_O**2 * p.sigma_e**2)
        ) ** 0.25
        r_grid = asinh_grid(0.0, r_max, 0.5 * jnp.minimum(r_max, r_nat), n_r)
        s_grid = asinh_grid(-s_max, s_max, 0.5 * jnp.minimum(s_max, s_nat), n_s)
        return r_grid, s_grid

    @classmethod
    def minima(cls, P, p, *, objective="map", pushforward=False, n_keep=N_KEEP, coarse=False):
        # coarse: the global minimum only (tested against the fine grid)
        n_r, n_s, n_iter = (16, 33, 15) if coarse else (N_R, N_S, 30)
        return _lin_minima(P, p, objective, n_r=n_r, n_s=n_s, n_iter=n_iter, n_keep=n_keep)

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep, S0):
        r_grid = asinh_grid(0.0, x_max[0], x_max[0] / ASINH_FRACTION, N_R)
        s_grid = asinh_grid(-x_max[1], x_max[1], x_max[1] / ASINH_FRACTION, N_S)
        # more seeds than slots: neighbouring grid cells of one flat minimum give duplicate seeds
        x, fx, valid, _ = minima_2d(
            f, r_grid, s_grid, n_keep=max(FINITE_SEEDS, n_keep), n_iter=FINITE_ITER
        )
        # A = 0 is x = 0 here: keep the minima below S0, the region the grid covers
        return x[:n_keep], fx[:n_keep], valid[:n_keep] & (fx[:n_keep] <= S0 + S0_RTOL * jnp.abs(S0))


@functools.partial(jax.jit, static_argnums=(2,), static_argnames=("n_r", "n_s", "n_iter", "n_keep"))
def _lin_minima(P, p, objective, *, n_r, n_s, n_iter, n_keep):
    r_grid, s_grid = LinearTheory._grids(P, p, n_r, n_s)
    f = lambda x: LinearTheory.potential(x, P, p, objective)  # noqa: E731
    return minima_2d(f, r_grid, s_grid, n_keep=n_keep, n_iter=n_iter)
