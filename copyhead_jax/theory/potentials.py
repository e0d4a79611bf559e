r"""Closed-form reduced potentials on the ansatz ``G = c1 B1 + cG B2`` (docs/theory.md §4).

Every function is pure and elementwise in its numeric arguments (``c1, cG, beta, P``) and in the
fields of its parameter record ``p`` (:class:`~.params.TheoryParams`: Python values, or arrays
from :meth:`~.params.TheoryParams.arrays` / :meth:`~.params.TheoryParams.stack`, which
broadcast and ``jax.vmap`` like any pytree); it computes in the dtype of its inputs (wrap calls
in ``jax.enable_x64(True)`` or pass float64 for double precision).

Numerically stable forms used (exact rewrites of §4):
``L - s_e^2 g1^2/(s_e^2 g2 + lam V) = (s_e^2 (L-1) c1^2 + L lam V)/(s_e^2 g2 + lam V)`` (because
``L g2 - g1^2 = (L-1) c1^2``), ``g2 = r^2 + (1-1/L) cG^2``, and ``p = sigmoid(beta - log(L-1))``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._types import Broadcast
from ._common import p_eff, sigma_G_lin, weights
from .params import TheoryParams

# ---------------------------------------------------------------------------------------------
# Core. ``P`` is the raw number of sequences; ``p`` a :class:`TheoryParams` (names or arrays).


def lam1_of(p):
    """Top eigenvalue of ``Cbar = sigma_p^2 I + sigma_e^2 J/V`` (on the all-ones vector)."""
    return p.sigma_p**2 + p.L * p.sigma_e**2 / p.V


def invariants(c1, cG, L):
    """``r = c1 + cG/sqrt(L)`` (row sum), ``g1 = tr(G^T G*)``, ``g2 = ||G||^2`` (theory §4)."""
    r = c1 + cG / jnp.sqrt(L)
    g1 = c1 + jnp.sqrt(L) * cG
    g2 = r**2 + (1.0 - 1.0 / L) * cG**2
    return r, g1, g2


def _bracket(c1, cG, L, V, lam, sigma_e, sigma_p):
    lam1 = sigma_p**2 + L * sigma_e**2 / V
    r, _, g2 = invariants(c1, cG, L)
    mean = (L / V) * lam / (lam + lam1 * r**2)
    fluct = (
        (1.0 - 1.0 / V)
        * (sigma_e**2 * (L - 1.0) * c1**2 + L * lam * V)
        / (sigma_e**2 * g2 + lam * V)
    )
    return mean + fluct


def c0_lam(P, p):
    """Prefactor ``chi P/(2 sigma^2)`` of Q and the ridge ``lambda = sigma^2/(P sigma_O^2)``
    (``sigma^2, chi`` of the closed forms: :attr:`TheoryParams.sigma2_chi`)."""
    Pe = p_eff(P, p)
    sigma2, chi = p.sigma2_chi
    return chi * Pe / (2.0 * sigma2), sigma2 / (Pe * p.sigma_O**2)


def QD(c1, cG, P, p):
    """Boxed ``Q`` and ``D`` of docs/theory.md §4 at any ``A = c1 B1 + cG B2``."""
    c0, lam = c0_lam(P, p)
    Q = c0 * _bracket(c1, cG, p.L, p.V, lam, p.sigma_e, p.sigma_p)
    r, _, g2 = invariants(c1, cG, p.L)
    D = (
        0.5
        * p.V
        * (
            (p.V - 1.0) * jnp.log1p(p.sigma_e**2 * g2 / (p.V * lam))
            + jnp.log1p(lam1_of(p) * r**2 / lam)
            + (p.L - 1.0) * jnp.log1p(p.sigma_p**2 * cG**2 / (p.L * lam))
        )
    )
    return Q, D


def R_lin_of(c1, cG, p, sigma_G=None):
    """``R_lin = [r^2/lam1^2 + (1-1/L) cG^2/sigma_p^4] / (2 sigma_G^2)`` (§4); ``sigma_G``
    defaults to the linear head's ``sigma_G / L^k`` (§2b)."""
    r, _, _ = invariants(c1, cG, p.L)
    sG = sigma_G_lin(p) if sigma_G is None else sigma_G
    return (r**2 / lam1_of(p) ** 2 + (1.0 - 1.0 / p.L) * cG**2 / p.sigma_p**4) / (2.0 * sG**2)


def lin_V(c1, cG, P, p, objective: str = "map"):
    """``V_lin = Q + R_lin [+ D]`` (docs/theory.md §4; ``objective='post'`` adds D)."""
    w_D, _ = weights(objective)
    Q, D = QD(c1, cG, P, p)
    return Q + R_lin_of(c1, cG, p) + w_D * D


