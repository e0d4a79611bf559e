r"""Each attention kind's theory as a class (docs/theory.md §3-§5), and the registry.

What the package would otherwise re-derive from an attention name is written here once, per
kind, and read by name through :func:`theory_of`:

* what the head is: ``order_names`` and ``order_labels`` (its names for the projections
  ``(c1, cG)`` of the attention on ``(B1, B2)``), ``two_branches`` (a first-order transition
  between a pooling and a copy branch, fitted from two starts; ``transition_key`` ``P_aG``) or
  one branch with a crossover (``P_cG_half``), ``gauge_fix`` (the Z2 of linear attention) and
  :meth:`copy_logits`, the logits of the copy branch's start;
* the full ``L x L`` theory (§3): :meth:`attention` of a logit matrix, :meth:`prior` of the logits;
* the two-parameter ansatz (§4): its coordinates ``coords``, the logit matrix :meth:`logits` and
  the span coefficients :meth:`span` they give, the named ``fields`` of a minimiser, the reduced
  EK potential :meth:`potential` and its local minima :meth:`minima` (grid, then Newton).

The theory's algorithms (curves, landscapes, P*, the finite-width theory, Markov and causal
minimisers) call these hooks and never compare names. ``x`` is always a coordinate vector
``[..., len(coords)]``; ``p`` a :class:`~.params.TheoryParams` (names or arrays); ``objective``
``'map'`` or ``'post'`` (adds D), ``pushforward`` adds J (§3).
"""

from __future__ import annotations

import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

from .. import conventions as conv
from .._types import AttnMatrix, LogitMatrix, Scalar
from ..config import ATTENTIONS
from ._common import sigma_G_lin, weights
from ._solvers import asinh_grid, minima_1d, minima_2d
from .potentials import QD, R_lin_of, ansatz, c0_lam, lam1_of, lin_V, soft_cost, soft_V

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
    def minima(cls, P, p, *, objective: str = "map", pushforward: bool = False,
               n_keep: int = N_KEEP, coarse: bool = False):  # fmt: skip
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
        s_nat = (chi * (p.L - 1.0) * p.V * gam * p.sigma_p**4
                 / (2.0 * p.sigma_O**2 * p.sigma_e**2)) ** 0.25  # fmt: skip
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
        x, fx, valid, _ = minima_2d(f, r_grid, s_grid, n_keep=max(FINITE_SEEDS, n_keep),
                                    n_iter=FINITE_ITER)  # fmt: skip
        # A = 0 is x = 0 here: keep the minima below S0, the region the grid covers
        return x[:n_keep], fx[:n_keep], valid[:n_keep] & (fx[:n_keep] <= S0 + S0_RTOL * jnp.abs(S0))


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
        beta, fx, valid, n_min = _soft_minima(P, p, objective, pushforward, n=n, n_iter=n_iter,
                                              n_keep=n_keep)  # fmt: skip
        return beta[:, None], fx, valid, n_min

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep, S0):
        b = x_max[0] + 1.0
        beta, fx, valid, _ = minima_1d(lambda z: f(z[None]), asinh_grid(-b, b, 2.0, N_BETA),
                                       n_keep=n_keep)  # fmt: skip
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


@functools.partial(jax.jit, static_argnums=(2,), static_argnames=("n_r", "n_s", "n_iter", "n_keep"))
def _lin_minima(P, p, objective, *, n_r, n_s, n_iter, n_keep):
    r_grid, s_grid = LinearTheory._grids(P, p, n_r, n_s)
    f = lambda x: LinearTheory.potential(x, P, p, objective)  # noqa: E731
    return minima_2d(f, r_grid, s_grid, n_keep=n_keep, n_iter=n_iter)


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
        return (asinh_grid(-r_max, r_max, SIG_WIDTH * jnp.sqrt(L), n_r),
                asinh_grid(-b_max, b_max, SIG_WIDTH, n_b))  # fmt: skip

    @classmethod
    def minima(cls, P, p, *, objective="map", pushforward=False, n_keep=N_KEEP, coarse=False):
        n_r, n_b, n_iter = (33, 65, 20) if coarse else (N_SIG_R, N_SIG_B, 30)
        return _sig_minima(P, p, objective, bool(pushforward), n_r=n_r, n_b=n_b, n_iter=n_iter,
                           n_keep=n_keep)  # fmt: skip

    @classmethod
    def finite_minima(cls, f, x_max, *, n_keep, S0):
        r_grid = asinh_grid(-x_max[0], x_max[0], SIG_WIDTH, N_SIG_R)
        b_grid = asinh_grid(-x_max[1], x_max[1], SIG_WIDTH, N_SIG_B)
        x, fx, valid, _ = minima_2d(f, r_grid, b_grid, n_keep=max(FINITE_SEEDS, n_keep),
                                    n_iter=FINITE_ITER, z2=False)  # fmt: skip
        return x[:n_keep], fx[:n_keep], valid[:n_keep]

    @classmethod
    def start(cls, copy, dtype):
        return jnp.full((2,), COPY_START if copy else 0.0, dtype)  # the copy logits: r = beta

    @classmethod
    def estimate(cls, p):
        """Softmax's leading-order balance (§5): the copy gain against the ``beta ~ ln L``
        logit cost of ``G*``, the same in both kinds."""
        return SoftmaxTheory.estimate(p)


@functools.partial(jax.jit, static_argnums=(2, 3),
                   static_argnames=("n_r", "n_b", "n_iter", "n_keep"))  # fmt: skip
def _sig_minima(P, p, objective, pushforward, *, n_r, n_b, n_iter, n_keep):
    r_grid, b_grid = SigmoidTheory._grids(P, p, n_r, n_b, objective, pushforward)
    f = lambda x: SigmoidTheory.potential(x, P, p, objective, pushforward)  # noqa: E731
    return minima_2d(f, r_grid, b_grid, n_keep=n_keep, n_iter=n_iter, z2=False)


# ---------------------------------------------------------------------------------------------

_CLASSES = (LinearTheory, SoftmaxTheory, SigmoidTheory)
#: The theory class of each attention name (``config.ATTENTIONS``, in order).
THEORIES: dict[str, type[HeadTheory]] = {c.name: c for c in _CLASSES}
assert tuple(THEORIES) == ATTENTIONS, "every attention of config.ATTENTIONS has a theory class"


def theory_of(attention: str | type[HeadTheory]) -> type[HeadTheory]:
    """The theory class of an attention name (a class passes through)."""
    if isinstance(attention, type) and issubclass(attention, HeadTheory):
        return attention
    if attention not in THEORIES:
        raise ValueError(f"attention must be one of {tuple(THEORIES)}, got {attention!r}")
    return THEORIES[attention]


__all__ = [
    "COPY_START",
    "HeadTheory",
    "J_term",
    "LinearTheory",
    "R_lin",
    "R_soft",
    "SigmoidTheory",
    "SoftmaxTheory",
    "THEORIES",
    "theory_of",
]
