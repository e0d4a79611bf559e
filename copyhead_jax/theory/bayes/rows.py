r"""One query row of a softmax head under Gaussian logit noise: the moments the readout sees.

Under a Gaussian measure $q$ on the attention weights whose mean is the copy pattern $\beta G^*$
(docs/theory.md §4) and whose fluctuations respect the task's symmetries (docs/theory.md §13.2),
the logits of one query row $a$ with copy key $c=a-1$ read, for key $b$ with token $x_b$,
$$z_b=\beta\,\delta_{bc}+\varepsilon_b+\zeta_{x_b},\qquad
\varepsilon_c\sim\mathcal N(0,v_c),\ \varepsilon_{b\ne c}\sim\mathcal N(0,v_o),\
\zeta_w\sim\mathcal N(0,v_t)\ (w=1..V),$$
all independent, tokens i.i.d. uniform: $\varepsilon$ is the positional noise (key position),
$\zeta$ the key-token noise, and a constant added to a whole row is a gauge (it leaves
$A=\mathrm{softmax}(z)$ unchanged). The readout's population moments (§13.3) need only five
numbers of the row, averaged over tokens and noise:
$$\bar p=E[A_c],\quad p_2=E[A_c^2],\quad r_o=E\Big[\sum_{b\ne c}A_b^2\Big],\quad
s_2=E\Big[\sum_v m_v^2\Big],\quad t_1=E[m_{x_c}],\qquad m_v=\sum_{b:\,x_b=v}A_b ,$$
($m$ is the attended token distribution: $s_2$ its collision mass, $t_1$ its mass on the target
token $x_c$). They are computed by Monte Carlo with common random numbers: a fixed set of
standard normal and token draws (:func:`row_draws`) is rescaled by the variances, so the moments
are smooth, differentiable functions of $(\beta, v_c, v_o, v_t)$ (reparametrisation; no closed
form exists for the softmax of correlated log-normal weights over $L$ keys). Without noise they
reduce to the closed forms of :func:`exact_row_moments` (tested).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

#: Default number of rows drawn (Monte-Carlo error of a moment ~ 1e-3 of its spread).
N_ROWS = 1 << 15


class RowDraws(NamedTuple):
    """Fixed draws for the common-random-number Monte Carlo of one row (copy key = index 0),
    with the token-only quantities every evaluation reuses computed once (:func:`row_draws`)."""

    n_key: Float[Array, "S L"]  # standard normals: positional noise of each key
    n_tok: Float[Array, "S L"]  # standard normals: noise of each key's token value (shared)
    onehot: Float[Array, "S L V"]  # key tokens, one-hot; the target is the copy key's token
    cv_dn: Float[Array, ""]  # mean n_t of the draws minus its expectation (control variate)
    cv_dsig: Float[Array, ""]  # mean Sigma of the draws minus its expectation


class RowNoise(NamedTuple):
    """Logit-noise variances of one row: copy key, any other key, each token value."""

    v_copy: Array
    v_other: Array
    v_tok: Array


class RowMoments(NamedTuple):
    r"""$(\bar p, p_2, r_o, s_2, t_1)$ of the module docstring."""

    p: Array
    p2: Array
    r_other: Array
    s2: Array
    t1: Array


def row_draws(key: Array, *, L: int, V: int, n: int = N_ROWS, dtype=None) -> RowDraws:
    """``n`` rows of standard normals and uniform tokens (``dtype``: float64 inside x64)."""
    return _row_draws(key, L=L, V=V, n=n, dtype=jnp.dtype(dtype or jnp.result_type(float)))


@functools.partial(jax.jit, static_argnames=("L", "V", "n", "dtype"))
def _row_draws(key: Array, *, L: int, V: int, n: int, dtype) -> RowDraws:
    """:func:`row_draws` as one compiled program (op by op, each random draw compiles alone)."""
    k1, k2, k3 = jax.random.split(key, 3)
    dt = dtype
    tokens = jax.random.randint(k3, (n, L), 0, V)
    per_value = jax.random.normal(k2, (n, V), dt)
    onehot = jax.nn.one_hot(tokens, V, dtype=dt)
    counts = jnp.sum(onehot[:, 1:], axis=1)  # [S, V]: non-copy keys per token value
    n_t = jnp.sum(counts * onehot[:, 0], axis=1)
    return RowDraws(
        n_key=jax.random.normal(k1, (n, L), dt),
        n_tok=jnp.take_along_axis(per_value, tokens, axis=1),
        onehot=onehot,
        cv_dn=jnp.mean(n_t) - (L - 1.0) / V,
        cv_dsig=jnp.mean(jnp.sum(counts**2, axis=1)) - (L - 1.0) * (1.0 + (L - 2.0) / V),
    )


def row_attention(beta, noise: RowNoise, draws: RowDraws) -> Float[Array, "S L"]:
    """``A = softmax(z)`` of every drawn row (module docstring)."""
    L = draws.n_key.shape[1]
    sd_key = jnp.sqrt(jnp.concatenate([noise.v_copy[None], jnp.full((L - 1,), noise.v_other)]))
    z = draws.n_key * sd_key[None] + jnp.sqrt(noise.v_tok) * draws.n_tok
    z = z.at[:, 0].add(beta)
    return jax.nn.softmax(z, axis=1)


def row_moments(beta, noise: RowNoise, draws: RowDraws) -> RowMoments:
    """The five row moments by common-random-number Monte Carlo (module docstring)."""
    A = row_attention(beta, noise, draws)
    onehot = draws.onehot
    m = jnp.einsum("sl,slv->sv", A, onehot)
    return RowMoments(
        p=jnp.mean(A[:, 0]),
        p2=jnp.mean(A[:, 0] ** 2),
        r_other=jnp.mean(jnp.sum(A[:, 1:] ** 2, axis=1)),
        s2=jnp.mean(jnp.sum(m**2, axis=1)),
        t1=jnp.mean(jnp.sum(m * onehot[:, 0], axis=1)),
    )


def exact_row_moments(beta, *, L, V) -> RowMoments:
    r"""Noise-free moments at logits $\beta G^*$: $A_c=p$, $A_{b\ne c}=\bar p_o=(1-p)/(L-1)$,
    $p=\mathrm{sigmoid}(\beta-\log(L-1))$; a key shares the target's token with probability
    $1/V$, so $s_2=(1-\tfrac1V)(p^2+(L-1)\bar p_o^2)+\tfrac1V$ and $t_1=p+(1-p)/V$."""
    p = jax.nn.sigmoid(beta - jnp.log(L - 1.0))
    po = (1.0 - p) / (L - 1.0)
    g2 = p**2 + (L - 1.0) * po**2
    return RowMoments(
        p=p,
        p2=p**2,
        r_other=(L - 1.0) * po**2,
        s2=(1.0 - 1.0 / V) * g2 + 1.0 / V,
        t1=p + (1.0 - p) / V,
    )


def copy_order_parameter(p, L):
    r"""$a_G=\sqrt L\,(L\bar p-1)/(L-1)$ of a mean attention with copy entries $\bar p$ (§4)."""
    return jnp.sqrt(L) * (L * p - 1.0) / (L - 1.0)


def p_of_aG(aG, L):
    r"""Inverse of :func:`copy_order_parameter`: $\bar p=(1+(L-1)a_G/\sqrt L)/L$."""
    return (1.0 + (L - 1.0) * aG / jnp.sqrt(L)) / L


def row_moments_cv(beta, noise: RowNoise, draws: RowDraws) -> RowMoments:
    r""":func:`row_moments` with the noise-free moments of the same draws as a control variate,
    $\hat m(\beta,v)-\hat m(\beta,0)+m_{\rm exact}(\beta)$: unbiased (the control's mean is
    known exactly) and exact at zero noise. It removes most of the token-sampling error of
    $s_2,t_1$, which the noise barely changes. At zero noise a row's $s_2,t_1$ depend on its
    tokens only through $n_t=\#\{b\ne c: x_b=x_c\}$ and $\Sigma=\sum_v k_v^2$ ($k_v$ the
    count of non-copy keys with token $v$): $t_1=p+\bar p_on_t$,
    $s_2=\bar p_o^2\Sigma+2p\bar p_on_t+p^2$, with $E[n_t]=(L-1)/V$,
    $E[\Sigma]=(L-1)(1+(L-2)/V)$, so $\hat m(\beta,0)-m_{\rm exact}$ is a closed form in the
    draws' two token averages (no second Monte Carlo pass)."""
    L = draws.n_key.shape[1]
    m = row_moments(beta, noise, draws)
    dn, dsig = draws.cv_dn, draws.cv_dsig
    p = jax.nn.sigmoid(beta - jnp.log(L - 1.0))
    po = (1.0 - p) / (L - 1.0)
    return m._replace(s2=m.s2 - po**2 * dsig - 2.0 * p * po * dn, t1=m.t1 - po * dn)
