"""Closed-form reduced potentials (docs/theory.md §4): vectorisation, switches, exact rescalings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import theory as th


@pytest.fixture(autouse=True)
def _float64_strict():
    with (
        jax.enable_x64(True),
        jax.numpy_dtype_promotion("strict"),
        jax.numpy_rank_promotion("raise"),
    ):
        yield


SCALES = dict(sigma_e=1.3, sigma_p=0.8, sigma_G=1.7, sigma_O=0.6, sigma2=4.0, chi=7.0)


def params(**kw):
    return th.TheoryParams(**{"L": 25, "V": 5, **SCALES, **kw})


def test_vectorised_over_P_and_a_stacked_record_equals_a_loop():
    P = np.array([3.0, 30.0, 300.0])
    ps = [params(L=L, V=V, sigma_G=sG) for L, V, sG in ((5, 2, 0.5), (12, 5, 1.0), (40, 9, 2.0))]
    stacked = th.TheoryParams.stack(ps)
    for obj in ("map", "post"):
        vec = th.linear_potential(0.4, -0.3, P=jnp.asarray(P), params=stacked, objective=obj)
        for i in range(3):
            one = th.linear_potential(0.4, -0.3, P=P[i], params=ps[i], objective=obj)
            assert abs(float(vec[i]) - float(one)) <= 1e-13 * abs(float(one))
        p25 = th.TheoryParams()
        f = jax.vmap(lambda b, q: th.softmax_potential(b, P=q, params=p25, objective=obj))
        b = jnp.array([0.0, 1.0, 3.0])
        loop = [
            float(th.softmax_potential(b[i], P=P[i], params=p25, objective=obj)) for i in range(3)
        ]
        np.testing.assert_allclose(np.asarray(f(b, jnp.asarray(P))), loop, rtol=1e-13)
        # vmap over the record itself
        g = jax.vmap(lambda q: th.softmax_potential(1.0, P=30.0, params=q, objective=obj))
        loop = [float(th.softmax_potential(1.0, P=30.0, params=q, objective=obj)) for q in ps]
        np.testing.assert_allclose(np.asarray(g(stacked)), loop, rtol=1e-13)


def test_gradients_are_finite_and_match_finite_differences():
    p = params()
    g = jax.grad(lambda c: th.linear_potential(c[0], c[1], P=50.0, params=p))
    c = jnp.array([0.3, 0.7])
    h = 1e-6
    fd = [
        (
            th.linear_potential(0.3 + h, 0.7, P=50.0, params=p)
            - th.linear_potential(0.3 - h, 0.7, P=50.0, params=p)
        )
        / (2 * h)
    ]
    # central differences: O(h^2) truncation + O(eps/h) rounding ~ 1e-9 relative
    assert abs(float(g(c)[0]) - float(fd[0])) < 1e-6 * abs(float(fd[0]))
    pb = th.TheoryParams()
    gb = jax.grad(lambda b: th.softmax_potential(b, P=80.0, params=pb, pushforward=True))(2.0)
    assert np.isfinite(float(gb))


def test_beta_and_aG_coordinates_agree():
    for L in (3, 25, 200):
        p = params(L=L)
        for beta in (-2.0, 0.0, 1.5, 9.0):
            aG = th.softmax_ansatz(beta, L=L)["aG"]
            assert abs(float(th.beta_of_aG(aG, L=L)) - beta) < 1e-9 * max(1.0, abs(beta))
            a = th.softmax_potential_aG(aG, P=40.0, params=p)
            b = th.softmax_potential(beta, P=40.0, params=p)
            assert abs(float(a) - float(b)) < 1e-9 * abs(float(b))


def test_per_position_likelihood_is_P_over_L():
    """docs/theory.md §2b: the action depends on P only through P/L under per_position."""
    c1, cG, L = 0.8, 1.9, 13
    pos, seq = params(L=L, V=4), params(L=L, V=4, likelihood="per_sequence")
    for obj in ("map", "post"):
        a = th.linear_potential(c1, cG, P=260.0, params=pos, objective=obj)
        b = th.linear_potential(c1, cG, P=260.0 / L, params=seq, objective=obj)
        assert abs(float(a) - float(b)) < 1e-13 * abs(float(b))
        pos, seq = (
            q.replace(**{k: 1.0 for k in SCALES if k.startswith("sigma_")}) for q in (pos, seq)
        )
        a = th.softmax_potential(1.1, P=260.0, params=pos, objective=obj)
        b = th.softmax_potential(1.1, P=20.0, params=seq, objective=obj)
        assert abs(float(a) - float(b)) < 1e-13 * abs(float(b))


def test_inv_L_is_sigma_G_over_L_for_linear_only():
    L = 13
    a = th.linear_potential(0.5, 1.0, P=9.0, params=params(L=L, V=4, linear_scale="inv_L"))
    b = th.linear_potential(
        0.5, 1.0, P=9.0, params=params(L=L, V=4, linear_scale="none", sigma_G=1.7 / L)
    )
    assert abs(float(a) - float(b)) < 1e-13 * abs(float(b))
    a = th.softmax_potential(0.5, P=9.0, params=params(L=L, V=4, linear_scale="inv_L"))
    b = th.softmax_potential(0.5, P=9.0, params=params(L=L, V=4, linear_scale="none"))
    assert float(a) == float(b)


def test_exact_rescaling_of_the_linear_map_potential():
    """``V(k c; P, sG) = V(c; k^2 P, sG/k^2) / k^2`` (MAP): Q is a function of ``c^2/lambda``.

    Hence the inv_L switch (``sG -> sG/L``) multiplies every linear MAP ``P*`` by exactly L.
    """
    k = 1.7
    p = params(L=9, V=4, linear_scale="none")
    for c1, cG, P in ((0.3, 0.9, 12.0), (-1.0, 0.2, 300.0)):
        a = th.linear_potential(k * c1, k * cG, P=P, params=p)
        q = p.replace(sigma_G=SCALES["sigma_G"] / k**2)
        b = th.linear_potential(c1, cG, P=k**2 * P, params=q) / k**2
        assert abs(float(a) - float(b)) < 1e-12 * abs(float(b))


def test_terms_are_nonnegative_and_D_vanishes_at_zero():
    p = th.TheoryParams(L=8, V=3)
    t = th.reduced_terms(0.0, 0.0, P=10.0, params=p)
    assert float(t["D"]) == 0.0 and float(t["R"]) == 0.0
    t = th.reduced_terms(2.0, -3.0, P=10.0, params=p)
    assert all(float(v) >= 0 for v in t.values())


def test_dtype_follows_the_inputs():
    with jax.enable_x64(False), jax.numpy_dtype_promotion("standard"):
        v = th.linear_potential(jnp.float32(0.3), 0.2, P=10.0, params=th.TheoryParams(L=8, V=3))
        assert v.dtype == jnp.float32


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="objective"):
        th.linear_potential(0.1, 0.1, P=1.0, params=th.TheoryParams(), objective="mode")
    with pytest.raises(ValueError, match="TheoryParams.likelihood"):
        th.TheoryParams(likelihood="mean")
