r"""Closed-form reduced potentials on the ansatz ``G = c1 B1 + cG B2`` (docs/theory.md §4).

Every function is pure and elementwise in all numeric arguments (``c1, cG, beta, P, L, V`` and the
prior scales), so broadcasting and ``jax.vmap`` over any of them work; it computes in the dtype of
its inputs (wrap calls in ``jax.enable_x64(True)`` or pass float64 for double precision). The
defaults of the convention switches are the paper preset (docs/theory.md §2b).

Numerically stable forms used (exact rewrites of §4):
``L - s_e^2 g1^2/(s_e^2 g2 + lam V) = (s_e^2 (L-1) c1^2 + L lam V)/(s_e^2 g2 + lam V)`` (because
``L g2 - g1^2 = (L-1) c1^2``), ``g2 = r^2 + (1-1/L) cG^2``, and ``p = sigmoid(beta - log(L-1))``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._types import Broadcast
from ._common import Scales, make_scales, p_eff, sigma_G_lin

_DEFAULT_SCALES = dict(sigma_e=1.0, sigma_p=1.0, sigma_G=1.0, sigma_O=1.0, sigma2=30.0, chi=30.0)


# ---------------------------------------------------------------------------------------------
# Core (Scales in, arrays out). ``P`` is the raw number of sequences; switches live in ``sc``.


def lam1_of(sc: Scales):
    """Top eigenvalue of ``Cbar = sigma_p^2 I + sigma_e^2 J/V`` (on the all-ones vector)."""
    return sc.sigma_p**2 + sc.L * sc.sigma_e**2 / sc.V


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


def c0_lam(P, sc: Scales):
    """Prefactor ``chi P/(2 sigma^2)`` of Q and the ridge ``lambda = sigma^2/(P sigma_O^2)``."""
    Pe = p_eff(P, sc)
    return sc.chi * Pe / (2.0 * sc.sigma2), sc.sigma2 / (Pe * sc.sigma_O**2)


def QD(c1, cG, P, sc: Scales):
    """Boxed ``Q`` and ``D`` of docs/theory.md §4."""
    c0, lam = c0_lam(P, sc)
    Q = c0 * _bracket(c1, cG, sc.L, sc.V, lam, sc.sigma_e, sc.sigma_p)
    r, _, g2 = invariants(c1, cG, sc.L)
    D = (
        0.5
        * sc.V
        * (
            (sc.V - 1.0) * jnp.log1p(sc.sigma_e**2 * g2 / (sc.V * lam))
            + jnp.log1p(lam1_of(sc) * r**2 / lam)
            + (sc.L - 1.0) * jnp.log1p(sc.sigma_p**2 * cG**2 / (sc.L * lam))
        )
    )
    return Q, D


def R_lin_of(c1, cG, sc: Scales):
    """``R_lin = [r^2/lam1^2 + (1-1/L) cG^2/sigma_p^4] / (2 sigma_G^2)`` (§4; inv_L: sG/L)."""
    r, _, _ = invariants(c1, cG, sc.L)
    return (r**2 / lam1_of(sc) ** 2 + (1.0 - 1.0 / sc.L) * cG**2 / sc.sigma_p**4) / (
        2.0 * sigma_G_lin(sc) ** 2
    )


def lin_V(c1, cG, P, sc: Scales):
    """``V_lin = Q + R_lin [+ D]`` (docs/theory.md §4; ``sc.w_D`` selects the posterior)."""
    Q, D = QD(c1, cG, P, sc)
    return Q + R_lin_of(c1, cG, sc) + sc.w_D * D


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


def soft_cost(sc: Scales):
    """``R_soft = cost * beta^2`` with ``cost = (L-1)/(2 sigma_G^2 sigma_p^4)`` (§4)."""
    return (sc.L - 1.0) / (2.0 * sc.sigma_G**2 * sc.sigma_p**4)


def soft_V(beta, P, sc: Scales):
    """``V_soft(beta) = Q(a1, aG) + R_soft [+ D] [+ J]`` (theory §4; ``sc.w_D``, ``sc.w_J``)."""
    _, a1, aG = ansatz(beta, sc.L)
    Q, D = QD(a1, aG, P, sc)
    return Q + soft_cost(sc) * beta**2 + sc.w_D * D + sc.w_J * J_of(beta, sc.L)


# ---------------------------------------------------------------------------------------------
# Public keyword API (STYLE.md convention 8).


def keyword_scales(L, V, scales, **switches) -> Scales:
    """``Scales`` from keyword arguments (prior scales default to 1, ``sigma2 = chi = 30``)."""
    bad = set(scales) - set(_DEFAULT_SCALES)
    if bad:
        raise ValueError(f"unknown scale arguments {sorted(bad)}; allowed: {list(_DEFAULT_SCALES)}")
    dtype = jnp.result_type(L, V, *scales.values(), float)
    return make_scales(L=L, V=V, **{**_DEFAULT_SCALES, **scales}, **switches, dtype=dtype)


def q_bracket(c1, cG, *, L, V, lam, sigma_e=1.0, sigma_p=1.0) -> Broadcast:
    r"""Population MSE per sequence of the best ridge readout, the bracket of ``Q`` (§4).

    From ``L`` (no attention) through ``(1-1/V)(L-1)`` (pooling, ``lam -> 0``) to ``0`` (copying).
    """
    return _bracket(c1, cG, L, V, lam, sigma_e, sigma_p)


def reduced_terms(
    c1,
    cG,
    *,
    P,
    L,
    V,
    likelihood: str = "per_position",
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    linear_scale: str = "inv_L",
    **scales,
) -> dict[str, Broadcast]:
    r"""``Q``, ``D``, ``R_lin`` of docs/theory.md §4 on ``G = c1 B1 + cG B2`` (closed forms)."""
    sc = keyword_scales(
        L, V, scales, likelihood=likelihood, linear_scale=linear_scale,
        chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
    )  # fmt: skip
    Q, D = QD(c1, cG, P, sc)
    return {"Q": Q, "D": D, "R": R_lin_of(c1, cG, sc)}


def linear_potential(
    c1,
    cG,
    *,
    P,
    L,
    V,
    objective: str = "map",
    likelihood: str = "per_position",
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    linear_scale: str = "inv_L",
    **scales,
) -> Broadcast:
    r"""``V_lin(c1, cG) = Q + R_lin`` (MAP) or ``Q + D + R_lin`` (post), docs/theory.md §4.

    ``scales``: any of ``sigma_e, sigma_p, sigma_G, sigma_O, sigma2, chi`` (defaults 1, 1, 1, 1,
    30, 30); the chi switches as in :class:`~copyhead_jax.theory.TheoryParams` (§2b).
    """
    sc = keyword_scales(
        L, V, scales, likelihood=likelihood, linear_scale=linear_scale, objective=objective,
        chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
    )  # fmt: skip
    return lin_V(c1, cG, P, sc)


def softmax_ansatz(beta, *, L) -> dict[str, Broadcast]:
    r"""``A = softmax_b(beta G*) = a1 B1 + aG B2``: ``p = A_{a,a-1}``, ``a1``, ``aG`` (§4)."""
    p, a1, aG = ansatz(beta, L)
    return {"p": p, "a1": a1, "aG": aG}


def pushforward_term(beta, *, L) -> Broadcast:
    r"""``J(A) = sum_ab log A_ab`` at ``A = softmax(beta G*)`` (docs/theory.md §3-4)."""
    return J_of(beta, L)


def softmax_potential(
    beta,
    *,
    P,
    L,
    V,
    objective: str = "map",
    likelihood: str = "per_position",
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    pushforward: bool = False,
    **scales,
) -> Broadcast:
    r"""``V_soft(beta)`` on logits ``beta G*`` (docs/theory.md §4): ``Q + R_soft [+ D] [+ J]``.

    ``pushforward=True`` adds ``J``, the mode in A-coordinates; never use it to predict Adam/SGLD
    order parameters (docs/theory.md §3).
    """
    sc = keyword_scales(
        L, V, scales, likelihood=likelihood, objective=objective, pushforward=pushforward,
        chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
    )  # fmt: skip
    return soft_V(beta, P, sc)


def beta_of_aG(aG, *, L):
    """Inverse of the ansatz: ``beta(aG) = log(p (L-1)/(1-p))``, ``p = (1 + (L-1) aG/sqrt L)/L``."""
    p = (1.0 + (L - 1.0) * aG / jnp.sqrt(L)) / L
    return jnp.log(p * (L - 1.0)) - jnp.log1p(-p)


def softmax_potential_aG(aG, **kwargs) -> Broadcast:
    r"""``V_soft(aG)`` (docs/theory.md §4): the same potential in the ``aG`` coordinate.

    Defined for ``-sqrt(L)/(L-1) < aG < sqrt(L)``; prefer :func:`softmax_potential` (``beta`` is the
    stable coordinate).
    """
    return softmax_potential(beta_of_aG(aG, L=kwargs["L"]), **kwargs)