def ansatz(beta, L):
    """``softmax_b(beta G*)`` on the ansatz: ``p, a1, aG`` (docs/theory.md §4, softmax)."""
    p = jax.nn.sigmoid(beta - jnp.log(L - 1.0))
    q = jax.nn.sigmoid(jnp.log(L - 1.0) - beta)  # 1 - p without cancellation
    a1 = L * q / (L - 1.0)
    aG = jnp.sqrt(L) * (p * L - 1.0) / (L - 1.0)
    return p, a1, aG


def J_of(beta, L):
    """Pushforward term ``J = L [log p + (L-1) log((1-p)/(L-1))]`` (density of A, theory §3)."""
    t = beta - jnp.log(L - 1.0)
    return L * (jax.nn.log_sigmoid(t) + (L - 1.0) * (jax.nn.log_sigmoid(-t) - jnp.log(L - 1.0)))


def soft_cost(p):
    """``R_soft = cost * beta^2`` with ``cost = (L-1)/(2 sigma_G^2 sigma_p^4)`` (§4)."""
    return (p.L - 1.0) / (2.0 * p.sigma_G**2 * p.sigma_p**4)


def soft_V(beta, P, p, objective: str = "map", pushforward: bool = False):
    """``V_soft(beta) = Q(a1, aG) + R_soft [+ D] [+ J]`` (theory §4)."""
    w_D, w_J = weights(objective, pushforward)
    _, a1, aG = ansatz(beta, p.L)
    Q, D = QD(a1, aG, P, p)
    return Q + soft_cost(p) * beta**2 + w_D * D + w_J * J_of(beta, p.L)


# ---------------------------------------------------------------------------------------------
# Public API: the closed forms at a parameter record (STYLE.md convention 8).


def q_bracket(c1, cG, *, L, V, lam, sigma_e=1.0, sigma_p=1.0) -> Broadcast:
    r"""Population MSE per sequence of the best ridge readout, the bracket of ``Q`` (§4).

    From ``L`` (no attention) through ``(1-1/V)(L-1)`` (pooling, ``lam -> 0``) to ``0`` (copying).
    """
    return _bracket(c1, cG, L, V, lam, sigma_e, sigma_p)


def reduced_terms(c1, cG, *, P, params: TheoryParams) -> dict[str, Broadcast]:
    r"""``Q``, ``D``, ``R_lin`` of docs/theory.md §4 on ``G = c1 B1 + cG B2`` (closed forms)."""
    Q, D = QD(c1, cG, P, params)
    return {"Q": Q, "D": D, "R": R_lin_of(c1, cG, params)}


def linear_potential(c1, cG, *, P, params: TheoryParams, objective: str = "map") -> Broadcast:
    r"""``V_lin(c1, cG) = Q + R_lin`` (MAP) or ``Q + D + R_lin`` (post), docs/theory.md §4.

    Elementwise in ``c1, cG, P``; over the parameters, vmap a record of arrays
    (:meth:`TheoryParams.arrays`, :meth:`TheoryParams.stack`).
    """
    return lin_V(c1, cG, P, params, objective)


def softmax_ansatz(beta, *, L) -> dict[str, Broadcast]:
    r"""``A = softmax_b(beta G*) = a1 B1 + aG B2``: ``p = A_{a,a-1}``, ``a1``, ``aG`` (§4)."""
    p, a1, aG = ansatz(beta, L)
    return {"p": p, "a1": a1, "aG": aG}


def pushforward_term(beta, *, L) -> Broadcast:
    r"""``J(A) = sum_ab log A_ab`` at ``A = softmax(beta G*)`` (docs/theory.md §3-4)."""
    return J_of(beta, L)


def softmax_potential(
    beta, *, P, params: TheoryParams, objective: str = "map", pushforward: bool = False
) -> Broadcast:
    r"""``V_soft(beta)`` on logits ``beta G*`` (docs/theory.md §4): ``Q + R_soft [+ D] [+ J]``.

    ``pushforward=True`` adds ``J``, the mode in A-coordinates; never use it to predict Adam/SGLD
    order parameters (docs/theory.md §3).
    """
    return soft_V(beta, P, params, objective, pushforward)


def beta_of_aG(aG, *, L):
    """Inverse of the ansatz: ``beta(aG) = log(p (L-1)/(1-p))``, ``p = (1 + (L-1) aG/sqrt L)/L``."""
    p = (1.0 + (L - 1.0) * aG / jnp.sqrt(L)) / L
    return jnp.log(p * (L - 1.0)) - jnp.log1p(-p)


def softmax_potential_aG(aG, **kwargs) -> Broadcast:
    r"""``V_soft(aG)`` (docs/theory.md §4): the same potential in the ``aG`` coordinate.

    Defined for ``-sqrt(L)/(L-1) < aG < sqrt(L)``; prefer :func:`softmax_potential` (``beta`` is the
    stable coordinate).
    """
    return softmax_potential(beta_of_aG(aG, L=kwargs["params"].L), **kwargs)
