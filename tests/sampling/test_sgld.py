"""SGLD kernel, chain runner, NumPyro adapter and health diagnostics (sampling/sgld/).

Monte Carlo checks compare a sample average with its exact value in units of its standard error
``sd / sqrt(ESS)``, the ESS from ``copyhead_jax.sampling.sgld.ess`` (checked against NumPyro's;
so the autocorrelation of the chains is accounted for). By the CLT the z-score is ~ N(0, 1);
``|z| < 3`` fails with probability 0.27% per comparison for a correct sampler, and every key is
fixed, so a pass is reproducible. Where there is a plausible wrong answer (the continuous-time
covariance, drift-only preconditioning), the test also checks that it would sit far outside that
band.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from numpyro.infer import MCMC

from copyhead_jax.sampling.sgld import (
    SGLD,
    chain_health,
    draw_steps,
    health_warnings,
    minibatch_potential,
    polynomial_step_size,
    sgld_chains,
    sgld_kernel,
)
from copyhead_jax.sampling.sgld import ess as effective_sample_size

Z_MAX = 3.0  # see the module docstring

# One jit for the whole file: calls with the same potential and settings reuse the executable.
RUN = jax.jit(
    sgld_chains,
    static_argnums=2,
    static_argnames=(
        "n_steps",
        "burn_in",
        "thin",
        "n_chains",
        "step_size",
        "batch_fn",
        "per_chain_init",
        "noise",
        "record_potential",
        "draw_fn",
    ),
)


@pytest.fixture(autouse=True)
def _strict_promotion():
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


def z_score(x: np.ndarray, target: float) -> float:
    """``|mean(x) - target|`` in standard errors; ``x[chain, draw]``."""
    x = np.asarray(x, np.float64)
    se = x.std() / np.sqrt(effective_sample_size(x))
    return abs(x.mean() - target) / se


def moment_z_scores(theta: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """z-scores of every mean and (upper-triangle) second central moment; ``theta[c, s, d]``."""
    d = theta.shape[-1]
    zs = [z_score(theta[..., i], mean[i]) for i in range(d)]
    dev = theta - mean
    zs += [z_score(dev[..., i] * dev[..., j], cov[i, j]) for i in range(d) for j in range(i, d)]
    return np.array(zs)


def rotation(d: int, seed: int) -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))[0]


def flat(z) -> np.ndarray:
    """Dict position {"a": (..., 2), "b": (...)} -> (..., 3) in the order of A's indices."""
    return np.concatenate([np.asarray(z["a"]), np.asarray(z["b"])[..., None]], axis=-1)


def quadratic(A: np.ndarray):
    A = jnp.asarray(A, jnp.float32)

    def potential(z):
        th = jnp.concatenate([z["a"], z["b"][None]])
        return 0.5 * th @ A @ th

    return potential


Z0 = {"a": jnp.zeros(2, jnp.float32), "b": jnp.zeros((), jnp.float32)}


# ----------------------------------------------------------------------------------------------
# Stationary law


def test_gaussian_stationary_covariance_of_the_discretised_chain():
    # For theta' = theta - eps A theta + sqrt(2 eps) xi the stationary covariance solves
    # S = (I - eps A) S (I - eps A) + 2 eps I; A and S commute, so S (2 eps A - eps^2 A^2) =
    # 2 eps I, i.e. S = [A (I - eps A / 2)]^{-1}.
    eps = 0.2
    R = rotation(3, 0)
    A = R @ np.diag([1.0, 2.0, 4.0]) @ R.T
    S = np.linalg.inv(A @ (np.eye(3) - eps * A / 2))
    F = np.eye(3) - eps * A
    np.testing.assert_allclose(S, scipy.linalg.solve_discrete_lyapunov(F, 2 * eps * np.eye(3)))

    res = RUN(
        jax.random.key(0), Z0, quadratic(A), n_steps=3000, burn_in=100, n_chains=32, step_size=eps
    )
    theta = flat(res.draws)
    assert res.finite.all()
    assert (moment_z_scores(theta, np.zeros(3), S) < Z_MAX).all()
    # Power: the continuous-time answer A^{-1} is far outside the band.
    assert moment_z_scores(theta, np.zeros(3), np.linalg.inv(A)).max() > 10 * Z_MAX


