"""embeddings/posterior.py: the posterior with every weight sampled, exactly reduced to width D
(docs/theory.md §2f): its energy is the full network's, its Jacobian the Bartlett density, its
prior Gram Wishart."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import copyhead_jax as ch
from copyhead_jax.data import nested_mask, sample_tokens
from copyhead_jax.embeddings.posterior import (
    bartlett_factor,
    embedded_energy,
    from_full,
    gram_root,
    prior_gram_rms,
    prior_point,
    prior_scales,
)
from copyhead_jax.models import head_template


def test_embedded_energy_equals_neg_log_posterior_of_full_network():
    # U(Theta) of the width-N network = reduced U_N without the Jacobian + the off-span prior
    # energy (docs/theory.md §2f item 3); float64, so agreement to 1e-10 relative
    with jax.enable_x64(True):
        cfg = ch.TINY.replace(model=dict(width=16, sigma_e=0.7, sigma_p=1.3, sigma_G=0.8))
        obj = ch.Objective.from_config(cfg)
        V, L = cfg.task.V, cfg.task.L
        head = ch.init_head(jax.random.key(2), cfg.model, L=L, V=V, chi=cfg.posterior.chi)
        head = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), head)
        tokens = sample_tokens(jax.random.key(3), n=8, L=L, V=V)
        mask = nested_mask(6, 8)
        scales = prior_scales(V, L, 0.7, 1.3).astype(jnp.float64)
        p, off = from_full(head, scales, sigma_G=obj.sigma_G, sigma_O=obj.sigma_O)
        U_red = embedded_energy(
            p, tokens, mask, obj, like=head_template(cfg), scales=scales, width=16, jacobian=False
        )
        U_full = ch.neg_log_posterior(head, tokens, mask, obj)
        assert float(U_red + off) == pytest.approx(float(U_full), rel=1e-10)
        # and the Gram root reproduces the network's own Gram
        T = gram_root(p, scales, 16)
        U = head.embeddings()
        np.testing.assert_allclose(T @ T.T, U @ U.T / 16, rtol=1e-10, atol=1e-12)


def test_embedded_energy_jacobian_is_the_bartlett_density():
    # with no data, U_N(x) - U_N(x') = -log p(x) + log p(x') for the Bartlett law written in
    # z = log W_ii (chi_{N-i} density times the Jacobian w) and N(0, 1) below the diagonal
    cfg = ch.TINY.replace(model=dict(width=20))
    obj = ch.Objective.from_config(cfg).__class__(likelihood_weight=0.0)
    V, L, N = cfg.task.V, cfg.task.L, 20
    tokens, mask = sample_tokens(jax.random.key(4), n=2, L=L, V=V), nested_mask(2, 2)
    scales = prior_scales(V, L, 1.0, 1.0)

    def energy(p):
        return float(
            embedded_energy(p, tokens, mask, obj, like=head_template(cfg), scales=scales, width=N)
        )

    def log_density(p):
        w = np.exp(np.asarray(p.log_diag, np.float64))
        k = N - np.arange(V + L)
        return (
            np.sum(stats.chi.logpdf(w, k) + np.log(w))
            + np.sum(stats.norm.logpdf(p.lower))
            + np.sum(stats.norm.logpdf(p.W_G))
            + np.sum(stats.norm.logpdf(p.W_O_hat))
        )

    p1, p2 = (
        prior_point(jax.random.key(s), V=V, L=L, width=N, sigma_G=1.0, sigma_O=1.0) for s in (5, 6)
    )
    # float32 energies of size ~300: differences good to ~1e-4 absolute
    assert energy(p1) - energy(p2) == pytest.approx(log_density(p2) - log_density(p1), abs=1e-3)


def test_prior_point_gram_is_wishart():
    # E C = Sigma and E|C - Sigma|_F^2 = ((tr Sigma)^2 + tr Sigma^2) / N under NC ~ W(N, Sigma);
    # 4,000 draws: tolerance 5 Monte-Carlo standard errors of each mean
    V, L, N, n = 2, 3, 12, 4000
    scales = prior_scales(V, L, 0.5, 1.5)
    Sigma = np.diag(np.asarray(scales) ** 2)
    draw = lambda k: prior_point(k, V=V, L=L, width=N, sigma_G=1.0, sigma_O=1.0)

    def gram(k):
        T = gram_root(draw(k), scales, N)
        return T @ T.T

    C = np.asarray(jax.vmap(gram)(jax.random.split(jax.random.key(7), n)), np.float64)
    se = C.std(0) / math.sqrt(n)
    assert np.all(np.abs(C.mean(0) - Sigma) <= 5 * se + 1e-6)
    d2 = np.sum((C - Sigma) ** 2, axis=(1, 2))
    closed = (np.trace(Sigma) ** 2 + np.trace(Sigma @ Sigma)) / N
    assert abs(d2.mean() - closed) <= 5 * d2.std() / math.sqrt(n)
    # prior_gram_rms is that rms distance, relative to |Sigma|_F: against the draws
    rms = prior_gram_rms(Sigma, N) * np.linalg.norm(Sigma)
    assert abs(rms**2 - d2.mean()) <= 5 * d2.std() / math.sqrt(n)
    W = np.asarray(bartlett_factor(draw(jax.random.key(8))))
    assert np.all(np.triu(W, 1) == 0) and np.all(np.diag(W) > 0)
