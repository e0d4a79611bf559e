"""Adaptive tempered SMC (``bayes.smc``) against closed forms and quadrature."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate

from copyhead_jax.transition import hmc_move, tempered_smc
from copyhead_jax.transition.smc import next_temperature, systematic_resample

R, N = 12, 256  # independent replicate problems, particles each


def _tolerance(z):
    """Replicates' log Z: 4 standard errors of their mean plus the Jensen bias of a log of an
    unbiased estimator, Var/2 to leading order."""
    sd = float(np.std(z, ddof=1))
    return 4 * sd / math.sqrt(len(z)) + 0.5 * sd**2


S = jnp.array([0.5, 0.8, 1.5, 2.0])
MU = jnp.array([1.0, -0.5, 0.0, 2.0])


def test_gaussian_log_z_and_mean():
    """N(0, I) reference to the Gaussian N(MU, diag S^2): log Z_1 / Z_0 =
    (d/2) log 2 pi + sum log S (Z_0 = 1: the reference is normalised), on the fixed schedule of
    an adaptive pilot run (unbiased Z); the particles' mean is MU within 4 standard errors over
    replicates. (The adaptive run's own log Z is biased low by O(1/N): hence the fixed
    schedule here.)"""
    d = S.size
    U0 = lambda x: 0.5 * jnp.sum(x**2, -1) + 0.5 * d * math.log(2 * math.pi)  # noqa: E731
    U1 = lambda x: (
        0.5 * jnp.sum(((x - jnp.broadcast_to(MU, x.shape)) / jnp.broadcast_to(S, x.shape)) ** 2, -1)
    )  # noqa: E731
    g_fn = jax.jit(lambda x: U1(x) - U0(x))

    @jax.jit
    def mutate(key, x, t, aux):
        def one(k, xi, ti):
            pot = lambda v: U0(v) + ti * (U1(v) - U0(v))  # noqa: E731
            return hmc_move(k, pot, xi, step_size=0.4, n_steps=3, n_leap=5)

        ks = jax.random.split(key, R * N).reshape(R, N)
        x, a = jax.vmap(jax.vmap(one, (0, 0, None)))(ks, x, t)
        return x, a, aux

    x0 = jax.random.normal(jax.random.key(1), (R, N, d))
    pilot, _ = tempered_smc(jax.random.key(2), x0, g_fn, mutate)
    assert np.all(np.diff(pilot.ts, axis=0) >= 0) and pilot.ts.shape[0] >= 3  # adaptive
    res, _ = tempered_smc(jax.random.key(5), x0, g_fn, mutate, schedule=pilot.ts)
    exact = 0.5 * d * math.log(2 * math.pi) + float(jnp.sum(jnp.log(S)))
    assert res.reached.all() and res.finite.all()
    np.testing.assert_array_equal(res.ts, pilot.ts)
    assert abs(res.log_z.mean() - exact) < _tolerance(res.log_z), (res.log_z, exact)
    m = np.asarray(res.x).mean(1)  # [R, d]
    se = m.std(0, ddof=1) / math.sqrt(R)
    np.testing.assert_array_less(np.abs(m.mean(0) - np.asarray(MU)), 4 * se + 0.02)


def _well(x):
    return 3.0 * (x**2 - 1.0) ** 2 + 0.8 * x


def test_double_well_weights_with_a_kernel_that_never_crosses():
    """A tilted 1-D double well from a 50/50 mixture of its wells' Laplace approximations
    (twice as wide),
    with HMC that rejects every proposal leaving the start's well: the mass moves between wells
    by the weights alone. log Z and the right well's weight match adaptive quadrature (weight:
    4 standard errors over replicates plus 0.01)."""
    xs = np.linspace(-2, 2, 40001)
    wells = []
    for box in (xs < 0, xs >= 0):
        xm = float(xs[box][np.argmin(_well(xs[box]))])
        wells.append((xm, 2.0 * (12.0 * xm**2 - 4.0) ** -0.5))  # twice the Laplace width
    (m0, s0), (m1, s1) = wells

    def U0(x):
        lp = jnp.logaddexp(
            -0.5 * ((x - m0) / s0) ** 2 - math.log(s0), -0.5 * ((x - m1) / s1) ** 2 - math.log(s1)
        )
        return -(lp - math.log(2) - 0.5 * math.log(2 * math.pi))[..., 0]

    U1 = lambda x: _well(x)[..., 0]  # noqa: E731
    g_fn = jax.jit(lambda x: U1(x) - U0(x))

    @jax.jit
    def mutate(key, x, t, aux):
        def one(k, xi, ti):
            pot = lambda v: U0(v) + ti * (U1(v) - U0(v))  # noqa: E731
            inside = lambda v: (v[0] >= 0) == (xi[0] >= 0)  # noqa: E731
            return hmc_move(k, pot, xi, step_size=0.15, n_steps=4, n_leap=5, inside=inside)

        ks = jax.random.split(key, R * N).reshape(R, N)
        x, a = jax.vmap(jax.vmap(one, (0, 0, None)))(ks, x, t)
        return x, a, aux

    k1, k2, k3 = jax.random.split(jax.random.key(3), 3)
    right = jax.random.bernoulli(k1, 0.5, (R, N, 1))
    x0 = jnp.where(
        right,
        m1 + s1 * jax.random.normal(k2, (R, N, 1)),
        m0 + s0 * jax.random.normal(k3, (R, N, 1)),
    )
    pilot, _ = tempered_smc(jax.random.key(4), x0, g_fn, mutate, ess_target=0.8)
    assert pilot.ts.shape[0] >= 3  # several steps, not one importance reweighting
    res, _ = tempered_smc(
        jax.random.key(5), x0, g_fn, mutate, record=lambda x: x[..., 0], schedule=pilot.ts
    )
    z_l = integrate.quad(lambda x: math.exp(-float(_well(x))), -3, 0)[0]
    z_r = integrate.quad(lambda x: math.exp(-float(_well(x))), 0, 3)[0]
    assert abs(res.log_z.mean() - math.log(z_l + z_r)) < _tolerance(res.log_z)
    w = (np.exp(res.log_w1) * (res.obs1 >= 0)).sum(1)  # [R]: right well's weight
    w_ex = z_r / (z_l + z_r)
    assert 0.1 < w_ex < 0.4  # the tilt makes the target's weights unlike the reference's 1/2
    assert abs(w.mean() - w_ex) < 4 * w.std(ddof=1) / math.sqrt(R) + 0.01, (w, w_ex)


def test_next_temperature_and_resampling():
    """The chosen step gives ESS = the target (or t' = 1 when 1 is allowed); systematic
    resampling keeps each index floor(N w) or ceil(N w) times."""
    g = np.random.default_rng(0).normal(0, 5, (3, 1000))
    g[2] *= 1e-4  # nearly flat: straight to t = 1
    t = np.array([0.0, 0.5, 0.2])
    t1 = next_temperature(g, t, 0.5)
    assert t1[2] == 1.0 and np.all(t1[:2] > t[:2]) and np.all(t1[:2] < 1)
    for r in range(2):
        lv = -(t1[r] - t[r]) * g[r]
        ess = np.exp(2 * np.logaddexp.reduce(lv) - np.logaddexp.reduce(2 * lv)) / g.shape[1]
        assert abs(ess - 0.5) < 1e-6
    lw = jnp.log(jnp.array([[0.5, 0.25, 0.125, 0.125]]))
    idx = np.asarray(systematic_resample(jax.random.key(0), lw))[0]
    assert np.bincount(idx, minlength=4).tolist() == [2, 1, 0, 1] or np.bincount(
        idx, minlength=4
    ).tolist() == [2, 1, 1, 0]


def test_a_diverging_problem_is_flagged_not_fatal():
    """A problem whose target is +inf everywhere gets finite = False and log Z = NaN; the
    other problem runs to t = 1 unchanged."""

    def g_fn(x):
        return jnp.stack([0.5 * jnp.sum(x[0] ** 2, -1), jnp.full(x.shape[1], jnp.inf)])

    def mutate(key, x, t, aux):
        return x, jnp.ones(x.shape[:2]), aux

    x0 = jax.random.normal(jax.random.key(0), (2, 64, 2))
    res, _ = tempered_smc(jax.random.key(1), x0, g_fn, mutate)
    assert res.finite.tolist() == [True, False]
    assert np.isfinite(res.log_z[0]) and np.isnan(res.log_z[1]) and res.reached.all()
    with pytest.raises(ValueError, match="ess_target"):
        tempered_smc(jax.random.key(1), x0, g_fn, mutate, ess_target=1.5)
    with pytest.raises(ValueError, match="schedule"):
        tempered_smc(jax.random.key(1), x0, g_fn, mutate, schedule=[0.5, 0.9])


def test_a_collapsed_population_is_named_and_its_cross_check_refused():
    """On a fixed two-step schedule from N(0, 1) to N(4, 0.3^2) the second step's weights
    collapse (ESS a few particles of 64, recorded per step) and particles that are never moved
    stay copies of a few: ``smc_collapse`` names both. The search refuses the SMC P* of a seed
    whose bracket end collapsed and names the reason (the seed's flags); a healthy record has
    none."""
    from copyhead_jax.transition import search
    from copyhead_jax.transition.smc import SMC_FLOOR, smc_collapse

    n = 64
    x0 = jax.random.normal(jax.random.key(0), (1, n, 1))

    def g_fn(x):
        x = np.asarray(x)[..., 0]
        return 0.5 * ((x - 4.0) / 0.3) ** 2 - 0.5 * x**2

    still = lambda k, x, t, aux: (x, jnp.zeros(x.shape[:2]), aux)  # noqa: E731
    res, _ = tempered_smc(jax.random.key(1), x0, g_fn, still, schedule=[0.05, 1.0])
    rec = {
        "reached": bool(res.reached[0]),
        "finite": bool(res.finite[0]),
        "n_steps": 2,
        "ts": res.ts[:, 0].tolist(),
        "ess": res.ess[:, 0].tolist(),
        "unique": len(np.unique(np.asarray(res.x[0]), axis=0)) / n,
    }
    assert min(rec["ess"]) < SMC_FLOOR and rec["unique"] < SMC_FLOOR
    why = smc_collapse(rec)
    assert len(why) == 2 and "ESS" in why[0] and "distinct" in why[1], why
    healthy = dict(rec, ess=[0.6, 0.55], unique=0.9)
    assert smc_collapse(healthy) == []
    assert smc_collapse(dict(healthy, reached=False)) == ["t = 1 not reached in 2 steps"]

    pts = [dict(P=20, w_copy=0.1, collapsed=[]), dict(P=40, w_copy=0.9, collapsed=why)]
    out = search.smc_cross_check(0, [20, 40], pts, 8)
    assert out["P_star"] is None and out["w_copy"] == [0.1, 0.9]
    assert out["collapsed"] == [f"seed 0 P=40 SMC collapsed: {'; '.join(why)}"]
    pts[1]["collapsed"] = []
    out = search.smc_cross_check(0, [20, 40], pts, 8)
    assert 20 < out["P_star"] < 40 and out["collapsed"] == []  # d = ln 9 at 20, -ln 9 at 40
