"""Route A on a sample not closed under shifts (Markov tokens): the full Hessian and the Newton
term, against the orbit Hessian and the expansion's own algebra."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import sources
from copyhead_jax.theory import TheoryParams, bayes

L, V = 4, 3
D = L + V
PARAMS = TheoryParams.preset("plain", L=L, V=V)


def _action(tok, P):
    return lambda w: bayes.action(w.reshape(D, D), tok, P, PARAMS)


def _hvp(f, w):
    """Batched Hessian-vector products of ``f`` at ``w`` on rows ``E[n, D * D]``."""
    return jax.jit(jax.vmap(lambda e: jax.jvp(jax.grad(f), (w,), (e,))[1]))


def test_full_hessian_equals_the_orbit_hessian_on_a_shift_closed_sample():
    """The orbit Hessian is exact for a translation-invariant function; on a sample closed under
    shifts both are the same float64 sums in another order (1e-10 relative)."""
    tok = bayes.ek_sample(jax.random.PRNGKey(3), PARAMS, 8)
    with jax.enable_x64(True):
        w = bayes.copy_weights(1.7, PARAMS, jnp.float64).ravel()
        hv = _hvp(_action(tok, jnp.asarray(30.0, jnp.float64)), w)
        H_full = bayes.full_hessian(hv, D * D, chunk=7)
        H_orbit = bayes.orbit_hessian(lambda E: hv(E.reshape(len(E), -1)).reshape(E.shape), L, V)
    assert np.max(np.abs(H_full - H_orbit)) < 1e-10 * np.max(np.abs(H_orbit))


def test_the_any_sample_profile_is_its_parts_and_the_newton_term_a_gain():
    """``F = S + newton + half_logdet + log|grad p|`` with ``S`` the sampled action, and the
    Newton term ``-g^T H^-1 g / 2`` is <= 0 wherever the tangent Hessian is positive definite
    (a step downhill can only lower the Gaussian integral's exponent)."""
    tok = sources.sample_sticky(jax.random.PRNGKey(1), n=64, L=L, V=V, rho=0.5)
    betas, Ps = [0.0, 2.5], [20.0, 60.0]
    prof = bayes.one_loop_profile(PARAMS, Ps, betas, tok, shift_closed=False)
    with jax.enable_x64(True):
        for j, b in enumerate(betas):
            w = bayes.copy_weights(b, PARAMS, jnp.float64).ravel()
            gp = jax.grad(lambda x: bayes.mean_copy_probability(x.reshape(D, D), tok, PARAMS))(w)
            log_g = float(jnp.log(jnp.linalg.norm(gp)))
            for i, P in enumerate(Ps):
                S = float(_action(tok, jnp.asarray(P, jnp.float64))(w))
                assert prof["S"][i, j] == pytest.approx(S, rel=1e-12)
                parts = S + prof["newton"][i, j] + prof["half_logdet"][i, j] + log_g
                assert prof["F"][i, j] == pytest.approx(parts, rel=1e-12)
                if prof["min_eig"][i, j] > 0:
                    assert prof["newton"][i, j] <= 0.0


def test_the_newton_terms_gauge_part_is_the_priors_row_mean():
    """Along a positional row's gauge direction only the prior acts (the softmax ignores a
    constant added to a row): the ansatz's component there is beta / sqrt(L) per row (sigmas 1),
    so the Newton term's gauge part is exactly -beta^2 / 2, whatever the tokens."""
    tok = sources.sample_sticky(jax.random.PRNGKey(2), n=32, L=L, V=V, rho=0.5)
    betas = [0.5, 2.5]
    prof = bayes.one_loop_profile(PARAMS, [30.0], betas, tok, shift_closed=False)
    gauge = prof["newton"][0] - prof["newton_rest"][0]
    np.testing.assert_allclose(gauge, [-(b**2) / 2 for b in betas], rtol=1e-9)


def test_trusted_needs_a_positive_hessian_and_a_small_newton_step():
    ok = {"min_eig": [0.5, 1.0], "newton_rest": [-0.3, -1.9]}
    assert bayes.trusted([ok]) == (True, "")
    assert not bayes.trusted([ok, {**ok, "min_eig": [0.5, -0.1]}])[0]
    assert not bayes.trusted([{**ok, "newton_rest": [-0.3, -2.5]}])[0]
    assert bayes.trusted([{"min_eig": [1.0]}])[0]  # a shift-closed profile has no Newton term
