"""embeddings/gram.py: the Gram change of frozen and planted embeddings, and the bound on
Adam's move (docs/theory.md §2e)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from copyhead_jax.embeddings import adam_step_bound, gram_change


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
