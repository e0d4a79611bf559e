"""The collapsed energy's hand-written gradient (copyhead_jax.sampling.collapsed, models._features).

Reference: the same U_m built by plain autodiff from ``readout_conditional`` (whose value the
tests of test_sample_reduced.py and test_causal.py tie to the quenched U) with LAPACK's
Cholesky. In float64 the two gradients are the same sums in another order: 1e-10 relative.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.models import reduce_head
from copyhead_jax.objective import Objective
from copyhead_jax.sampling.collapsed import (
    draw_observed,
    draw_readout,
    marginal_energy,
    marginal_value_grad,
    observed_from_moments,
    readout_conditional,
    spd_inverse,
    with_WG,
)

L, V, N, P = 6, 3, 16, 9
RTOL_64 = 1e-10
HEADS = [
    ("softmax", "inv_L", False),
    ("softmax", "inv_L", True),
    ("linear", "none", False),
    ("linear", "inv_L", True),
    ("sigmoid", "inv_L", False),
    ("sigmoid", "inv_L", True),
]


def reference_energy(head, tokens, mask, obj, scale):
    """U_m by autodiff-able pieces: ``readout_conditional`` and ``jnp.linalg.cholesky``, the
    row weights scaled by ``scale`` (the readout precision's data part and B are linear in
    them)."""
    Lam, B, c = readout_conditional(head, tokens, mask, obj)
    eye = jnp.eye(Lam.shape[0], dtype=Lam.dtype) / obj.sigma_O**2
    Lc = jnp.linalg.cholesky(scale * (Lam - eye) + eye)
    Z = jax.scipy.linalg.solve_triangular(Lc, scale * B, lower=True)
    prior = jnp.sum(head.W_G**2) / (2 * obj.sigma_G**2)
    logdet = jnp.sum(jnp.log(jnp.diag(Lc) * obj.sigma_O))
    return prior - 0.5 * jnp.sum(Z**2) + B.shape[1] * logdet + scale * c


def setup(attention, linear_scale, causal):
    model = ch.ModelConfig(attention=attention, width=N, linear_scale=linear_scale, causal=causal)
    head = ch.init_head(jax.random.key(2), model, L=L, V=V, chi=30.0)
    head = reduce_head(jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), head)).head
    obj = Objective(likelihood_weight=0.7, sigma_G=1.3, sigma_O=0.9)
    t = sample_tokens(jax.random.key(4), n=P, L=L, V=V)
    mask = jnp.ones(P, jnp.float64).at[-3:].set(0.0)  # padding rows must leave every sum
    return head, obj, t, mask


def value_grad_hvp(energy, attention, linear_scale, causal):
    """Value, gradient in W^G and a Hessian-vector product (forward over reverse, as the
    whitening computes it) of ``energy`` at a generic point, with padded rows and a row-weight
    scale; one compiled program (float64), traced afresh at each call so that the feature
    blocks in force at the call are the ones it uses."""
    with jax.enable_x64(True):
        head, obj, t, mask = setup(attention, linear_scale, causal)
        x0 = head.W_G.ravel() * 3.0  # off the init: a generic point
        v = jax.random.normal(jax.random.key(5), x0.shape, x0.dtype)
        f = lambda y: energy(with_WG(head, y), t, mask, obj, 1.7)  # noqa: E731
        return jax.jit(lambda x: (f(x), jax.grad(f)(x), jax.jvp(jax.grad(f), (x,), (v,))[1]))(x0)


def assert_equal_to_reference(ours, ref):
    (u, g, hv), (u_ref, g_ref, hv_ref) = map(lambda out: [np.asarray(a) for a in out], (ours, ref))
    np.testing.assert_allclose(u, u_ref, rtol=RTOL_64)
    assert np.max(np.abs(g - g_ref)) / np.max(np.abs(g_ref)) < RTOL_64
    assert np.max(np.abs(hv - hv_ref)) / np.max(np.abs(hv_ref)) < RTOL_64


@pytest.mark.parametrize(("attention", "linear_scale", "causal"), HEADS)
def test_gradient_and_hessian_equal_autodiff(attention, linear_scale, causal):
    """Value, gradient and Hessian-vector product of the custom-JVP energy equal plain autodiff
    of the reference."""
    head = (attention, linear_scale, causal)
    ours = value_grad_hvp(marginal_energy, *head)
    assert_equal_to_reference(ours, value_grad_hvp(reference_energy, *head))


def test_gradient_in_the_embeddings_equals_autodiff():
    """The embeddings enter U_m through M and directly through Lambda and B: the custom rule's
    embedding gradient (both paths) equals autodiff's."""
    with jax.enable_x64(True):
        head, obj, t, mask = setup("softmax", "inv_L", False)

        def energy(f):
            return lambda W_E: f(eqx.tree_at(lambda h: h.W_E, head, W_E), t, mask, obj, 1.0)

        ours = jax.jit(jax.grad(energy(marginal_energy)))(head.W_E)
        ref = jax.jit(jax.grad(energy(reference_energy)))(head.W_E)
        assert float(jnp.max(jnp.abs(ours - ref)) / jnp.max(jnp.abs(ref))) < RTOL_64


