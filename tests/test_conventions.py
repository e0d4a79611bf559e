"""One implementation of what engine and theory share (conventions.py, theory §2b, §4-§6)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import config, conventions, objective, observables
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
    # (commit d597967, XLA's default optimisation), float32: the same numbers to 4 ulp (the
    # tests' -O0 build rounds without fused multiply-adds; a changed formula moves them by far
    # more), and the gauge flip exact
    old = np.float32(
        [
            -3.0883259773254395,
            -2.0844171047210693,
            -3.876161575317383,
            0.19863255321979523,
            0.6154047846794128,
        ]
    )
    A = jnp.asarray(_matrix(), jnp.float32)
    new = np.float32([float(x) for x in observables.order_parameters(A)])
    np.testing.assert_array_max_ulp(new, old, maxulp=4)
    flipped = [float(x) for x in observables.order_parameters(A, gauge_fix=True)]
    assert flipped == [-new[0], -new[1], -new[2], new[3], new[4]]


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
        # unit Frobenius, <B1, B2> = L^-1/2 (theory §4): L^2-term sums, rounding ~L^2 eps
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
    assert objective.Objective.from_config(cfg).likelihood_weight == 30.0 / (2 * 750.0)
    with pytest.raises(ValueError, match="likelihood"):
        conventions.effective_P(P, L=L, likelihood="per_token")


def test_per_position_multiplies_the_theory_P_star_by_exactly_L():
    # docs/theory.md §2b on the closed-form pooling onset (the cheap one of the theory's points)
    with jax.enable_x64(True):
        for L in (6, 25):
            seq = th.TheoryParams.preset("plain", L=L, V=5)
            pos = seq.replace(likelihood="per_position")
            a, b = float(p_c1_closed_form(seq)), float(p_c1_closed_form(pos))
            assert b == pytest.approx(L * a, rel=1e-14)


# ---- every convention honoured identically by the engine's U and the theory's action (§2b) ----

# float64 throughout: the identities are exact, so they hold to rounding (as
# tests/models/test_reduce.py)
RTOL = 1e-10
CHI_SWITCHES = list(itertools.product((True, False), (True, False)))
LIN_CASES = [
    (lik, ls, *chi)
    for lik in config.LIKELIHOODS
    for ls in config.LINEAR_SCALES
    for chi in CHI_SWITCHES
]
SOFT_CASES = [(lik, "inv_L", *chi) for lik in config.LIKELIHOODS for chi in CHI_SWITCHES]


def _standard():
    """The engine's float32 one-hot meets float64 weights (exact: entries 0/1); test_reduce.py's
    promotion, not this module's strict one."""
    return jax.numpy_dtype_promotion("standard")


def _cfg(attention, likelihood, linear_scale, in_readout, in_noise):
    """Non-default scales everywhere: a convention applied twice or not at all shows."""
    return config.PAPER.replace(
        task=dict(L=5, V=3),
        model=dict(
            attention=attention,
            engine="reduced",
            width=64,
            linear_scale=linear_scale,
            sigma_e=1.3,
            sigma_p=0.8,
            sigma_G=1.7,
            sigma_O=0.6,
        ),
        posterior=dict(
            likelihood=likelihood,
            sigma2=4.0,
            chi=7.0,
            chi_in_readout_prior=in_readout,
            chi_in_noise=in_noise,
        ),
        train=dict(train_embeddings=False),
    )


def _planted(cfg, G_pos):
    """A reduced head whose logits are ``G_pos`` on the positional block and zero elsewhere, so
    its attention is the same matrix for every sequence (A1 holds exactly)."""
    import equinox as eqx

    from copyhead_jax.models import head_template, init_reduced

    head = init_reduced(jax.random.key(3), cfg, head_template(cfg), dtype=jnp.float64)
    U = head.embeddings()
    V, D = cfg.task.V, U.shape[0]
    M = jnp.zeros((D, D), jnp.float64).at[V:, V:].set(G_pos)
    Ui = jnp.linalg.inv(U)
    return eqx.tree_at(lambda h: h.W_G, head, D * Ui @ M @ Ui.T)


def _identity_U_vs_action(cfg, G_theory, G_pos):
    """``min_{W_O} U - prior(W^G) = Q`` (MAP) and ``U_m - prior(W^G) = Q + D`` (the marginal over
    the readout, which the samplers use) at a planted ``W^G``."""
    import equinox as eqx

    from copyhead_jax.data import sample_tokens
    from copyhead_jax.fit import quenched_energy
    from copyhead_jax.sampling.collapsed import marginal_energy, readout_conditional

    L, V = cfg.task.L, cfg.task.V
    obj = objective.Objective.from_config(cfg)
    params = th.TheoryParams.from_config(cfg)
    head = _planted(cfg, G_pos)
    t = sample_tokens(jax.random.key(1), n=9, L=L, V=V)
    mask = jnp.ones(9, jnp.float64)
    A = jax.vmap(head.attention)(jax.nn.one_hot(t, V, dtype=jnp.float64))
    A_theory = G_theory if cfg.model.attention == "linear" else jax.nn.softmax(G_theory, axis=1)
    np.testing.assert_allclose(A, jnp.broadcast_to(A_theory, A.shape), rtol=RTOL, atol=RTOL)
    Lam, B, _ = readout_conditional(head, t, mask, obj)
    best = eqx.tree_at(lambda h: h.W_O_hat, head, jnp.linalg.solve(Lam, B).T)
    prior_G = jnp.sum(head.W_G**2) / (2 * obj.sigma_G**2)
    U_map = quenched_energy(best, t, mask, obj) - prior_G
    U_post = marginal_energy(head, t, mask, obj) - prior_G
    terms = th.finite_terms(
        G_theory,
        tokens=t,
        gram=th.embedding_gram(head.W_E, head.b),
        params=params,
        attention=cfg.model.attention,
    )
    assert float(U_map) == pytest.approx(float(terms["Q"]), rel=RTOL)
    assert float(U_post) == pytest.approx(float(terms["Q"] + terms["D"]), rel=RTOL)
    return head, params, obj


