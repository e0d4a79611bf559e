r"""The variational (Gaussian) free energy of the softmax head's attention weights, EK form.

docs/theory.md §13.2-13.4. A Gaussian measure $q$ on the width-$D$ weights $W^G$ (§2c, prior
Gram: $N=\infty$) with mean the copy pattern (logits $\beta G^*$) and a covariance fixed by the
symmetries up to five ratios to the prior, $\rho=(\rho_G,\rho_c,\rho_H,\rho_K,\rho_T)$, one per
sector of the logit table $s(a,x_a;b,x_b)=G_{ab}+H_{x_ab}+K_{ax_b}+T_{x_ax_b}$ ($\rho_c$: the
copy entries $G_{a,a-1}$). Its free energy in the EK limit, with the readout integrated out at the
noise-averaged population moments (mean-field readout, §13.3),
$$\mathcal F_q(\beta,\rho;P)=\mathcal Q(\bar{\mathcal A},\bar{\mathbf b})
+\mathcal D(\bar{\mathcal A})
+\frac{(L-1)\beta^2}{2\sigma_G^2\sigma_p^4}+\mathrm{KL}(\rho),\qquad
\mathrm{KL}(\rho)=\sum_k\frac{n_k}2\,(\rho_k-1-\log\rho_k),$$
is an upper bound on $-\log$ of the posterior mass it describes (Gibbs; concavity of
$\mathcal Q+\mathcal D$ in the moments). $\mathcal Q$, $\mathcal D$ are those of docs/theory.md §3
(``theory.action.solve_QD``, every convention switch of §2b); at $\rho\to0$ the KL diverges and
at zero noise $\mathcal F_q-\mathrm{KL}$ is $V_{\rm soft}(\beta)$ with $\mathcal D$ (tested).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array, Float

from copyhead_jax.theory.action import solve_QD
from copyhead_jax.theory.params import TheoryParams

from .rows import (
    RowDraws,
    RowMoments,
    RowNoise,
    copy_order_parameter,
    row_moments,
    row_moments_cv,
)

#: Names of the five variance ratios, in the order of the parameter vector.
SECTORS = ("G", "c", "H", "K", "T")


class Spread(NamedTuple):
    r"""Variance ratios $q/\text{prior}$ of the five sectors (docs/theory.md §13.2)."""

    rho_G: Array  # token-independent logits, non-copy keys
    rho_c: Array  # token-independent logits, the copy key G_{a,a-1}
    rho_H: Array  # query-token x key-position logits
    rho_K: Array  # query-position x key-token logits
    rho_T: Array  # query-token x key-token logits


def sector_sizes(L, V) -> dict[str, float]:
    r"""Active directions per sector: $L(L-2)$, $L$, $(V-1)(L-1)$, $L(V-1)$, $(V-1)^2$; their sum
    is $(D-1)(D-2)$, $D=V+L$: the $D^2$ weights less the $2D-1$ null and $D-1$ gauge directions."""
    return {
        "G": L * (L - 2.0),
        "c": L * 1.0,
        "H": (V - 1.0) * (L - 1.0),
        "K": L * (V - 1.0),
        "T": (V - 1.0) ** 2,
    }


def _kl1(r):
    return r - 1.0 - jnp.log(r)


def kl_spread(s: Spread, L, V):
    r"""$\mathrm{KL}(q\Vert\text{prior})$ of the fluctuations (the mean's cost is separate).

    Per query row the whitened covariance of the $L-1$ gauge-fixed key directions is
    $\rho_G\Pi+(\rho_c-\rho_G)\Pi e_ce_c^\top\Pi$: eigenvalues $\rho_G$ ($L-2$ times) and
    $\rho_G+(\rho_c-\rho_G)(1-1/L)$ (once)."""
    n = sector_sizes(L, V)
    rc_eff = s.rho_G + (s.rho_c - s.rho_G) * (1.0 - 1.0 / L)
    return 0.5 * (
        n["G"] * _kl1(s.rho_G)
        + n["c"] * _kl1(rc_eff)
        + n["H"] * _kl1(s.rho_H)
        + n["K"] * _kl1(s.rho_K)
        + n["T"] * _kl1(s.rho_T)
    )


def row_noise(s: Spread, params: TheoryParams) -> RowNoise:
    r"""Per-row logit variances of $q$ (docs/theory.md §13.2), prior Gram.

    $\bar C=\sigma_p^2I+\sigma_e^2J/V$ mixes the whitened rows: $(\bar C^{1/2})_{aa}=w_d$,
    $(\bar C^{1/2})_{a\ne a'}=w_o$, so the copy key of row $a$ carries $w_d^2$ of its own row's
    extra variance and any other key $w_o^2$ of one other row's.
    """
    L, V = params.L, params.V
    se2, sp2, sG2 = params.sigma_e**2, params.sigma_p**2, params.sigma_G**2
    cbar = sp2 + se2 / V
    lam1 = sp2 + L * se2 / V
    sp = params.sigma_p
    w_d = sp * (1.0 - 1.0 / L) + jnp.sqrt(lam1) / L
    w_o = (jnp.sqrt(lam1) - sp) / L
    v_H = s.rho_H * sG2 * se2 * sp2 * (1.0 - 1.0 / V)
    base = sG2 * sp2 * s.rho_G * cbar + v_H
    extra = sG2 * sp2 * (s.rho_c - s.rho_G)
    v_tok = sG2 * se2 * (s.rho_K * cbar + s.rho_T * se2 * (1.0 - 1.0 / V))
    return RowNoise(v_copy=base + extra * w_d**2, v_other=base + extra * w_o**2, v_tok=v_tok)


def ridge_moments(m: RowMoments, params: TheoryParams):
    r"""$(\bar{\mathcal A},\bar{\mathbf b},\overline{|y|^2})$ of one sequence from the row moments
    (docs/theory.md §13.3): positional block $\sigma_p^2[c_dI+c_o(J-I)]$, token block
    $\sigma_e^2L(\alpha I+\gamma J)$, cross block $\sigma_e\sigma_p\mathbf 1_V\mathbf 1_L^\top/V$;
    target moments $\sigma_eL(\alpha'I+\gamma'J)$ and $\sigma_p\mathbf 1_L\mathbf 1_V^\top/V$."""
    L, V = params.L, params.V
    se, sp = params.sigma_e, params.sigma_p
    dt = m.p.dtype
    e_co = (m.p - m.p2) / (L - 1.0)  # E[A_c A_o], one other key
    e_oo = (1.0 - 2.0 * m.p + m.p2 - m.r_other) / ((L - 1.0) * (L - 2.0))  # two other keys
    c_d = m.p2 + m.r_other
    c_o = 2.0 * e_co + (L - 2.0) * e_oo
    eye_L, eye_V = jnp.eye(L, dtype=dt), jnp.eye(V, dtype=dt)
    C = c_d * eye_L + c_o * (jnp.ones((L, L), dt) - eye_L)
    den = V * (V - 1.0)
    tok = L * ((V * m.s2 - 1.0) / den * eye_V + (1.0 - m.s2) / den * jnp.ones((V, V), dt))
    X = jnp.ones((V, L), dt) / V
    calA = jnp.block([[se**2 * tok, se * sp * X], [se * sp * X.T, sp**2 * C]])
    tgt = L * ((V * m.t1 - 1.0) / den * eye_V + (1.0 - m.t1) / den * jnp.ones((V, V), dt))
    b = jnp.concatenate([se * tgt, sp * jnp.ones((L, V), dt) / V], axis=0)
    return calA, b, jnp.asarray(L, dt)


def data_terms(m: RowMoments, P, params: TheoryParams):
    """``(Q, D)`` of docs/theory.md §3 at the noise-averaged moments (every switch of §2b)."""
    calA, b, ysq = ridge_moments(m, params)
    return solve_QD(calA, b, ysq, P=P, params=params)


def mean_cost(beta, params: TheoryParams):
    r"""$\mathcal R_{\rm soft}(\beta G^*)=(L-1)\beta^2/(2\sigma_G^2\sigma_p^4)$
    (docs/theory.md §4)."""
    return (params.L - 1.0) * beta**2 / (2.0 * params.sigma_G**2 * params.sigma_p**4)


class FreeEnergyTerms(NamedTuple):
    """The parts of :func:`free_energy` and the order parameter of the mean attention."""

    F: Array
    Q: Array
    D: Array
    R: Array
    KL: Array
    aG: Array
    moments: RowMoments


def spread_of(log_rho: Float[Array, "5"]) -> Spread:
    """:class:`Spread` from the log variance ratios (the unconstrained coordinates)."""
    return Spread(*jnp.exp(log_rho))


def free_energy_terms(
    beta, log_rho, P, params: TheoryParams, draws: RowDraws, control_variate: bool = True
) -> FreeEnergyTerms:
    r"""$\mathcal F_q(\beta,\rho;P)$ and its parts (module docstring); ``control_variate``:
    the row moments of :func:`~.rows.row_moments_cv` (default) or plain Monte Carlo."""
    s = spread_of(log_rho)
    moments = row_moments_cv if control_variate else row_moments
    m = moments(beta, row_noise(s, params), draws)
    Q, D = data_terms(m, P, params)
    R = mean_cost(beta, params)
    KL = kl_spread(s, params.L, params.V)
    return FreeEnergyTerms(Q + D + R + KL, Q, D, R, KL, copy_order_parameter(m.p, params.L), m)


def free_energy(
    x: Float[Array, "6"], P, params: TheoryParams, draws: RowDraws, control_variate: bool = True
):
    r"""$\mathcal F_q$ at ``x = (beta, log rho_G, log rho_c, log rho_H, log rho_K, log rho_T)``."""
    return free_energy_terms(x[0], x[1:], P, params, draws, control_variate).F