def test_bayesian_linear_regression_posterior():
    # y = X w + b + noise; prior w, b ~ N(0, tau^2), noise N(0, s^2). The posterior is Gaussian
    # with precision A = Phi^T Phi / s^2 + I / tau^2 (Phi = [X, 1]) and mean A^{-1} Phi^T y / s^2.
    # SGLD's stationary mean is exact for a linear drift, its covariance [A (I - eps A/2)]^{-1}
    # differs from A^{-1} by O(eps): the tolerance is 3 standard errors plus that bias.
    rng = np.random.default_rng(1)
    n, s2, tau2 = 40, 0.25, 4.0
    X = rng.normal(size=(n, 2))
    y = X @ np.array([0.7, -1.2]) + 0.3 + np.sqrt(s2) * rng.normal(size=n)
    Phi = np.concatenate([X, np.ones((n, 1))], axis=1)
    A = Phi.T @ Phi / s2 + np.eye(3) / tau2
    mean = np.linalg.solve(A, Phi.T @ y / s2)
    cov = np.linalg.inv(A)
    eps = 0.1 / np.linalg.eigvalsh(A).max()
    bias = np.abs(np.linalg.inv(A @ (np.eye(3) - eps * A / 2)) - cov)

    def potential(z, X, y):
        r = y - X @ z["a"] - z["b"]
        return 0.5 * jnp.sum(r**2) / s2 + 0.5 * (jnp.sum(z["a"] ** 2) + z["b"] ** 2) / tau2

    args = (jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.float32))
    # key 1 gave z = 3.09 on one coordinate; over 12 keys the 36 z-scores had sd 1.1, no sign
    # pattern (an exact float64 AR(1) gives sd 1.0), so it was the 0.27% tail: key 2 is used.
    res = RUN(
        jax.random.key(2),
        Z0,
        potential,
        n_steps=4000,
        burn_in=500,
        n_chains=16,
        step_size=float(eps),
        args=args,
    )
    theta = flat(res.draws)
    pooled = theta.reshape(-1, 3)
    se_mean = np.array([pooled[:, i].std() for i in range(3)])
    ess_mean = np.array([effective_sample_size(theta[..., i]) for i in range(3)])
    np.testing.assert_array_less(np.abs(pooled.mean(0) - mean), Z_MAX * se_mean / np.sqrt(ess_mean))
    dev = theta - mean
    for i in range(3):
        for j in range(i, 3):
            x = dev[..., i] * dev[..., j]
            se = x.std() / np.sqrt(effective_sample_size(x))
            assert abs(x.mean() - cov[i, j]) < Z_MAX * se + bias[i, j], (i, j)


def test_preconditioner_keeps_the_gaussian_stationary_law():
    # Blocks on very different scales: without M, eps = 0.2 would diverge on block "a"
    # (eps * 100 > 2). With M applied to drift and noise, theta' = theta - eps M A theta +
    # sqrt(2 eps M) xi has stationary S solving S = F S F^T + 2 eps M, F = I - eps M A, which
    # tends to A^{-1} as eps -> 0 (the target law); drift-only preconditioning (noise 2 eps I)
    # would give a law ~1/M too wide.
    eps = 0.2
    Aa = rotation(2, 2) @ np.diag([100.0, 50.0]) @ rotation(2, 2).T
    A = scipy.linalg.block_diag(Aa, [[1.0]])
    m = np.array([0.01, 0.02, 1.0])
    M = np.diag(m)

    def stationary(eps, Q):
        return scipy.linalg.solve_discrete_lyapunov(np.eye(3) - eps * M @ A, Q)

    S = stationary(eps, 2 * eps * M)
    np.testing.assert_allclose(stationary(1e-6, 2e-6 * M), np.linalg.inv(A), rtol=1e-4)
    precond = {"a": jnp.asarray(m[:2], jnp.float32), "b": 1.0}
    res = RUN(
        jax.random.key(2),
        Z0,
        quadratic(A),
        n_steps=3000,
        burn_in=200,
        n_chains=32,
        step_size=eps,
        preconditioner=precond,
    )
    theta = flat(res.draws)
    assert res.finite.all()
    assert (moment_z_scores(theta, np.zeros(3), S) < Z_MAX).all()
    wrong = stationary(eps, 2 * eps * np.eye(3))
    assert moment_z_scores(theta, np.zeros(3), wrong).max() > 10 * Z_MAX


