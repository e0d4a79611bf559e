"""One implementation of what engine and theory share (conventions.py, docs/theory.md §2b, §4-§6)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import config, conventions, observables, posterior
from copyhead_jax import theory as th
from copyhead_jax.theory.points import p_c1_closed_form


@pytest.fixture(autouse=True)
def _strict():
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


def _matrix(L=7, seed=7):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(L, L)) - 1.5 * np.roll(np.eye(L), -1, 1)


def test_observables_order_parameters_are_unchanged():
    # c1, cG, r, psi, coverage of _matrix() from observables.py before it used conventions
    # (commit d597967), float32: the same bits
    old = [-3.0883259773254395, -2.0844171047210693, -3.876161575317383, 0.19863255321979523,
           0.6154047846794128]  # fmt: skip
    A = jnp.asarray(_matrix(), jnp.float32)
    assert [float(x) for x in observables.order_parameters(A)] == old
    flipped = [float(x) for x in observables.order_parameters(A, gauge_fix=True)]
    assert flipped == [-old[0], -old[1], -old[2], old[3], old[4]]


def test_observables_and_theory_agree_on_the_same_matrix():
    A = _matrix()
    eng = observables.order_parameters(jnp.asarray(A, jnp.float32))
    with jax.enable_x64(True):
        ref = th.project(jnp.asarray(A))
        psi = th.copy_fraction(ref["c1"], ref["cG"], 7.0)
        assert ref["c1"].dtype == jnp.float64
    # float32 (eps 1.2e-7) least squares of a 7x7 matrix with O(1) entries: a few ulp of |c|
    tol = dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(eng.c1), float(ref["c1"]), **tol)
    np.testing.assert_allclose(float(eng.cG), float(ref["cG"]), **tol)
    np.testing.assert_allclose(float(eng.coverage), float(ref["cosine"]), **tol)
    np.testing.assert_allclose(float(eng.psi), float(psi), **tol)


def test_projection_recovers_coefficients_and_the_basis_is_unit_non_orthogonal():
    L = 9
    with jax.enable_x64(True):
        B1, B2 = conventions.basis(L)
        assert B1.dtype == jnp.float64
        # unit Frobenius, <B1, B2> = L^-1/2 (docs/theory.md §4): sums of L^2 terms, rounding ~L^2 eps
        np.testing.assert_allclose([jnp.sum(B1 * B1), jnp.sum(B2 * B2)], 1.0, rtol=1e-13)
        np.testing.assert_allclose(float(jnp.sum(B1 * B2)), L**-0.5, rtol=1e-13)
        pr = conventions.project(0.7 * B1 - 1.3 * B2)
        np.testing.assert_allclose([pr.c1, pr.cG, pr.coverage], [0.7, -1.3, 1.0], rtol=1e-14)
        np.testing.assert_allclose(float(pr.r), 0.7 - 1.3 / 3.0, rtol=1e-14)
        assert float(conventions.copy_fraction(0.0, 0.0, L)) == 0.0
        assert float(conventions.copy_fraction(0.0, 2.0, L)) == pytest.approx(1.0 - 1.0 / L)
    assert conventions.basis(L, jnp.float32)[1].dtype == jnp.float32
    G = np.asarray(conventions.shift_matrix(5))
    assert np.array_equal(G @ np.arange(5.0), np.roll(np.arange(5.0), 1))  # (G* x)_a = x_{a-1}


def test_likelihood_convention_in_names_and_flags():
    assert conventions.LIKELIHOODS == config.LIKELIHOODS
    L, P = 25, 300.0
    assert conventions.effective_P(P, L=L, likelihood="per_sequence") == P
    assert conventions.effective_P(P, L=L, likelihood="per_position") == P / L
    for flag, name in ((0.0, "per_sequence"), (1.0, "per_position")):
        a = conventions.effective_P(jnp.asarray(P), L=jnp.asarray(float(L)), likelihood=flag)
        assert float(a) == conventions.effective_P(P, L=L, likelihood=name)
    assert conventions.noise_variance(30.0, L=L, likelihood="per_position") == 750.0
    cfg = config.PLAIN.replace(posterior=dict(likelihood="per_position"))
    assert posterior.Objective.from_config(cfg).likelihood_weight == 30.0 / (2 * 750.0)
    with pytest.raises(ValueError, match="likelihood"):
        conventions.effective_P(P, L=L, likelihood="per_token")


def test_per_position_multiplies_the_theory_P_star_by_exactly_L():
    # docs/theory.md §2b on the closed-form pooling onset (the cheap one of the theory's points)
    with jax.enable_x64(True):
        for L in (6, 25):
            seq = th.TheoryParams.preset("plain", L=L, V=5)
            pos = seq.replace(likelihood="per_position")
            a, b = float(p_c1_closed_form(seq.scales())), float(p_c1_closed_form(pos.scales()))
            assert b == pytest.approx(L * a, rel=1e-14)
