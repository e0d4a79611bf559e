"""Route B's free energy: closed-form limits, the control variate, the KL, and the row-moment
formulas against draws of the weights from q (the exact readout moments of sampled heads)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.bayes.draws import draw_weights
from copyhead_jax.theory.bayes.exact import ridge_stats
from copyhead_jax.theory.bayes.loop import ek_sample
from copyhead_jax.theory.bayes.rows import (
    RowNoise,
    exact_row_moments,
    row_draws,
    row_moments,
    row_moments_cv,
)
from copyhead_jax.theory.bayes.variational import (
    Spread,
    data_terms,
    free_energy_terms,
    kl_spread,
    ridge_moments,
    row_noise,
    sector_sizes,
)
from copyhead_jax.theory.potentials import QD, ansatz


@pytest.mark.parametrize("preset", ["plain", "paper", "paper-chi-lik"])
@pytest.mark.parametrize("beta", [0.1, 2.0, 4.5])
def test_noise_free_moments_give_the_closed_form_action(preset, beta):
    # At zero noise the variational data term is docs/theory.md §4's boxed Q and D (an identity:
    # float64 rounding of values ~1e2-1e3).
    with jax.enable_x64(True):
        p = TheoryParams.preset(preset, L=9, V=4)
        Q, D = data_terms(exact_row_moments(beta, L=9.0, V=4.0), 37.0, p)
        _, a1, aG = ansatz(beta, 9.0)
        Q2, D2 = QD(a1, aG, 37.0, p)
    np.testing.assert_allclose([Q, D], [Q2, D2], rtol=1e-12)


def test_control_variate_is_exact_without_noise_and_unbiased_with_it():
    with jax.enable_x64(True):
        zero = RowNoise(*(jnp.asarray(0.0) for _ in range(3)))
        d = row_draws(jax.random.PRNGKey(0), L=10, V=4, n=2048)
        for b in (0.0, 2.5):
            np.testing.assert_allclose(
                row_moments_cv(b, zero, d), exact_row_moments(b, L=10.0, V=4.0), atol=1e-14
            )
        # with noise: CV and plain estimates of independent draw sets agree within their MC
        # error (5 standard errors of the plain estimate over 8 replicas)
        noise = RowNoise(jnp.asarray(0.5), jnp.asarray(1.5), jnp.asarray(1.0))
        cv = np.array(
            [
                row_moments_cv(2.0, noise, row_draws(jax.random.PRNGKey(k), L=10, V=4, n=4096))
                for k in range(8)
            ]
        )
        pl = np.array(
            [
                row_moments(2.0, noise, row_draws(jax.random.PRNGKey(100 + k), L=10, V=4, n=4096))
                for k in range(8)
            ]
        )
    se = np.sqrt(cv.var(0, ddof=1) / 8 + pl.var(0, ddof=1) / 8)
    assert np.all(np.abs(cv.mean(0) - pl.mean(0)) < 5 * se + 1e-12)


def test_kl_is_zero_at_the_prior_and_counts_every_active_direction():
    L, V = 11, 4
    n = sector_sizes(L, V)
    D = L + V
    assert sum(n.values()) == (D - 1) * (D - 2)
    r = 0.3
    with jax.enable_x64(True):
        assert float(kl_spread(Spread(*(jnp.asarray(1.0) for _ in range(5))), L, V)) == 0.0
        # uniform rho: KL = (D-1)(D-2)/2 (rho - 1 - log rho)
        k = float(kl_spread(Spread(*(jnp.asarray(r) for _ in range(5))), L, V))
    assert abs(k - 0.5 * (D - 1) * (D - 2) * (r - 1 - np.log(r))) < 1e-10


def _symmetry_means(calA, b, V, L):
    """The numbers the task's symmetries leave free in (calA, b): token block diagonal and
    off-diagonal means (token permutations), the cross block's mean, the positional block's
    mean along each cyclic offset (translations); b's token diagonal/off-diagonal and positional
    means. Averaging over each orbit removes most of the sampling noise of single entries."""
    calA, b = np.asarray(calA), np.asarray(b)
    off = ~np.eye(V, dtype=bool)
    tok, pos, cross = calA[..., :V, :V], calA[..., V:, V:], calA[..., :V, V:]
    idx = np.arange(L)
    diags = [pos[..., idx, (idx + k) % L].mean(-1) for k in range(L)]
    bt, bp = b[..., :V, :], b[..., V:, :]
    return np.stack(
        [
            np.diagonal(tok, axis1=-2, axis2=-1).mean(-1),
            tok[..., off].mean(-1),
            cross.mean((-2, -1)),
            *diags,
            np.diagonal(bt, axis1=-2, axis2=-1).mean(-1),
            bt[..., off].mean(-1),
            bp.mean((-2, -1)),
        ],
        axis=-1,
    )


def test_row_moments_match_the_readout_moments_of_sampled_heads():
    # E_q[calA(W)], E_q[b(W)] of weights drawn from q (exact moments of each sampled head on a
    # token sample closed under shifts) against ridge_moments of the row Monte Carlo: the whole
    # chain q -> row noise -> five moments -> calA, b, compared on the symmetry-reduced numbers.
    # Tolerance: 5 standard errors of the mean over the 128 sampled heads (their spread
    # measured here) plus 5e-3 for the token sample and the row Monte Carlo (2^16 rows).
    L, V = 8, 3
    with jax.enable_x64(True):
        p = TheoryParams.preset("plain", L=L, V=V)
        s = Spread(*(jnp.asarray(v) for v in (0.7, 0.3, 0.5, 0.4, 0.2)))
        beta = 2.0
        d = row_draws(jax.random.PRNGKey(5), L=L, V=V, n=1 << 16)
        calA_r, b_r, _ = ridge_moments(row_moments_cv(beta, row_noise(s, p), d), p)
        tok = ek_sample(jax.random.PRNGKey(6), p, 300)
        Ws = draw_weights(jax.random.PRNGKey(7), beta, s, p, 128)
        calA_w, b_w = jax.vmap(lambda W: ridge_stats(W, tok, p)[:2])(Ws)
    per_head = _symmetry_means(calA_w, b_w, V, L)
    theory = _symmetry_means(calA_r, b_r, V, L)
    se = per_head.std(0, ddof=1) / np.sqrt(per_head.shape[0])
    assert np.all(np.abs(per_head.mean(0) - theory) < 5 * se + 5e-3), (per_head.mean(0), theory)


def test_free_energy_terms_add_up():
    with jax.enable_x64(True):
        p = TheoryParams.preset("plain", L=8, V=3)
        d = row_draws(jax.random.PRNGKey(0), L=8, V=3, n=1024)
        t = free_energy_terms(1.0, jnp.log(jnp.array([0.8, 0.5, 0.6, 0.7, 0.9])), 20.0, p, d)
        parts = float(t.Q) + float(t.D) + float(t.R) + float(t.KL)
    assert abs(float(t.F) - parts) < 1e-10
