"""General actions of docs/theory.md §3 against the closed forms of §4 and the identities of §7."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import theory as th
from copyhead_jax.theory.action import logit_cov, prior_gram
from copyhead_jax.theory.heads import R_soft


@pytest.fixture(autouse=True)
def _float64_strict():
    """Float64 for the identities, and strict promotion so the theory never relies on it."""
    with (
        jax.enable_x64(True),
        jax.numpy_dtype_promotion("strict"),
        jax.numpy_rank_promotion("raise"),
    ):
        yield


SWITCHES = list(itertools.product(("per_sequence", "per_position"), ("none", "inv_L")))


def random_params(rng, L=7, V=4, **kw):
    """Non-default prior scales (identity 1 must hold for any of them)."""
    s = np.exp(rng.normal(0.0, 0.4, size=6))
    return th.TheoryParams(
        L=L,
        V=V,
        sigma_e=s[0],
        sigma_p=s[1],
        sigma_G=s[2],
        sigma_O=s[3],
        sigma2=3.0 * s[4],
        chi=5.0 * s[5],
        **kw,
    )


def rel(a, b):
    return abs(float(a) - float(b)) / max(abs(float(b)), 1e-300)


# float64 with O(D^3) Cholesky work on condition numbers <~1e4: 1e-10 leaves 3 decades of margin
TIGHT = 1e-10


@pytest.mark.parametrize("likelihood,linear_scale", SWITCHES)
def test_identity1_closed_form_equals_general_EK(likelihood, linear_scale):
    rng = np.random.default_rng(1)
    for _ in range(3):
        p = random_params(rng, likelihood=likelihood, linear_scale=linear_scale)
        c1, cG = rng.normal(size=2) * 2.0
        P = float(np.exp(rng.uniform(0, 6)))
        t = th.ek_terms(th.from_coefficients(c1, cG, p.L), P=P, params=p)
        tc = th.reduced_terms(c1, cG, P=P, params=p)
        for k in ("Q", "D", "R"):
            assert rel(t[k], tc[k]) < TIGHT, (k, float(t[k]), float(tc[k]))
        for obj in ("map", "post"):
            G = th.from_coefficients(c1, cG, p.L)
            v = th.ek_action(G, P=P, params=p, objective=obj)
            vc = th.linear_potential(c1, cG, P=P, params=p, objective=obj)
            assert rel(v, vc) < TIGHT


def test_identity2_softmax_ansatz_in_span_and_equals_general_action():
    for L in (3, 7, 25):
        for beta in (-1.3, 0.7, 4.0):
            A = jax.nn.softmax(beta * th.shift_matrix(L), axis=1)
            pr = th.project(A)
            an = th.softmax_ansatz(beta, L=L)
            assert abs(float(pr["cosine"]) - 1.0) < 1e-12
            assert abs(float(pr["c1"] - an["a1"])) < 1e-12
            assert abs(float(pr["cG"] - an["aG"])) < 1e-12
            assert abs(float(an["a1"] + an["aG"] / np.sqrt(L)) - 1.0) < 1e-12
            p_ = float(an["p"])
            assert abs(float(an["aG"]) - np.sqrt(L) * (p_ * L - 1) / (L - 1)) < 1e-12
    p = random_params(np.random.default_rng(2))  # L = 7, V = 4 as in the other action tests
    for beta in (-1.3, 0.7, 4.0):
        for obj, push in itertools.product(("map", "post"), (False, True)):
            G = beta * th.shift_matrix(p.L)
            v = th.ek_action(
                G, P=17.0, params=p, attention="softmax", objective=obj, pushforward=push
            )
            vc = th.softmax_potential(beta, P=17.0, params=p, objective=obj, pushforward=push)
            assert rel(v, vc) < TIGHT, (beta, obj, push)


def test_softmax_prior_is_gauge_invariant_and_matches_the_spec_form():
    rng = np.random.default_rng(3)
    p = random_params(rng, L=7, V=4)
    G = jnp.asarray(rng.normal(size=(7, 7)))
    shift = jnp.asarray(rng.normal(size=(7, 1))) * jnp.ones((1, 7))  # G_ab -> G_ab + r_a
    for obj in ("map", "post"):
        a = th.ek_action(G, P=9.0, params=p, attention="softmax", objective=obj)
        b = th.ek_action(G + shift, P=9.0, params=p, attention="softmax", objective=obj)
        assert rel(a, b) < TIGHT
    # docs/theory.md §3: R_soft = tr(Cbar^-1 G Pi G^T) / (2 sigma_G^2 sigma_p^2) for the prior Gram
    cbar = logit_cov(prior_gram(p), 7)
    Pi = jnp.eye(7) - jnp.ones((7, 7)) / 7
    spec = jnp.trace(jnp.linalg.solve(cbar, G @ Pi @ G.T)) / (2 * p.sigma_G**2 * p.sigma_p**2)
    assert rel(R_soft(G, cbar=cbar, sigma_G=p.sigma_G), spec) < TIGHT


def full_kernel_QD(A, tokens, gram, p):
    """Reference: ``chi/2 sum_mu y^T (K + s2 I)^-1 y`` and ``V/2 logdet(K + s2) - V/2 PL log s2``
    with the full ``PL x PL`` kernel ``K = sigma_O^2 Phi Phi^T`` (docs/theory.md §3, identity 3)."""
    L, V = p.L, p.V
    X = np.eye(V)[np.asarray(tokens)]  # [P, L, V]
    Z = np.concatenate([X, np.broadcast_to(np.eye(L), X.shape[:1] + (L, L))], axis=2)
    K = np.einsum("ab,pbd,de,qce,fc->paqf", A, Z, gram, Z, A).reshape(X.shape[0] * L, -1)
    K = p.sigma_O**2 * K
    Y = np.roll(X, 1, axis=1).reshape(-1, V)  # y^a = x^{a-1}
    s2 = p.sigma2 * (L if p.likelihood == "per_position" else 1)
    M = K + s2 * np.eye(K.shape[0])
    Q = 0.5 * p.chi * np.sum(Y * np.linalg.solve(M, Y))
    D = 0.5 * V * (np.linalg.slogdet(M)[1] - M.shape[0] * np.log(s2))
    return Q, D


@pytest.mark.parametrize("likelihood", ["per_sequence", "per_position"])
def test_identity3_woodbury_equals_full_kernel(likelihood):
    rng = np.random.default_rng(4)
    p = random_params(rng, L=5, V=3, likelihood=likelihood, linear_scale="none")
    tokens = rng.integers(0, 3, size=(4, 5))
    U = rng.normal(size=(8, 11))  # a realised (rank-8) embedding Gram, N = 11
    for gram in (np.asarray(prior_gram(p)), U @ U.T / 11):
        A = rng.normal(size=(5, 5))
        t = th.finite_terms(
            jnp.asarray(A), tokens=jnp.asarray(tokens), params=p, gram=jnp.asarray(gram)
        )
        Q, D = full_kernel_QD(A, tokens, gram, p)
        assert rel(t["Q"], Q) < 1e-9  # PL x PL solve vs D x D: both O(1e-13); margin
        assert rel(t["D"], D) < 1e-9


@pytest.mark.parametrize("likelihood", ["per_sequence", "per_position"])
def test_identity4_inner_minimisation_over_readout_is_Q(likelihood):
    """Ridge over ``W^O`` of the real network (finite N, frozen embeddings) gives ``Q``."""
    rng = np.random.default_rng(5)
    p = random_params(rng, L=5, V=3, likelihood=likelihood, linear_scale="none")
    L, V, N, P = 5, 3, 40, 6
    W_E = rng.normal(0, p.sigma_e, size=(N, V))
    b = rng.normal(0, p.sigma_p, size=(N, L))
    tokens = rng.integers(0, V, size=(P, L))
    A = rng.normal(size=(L, L))
    X = np.eye(V)[tokens]
    H = X @ W_E.T + b.T[None]  # h^a = W_E x^a + b^a: [P, L, N]
    F = np.einsum("ab,pbn->pan", A, H).reshape(P * L, N)  # f = W^O sum_b A_ab h^b
    Y = np.roll(X, 1, axis=1).reshape(P * L, V)
    s2 = p.sigma2 * (L if likelihood == "per_position" else 1)
    # U = chi/(2 s2) ||F w - y||^2 + chi N ||w||^2/(2 sigma_O^2), minimised in closed form
    reg = N * s2 / p.sigma_O**2
    W = np.linalg.solve(F.T @ F + reg * np.eye(N), F.T @ Y)
    U_min = p.chi / (2 * s2) * np.sum((F @ W - Y) ** 2) + p.chi * N * np.sum(W**2) / (
        2 * p.sigma_O**2
    )
    gram = th.embedding_gram(jnp.asarray(W_E), jnp.asarray(b))
    t = th.finite_terms(jnp.asarray(A), tokens=jnp.asarray(tokens), params=p, gram=gram)
    assert rel(t["Q"], U_min) < 1e-9


def test_identity4_min_norm_key_query_gives_R_lin():
    """The min-norm ``W^G`` with ``F W^G F^T = G`` costs ``R_lin`` with the realised ``Cbar``
    (exactly, N >= L), which tends to the prior ``Cbar`` as ``N -> infinity``."""
    rng = np.random.default_rng(6)
    p = random_params(rng, L=5, V=3, linear_scale="none")
    L, V = 5, 3
    G = rng.normal(size=(L, L))
    no_data = jnp.zeros((1, L), dtype=jnp.int32)
    t_inf = th.ek_terms(jnp.asarray(G), P=1.0, params=p)
    errs = []
    for N in (300, 1000, 64000):
        W_E = rng.normal(0, p.sigma_e, size=(N, V))
        b = rng.normal(0, p.sigma_p, size=(N, L))
        gram = th.embedding_gram(jnp.asarray(W_E), jnp.asarray(b))
        t = th.finite_terms(jnp.asarray(G), tokens=no_data, params=p, gram=gram)
        if N == 300:  # explicit network weights (N x N is small here)
            F = (W_E @ np.full((V, L), 1.0 / V) + b).T / np.sqrt(N)  # rows: zh_a^T U / sqrt(N)
            Fp = np.linalg.pinv(F)
            W = Fp @ G @ Fp.T  # min-norm solution of F W F^T = G (logits h W h / N)
            assert np.allclose(F @ W @ F.T, G, atol=1e-9)
            assert rel(t["R"], np.sum(W**2) / (2 * p.sigma_G**2)) < 1e-8
        else:
            errs.append(rel(t["R"], t_inf["R"]))
    # Gram fluctuations are O(N^-1/2): 64x the width must shrink the gap (expected ~8x)
    assert errs[1] < errs[0] / 3


def test_identity5_finite_P_tends_to_EK():
    """``S(i)/P -> S(ii)/P``: the gap shrinks with P (average over datasets, fixed G)."""
    rng = np.random.default_rng(7)
    p = random_params(rng, L=5, V=3)
    G = jnp.asarray(th.from_coefficients(0.6, 1.1, 5) + 0.2 * rng.normal(size=(5, 5)))
    gaps = []
    for P in (500, 50000):
        ek = float(th.ek_action(G, P=float(P), params=p, objective="post")) / P
        g = []
        for _ in range(6):
            tokens = jnp.asarray(rng.integers(0, 3, size=(P, 5)))
            g.append(float(th.finite_action(G, tokens=tokens, params=p, objective="post")) / P)
        gaps.append(np.mean(np.abs(np.asarray(g) - ek)) / ek)
    # O(D/P) bias + O(P^-1/2) sampling noise (~1% at P=500 here): 100x the data must cut the
    # mean gap by well over 3x (expected ~10x), and leave it below 1%
    assert gaps[1] < gaps[0] / 3
    assert gaps[1] < 1e-2


def test_identity6_symmetries():
    rng = np.random.default_rng(8)
    p = random_params(rng, L=7, V=4)
    c1, cG = rng.normal(size=2)
    for obj in ("map", "post"):
        a = th.linear_potential(c1, cG, P=30.0, params=p, objective=obj)
        b = th.linear_potential(-c1, -cG, P=30.0, params=p, objective=obj)
        assert rel(a, b) < 1e-14
    S = jnp.roll(jnp.eye(7), 1, axis=0)  # cyclic relabelling of positions
    G = jnp.asarray(rng.normal(size=(7, 7)))
    for att, obj in itertools.product(("linear", "softmax"), ("map", "post")):
        a = th.ek_action(G, P=30.0, params=p, attention=att, objective=obj)
        b = th.ek_action(S @ G @ S.T, P=30.0, params=p, attention=att, objective=obj)
        assert rel(a, b) < TIGHT


def test_identity8_limits_of_the_bracket():
    L, V = 7, 4
    tiny = 1e-12
    for lam in (tiny, 1.0, 30.0):  # G = 0: no attention, loss L at any ridge
        assert abs(float(th.q_bracket(0.0, 0.0, L=L, V=V, lam=lam)) - L) < 1e-12
    pool = float(th.q_bracket(1.7, 0.0, L=L, V=V, lam=tiny))
    assert abs(pool - (1 - 1 / V) * (L - 1)) < 1e-9
    copy = float(th.q_bracket(0.0, 2.0 * np.sqrt(L), L=L, V=V, lam=tiny))
    assert abs(copy) < 1e-9
    # the same limits through the general EK form (lambda -> 0 is P -> infinity)
    p = th.TheoryParams(L=L, V=V, likelihood="per_sequence")
    P = 1e12
    c0 = p.chi * P / (2 * p.sigma2)
    for G, want in (
        (th.from_coefficients(1.7, 0.0, L), (1 - 1 / V) * (L - 1)),
        (2.0 * th.shift_matrix(L), 0.0),
    ):
        assert abs(float(th.ek_terms(G, P=P, params=p)["Q"]) / c0 - want) < 1e-6


def test_bad_inputs_raise_value_errors_naming_the_parameter():
    p = th.TheoryParams(L=5, V=3)
    with pytest.raises(ValueError, match="G must have shape"):
        th.ek_action(jnp.zeros((4, 4)), P=1.0, params=p)
    with pytest.raises(ValueError, match="attention"):
        th.ek_action(jnp.zeros((5, 5)), P=1.0, params=p, attention="relu")
    with pytest.raises(ValueError, match="objective"):
        th.ek_action(jnp.zeros((5, 5)), P=1.0, params=p, objective="mode")
    with pytest.raises(ValueError, match="gram must have shape"):
        th.finite_action(
            jnp.zeros((5, 5)), tokens=jnp.zeros((2, 5), dtype=jnp.int32), params=p, gram=jnp.eye(3)
        )
    with pytest.raises(ValueError, match="TheoryParams.L"):
        th.TheoryParams(L=1)