def test_spd_inverse_equals_lapack():
    """The Gauss-Jordan sweep's inverse and log-determinant equal LAPACK's (float64) on a
    generic SPD matrix of the collapsed precision's size, condition number 1e4 and inverse of
    norm 1: both are backward stable, so they agree to ~cond * eps = 2e-12 (tolerance 5x)."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        Q, _ = np.linalg.qr(rng.normal(size=(30, 30)))
        A = jnp.asarray((Q * np.logspace(0, 4, 30)) @ Q.T)
        inv, logdet = spd_inverse(A)
        np.testing.assert_allclose(inv, np.linalg.inv(np.asarray(A)), rtol=0, atol=1e-11)
        np.testing.assert_allclose(logdet, np.linalg.slogdet(np.asarray(A))[1], rtol=1e-13)


@pytest.mark.parametrize(
    ("attention", "linear_scale", "causal", "rows_in_product"), [(*HEADS[1], 8), (*HEADS[3], 0)]
)
def test_query_blocks_and_halves_equal_autodiff(
    monkeypatch, attention, linear_scale, causal, rows_in_product
):
    """With the query rows in two blocks of three (so that the causal mask and the target
    weights differ between blocks, and each block has a row whose previous key lies in the
    other block) the value, gradient and Hessian-vector product still equal autodiff of the
    reference; P = 9 is odd, so the sequence halves are uneven too; dM's sum over sequences
    both inside its product and apart (``rows_in_product``). Each block is compiled apart, so
    two blocks, the fewest that have a boundary, cost the least."""
    from copyhead_jax.models import _features

    head = (attention, linear_scale, causal)
    ref = value_grad_hvp(reference_energy, *head)  # the default blocks: one block at this size
    monkeypatch.setattr(_features, "BLOCK_FLOATS", 3 * L * P)
    monkeypatch.setattr(_features, "QUERY_ROWS_IN_PRODUCT", rows_in_product)
    assert _features.query_blocks(L, P) == [(0, 3), (3, 6)]
    assert_equal_to_reference(value_grad_hvp(marginal_energy, *head), ref)


def test_one_sequence_equals_autodiff():
    """P = 1 (no halves): value and gradient equal autodiff of the reference."""
    with jax.enable_x64(True):
        head, obj, t, mask = setup("softmax", "inv_L", False)
        t, mask = t[:1], jnp.ones(1, jnp.float64)
        x0 = head.W_G.ravel() * 3.0
        ours = lambda x: marginal_energy(with_WG(head, x), t, mask, obj, 1.0)  # noqa: E731
        ref = lambda x: reference_energy(with_WG(head, x), t, mask, obj, 1.0)  # noqa: E731
        (u, g), (u_ref, g_ref) = (jax.jit(jax.value_and_grad(f))(x0) for f in (ours, ref))
        np.testing.assert_allclose(u, u_ref, rtol=RTOL_64)
        assert float(jnp.max(jnp.abs(g - g_ref)) / jnp.max(jnp.abs(g_ref))) < RTOL_64


@pytest.mark.parametrize(("attention", "linear_scale", "causal"), HEADS)
def test_draw_observed_equals_the_direct_observables(attention, linear_scale, causal):
    """One pass over the data (the readout's moments and the mean attention) gives the readout
    draw of ``draw_readout`` (same key) and, at it, the quenched U, the mean loss over kept
    sequences and their mean attention matrix as the head's own forward passes compute them
    (padded rows, causal target weights; float64: the same sums in another order)."""
    from copyhead_jax.data import masked_mean
    from copyhead_jax.objective import embedding_prior_energy, neg_log_posterior

    with jax.enable_x64(True):
        head, obj, t, mask = setup(attention, linear_scale, causal)
        head = with_WG(head, head.W_G.ravel() * 3.0)
        key = jax.random.key(7)
        h, U, loss, A = draw_observed(key, head, t, mask, obj)
        ref = draw_readout(key, head, t, mask, obj)
        np.testing.assert_allclose(h.W_O_hat, ref.W_O_hat, rtol=RTOL_64, atol=1e-12)
        U_ref = neg_log_posterior(ref, t, mask, obj) - embedding_prior_energy(ref, obj)
        np.testing.assert_allclose(U, U_ref, rtol=RTOL_64)
        np.testing.assert_allclose(loss, masked_mean(ref.squared_errors(t), mask), rtol=1e-9)
        np.testing.assert_allclose(
            A, masked_mean(ref.attention_rows(t), mask), rtol=RTOL_64, atol=1e-14
        )


@pytest.mark.parametrize(("attention", "linear_scale", "causal"), HEADS)
def test_value_grad_and_moments_in_one_pass(attention, linear_scale, causal):
    """``marginal_value_grad`` (what the sampler's leapfrog calls) gives autodiff's value and
    gradient of ``marginal_energy`` and the moments from which ``observed_from_moments``
    recovers ``draw_observed``'s draw and observables (same key; float64, padded rows); without
    the attention the sum is zeros and the rest unchanged."""
    with jax.enable_x64(True):
        head, obj, t, mask = setup(attention, linear_scale, causal)
        head = with_WG(head, head.W_G.ravel() * 3.0)
        f = lambda x: marginal_energy(with_WG(head, x), t, mask, obj)  # noqa: E731
        u_ref, g_ref = jax.value_and_grad(f)(head.W_G.ravel())
        u, g, moments = marginal_value_grad(head, t, mask, obj)
        np.testing.assert_allclose(u, u_ref, rtol=RTOL_64)
        assert float(jnp.max(jnp.abs(g.ravel() - g_ref)) / jnp.max(jnp.abs(g_ref))) < RTOL_64
        key = jax.random.key(7)
        ours, ref = (
            observed_from_moments(key, head, moments, t, mask, obj),
            draw_observed(key, head, t, mask, obj),
        )
        np.testing.assert_allclose(ours[0].W_O_hat, ref[0].W_O_hat, rtol=RTOL_64, atol=1e-12)
        for a, b in zip(ours[1:], ref[1:]):
            np.testing.assert_allclose(a, b, rtol=RTOL_64, atol=1e-14)
        u0, g0, (SF, BF, A0) = marginal_value_grad(head, t, mask, obj, False)
        assert float(u0) == float(u) and np.array_equal(g0, g) and not np.any(A0)
        np.testing.assert_allclose(SF, moments[0], rtol=RTOL_64)


@pytest.mark.parametrize(
    ("attention", "linear_scale", "causal", "two_blocks"),
    [(*h, False) for h in HEADS] + [(*HEADS[0], True), (*HEADS[3], True)],
)
def test_energy_and_copy_sum_share_one_backward(
    monkeypatch, attention, linear_scale, causal, two_blocks
):
    """``marginal_energy_and_copy``: the value of ``marginal_energy``, the copy sum
    sum_{alpha a} k A_{a,a-1} of the head's own attention, and the gradient of a combination
    of the two (0.7 U - 2.3 C) and of the copy sum alone (a wrong row or key fails it: it is
    no small part of a sum) equal autodiff of the reference energy plus the copy sum of
    ``attention_rows`` (float64, padded rows, causal target weights); with one block of query
    rows and with two blocks of three (each finds its own rows' previous keys, one of them in
    the other block)."""
    from copyhead_jax.models import _features
    from copyhead_jax.sampling.collapsed import marginal_energy_and_copy, row_weights

    if two_blocks:  # each block has a row whose previous key lies in the other block
        monkeypatch.setattr(_features, "BLOCK_FLOATS", 3 * L * P)
        assert _features.query_blocks(L, P) == [(0, 3), (3, 6)]
    with jax.enable_x64(True):
        head, obj, t, mask = setup(attention, linear_scale, causal)
        x0 = head.W_G.ravel() * 3.0
        prev = (jnp.arange(L) - 1) % L

        def ref(x):
            h = with_WG(head, x)
            A = h.attention_rows(t)[:, jnp.arange(L), prev]  # [P, L]: A_{a, a-1}
            C = jnp.sum(row_weights(h, t, mask, x.dtype) * A)
            return reference_energy(h, t, mask, obj, 1.0), C

        def ours(x):
            return marginal_energy_and_copy(with_WG(head, x), t, mask, obj)

        @functools.partial(jax.jit, static_argnums=0)
        def value_and_pulls(f, x):
            out, pull = jax.vjp(f, x)
            return out, pull((0.7, -2.3))[0], pull((0.0, 1.0))[0]

        for a, b in zip(value_and_pulls(ours, x0), value_and_pulls(ref, x0)):
            assert float(jnp.max(jnp.abs(jnp.asarray(a) - jnp.asarray(b)))) <= RTOL_64 * float(
                jnp.max(jnp.abs(jnp.asarray(b)))
            )
