"""Heads: the batched one-hot compute path against the naive network of docs/theory.md §2.

The reference is the literal forward pass, ``h^a = W^E x^a + b^a``, ``s = h W^G h^T / N``,
``A = act(s)``, ``f = W^O A h``, in float64 NumPy (``O(P L N)`` per sequence, no ``M``/``R``
shortcut). The engine runs in float32, so the tolerances below are float32 rounding bounds.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.models import feature_moments, feature_moments_grad
from copyhead_jax.objective import Objective, log_prior_energy, neg_log_posterior

HEADS = [("softmax", "inv_L"), ("linear", "none"), ("linear", "inv_L"), ("sigmoid", "inv_L")]
SHAPES = [(6, 3, 16), (25, 5, 64)]  # (L, V, N): the TINY shape and the paper's L, V

# float32 relative tolerances, against max |reference|. The fast path sums the same products
# in another order (N-term dot products folded into M, R; D-term contractions per sequence):
# each output is a sum of ~N + L*D terms of float32 products, so the rounding error is about
# eps * sqrt(#terms) ~ 6e-8 * 30 ~ 2e-6 relative; the softmax adds the logits' relative error
# times |s| (O(1) at init). 2e-5 leaves an order of magnitude of margin, and is ~1e4 times
# smaller than any modelling mistake (a wrong block of M or R changes f at O(1)).
RTOL_F = 2e-5
# gradients: both sides float32 (autodiff of the naive form vs the hand-written backward), sums
# over P*L*L terms of O(1) products: eps * sqrt(P L^2) ~ 6e-8 * 300 ~ 2e-5 relative.
RTOL_G = 1e-4


def make_head(attention: str, linear_scale: str, L: int, V: int, N: int, seed: int = 0):
    model = ch.ModelConfig(attention=attention, width=N, linear_scale=linear_scale)
    return ch.init_head(jax.random.key(seed), model, L=L, V=V, chi=30.0)


def naive_outputs(head, tokens) -> np.ndarray:
    """``f[P, L, V]`` by the literal forward pass, float64."""
    W_E, b, W_G, W_O_hat = (
        np.asarray(w, np.float64) for w in (head.W_E, head.b, head.W_G, head.W_O_hat)
    )
    N, V = W_G.shape[0], W_E.shape[1]
    W_O = W_O_hat / np.sqrt(head.chi * N)
    X = np.eye(V)[np.asarray(tokens)]  # [P, L, V]
    h = X @ W_E.T + b.T[None]  # h^a = W^E x^a + b^a, [P, L, N]
    s = np.einsum("pan,nm,pbm->pab", h, W_G, h) / N
    if isinstance(head, ch.SoftmaxHead):
        A = np.exp(s - s.max(-1, keepdims=True))
        A /= A.sum(-1, keepdims=True)
    elif head.name == "sigmoid":  # A_ab = 1 / (1 + e^{-(s_ab - log L)}) = 1 / (1 + L e^{-s_ab})
        A = 1.0 / (1.0 + s.shape[-1] * np.exp(-s))
    else:
        A = head.scale * s
    return np.einsum("pab,pbn,vn->pav", A, h, W_O)


def naive_energy(head, tokens, mask, obj):
    """U by the literal forward pass in float32 JAX, differentiated by plain autodiff."""
    N, V = head.width, head.W_E.shape[1]
    X = jax.nn.one_hot(tokens, V, dtype=jnp.float32)
    h = X @ head.W_E.T + head.b.T[None]
    s = jnp.einsum("pan,nm,pbm->pab", h, head.W_G, h) / N
    if isinstance(head, ch.SoftmaxHead):
        A = jax.nn.softmax(s, -1)
    elif head.name == "sigmoid":
        A = 1.0 / (1.0 + s.shape[-1] * jnp.exp(-s))
    else:
        A = head.scale * s
    f = jnp.einsum("pab,pbn,vn->pav", A, h, head.W_O_hat) / jnp.sqrt(head.chi * N)
    err = jnp.sum((f - jnp.roll(X, 1, axis=1)) ** 2, axis=(1, 2))
    return obj.likelihood_weight * jnp.sum(jnp.where(mask > 0, err, 0.0)) + log_prior_energy(
        head, obj
    )


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def objective(head) -> Objective:
    L = head.b.shape[1]
    return Objective(likelihood_weight=30.0 / (2 * L * 30.0))  # per-position, sigma^2 = chi = 30


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_outputs_equal_naive_forward(attention, linear_scale):
    # the TINY shape only: at the paper's shape the outputs are checked through U and its
    # gradient (test_energy_and_gradient_equal_naive_autodiff), whose data term sums them
    L, V, N = SHAPES[0]
    head = make_head(attention, linear_scale, L, V, N)
    t = sample_tokens(jax.random.key(1), n=12, L=L, V=V)
    ref = naive_outputs(head, t)
    assert rel(head.outputs(t), ref) < RTOL_F
    # the one-sequence API (M, R shared) agrees too
    M, R = head.logit_gram(), head.readout_map()
    assert rel(head(jax.nn.one_hot(t[3], V), M, R), ref[3]) < RTOL_F
    err = np.sum((ref - np.eye(V)[np.roll(np.asarray(t), 1, axis=1)]) ** 2, axis=(1, 2))
    assert rel(head.squared_errors(t), err) < RTOL_F


@pytest.mark.parametrize("attention,linear_scale", HEADS)
@pytest.mark.parametrize("L,V,N", SHAPES)
def test_energy_and_gradient_equal_naive_autodiff(attention, linear_scale, L, V, N):
    head = make_head(attention, linear_scale, L, V, N, seed=2)
    t = sample_tokens(jax.random.key(3), n=20, L=L, V=V)
    mask = (jnp.arange(20) < 13).astype(jnp.float32)
    obj = objective(head)
    U0, g0 = jax.jit(jax.value_and_grad(naive_energy), static_argnums=3)(head, t, mask, obj)
    U1, g1 = jax.jit(jax.value_and_grad(neg_log_posterior), static_argnums=3)(head, t, mask, obj)
    np.testing.assert_allclose(U1, U0, rtol=RTOL_F)
    for name in ("W_E", "b", "W_G", "W_O_hat"):
        assert rel(getattr(g1, name), getattr(g0, name)) < RTOL_G, name


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_padding_rows_contribute_exactly_nothing(attention, linear_scale):
    L, V, N, P = 8, 3, 16, 10
    head = make_head(attention, linear_scale, L, V, N, seed=4)
    obj = objective(head)
    t = sample_tokens(jax.random.key(5), n=P, L=L, V=V)
    mask = (jnp.arange(P) < 6).astype(jnp.float32)
    other = t.at[6:].set(sample_tokens(jax.random.key(6), n=P - 6, L=L, V=V))
    vg = jax.jit(jax.value_and_grad(neg_log_posterior), static_argnums=3)
    U_a, g_a = vg(head, t, mask, obj)
    U_b, g_b = vg(head, other, mask, obj)
    # same program, different padding content: bit-identical value and gradient
    assert float(U_a) == float(U_b)
    for x, y in zip(jax.tree_util.tree_leaves(g_a), jax.tree_util.tree_leaves(g_b)):
        np.testing.assert_array_equal(x, y)
    # and the same as the unpadded dataset (different program: float32 summation order)
    U_c, g_c = vg(head, t[:6], jnp.ones(6), obj)
    np.testing.assert_allclose(U_a, U_c, rtol=RTOL_F)
    for x, y in zip(jax.tree_util.tree_leaves(g_a), jax.tree_util.tree_leaves(g_c)):
        assert rel(x, y) < RTOL_G


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_forward_mode_and_second_derivatives(attention, linear_scale):
    """The fused gradient is a JVP rule: Hessian-vector products still match plain autodiff."""
    L, V, N = 6, 3, 16
    head = make_head(attention, linear_scale, L, V, N, seed=8)
    t = sample_tokens(jax.random.key(9), n=8, L=L, V=V)
    mask = jnp.ones(8, jnp.float32)
    obj = objective(head)
    direction = jax.jit(jax.grad(lambda h: naive_energy(h, t, mask, obj)))(head)

    def hvp(f):
        grad = jax.grad(lambda h: f(h, t, mask, obj))
        return jax.jit(lambda h: jax.jvp(grad, (h,), (direction,))[1])(head)

    for x, y in zip(
        jax.tree_util.tree_leaves(hvp(neg_log_posterior)),
        jax.tree_util.tree_leaves(hvp(naive_energy)),
    ):
        assert rel(x, y) < RTOL_G


def test_vmap_over_runs_matches_each_run():
    L, V, N = 6, 3, 16
    heads = [make_head("softmax", "inv_L", L, V, N, seed=s) for s in range(3)]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *heads)
    t = sample_tokens(jax.random.key(10), n=8, L=L, V=V)
    mask = jnp.ones(8, jnp.float32)
    obj = objective(heads[0])
    grad = jax.grad(lambda h: neg_log_posterior(h, t, mask, obj))
    batched = jax.jit(jax.vmap(grad))(stacked)
    for r, h in enumerate(heads):
        g = jax.jit(grad)(h)  # one program, three runs
        assert rel(batched.W_G[r], g.W_G) < 1e-6  # same maths, batched: rounding only


def test_sequence_blocks_change_nothing(monkeypatch):
    """The fused data term scans over blocks of sequences; the result is the unblocked one."""
    import copyhead_jax.models._compute as compute

    L, V, N, P = 6, 3, 16, 150  # 150 = 2 full blocks of 64 and a padded one
    head = make_head("softmax", "inv_L", L, V, N, seed=11)
    t = sample_tokens(jax.random.key(12), n=P, L=L, V=V)
    mask = (jnp.arange(P) < 140).astype(jnp.float32)
    obj = objective(head)

    def vg():  # traced afresh at each call, with the block size in force
        return jax.jit(jax.value_and_grad(lambda h: neg_log_posterior(h, t, mask, obj)))(head)

    monkeypatch.setattr(compute, "SEQ_BLOCK", 64)
    U_b, g_b = vg()
    monkeypatch.setattr(compute, "SEQ_BLOCK", None)
    U_a, g_a = vg()
    np.testing.assert_allclose(U_b, U_a, rtol=RTOL_F)  # float32 summation order only
    for x, y in zip(jax.tree_util.tree_leaves(g_b), jax.tree_util.tree_leaves(g_a)):
        assert rel(x, y) < RTOL_G


# ---- heads as classes: the registry, the class constants, the constructors -----------------


def test_registry_is_the_one_map_from_attention_to_class():
    from copyhead_jax.config import ATTENTIONS
    from copyhead_jax.models import HEADS, head_class

    assert tuple(HEADS) == ATTENTIONS  # every configurable attention has exactly one class
    assert head_class("linear") is ch.LinearHead and head_class("softmax") is ch.SoftmaxHead
    assert head_class("sigmoid").theory.name == "sigmoid"
    with pytest.raises(ValueError, match=r"attention must be one of \('linear', 'softmax', 'sig"):
        head_class("relu")
    assert ch.LinearHead.order_names == ("c1", "cG") and ch.SoftmaxHead.order_names == ("a1", "aG")
    assert ch.LinearHead.gauge_fix and not ch.SoftmaxHead.gauge_fix
    assert (ch.LinearHead.warmup_default, ch.SoftmaxHead.warmup_default) == (0.0, 0.1)


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_from_config_and_from_arrays_rebuild_the_head(attention, linear_scale):
    """``init_head``, ``from_arrays`` (sweep keys ``params/*``) and ``head_template`` agree on the
    class and the static fields (``chi``, linear ``scale``); the arrays are kept as given."""
    from copyhead_jax.models import head_class, head_template

    cfg = ch.TINY.replace(
        model=dict(attention=attention, linear_scale=linear_scale), posterior=dict(chi=7.0)
    )
    L, V = cfg.task.L, cfg.task.V
    head = ch.init_head(jax.random.key(3), cfg.model, L=L, V=V, chi=cfg.posterior.chi)
    stored = {f"params/{k}": np.asarray(getattr(head, k)) for k in ("W_E", "b", "W_G", "W_O_hat")}
    back = head_class(attention).from_arrays(cfg, stored)
    assert type(back) is type(head) is type(head_template(cfg))
    assert back.chi == head.chi == head_template(cfg).chi == 7.0
    if attention == "linear":
        assert back.scale == head.scale == (1.0 / L if linear_scale == "inv_L" else 1.0)
    for k in ("W_E", "b", "W_G", "W_O_hat"):
        np.testing.assert_array_equal(getattr(back, k), getattr(head, k))


@pytest.mark.parametrize("attention", ["linear", "softmax", "sigmoid"])
def test_gauge_rule_matches_the_heads_symmetry(attention):
    """Linear: ``(W^G, W^O) -> -(W^G, W^O)`` leaves ``f`` unchanged (a Z2 gauge), and the measured
    order parameters are the same for both signs with ``r >= 0``. Softmax: the flip changes
    ``f`` (no gauge to fix)."""
    import equinox as eqx

    head = make_head(attention, "inv_L", L=6, V=3, N=16, seed=1)
    flip = eqx.tree_at(lambda h: (h.W_G, h.W_O_hat), head, (-head.W_G, -head.W_O_hat))
    tokens = sample_tokens(jax.random.key(0), n=8, L=6, V=3)
    same = rel(flip.outputs(tokens), head.outputs(tokens)) < RTOL_F
    assert same == head.gauge_fix
    if head.gauge_fix:
        mask = jnp.ones(8)
        o, o_flip = (ch.measure(h, tokens, mask, tokens).order for h in (head, flip))
        assert float(o.r) >= 0 and float(o_flip.r) >= 0
        np.testing.assert_allclose([o_flip.c1, o_flip.cG], [o.c1, o.cG], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("attention,linear_scale", HEADS)
@pytest.mark.parametrize("causal", [False, True])
def test_hand_written_fast_paths_equal_the_autodiff_defaults(attention, linear_scale, causal):
    """A head's hand-derived ``_outputs_T``, ``energy_fn`` (value and gradient in ``(M, R)``) and
    ``feature_activation`` (activation, the readout features' moments and their pullback) are
    overrides of ``AbstractHead``'s autodiff defaults: the same numbers to float64 rounding
    (the sums run in another order)."""
    from copyhead_jax.models import AbstractHead

    L, V, N, P = 5, 3, 8, 7
    model = ch.ModelConfig(attention=attention, width=N, linear_scale=linear_scale, causal=causal)
    with jax.enable_x64(True):
        head = ch.init_head(jax.random.key(0), model, L=L, V=V, chi=30.0)
        head = jax.tree.map(lambda w: w.astype(jnp.float64), head)
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        keep = jnp.arange(P) < 5  # two padding rows
        M, R = head.logit_gram(), head.readout_map()
        s = jax.random.normal(jax.random.key(2), (P, L, L), jnp.float64)
        # the readout features' moments and their pullback (blocked and hand-written against
        # one block and autodiff), at random row weights and random cotangents
        k = jax.random.uniform(jax.random.key(4), (P, L), jnp.float64) * keep[:, None]
        D = V + L
        G_S = jax.random.normal(jax.random.key(5), (D, D), jnp.float64)
        G_B = jax.random.normal(jax.random.key(6), (D, V), jnp.float64)

        def everything(outputs_T, energy_fn, act):
            """Every override's numbers, one compiled program per side."""
            S, B, res = feature_moments(act, M, t, k)
            pullback = feature_moments_grad(act, res, t, k, G_S, G_B)
            return outputs_T(M, R, t), energy_fn(M, R, t, keep), act.rows(s), S, B, pullback

        ours = jax.jit(
            lambda: everything(head._outputs_T, head.energy_fn(), head.feature_activation())
        )()
        defaults = jax.jit(
            lambda: everything(
                lambda *a: AbstractHead._outputs_T(head, *a),
                AbstractHead.energy_fn(head),
                AbstractHead.feature_activation(head),
            )
        )()
        jax.tree.map(
            lambda a, b: np.testing.assert_allclose(
                np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12 * float(np.max(np.abs(b)))
            ),
            ours,
            defaults,
        )
