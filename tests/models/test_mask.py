"""The causal mask (models/_mask.py, through the heads, the exact reduction, the solver and the
sampler): brute force, identity 12.

The reference network is the literal forward pass with explicit loops over queries ``a`` and
keys ``b <= a`` in float64 NumPy, the loss summed over positions ``a >= 1`` (position 0 has no
previous token). Tolerances: the float32 bounds of tests/models/test_head.py (the same sums in
another order), float64 identities at 1e-10 as tests/models/test_reduce.py.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.fit import quenched_energy
from copyhead_jax.models import reduce_head
from copyhead_jax.objective import Objective, log_prior_energy, neg_log_posterior
from copyhead_jax.observables import copy_accuracy_of

HEADS = [("softmax", "inv_L"), ("linear", "none"), ("linear", "inv_L"), ("sigmoid", "inv_L")]
L, V, N, P = 6, 3, 16, 7
RTOL_F = 2e-5  # float32 outputs and energies (see tests/models/test_head.py)
RTOL_G = 1e-4  # float32 gradients and Hessian-vector products
RTOL_64 = 1e-10  # float64 identities


def make_head(attention, linear_scale, *, causal=True, width=N, seed=0):
    model = ch.ModelConfig(
        attention=attention, width=width, linear_scale=linear_scale, causal=causal
    )
    return ch.init_head(jax.random.key(seed), model, L=L, V=V, chi=30.0)


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def loop_network(head, tokens):
    """``(f[P, L, V], squared errors[P])`` by explicit loops over sequences, queries, keys."""
    W_E, b, W_G, W_O_hat = (
        np.asarray(w, np.float64) for w in (head.W_E, head.b, head.W_G, head.W_O_hat)
    )
    n = W_G.shape[0]
    W_O = W_O_hat / math.sqrt(head.chi * n)
    tokens = np.asarray(tokens)
    f = np.zeros((len(tokens), L, V))
    err = np.zeros(len(tokens))
    for i, t in enumerate(tokens):
        h = [W_E[:, t[a]] + b[:, a] for a in range(L)]
        for a in range(L):
            keys = range(a + 1)  # b <= a
            s = np.array([h[a] @ W_G @ h[c] / n for c in keys])
            if isinstance(head, ch.SoftmaxHead):
                w = np.exp(s - s.max())
                w /= w.sum()
            elif head.name == "sigmoid":  # sigmoid(s - log L) on the keys b <= a
                w = 1.0 / (1.0 + L * np.exp(-s))
            else:
                w = head.scale * s
            f[i, a] = W_O @ sum(w[c] * h[c] for c in keys)
            if a >= 1:  # non-periodic target: position 0 has none
                err[i] += np.sum((f[i, a] - np.eye(V)[t[a - 1]]) ** 2)
    return f, err


def naive_energy(head, tokens, mask, obj):
    """U of the masked network by plain autodiff-able float32 JAX (no fused gradient)."""
    n = head.width
    X = jax.nn.one_hot(tokens, V, dtype=jnp.float32)
    h = X @ head.W_E.T + head.b.T[None]
    s = jnp.einsum("pan,nm,pbm->pab", h, head.W_G, h) / n
    tril = jnp.tril(jnp.ones((L, L), bool))[None]
    if isinstance(head, ch.SoftmaxHead):
        A = jax.nn.softmax(jnp.where(tril, s, -jnp.inf), -1)
    elif head.name == "sigmoid":
        A = jnp.where(tril, 1.0 / (1.0 + L * jnp.exp(-s)), 0.0)
    else:
        A = head.scale * jnp.where(tril, s, 0.0)
    f = jnp.einsum("pab,pbn,vn->pav", A, h, head.W_O_hat) / jnp.sqrt(head.chi * n)
    err = jnp.sum((f - jnp.roll(X, 1, axis=1))[:, 1:] ** 2, axis=(1, 2))
    data = jnp.sum(jnp.where(mask > 0, err, 0.0))
    return obj.likelihood_weight * data + log_prior_energy(head, obj)


def objective() -> Objective:
    return Objective(likelihood_weight=30.0 / (2 * L * 30.0))


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_batched_path_equals_loop_network(attention, linear_scale):
    head = make_head(attention, linear_scale)
    t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
    f_ref, err_ref = loop_network(head, t)
    assert rel(head.outputs(t), f_ref) < RTOL_F
    M, R = head.logit_gram(), head.readout_map()
    assert rel(head(jax.nn.one_hot(t[2], V), M, R), f_ref[2]) < RTOL_F  # one-sequence API
    assert rel(head.squared_errors(t), err_ref) < RTOL_F
    keep = jnp.ones(P, jnp.float32)
    assert rel(head.squared_error_sum(t, keep), err_ref.sum()) < RTOL_F
    A = np.asarray(head.attention(jax.nn.one_hot(t[0], V), M))
    assert np.all(np.triu(A, 1) == 0)  # exactly zero weight on future keys
    if attention == "softmax":
        np.testing.assert_allclose(A.sum(-1), 1.0, rtol=1e-6)
        assert A[0, 0] == 1.0


@pytest.mark.parametrize("attention,linear_scale", HEADS)
def test_fused_gradient_and_hvp_equal_autodiff(attention, linear_scale):
    head = make_head(attention, linear_scale, seed=2)
    t = sample_tokens(jax.random.key(3), n=P, L=L, V=V)
    mask = (jnp.arange(P) < 5).astype(jnp.float32)
    obj = objective()

    def value_and_grad(f):
        return jax.jit(jax.value_and_grad(lambda h: f(h, t, mask, obj)))(head)

    U0, g0 = value_and_grad(naive_energy)
    U1, g1 = value_and_grad(neg_log_posterior)
    np.testing.assert_allclose(U1, U0, rtol=RTOL_F)
    for name in ("W_E", "b", "W_G", "W_O_hat"):
        assert rel(getattr(g1, name), getattr(g0, name)) < RTOL_G, name

    def hvp(f):
        return jax.jit(lambda h: jax.jvp(lambda z: jax.grad(f)(z, t, mask, obj), (h,), (g0,))[1])(
            head
        )

    for x, y in zip(
        jax.tree_util.tree_leaves(hvp(neg_log_posterior)),
        jax.tree_util.tree_leaves(hvp(naive_energy)),
    ):
        assert rel(x, y) < RTOL_G


@pytest.mark.parametrize("attention", ["linear", "softmax", "sigmoid"])
def test_identity_12_with_the_mask(attention):
    """The width-N causal head and its width-(V+L) image: same logits, outputs, errors, U up to
    the off-span prior, projected gradients (docs/theory.md §2c, identity 12 in §7)."""
    with jax.enable_x64(True):
        full = make_head(attention, "inv_L", width=32)
        full = jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), full)
        red = reduce_head(full)
        h = red.head
        assert h.causal and h.width == V + L
        obj = objective()
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64)
        close = lambda a, b: rel(a, b) < RTOL_64
        x = jax.nn.one_hot(t[0], V, dtype=jnp.float64)

        @eqx.filter_jit  # one program per head
        def evaluate(hh):
            grad = eqx.filter_grad(lambda z: neg_log_posterior(z, t, mask, obj))(hh)
            U = quenched_energy(hh, t, mask, obj)
            return hh.outputs(t), hh.squared_errors(t), hh.attention(x), U, grad

        (f_R, e_R, A_R, U_R, gR), (f_F, e_F, A_F, U_F, gF) = evaluate(h), evaluate(full)
        assert close(f_R, f_F) and close(e_R, e_F) and close(A_R, A_F)
        assert close(U_R, U_F - red.U_perp)
        assert close(red.Q.T @ gF.W_G @ red.Q, gR.W_G)
        assert close(gF.W_O_hat @ red.Q, gR.W_O_hat)


@pytest.mark.parametrize("attention", ["linear", "softmax", "sigmoid"])
def test_sampler_readout_conditional_is_the_quadratic_of_U(attention):
    """Given W^G, U is quadratic in the readout: U(w) - U(0) = sum_v (w_v Lam w_v / 2 - B_v w_v)
    with the sampler's ``(Lam, B)``; exact in float64 (1e-10) when the mask drops position 0."""
    from copyhead_jax.sampling.collapsed import readout_conditional

    with jax.enable_x64(True):
        h = reduce_head(
            jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), make_head(attention, "inv_L"))
        ).head
        t = sample_tokens(jax.random.key(4), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64).at[-2:].set(0.0)
        obj = objective()
        w = h.W_O_hat
        zero = eqx.tree_at(lambda z: z.W_O_hat, h, jnp.zeros_like(w))
        energy = lambda z: quenched_energy(z, t, mask, obj)  # noqa: E731
        (Lam, B, c), U_w, U_zero = jax.jit(
            lambda: (readout_conditional(h, t, mask, obj), energy(h), energy(zero))
        )()
        dU = U_w - U_zero
        quad = 0.5 * jnp.sum(w * (w @ Lam.T)) - jnp.sum(B.T * w)  # Lam holds the prior too
        assert abs(float(dU - quad)) <= RTOL_64 * abs(float(dU))
        # c = w sum |y|^2 over kept sequences: L - 1 targets each
        U0 = U_zero - jnp.sum(h.W_G**2) / 2
        assert abs(float(U0 - c)) <= RTOL_64 * abs(float(c))
        assert abs(float(c) - obj.likelihood_weight * 5 * (L - 1)) <= 1e-12 * float(c)


