"""Route A on a sample not closed under shifts (Markov tokens): the full Hessian and the Newton
term, against the orbit Hessian and the expansion's own algebra."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.theory import TheoryParams, bayes
from copyhead_jax.theory.bayes import loop

L, V = 4, 3
PARAMS = TheoryParams.preset("plain", L=L, V=V)


def test_full_hessian_equals_the_orbit_hessian_on_a_shift_closed_sample():
    """The orbit Hessian is exact for a translation-invariant function; on a sample closed under
    shifts both are the same float64 sums in another order (1e-10 relative)."""
    tok = bayes.ek_sample(jax.random.PRNGKey(3), PARAMS, 8)
    hv_S, _, _ = loop._hvps(PARAMS)
    _, hv_flat, _, _ = loop._flat(PARAMS)
    D = L + V
    with jax.enable_x64(True):
        W = loop.copy_weights(1.7, PARAMS, jnp.float64)
        P = jnp.asarray(30.0, jnp.float64)
        H_orbit = loop.orbit_hessian(lambda E: hv_S(W, E, tok, P), L, V)
        H_full = loop.full_hessian(lambda E: hv_flat(W.ravel(), E, tok, P), D * D, chunk=7)
    assert np.max(np.abs(H_full - H_orbit)) < 1e-10 * np.max(np.abs(H_orbit))


def test_the_any_sample_profile_is_its_parts_and_the_newton_term_a_gain():
    """``F = S + newton + half_logdet + log|grad p|`` with ``S`` the sampled action, and the
    Newton term ``-g^T H^-1 g / 2`` is <= 0 wherever the tangent Hessian is positive definite
    (a step downhill can only lower the Gaussian integral's exponent)."""
    from copyhead_jax import sources

    tok = sources.sample_sticky(jax.random.PRNGKey(1), n=64, L=L, V=V, rho=0.5)
    betas, Ps = [0.0, 2.5], [20.0, 60.0]
    prof = bayes.one_loop_profile(PARAMS, Ps, betas, tok, shift_closed=False)
    vg, _, grad_p, _ = loop._flat(PARAMS)
    with jax.enable_x64(True):
        for j, b in enumerate(betas):
            w = loop.copy_weights(b, PARAMS, jnp.float64).ravel()
            log_g = float(jnp.log(jnp.linalg.norm(grad_p(w, tok))))
            for i, P in enumerate(Ps):
                S = float(vg(w, tok, jnp.asarray(P, jnp.float64))[0])
                assert prof["S"][i, j] == pytest.approx(S, rel=1e-12)
                parts = S + prof["newton"][i, j] + prof["half_logdet"][i, j] + log_g
                assert prof["F"][i, j] == pytest.approx(parts, rel=1e-12)
                if prof["min_eig"][i, j] > 0:
                    assert prof["newton"][i, j] <= 0.0
