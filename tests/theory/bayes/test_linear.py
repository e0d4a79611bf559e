"""Linear route B: the closed-form noise moments against sampled logit tables, the noise-free
limit against the linear closed form, and the projection law of the copy fraction."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from copyhead_jax import conventions as conv
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.bayes.draws import tables_linear
from copyhead_jax.theory.bayes.linear import (
    LIN_SECTORS,
    free_energy_linear,
    kl_linear,
    lin_sector_sizes,
    noise_moments,
    projection_law,
)
from copyhead_jax.theory.potentials import linear_potential


def test_noise_moments_match_sampled_tables():
    # E over q and tokens of sum_a (sum_b s_ab psi_b)(...)^T at zero mean: the closed form
    # against 20,000 sampled (table, sequence) pairs; tolerance 4 standard errors per entry.
    L, V, n = 6, 3, 20000
    with jax.enable_x64(True):
        p = TheoryParams.preset("plain", L=L, V=V)
        rho = (0.7, 1.3, 0.4, 0.9, 2.0, 0.6, 1.1, 0.5)
        G, H, K, T = tables_linear(jax.random.PRNGKey(0), 0.0, 0.0, rho, p, n)  # zero mean
        tok = jax.random.randint(jax.random.PRNGKey(1), (n, L), 0, V)
        X = jax.nn.one_hot(tok, V)
        s = (
            G
            + jnp.take_along_axis(H, tok[:, :, None].repeat(L, 2), axis=1)
            + jnp.take_along_axis(K, tok[:, None, :].repeat(L, 1), axis=2)
            + T[jnp.arange(n)[:, None, None], tok[:, :, None], tok[:, None, :]]
        )
        Psi = jnp.concatenate(
            [p.sigma_e * X, p.sigma_p * jnp.broadcast_to(jnp.eye(L), (n, L, L))], -1
        )
        F = jnp.einsum("nab,nbd->nad", s, Psi)
        Mn = jnp.einsum("nad,nae->nde", F, F)
        emp, se = np.asarray(Mn.mean(0)), np.asarray(Mn.std(0) / math.sqrt(n))
        th = np.asarray(noise_moments(jnp.asarray(rho), p))
    assert np.all(np.abs(emp - th) <= 4 * se + 1e-9)


def test_noise_free_linear_free_energy_is_the_closed_form_potential():
    # rho -> 0 is not allowed (KL diverges), so compare F - KL at tiny rho with V_lin + D.
    with jax.enable_x64(True):
        p = TheoryParams.preset("plain", L=9, V=4)
        x = jnp.array([0.7, 1.3] + [-30.0] * 8)
        F = free_energy_linear(x, 12.0, p) - kl_linear(jnp.exp(x[2:]), p)
        V = linear_potential(0.7, 1.3, P=12.0, params=p, objective="post")
    np.testing.assert_allclose(float(F), float(V), rtol=1e-9)


def test_projection_law_matches_samples():
    L, V, n = 7, 3, 40000
    with jax.enable_x64(True):
        p = TheoryParams.preset("plain", L=L, V=V)
        rho = (0.7, 1.3, 0.4, 0.9, 2.0, 0.6, 1.1, 0.5)
        G = tables_linear(jax.random.PRNGKey(2), 0.0, 0.0, rho, p, n)[0]
        B1, B2 = conv.basis(L)
        y = np.stack(
            [
                np.asarray(jnp.einsum("nab,ab->n", G, B1)),
                np.asarray(jnp.einsum("nab,ab->n", G, B2)),
            ],
            1,
        )
        _, cov = projection_law(jnp.array([0.0, 0.0] + list(np.log(rho))), p)
    np.testing.assert_allclose(np.cov(y.T), np.asarray(cov), rtol=0.05)


def test_linear_sector_sizes_sum_to_the_logit_table():
    n = lin_sector_sizes(10, 4)
    assert sum(n.values()) == (10 + 4 - 1) ** 2 and len(n) == len(LIN_SECTORS)