def test_exact_solver_reaches_a_causal_stationary_point():
    """The reduced engine's solver works on the causal objective (its gradient is the fused
    causal one): |grad U| <= 1e-8 max(1, |U|) and U equals the plain evaluation."""
    from copyhead_jax.fit import solve_map
    from copyhead_jax.models import head_template, init_reduced

    cfg = ch.preset("plain").replace(
        task=dict(L=L, V=V),
        model=dict(attention="softmax", width=N, engine="reduced", causal=True),
        train=dict(train_embeddings=False),
    )
    with jax.enable_x64(True):
        obj = Objective.from_config(cfg)
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64)
        h0 = init_reduced(jax.random.key(0), cfg, head_template(cfg))
        assert h0.causal
        fit = solve_map(h0, t, mask, obj, n_lanczos=16)
        assert bool(fit.converged) and float(fit.rel_grad) <= 1e-8
        assert abs(float(fit.U - quenched_energy(fit.head, t, mask, obj))) <= 1e-12 * abs(
            float(fit.U)
        )


def test_causal_false_matches_the_periodic_loss_and_copy_accuracy_drops_position_0():
    t = jnp.asarray([[0, 1, 2, 1, 0, 2]])
    f = jax.nn.one_hot(jnp.roll(t, 1, axis=1), V)  # a perfect copy, y^0 = x^{L-1} included
    f = f.at[0, 0].set(jax.nn.one_hot(1, V))  # ... except at position 0 (wrong: x^{L-1} = 2)
    assert float(copy_accuracy_of(f, t, False)) == pytest.approx((L - 1) / L)
    assert float(copy_accuracy_of(f, t, True)) == 1.0
    head = make_head("softmax", "inv_L", causal=False)
    assert not head.causal and not ch.ModelConfig().causal
    with pytest.raises(ValueError, match="ModelConfig.causal must be a bool"):
        ch.ModelConfig(causal=1)


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_blocked_measure_matches_measure_with_the_mask(attention):
    """The exact chunk's blockwise measurement (test loss and copy accuracy without position 0)
    equals ``observables.measure`` (same sums in another order: 1e-12)."""
    from copyhead_jax.fit import measure_blocked
    from copyhead_jax.fit.exact import BLOCK, blocks_of
    from copyhead_jax.observables import measure

    P_pad = BLOCK + 3
    with jax.enable_x64(True):
        h = reduce_head(
            jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), make_head(attention, "inv_L"))
        ).head
        t = sample_tokens(jax.random.key(1), n=P_pad, L=L, V=V)
        test = sample_tokens(jax.random.key(2), n=16, L=L, V=V)
        mask = jnp.zeros(P_pad, jnp.float64).at[:5].set(1.0)
        blocks = jnp.asarray(blocks_of(5, P_pad))
        m1, m2 = jax.jit(
            lambda: (measure(h, t, mask, test), measure_blocked(h, t, mask, test, blocks))
        )()
        for a, b in zip(jax.tree_util.tree_leaves(m1), jax.tree_util.tree_leaves(m2)):
            assert rel(b, a) <= 1e-12
        _, err = loop_network(h, test)
        assert rel(m1.test_loss, err.mean()) <= 1e-10
