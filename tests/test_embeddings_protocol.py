"""Trained embeddings under Adam and sampled in the posterior (docs/theory.md §2e, §2f)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

import copyhead_jax as ch
from copyhead_jax.data import nested_mask, sample_tokens
from copyhead_jax.embedding_gram import adam_step_bound, gram_change
from copyhead_jax.models import head_template
from copyhead_jax.posterior_full import (
    bartlett_factor,
    embedded_energy,
    from_full,
    gram_root,
    prior_gram_rms,
    prior_point,
    prior_scales,
)


def _embeddings(key, N=40, V=3, L=5):
    kE, kb = jax.random.split(key)
    return jax.random.normal(kE, (N, V)), jax.random.normal(kb, (N, L))


def test_gram_change_zero_for_frozen_embeddings():
    W_E, b = _embeddings(jax.random.key(0))
    for v in gram_change(W_E, b, W_E, b).values():
        assert float(v) == 0.0


def test_gram_change_planted_rescale_matches_hand_computation():
    # W^E -> (1 + e) W^E, b unchanged: C_EE scales by (1 + e)^2, C_PP is unchanged and C_EP
    # scales by (1 + e), so every ratio has a closed form (float32 rounding ~1e-6 relative)
    W_E, b = _embeddings(jax.random.key(1))
    e = 0.1
    d = gram_change(W_E, b, (1 + e) * W_E, b)
    N, V = W_E.shape
    C0 = jnp.concatenate([W_E, b], 1).T @ jnp.concatenate([W_E, b], 1) / N
    cross = jnp.linalg.norm(e * C0[:V, V:]) * math.sqrt(2) / jnp.linalg.norm(C0)
    assert float(d["token"]) == pytest.approx((1 + e) ** 2 - 1, rel=1e-5)
    assert float(d["position"]) == 0.0
    assert float(d["cross"]) == pytest.approx(float(cross), rel=1e-5)
    dC_EE = ((1 + e) ** 2 - 1) * C0[:V, :V]
    whole = jnp.sqrt(jnp.sum(dC_EE**2) + 2 * jnp.sum((e * C0[:V, V:]) ** 2)) / jnp.linalg.norm(C0)
    assert float(d["all"]) == pytest.approx(float(whole), rel=1e-5)


def test_adam_step_bound_holds_and_is_attained():
    # optax's Adam on a scalar, float64: any gradient sequence moves the weight by <= the bound
    # per unit lr; gradients growing like (b2/b1)^t (the Cauchy-Schwarz equality case) for
    # 3,000 steps reach it within 5% (what is left of the bias correction, sqrt(1 - b2^t) =
    # 0.975), and a steady sign gives 1 per step
    bound = adam_step_bound(1.0)
    with jax.enable_x64(True):
        opt = optax.adam(1.0, eps=0.0)

        def steps(gs):
            def body(state, g):
                u, state = opt.update(g, state)
                return state, jnp.abs(u)

            return np.asarray(jax.lax.scan(body, opt.init(jnp.zeros(())), jnp.asarray(gs))[1])

        rng = np.random.default_rng(0)
        assert steps(rng.standard_cauchy(3000)).max() <= bound * (1 + 1e-9)
        grow = (0.9 / 0.999) ** np.arange(2999, -1, -1.0)
        assert bound * 0.95 < steps(grow).max() <= bound * (1 + 1e-9)
        np.testing.assert_allclose(steps(np.ones(50)), 1.0, rtol=1e-9)


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


@pytest.mark.heavy  # compiles a full Adam program and the exact solver: ~1 min on a loaded CPU
def test_protocol_driver_runs_tiny(tmp_path):
    from experiments import embeddings_protocol as E
    from experiments.common import load_spec

    spec = load_spec("tiny", "paper", "embeddings-protocol", tmp_path / "cache")
    res = E.main(spec, tmp_path, runs=[("softmax", 16, 8, 0, 20, True)])
    assert (tmp_path / "results" / "embeddings_protocol_tiny.json").exists()
    (run,) = res["runs"]
    assert run["epochs"] == 20 and run["finite"]
    # Adam's bound on each weight's move (docs/theory.md §2e) holds for the embeddings
    assert 0.0 < run["max_entry_move"] <= run["adam_bound"]
    assert set(res["exact_map"]["softmax/16"]["8/0"]) >= {"a1", "aG", "ok"}


@pytest.mark.heavy  # compiles NUTS on the reduced embedded posterior: ~1 min on a loaded CPU
def test_embedded_nuts_summarises_a_tiny_posterior():
    from copyhead_jax.embedding_runs import embedded_nuts

    cfg = ch.PAPER.replace(task=dict(L=4, V=2, n_test=16), model=dict(attention="softmax"))
    r = embedded_nuts(cfg, 8, 8, "annealed", P_pad=8, n_chains=2, n_warmup=10, n_samples=10)
    assert r["dim"] > 0 and len(r["acceptance"]) == 2
    for k in ("a1", "aG", "gram_dist"):
        assert np.isfinite(r[k]["mean"]) and r[k]["sd"] >= 0
    assert r["gram_dist"]["mean"] > 0 and r["prior_gram_dist_rms"] > 0
    assert len(r["mean_gram_shift_chains"]) == 2


def test_report_tables_have_a_row_per_run():
    """The tables of docs/reports/embeddings_protocol.md, from its committed JSON."""
    import json
    from pathlib import Path

    from experiments.report.embeddings import posterior_table, protocol_table

    results = Path(__file__).resolve().parents[1] / "docs" / "reports" / "results"
    for name, render in (("embeddings_protocol", protocol_table),
                         ("embeddings_posterior", posterior_table)):  # fmt: skip
        path = results / f"{name}.json"
        if not path.exists():
            pytest.skip(f"no {path}")
        res = json.loads(path.read_text())
        lines = render(res).splitlines()
        assert len(lines) == 2 + len(res["runs"]) and lines[1].startswith("|---|")
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines[2:])
