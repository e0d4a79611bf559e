"""Exact width reduction (docs/theory.md §2c, identity 12) and the Gram sources."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.fit import quenched_energy
from copyhead_jax.models import (
    expand_head,
    head_template,
    init_head,
    init_reduced,
    prior_root,
    reduce_head,
    root_of,
    wishart_root,
)
from copyhead_jax.objective import Objective, neg_log_posterior

N, L, V, P = 64, 6, 3, 12
# float64 throughout: the identities are exact, so they hold to rounding (~1e-12 relative)
RTOL = 1e-10

CASES = [(att, pre) for att in ("linear", "softmax") for pre in ("paper", "plain", "paper-chi-lik")]
CASES += [("sigmoid", "plain")]  # a head on autodiff's fast paths: the reduction is generic


def _cfg(attention, preset):
    return ch.preset(preset).replace(
        task=dict(L=L, V=V),
        model=dict(attention=attention, width=N),
        train=dict(train_embeddings=False),
    )


def _full(cfg, key=0):
    c = cfg
    h = init_head(
        jax.random.key(key),
        c.model,
        L=L,
        V=V,
        chi=c.posterior.chi,
        chi_in_readout_prior=c.posterior.chi_in_readout_prior,
    )
    return jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), h)


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.max(np.abs(b)), 1e-300)
    assert np.max(np.abs(a - b)) <= rtol * scale, np.max(np.abs(a - b)) / scale


@pytest.mark.parametrize("attention,preset", CASES)
def test_identity_12(attention, preset):
    """Logits, outputs, data term, U - U_perp, projected gradients and one SGLD step of a
    width-64 head equal those of its width-(V+L) image."""
    with jax.enable_x64(True):
        cfg = _cfg(attention, preset)
        obj = Objective.from_config(cfg)
        full = _full(cfg)
        red = reduce_head(full, sigma_G=obj.sigma_G, sigma_O=obj.sigma_O)
        h = red.head
        assert h.width == V + L
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64)
        _close(h.logit_gram(), full.logit_gram())
        _close(h.readout_map(), full.readout_map())
        _close(h.outputs(t), full.outputs(t))
        _close(h.squared_errors(t), full.squared_errors(t))
        _close(quenched_energy(h, t, mask, obj), quenched_energy(full, t, mask, obj) - red.U_perp)

        grad = lambda hh: eqx.filter_grad(lambda x: neg_log_posterior(x, t, mask, obj))(hh)
        gF, gR = grad(full), grad(h)
        Q = red.Q
        _close(Q.T @ gF.W_G @ Q, gR.W_G)
        _close(gF.W_O_hat @ Q, gR.W_O_hat)

        # SGLD steps on (W^G, W_O_hat), embeddings frozen; reduced chain driven by the
        # projected noise Q^T xi Q, xi_O Q: the projected full chain is the reduced chain
        eta = 1e-3
        k = jax.random.key(2)
        for _ in range(3):
            k, kG, kO = jax.random.split(k, 3)
            xiG = jax.random.normal(kG, (N, N), jnp.float64)
            xiO = jax.random.normal(kO, (V, N), jnp.float64)
            gF, gR = grad(full), grad(h)
            full = eqx.tree_at(
                lambda x: (x.W_G, x.W_O_hat),
                full,
                (
                    full.W_G - eta * gF.W_G + math.sqrt(2 * eta) * xiG,
                    full.W_O_hat - eta * gF.W_O_hat + math.sqrt(2 * eta) * xiO,
                ),
            )
            h = eqx.tree_at(
                lambda x: (x.W_G, x.W_O_hat),
                h,
                (
                    h.W_G - eta * gR.W_G + math.sqrt(2 * eta) * (Q.T @ xiG @ Q),
                    h.W_O_hat - eta * gR.W_O_hat + math.sqrt(2 * eta) * (xiO @ Q),
                ),
            )
        _close(Q.T @ full.W_G @ Q, h.W_G)
        _close(full.W_O_hat @ Q, h.W_O_hat)
        _close(h.outputs(t), full.outputs(t))


def test_expand_then_reduce_is_identity():
    """Back to width N (off-span part from its prior) and down again: the span part is kept."""
    with jax.enable_x64(True):
        cfg = _cfg("softmax", "plain")
        full = _full(cfg)
        red = reduce_head(full).head
        back = expand_head(red, full, jax.random.key(5))
        again = reduce_head(back).head
        _close(again.logit_gram(), red.logit_gram())
        _close(again.readout_map(), red.readout_map())


def test_wishart_root_moments():
    """N C ~ Wishart(N, Sigma): E C = Sigma and Var C_ij = (S_ii S_jj + S_ij^2) / N. With
    4,000 draws the sample mean's standard error is sqrt(Var / 4000); 5 standard errors."""
    model = ch.ModelConfig(engine="reduced", width=40, sigma_e=0.7, sigma_p=1.3)
    n = 4000
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.key(0), n)
        T = jax.vmap(lambda k: wishart_root(k, model, V=V, L=L))(keys)
        C = np.asarray(T @ jnp.swapaxes(T, 1, 2))
        S = np.asarray(prior_root(model, V=V, L=L)) ** 2
    d = np.diag(S)
    var = (np.outer(d, d) + S**2) / model.width
    se = np.sqrt(var / n)
    assert np.all(np.abs(C.mean(0) - S) <= 5 * se)
    assert np.all(np.abs(C.var(0) / var - 1) <= 0.2)  # variance of a variance: ~ sqrt(2/n) * 3


def test_realised_root_matches_full_engine_embeddings():
    """gram='realised' reduces the very embeddings that the full engine draws from the key."""
    cfg = _cfg("softmax", "plain")
    with jax.enable_x64(True):
        rcfg = cfg.replace(model=dict(engine="reduced"))
        red = init_reduced(jax.random.key(3), rcfg, head_template(rcfg))
        full = _full(cfg, key=3)
        T = root_of(red)
        U = full.embeddings()
        _close(T @ T.T, U @ U.T / N, rtol=1e-6)  # float32 draws, float64 Gram


def test_infinite_width_gram_is_prior():
    cfg = _cfg("linear", "paper").replace(model=dict(engine="reduced", width="inf"))
    with jax.enable_x64(True):
        T = root_of(init_reduced(jax.random.key(0), cfg, head_template(cfg)))
        C = np.asarray(T @ T.T)
    np.testing.assert_allclose(C, np.eye(V + L), atol=1e-12)


def test_config_refuses_trained_embeddings_and_small_width():
    """Trained embeddings on the reduced engine are the exact joint MAP (§2d): allowed with the
    exact solver at a finite width, refused with continuation or at width infinity."""
    assert ch.PAPER.replace(model=dict(engine="reduced")).train.train_embeddings
    with pytest.raises(ValueError, match="trained embeddings is the exact joint MAP"):
        ch.PAPER.replace(model=dict(engine="reduced"), solver=dict(continuation=True))
    with pytest.raises(ValueError, match="trained embeddings is the exact joint MAP"):
        ch.PAPER.replace(model=dict(engine="reduced", width=math.inf))
    with pytest.raises(ValueError, match="V \\+ L"):
        ch.TINY.replace(model=dict(engine="reduced", width=4))
    with pytest.raises(ValueError, match="engine='reduced'"):
        ch.TINY.replace(solver=ch.ExactConfig())