@pytest.mark.parametrize("likelihood,linear_scale,in_readout,in_noise", LIN_CASES)
def test_linear_network_energy_equals_theory_action(likelihood, linear_scale, in_readout, in_noise):
    cfg = _cfg("linear", likelihood, linear_scale, in_readout, in_noise)
    with jax.enable_x64(True), _standard():
        L = cfg.task.L
        A = th.from_coefficients(0.7, -1.1, L)
        scale = 1.0 / conventions.linear_scale_divisor(L, linear_scale)
        head, params, obj = _identity_U_vs_action(cfg, A, A / scale)
        assert head.scale == scale
        # the prior: the min-norm W^G whose token-independent logits are A / scale costs the
        # theory's R_lin(A) with sigma_G / L^k (docs/theory.md §2b, identity 4)
        U = head.embeddings()
        Zh = jnp.concatenate([jnp.full((L, cfg.task.V), 1.0 / cfg.task.V), jnp.eye(L)], axis=1)
        Fp = jnp.linalg.pinv(Zh @ U / jnp.sqrt(U.shape[1]))
        W = Fp @ (A / scale) @ Fp.T
        gram = th.embedding_gram(head.W_E, head.b)
        no_data = jnp.zeros((1, L), jnp.int32)
        R = th.finite_terms(A, tokens=no_data, gram=gram, params=params)["R"]
        assert float(jnp.sum(W**2) / (2 * obj.sigma_G**2)) == pytest.approx(float(R), rel=RTOL)


@pytest.mark.parametrize("likelihood,linear_scale,in_readout,in_noise", SOFT_CASES)
def test_softmax_network_energy_equals_theory_action(
    likelihood, linear_scale, in_readout, in_noise
):
    cfg = _cfg("softmax", likelihood, linear_scale, in_readout, in_noise)
    with jax.enable_x64(True), _standard():
        G = 1.3 * conventions.shift_matrix(cfg.task.L, jnp.float64)
        _identity_U_vs_action(cfg, G, G)


def test_chi_switches_reach_the_engine_and_the_theory():
    """The readings differ where they should: noise sigma^2/chi or sigma^2, readout prior std of
    W_O_hat sigma_O or sigma_O sqrt(chi); both on is the default, bit for bit."""
    base = config.PAPER
    obj = objective.Objective.from_config(base)
    for r, n in CHI_SWITCHES:
        cfg = base.replace(posterior=dict(chi_in_readout_prior=r, chi_in_noise=n))
        o = objective.Objective.from_config(cfg)
        assert o.likelihood_weight == (obj.likelihood_weight if n else 1 / (2 * 25 * 30.0))
        assert o.sigma_O == (1.0 if r else np.sqrt(30.0))
        s2, chi = th.TheoryParams.from_config(cfg).sigma2_chi
        assert s2 / chi == (1.0 if n else 30.0) and chi == (30.0 if r else 1.0)
    assert conventions.theory_sigma2_chi(30.0, 7.0) == (30.0, 7.0)
    assert config.PAPER.to_dict() == config.Config.from_dict(config.PAPER.to_dict()).to_dict()
    assert "chi_in_noise" not in config.PAPER.to_dict()["posterior"]  # fingerprints unchanged
    lik = config.preset("paper-chi-lik")
    assert lik.posterior.chi_in_readout_prior is False
    assert config.Config.from_dict(lik.to_dict()) == lik
    assert lik.replace(posterior=dict(chi_in_readout_prior=True)) == config.PAPER


def test_prior_draws_widen_the_readout_by_sqrt_chi_without_chi_in_its_prior():
    """Same key, same normal numbers: W_O_hat of the chi-free readout prior is sqrt(chi) times
    the default's (full engine, reduced engine), every other leaf identical."""
    from copyhead_jax.models import head_template, init_head, init_reduced

    base = config.TINY.replace(posterior=dict(chi=9.0))
    alt = base.replace(posterior=dict(chi_in_readout_prior=False))
    k = jax.random.key(0)
    m, L, V = base.model, base.task.L, base.task.V
    a = init_head(k, m, L=L, V=V, chi=9.0)
    b = init_head(k, m, L=L, V=V, chi=9.0, chi_in_readout_prior=False)
    assert np.array_equal(np.asarray(b.W_O_hat), 3.0 * np.asarray(a.W_O_hat))
    assert np.array_equal(np.asarray(b.W_G), np.asarray(a.W_G))
    quenched = dict(model=dict(engine="reduced"), train=dict(train_embeddings=False))
    red = [base.replace(**quenched), alt.replace(**quenched)]
    ra, rb = (init_reduced(k, c, head_template(c), dtype=jnp.float32) for c in red)
    assert np.array_equal(np.asarray(rb.W_O_hat), 3.0 * np.asarray(ra.W_O_hat))