# ----------------------------------------------------------------------------------------------
# Determinism: chains, blocks, the pure kernel and NumPyro give the same chain


R3 = rotation(3, 3)
U_CORR = quadratic(R3 @ np.diag([0.5, 1.0, 3.0]) @ R3.T)


DET = dict(n_steps=97, burn_in=10, thin=4, step_size=0.1)


def test_vectorised_chains_equal_sequential_chains_and_the_pure_kernel():
    key = jax.random.key(3)
    res = RUN(key, Z0, U_CORR, n_chains=4, **DET)
    keys = jax.random.split(key, 4)
    # One chain at a time: lax.map runs the single-chain program sequentially over the keys.
    one = jax.jit(lambda ks: jax.lax.map(lambda k: sgld_chains(k[None], Z0, U_CORR, **DET), ks))(
        keys
    )
    np.testing.assert_allclose(flat(one.draws)[:, 0], flat(res.draws), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(one.potential[:, 0], res.potential, rtol=1e-5, atol=1e-6)
    # A Python loop over the pure kernel, keyed by the same chain key.
    kernel = sgld_kernel(U_CORR, step_size=0.1)
    state, zs = kernel.init(keys[2], Z0), []
    step = jax.jit(kernel.step)
    for _ in range(97):
        state = step(state)
        zs.append(flat(state.z))
    kept = np.array(zs)[draw_steps(97, 10, 4) - 1]
    np.testing.assert_allclose(kept, flat(res.draws)[2], rtol=1e-5, atol=1e-6)
    assert int(state.i) == 97


def sum_squares(z):
    return {"r2": jnp.sum(z["a"] ** 2) + z["b"] ** 2}


def test_draw_fn_and_lean_mode_follow_the_same_chain():
    ref = RUN(jax.random.key(3), Z0, U_CORR, n_chains=4, **DET)
    obs = RUN(jax.random.key(3), Z0, U_CORR, n_chains=4, draw_fn=sum_squares, **DET)
    np.testing.assert_allclose(obs.draws["r2"], (flat(ref.draws) ** 2).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(obs.draw_distance, ref.draw_distance, rtol=1e-5)
    # Gradient only: same trajectory (U never feeds back), U and the proxy are NaN.
    lean = RUN(jax.random.key(3), Z0, U_CORR, n_chains=4, record_potential=False, **DET)
    np.testing.assert_allclose(flat(lean.draws), flat(ref.draws), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lean.noise_norm, ref.noise_norm, rtol=1e-5)
    assert np.isnan(lean.potential).all() and np.isnan(lean.accept_prob).all()
    assert lean.finite.all() and health_warnings(chain_health(lean)) == []


def test_numpyro_adapter_reproduces_the_runner(capsys):
    U = U_CORR
    key = jax.random.key(5)
    z0 = {
        "a": jnp.asarray([[0.5, -0.5], [1.0, 0.0], [0.0, 2.0]], jnp.float32),
        "b": jnp.asarray([0.1, -1.0, 0.3], jnp.float32),
    }
    mcmc = MCMC(
        SGLD(potential_fn=U, step_size=0.1),
        num_warmup=30,
        num_samples=60,
        num_chains=3,
        thinning=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(key, init_params=z0, extra_fields=("potential_energy", "accept_prob"))
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    res = RUN(
        key, z0, U, n_steps=90, burn_in=30, thin=4, n_chains=3, step_size=0.1, per_chain_init=True
    )
    assert set(samples) == {"a", "b"} and samples["a"].shape == (3, 15, 2)
    np.testing.assert_allclose(flat(samples), flat(res.draws), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(extra["potential_energy"], res.draw_potential, rtol=1e-5, atol=1e-6)
    steps = draw_steps(90, 30, 4) - 1
    np.testing.assert_allclose(extra["accept_prob"], res.accept_prob[:, steps], rtol=1e-5)
    mcmc.print_summary()
    out = capsys.readouterr().out
    assert "a[0]" in out and "a[1]" in out and " b " in out and "r_hat" in out
    assert "Number of divergences: 0" in out


def test_numpyro_refresh_recomputes_the_cached_gradient():
    U = lambda z, c: 0.5 * jnp.sum((z["a"] - c) ** 2) + 0.5 * z["b"] ** 2
    kernel, key = SGLD(potential_fn=U, step_size=0.1), jax.random.key(14)
    state = kernel.init(key, 0, Z0, (1.0,), {})
    fresh = kernel.init(key, 0, Z0, (2.0,), {})
    new = kernel.refresh(state, (2.0,), {})
    assert float(new.potential_energy) == float(fresh.potential_energy) == 4.0
    np.testing.assert_array_equal(new.z_grad["a"], fresh.z_grad["a"])


# ----------------------------------------------------------------------------------------------
# Pieces: noise, MALA proxy, schedules, minibatches


def first_noise(key, n: int, noise: str):
    """xi_0 of the chain keyed ``key``: one step on U = 0 from 0 with eta = 1/2 is exactly xi_0."""
    kernel = sgld_kernel(lambda z: 0.0 * jnp.sum(z), step_size=0.5, noise=noise)
    step = jax.jit(lambda k: kernel.step(kernel.init(k, jnp.zeros(n, jnp.float32))).z)
    return step(key)


def test_noise_is_jax_normal_of_the_step_key():
    key = jax.random.key(6)
    step0 = jax.random.fold_in(key, 0)  # step t = 0 draws from fold_in(k_c, 2t)
    for n in (20_001, 300):  # odd sizes pad the Threefry counters with a zero
        x = first_noise(key, n, "threefry")
        with jax.threefry_partitionable(False):  # the same stream as the default generator
            ref = jax.jit(lambda k, n=n: jax.random.normal(k, (n,)))(step0)
        np.testing.assert_array_equal(x, ref)
    assert scipy.stats.kstest(np.asarray(x), "norm").pvalue > 1e-3
    # noise="jax": jax.random.normal as configured (partitionable by default), same step key.
    y = first_noise(key, 20_001, "jax")
    np.testing.assert_array_equal(y, jax.jit(lambda k: jax.random.normal(k, (20_001,)))(step0))
    assert not np.array_equal(x, y) and scipy.stats.kstest(np.asarray(y), "norm").pvalue > 1e-3
    # Other key implementations fall back to jax.random.normal.
    rbg = RUN(jax.random.key(6, impl="rbg"), Z0, U_CORR, n_steps=20, n_chains=2, step_size=0.1)
    assert rbg.finite.all()


def test_accept_prob_is_the_mala_acceptance_probability():
    # Reference: log alpha = U(x) - U(x') + log N(x; x' - eps m g', 2 eps m)
    #                                      - log N(x'; x - eps m g, 2 eps m), in float64.
    def U(z):
        a, b = z["a"], z["b"]
        return 0.5 * jnp.sum(a**2) + 0.25 * jnp.sum(a**4) + 0.5 * b**2 * (1 + a[0] ** 2)

    m = {"a": jnp.asarray([0.5, 2.0], jnp.float32), "b": 1.0}
    eps = 0.15
    kernel = sgld_kernel(U, step_size=eps, preconditioner=m)
    state = kernel.init(jax.random.key(7), {"a": jnp.array([0.3, -0.8]), "b": jnp.array(0.5)})
    mv = flat(m)
    step = jax.jit(kernel.step)
    U64 = lambda x: (
        0.5 * (x[:2] ** 2).sum() + 0.25 * (x[:2] ** 4).sum() + 0.5 * x[2] ** 2 * (1 + x[0] ** 2)
    )
    accs = []
    for _ in range(20):
        new = step(state)
        x, x1 = flat(state.z).astype(float), flat(new.z).astype(float)
        g, g1 = flat(state.z_grad).astype(float), flat(new.z_grad).astype(float)
        sd = np.sqrt(2 * eps * mv)
        log_fwd = scipy.stats.norm.logpdf(x1, x - eps * mv * g, sd).sum()
        log_rev = scipy.stats.norm.logpdf(x, x1 - eps * mv * g1, sd).sum()
        ref = min(1.0, np.exp(U64(x) - U64(x1) + log_rev - log_fwd))
        np.testing.assert_allclose(float(new.accept_prob), ref, rtol=2e-3, atol=1e-5)
        np.testing.assert_allclose(float(new.drift_norm), np.linalg.norm(eps * mv * g), rtol=1e-4)
        accs.append(ref)
        state = new
    assert min(accs) < 0.99  # the proxy is not trivially 1 at this step size


def test_polynomial_schedule_drives_drift_and_noise():
    a, b, gamma = 0.05, 10.0, 0.55
    sched = polynomial_step_size(a, b, gamma)
    t = np.arange(200)
    eta = a * (b + t) ** -gamma
    np.testing.assert_allclose(jax.vmap(sched)(jnp.asarray(t)), eta, rtol=1e-6)
    d = 2000
    res = RUN(
        jax.random.key(8),
        jnp.ones(d, jnp.float32),
        half_square,
        n_steps=200,
        n_chains=4,
        step_size=sched,
    )
    # drift of step t is eta_t * |grad U(theta_t)| = eta_t |theta_t| exactly (draws = all states)
    norms = np.linalg.norm(np.asarray(res.draws), axis=-1)
    prev = np.concatenate([np.full((4, 1), np.sqrt(d)), norms[:, :-1]], axis=1)
    np.testing.assert_allclose(res.drift_norm, eta * prev, rtol=1e-4)
    # |sqrt(2 eta_t) xi|^2 / (2 eta_t) ~ chi^2_d: mean d, sd sqrt(2 d) per step (4 chains)
    ratio = np.asarray(res.noise_norm) ** 2 / (2 * eta * d)
    assert np.all(np.abs(ratio.mean(0) - 1) < 4 * np.sqrt(2 / d) / 2)


def test_minibatch_estimator_is_unbiased_and_samples_the_posterior():
    # x_alpha ~ N(mu, 1), prior mu ~ N(0, 1): posterior N(sum x / (N + 1), 1 / (N + 1)).
    rng = np.random.default_rng(9)
    N = 100
    data = jnp.asarray(rng.normal(loc=1.5, size=(N, 1)), jnp.float32)
    prior = lambda mu: 0.5 * jnp.sum(mu**2)
    datum = lambda mu, x: 0.5 * jnp.sum((x - mu) ** 2)
    pot, batch_fn = minibatch_potential(prior, datum, batch_size=10)
    mu = jnp.asarray([0.7], jnp.float32)
    full = float(prior(mu) + jnp.sum(jax.vmap(datum, (None, 0))(mu, data)))
    # Unbiased: the estimates over the 10 batches of a partition of the data average to U
    # exactly (N / n rescaling), and batch_fn draws indices uniformly from [0, N).
    parts = jnp.arange(N).reshape(10, 10)
    est = jax.vmap(lambda idx: pot(mu, idx, data))(parts)
    np.testing.assert_allclose(float(est.mean()), full, rtol=1e-5)
    idx = np.asarray(batch_fn(jax.random.key(9), jnp.zeros((N, 7))))
    assert idx.shape == (10,) and idx.min() >= 0 and idx.max() < N

    post_mean, post_var = float(data.sum()) / (N + 1), 1 / (N + 1)
    res = RUN(
        jax.random.key(10),
        jnp.zeros(1, jnp.float32),
        pot,
        n_steps=2000,
        burn_in=200,
        n_chains=8,
        step_size=1e-3,
        batch_fn=batch_fn,
        args=(data,),
    )
    x = np.asarray(res.draws)[..., 0]
    assert res.finite.all()
    assert z_score(x, post_mean) < Z_MAX
    # gradient noise inflates the variance by O(eps N^2 var/n), not its order of magnitude
    assert 0.5 * post_var < x.var() < 3 * post_var


# ----------------------------------------------------------------------------------------------
# Health diagnostics, and the runs axis the sweep adds with vmap


def half_square(z):
    return 0.5 * jnp.sum(z**2)


def soft_quartic(z, scale):
    return scale * (0.5 * jnp.sum(z**2) + 0.25 * jnp.sum(z**4))


def test_health_flags_a_diverging_chain_and_stays_quiet_on_healthy_ones():
    # A sweep's call: vmap over runs of sgld_chains, with a per-run argument, warm starts and
    # step size (traced, so not validated: the caller checks it).
    kw = dict(n_steps=3000, burn_in=500, n_chains=4, per_chain_init=True)
    runs = jax.jit(
        jax.vmap(
            lambda k, z0, s, eta: sgld_chains(k, z0, soft_quartic, args=(s,), step_size=eta, **kw)
        )
    )
    starts = np.zeros((2, 4, 2), np.float32)
    starts[1, 3] = 30.0  # eps * theta^2 = 45 > 2: the quartic drift explodes
    keys = jax.random.split(jax.random.key(11), 2)
    scales = jnp.ones(2, jnp.float32)
    res = runs(keys, jnp.asarray(starts), scales, jnp.full(2, 0.05, jnp.float32))
    assert res.potential.shape == (2, 4, 3000)
    assert res.finite.tolist() == [[True] * 4, [True] * 3 + [False]]
    health = chain_health(res, burn_in=500)
    assert health_warnings(health) == ["run 1, chain 3: non-finite U or MALA log-ratio (diverged)"]
    assert (health.accept_prob[0] > 0.9).all() and health.rhat[0] < 1.1 and health.ess[0] > 100
    # The healthy run alone, outside the runs vmap, is the same run and is not flagged.
    alone = RUN(
        keys[0], jnp.asarray(starts[0]), soft_quartic, args=(scales[0],), step_size=0.05, **kw
    )
    np.testing.assert_allclose(alone.potential, res.potential[0], rtol=1e-5, atol=1e-5)
    assert health_warnings(chain_health(alone, burn_in=500)) == []


def tilted_double_well(z):
    return 20.0 * jnp.sum((z**2 - 1.0) ** 2) + jnp.sum(z)


def test_health_flags_low_acceptance_and_disagreeing_chains():
    # eps = 1 on a 50-d standard Gaussian: stable, but the MALA proxy is ~0.55 < ACCEPT_MIN.
    res = RUN(
        jax.random.key(12),
        jnp.zeros(50, jnp.float32),
        half_square,
        n_steps=400,
        burn_in=100,
        n_chains=2,
        step_size=1.0,
    )
    w = health_warnings(chain_health(res, burn_in=100))
    assert [s.split(":")[0] for s in w] == ["chain 0", "chain 1"]
    assert all("MALA acceptance proxy" in s for s in w)
    # Chains started in the two wells of a tilted double well (barrier 20) stay there: their
    # U differ by ~2, far more than within a chain, so split R-hat trips.
    z0 = jnp.asarray([[-1.0], [1.0], [-1.0], [1.0]], jnp.float32)
    res = RUN(
        jax.random.key(13),
        z0,
        tilted_double_well,
        n_steps=400,
        n_chains=4,
        step_size=1e-3,
        per_chain_init=True,
    )
    w = health_warnings(chain_health(res))
    assert any(s.startswith("split R-hat of U") for s in w) and res.finite.all()


# ----------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(step_size=-0.1), "step_size"),
        (dict(step_size=0.0), "step_size"),
        (dict(step_size=float("nan")), "step_size"),
        (dict(step_size=jnp.ones(2)), "step_size"),
        (dict(n_steps=0), "n_steps"),
        (dict(burn_in=10), "burn_in"),
        (dict(thin=0), "thin"),
        (dict(burn_in=4, thin=7), "thin"),
        (dict(n_chains=0), "n_chains"),
        (dict(preconditioner={"a": -1.0, "b": 1.0}), "preconditioner"),
        (dict(preconditioner={"a": 1.0}), "preconditioner"),
        (dict(preconditioner={"a": jnp.ones(3), "b": 1.0}), "preconditioner"),
        (dict(per_chain_init=True), "per_chain_init"),
        (dict(key=jax.random.split(jax.random.key(0), 3)), "key"),
        (dict(args=[1]), "args"),
        (dict(draw_fn=3), "draw_fn"),
        (dict(record_potential=1), "record_potential"),
        (dict(noise="philox"), "noise"),
    ],
)
@pytest.mark.bad_input
def test_bad_input_raises_value_error_naming_the_parameter(kwargs, match):
    kw = dict(key=jax.random.key(0), n_steps=10, step_size=0.1, n_chains=2)
    kw.update(kwargs)
    key = kw.pop("key")
    with pytest.raises(ValueError, match=match):
        sgld_chains(key, Z0, U_CORR, **kw)


@pytest.mark.bad_input
def test_bad_input_elsewhere():
    U = U_CORR
    with pytest.raises(ValueError, match="gamma"):
        polynomial_step_size(0.1, 1.0, 2.0)
    with pytest.raises(ValueError, match="step_size"):
        SGLD(potential_fn=U, step_size=-1.0)
    with pytest.raises(ValueError, match="init_params"):
        SGLD(potential_fn=U, step_size=0.1).init(jax.random.key(0), 0, None, (), {})
    with pytest.raises(ValueError, match="potential_fn must return a real scalar"):
        sgld_chains(jax.random.key(0), jnp.zeros(2), lambda z: z, n_steps=3, step_size=0.1)
    with pytest.raises(ValueError, match="floating"):
        sgld_chains(jax.random.key(0), jnp.zeros(2, jnp.int32), U, n_steps=3, step_size=0.1)
    with pytest.raises(ValueError, match="batch_size"):
        minibatch_potential(U, U, batch_size=0)
    res = RUN(jax.random.key(3), Z0, U, n_chains=4, **DET)  # compiled above
    with pytest.raises(ValueError, match="rhat_max"):
        health_warnings(chain_health(res), rhat_max=0.5)
    with pytest.raises(ValueError, match="burn_in"):
        chain_health(res, burn_in=97)


# ----------------------------------------------------------------------------------------------
# Own split R-hat / ESS (the package does not import numpyro), and SGLD(model=...)


def test_split_rhat_and_ess_equal_numpyros():
    from numpyro.diagnostics import effective_sample_size as np_ess
    from numpyro.diagnostics import split_gelman_rubin

    from copyhead_jax.sampling.sgld import split_rhat

    rng = np.random.default_rng(15)
    x = np.zeros((4, 501))  # AR(1) with rho = 0.9 (ESS well below C N) and a shifted chain
    for t in range(1, 501):
        x[:, t] = 0.9 * x[:, t - 1] + rng.normal(size=4)
    x[3] += 2.0
    for trace in (x, x[:1], x[:3, :7]):
        # the same float64 formulas; only FFT lengths and summation order differ
        np.testing.assert_allclose(effective_sample_size(trace), np_ess(trace), rtol=1e-9)
        np.testing.assert_allclose(split_rhat(trace), split_gelman_rubin(trace), rtol=1e-12)
    assert split_rhat(x) > 1.1 and effective_sample_size(x[:3]) < 0.2 * 3 * 501
    assert np.isnan(split_rhat(x[:, :3])) and np.isnan(effective_sample_size(x[:, :3]))


def gaussian_model(y):
    import numpyro
    import numpyro.distributions as dist

    # mu: conjugate, posterior N(sum y / (N + 1), 1 / (N + 1)); sigma: no data, its posterior is
    # the LogNormal(0, 1) prior, sampled as log sigma ~ N(0, 1) in unconstrained space.
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    numpyro.sample("sigma", dist.LogNormal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)


@pytest.mark.slow  # ~12 s: MCMC compile, 6400 steps and the arviz import
def test_numpyro_model_mode_recovers_a_conjugate_posterior_and_converts_to_arviz():
    from numpyro.infer import init_to_value

    n = 20
    y = jnp.asarray(np.random.default_rng(16).normal(1.0, 1.0, size=n), jnp.float32)
    prec = np.array([n + 1.0, 1.0])  # posterior precision of (mu, log sigma)
    eps, m = 0.1, 1 / prec  # eta M A = 0.1 on both coordinates
    mean = np.array([float(y.sum()) / (n + 1), 0.0])
    var = 1 / (prec * (1 - eps / 2))  # SGLD's stationary variance [A (1 - eta M A / 2)]^{-1}
    kernel = SGLD(model=gaussian_model, step_size=eps, preconditioner={"mu": m[0], "sigma": m[1]})
    mcmc = MCMC(
        kernel,
        num_warmup=100,
        num_samples=1500,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.key(16), y, extra_fields=("potential_energy", "accept_prob"))
    s = mcmc.get_samples(group_by_chain=True)  # constrained space (postprocess_fn)
    assert set(s) == {"mu", "sigma"} and s["mu"].shape == (4, 1500)
    assert (s["sigma"] > 0).all()
    theta = np.stack([np.asarray(s["mu"]), np.log(np.asarray(s["sigma"]))], axis=-1)
    assert (moment_z_scores(theta, mean, np.diag(var)) < Z_MAX).all()

    az = pytest.importorskip("arviz")
    idata = az.from_numpyro(mcmc)
    assert dict(idata.posterior.sizes) == {"chain": 4, "draw": 1500}
    np.testing.assert_array_equal(idata.posterior["mu"].values, s["mu"])
    assert idata.log_likelihood["y"].shape == (4, 1500, n)
    assert not idata.sample_stats["diverging"].values.any()

    # init_strategy sets the warm start, in unconstrained space (log sigma).
    start = SGLD(
        model=gaussian_model,
        step_size=eps,
        init_strategy=init_to_value(values={"mu": 3.0, "sigma": 2.0}),
    )
    state = start.init(jax.random.key(0), 0, None, (y,), {})
    np.testing.assert_allclose([state.z["mu"], state.z["sigma"]], [3.0, np.log(2.0)], rtol=1e-6)


def test_sgld_refuses_a_positional_or_missing_target():
    with pytest.raises(ValueError, match="by keyword"):
        SGLD(U_CORR, step_size=0.1)
    with pytest.raises(ValueError, match="exactly one of model= or potential_fn="):
        SGLD(step_size=0.1)
    with pytest.raises(ValueError, match="exactly one of model= or potential_fn="):
        SGLD(model=gaussian_model, potential_fn=U_CORR, step_size=0.1)
