"""Order parameters: least squares on the non-orthogonal basis (J/L, G*/sqrt L)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.observables import ansatz_basis, order_parameters, shift_operator


def test_projection_recovers_coefficients_and_full_coverage():
    L = 9
    B = ansatz_basis(L)
    np.testing.assert_allclose(jnp.sum(B[0] * B[1]), L**-0.5, rtol=1e-6)  # not orthogonal
    o = order_parameters(0.7 * B[0] - 1.3 * B[1])
    np.testing.assert_allclose([o.c1, o.cG], [0.7, -1.3], rtol=1e-5)
    np.testing.assert_allclose(o.r, 0.7 - 1.3 / 3.0, rtol=1e-5)
    np.testing.assert_allclose(o.coverage, 1.0, rtol=1e-6)


def test_orthogonal_noise_lowers_coverage_not_coefficients():
    L = 8
    B = ansatz_basis(L)
    noise = jax.random.normal(jax.random.key(0), (L, L))
    gram = jnp.array([[1.0, L**-0.5], [L**-0.5, 1.0]])
    c = jnp.linalg.solve(gram, jnp.einsum("kab,ab->k", B, noise))
    noise = noise - jnp.einsum("k,kab->ab", c, B)  # orthogonal to the span
    o = order_parameters(0.5 * B[0] + 2.0 * B[1] + noise)
    np.testing.assert_allclose([o.c1, o.cG], [0.5, 2.0], atol=1e-5)
    assert float(o.coverage) < 0.99


def test_gauge_fix_and_copy_fraction():
    L = 6
    B = ansatz_basis(L)
    o = order_parameters(-(0.4 * B[0] + 1.1 * B[1]), gauge_fix=True)
    np.testing.assert_allclose([o.c1, o.cG], [0.4, 1.1], rtol=1e-5)
    assert float(o.r) > 0
    pool = order_parameters(B[0])
    # pure pooling: cG is a float32 projection that rounds to |cG| <~ 1e-7, and psi ~ cG^2
    assert float(pool.psi) == pytest.approx(0.0, abs=1e-12)
    copy = order_parameters(shift_operator(L) - jnp.ones((L, L)) / L)
    np.testing.assert_allclose(copy.psi, 1.0, atol=1e-6)


def test_softmax_of_copy_logits_lies_in_span():
    L, beta = 7, 2.3
    A = jax.nn.softmax(beta * shift_operator(L), axis=-1)
    o = order_parameters(A)
    p = np.exp(beta) / (np.exp(beta) + L - 1)
    np.testing.assert_allclose(o.coverage, 1.0, rtol=1e-6)
    np.testing.assert_allclose(o.cG, np.sqrt(L) * (p * L - 1) / (L - 1), rtol=1e-5)
    np.testing.assert_allclose(o.c1 + o.cG / np.sqrt(L), 1.0, rtol=1e-5)  # rows sum to 1
