"""Constrained, Laplace-referenced TI (``transition.branch_ti``) against closed forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr

from copyhead_jax.transition import branch_log_z, path_rungs, reference_mass

TS = np.array([0.0, 0.1, 0.25, 0.45, 0.7, 1.0])
HMC = dict(n_iter=1500, thin=3, step_size=0.5, n_adapt=100)


def _log_z(key, U, order, *, side, threshold, n, U_star=0.0, logdet=0.0, n_chains=2, w_start=None):
    keys = jax.random.split(key, len(TS) * n_chains + 1)
    st = path_rungs(
        keys[1:].reshape(len(TS), n_chains),
        U,
        order,
        TS,
        side=side,
        threshold=threshold,
        n=n,
        U_star=U_star,
        w_start=w_start,
        **HMC,
    )
    if side == 0:
        p, se = 1.0, 0.0
    else:
        p, se, _ = reference_mass(keys[0], order, n, 20_000, side=side, threshold=threshold)
    d = np.asarray(st.records)
    fe = branch_log_z(
        TS,
        d[..., 0],
        np.asarray(st.finite),
        U_star=U_star,
        logdet_C=logdet,
        n=n,
        p_ref=p,
        p_ref_se=se,
    )
    return fe, d, st


# a 2-D Gaussian of standard deviations S: U = |w / S|^2 / 2, reference N(0, I)
S = jnp.array([0.7, 1.5])
U_GAUSS = lambda w: 0.5 * jnp.sum((w / S) ** 2)  # noqa: E731
LOG_Z_GAUSS = math.log(2 * math.pi) + float(jnp.sum(jnp.log(S)))


def test_half_space_gaussian_matches_erf():
    """log Z of the Gaussian restricted to w_0 >= 0.3: log(2 pi s0 s1) + log Phi(-0.3 / s0).
    Tolerance: 4 standard errors (TI MCSE and the reference mass's binomial error) plus 0.02
    for the rung spacing (6 rungs; the Euler-Maclaurin term on this path is ~0.01)."""
    a = 0.3
    fe, d, _ = _log_z(
        jax.random.key(0),
        U_GAUSS,
        lambda w: w[0],
        side=1,
        threshold=a,
        n=2,
        w_start=jnp.array([1.0, 0.0]),
    )
    exact = LOG_Z_GAUSS + float(log_ndtr(-a / S[0]))
    assert abs(-fe["F"] - exact) < 4 * fe["mcse"] + 0.02, (fe["F"], exact, fe["mcse"])
    assert np.all(d[..., 1] >= a)  # the constraint keeps every recorded draw inside


def test_exact_first_rung_matches_erf_and_counts_as_one_chain():
    """The t = 0 rung from exact draws (``g0``: reference draws inside the region, as
    ``TISettings.exact_t0``), chains on the other rungs: log Z of the half-space Gaussian as
    above (same tolerance); and ``g0`` is the same estimate as a one-chain rung of those
    draws."""
    a = 0.3
    keys = jax.random.split(jax.random.key(7), (len(TS) - 1) * 2 + 2)
    st = path_rungs(
        keys[2:].reshape(len(TS) - 1, 2),
        U_GAUSS,
        lambda w: w[0],
        TS[1:],
        side=1,
        threshold=a,
        n=2,
        U_star=0.0,
        w_start=jnp.array([1.0, 0.0]),
        **HMC,
    )
    w = np.asarray(jax.random.normal(keys[0], (4000, 2)), np.float64)
    inside = w[:, 0] >= a
    g0 = 0.5 * np.sum((w[inside] / np.asarray(S)) ** 2, 1) - 0.5 * np.sum(w[inside] ** 2, 1)
    p = inside.mean()
    kw = dict(U_star=0.0, logdet_C=0.0, n=2, p_ref=p, p_ref_se=math.sqrt(p * (1 - p) / 4000))
    d, fin = np.asarray(st.records)[..., 0], np.asarray(st.finite)
    fe = branch_log_z(TS, d, fin, g0=g0, **kw)
    exact = LOG_Z_GAUSS + float(log_ndtr(-a / S[0]))
    assert abs(-fe["F"] - exact) < 4 * fe["mcse"] + 0.02, (fe["F"], exact, fe["mcse"])
    one_chain = [g0[None]] + list(d)  # the same draws given as a rung of one chain
    fe1 = branch_log_z(TS, one_chain, [np.ones(1, bool)] + list(fin), **kw)
    assert fe1["F"] == fe["F"] and fe1["mcse"] == fe["mcse"]
    with pytest.raises(ValueError, match="rungs of draws"):
        branch_log_z(TS, d, fin, **kw)  # g0 missing: one rung short
    # no reference draw inside the region: F = inf (not NaN), whatever the other rungs say
    none = branch_log_z(TS, d, fin, g0=np.zeros(0), **{**kw, "p_ref": 0.0, "p_ref_se": 0.0})
    assert none["F"] == math.inf


def test_everywhere_matches_unconstrained_closed_form():
    """side = 0 (no region, P_ref = 1) on the t-path: log Z of the whole Gaussian; same
    tolerance as above."""
    fe, _, st = _log_z(jax.random.key(1), U_GAUSS, lambda w: w[0], side=0, threshold=0.0, n=2)
    assert abs(-fe["F"] - LOG_Z_GAUSS) < 4 * fe["mcse"] + 0.02, (fe["F"], LOG_Z_GAUSS)
    assert float(np.max(np.asarray(st.outside))) == 0.0  # no proposal is ever region-rejected


def _double_well(x):
    return 3.0 * (x**2 - 1.0) ** 2 + 0.4 * x


def test_double_well_branches_and_weight():
    """A tilted 1-D double well split at x = 0 into its two wells, each referenced at its own
    minimum with C = U''(x*)^(-1/2): both log Z_R and the weight of the right well match
    adaptive quadrature (tolerance as above, per branch)."""
    xs = np.linspace(-2, 2, 40001)
    F_ex, F_est = {}, {}
    for side, lo, hi in ((-1, -3.0, 0.0), (1, 0.0, 3.0)):
        exact = integrate.quad(lambda x: math.exp(-float(_double_well(x))), lo, hi)[0]
        F_ex[side] = -math.log(exact)
        box = (xs < 0) if side < 0 else (xs >= 0)
        x_star = float(xs[box][np.argmin(_double_well(xs[box]))])
        curv = 12.0 * x_star**2 - 4.0  # U''
        c = curv**-0.5
        U = lambda w, x_star=x_star, c=c: _double_well(x_star + c * w[0])  # noqa: E731
        order = lambda w, x_star=x_star, c=c: x_star + c * w[0]  # noqa: E731
        fe, d, _ = _log_z(
            jax.random.key(2 + side),
            U,
            order,
            side=side,
            threshold=0.0,
            n=1,
            U_star=float(_double_well(x_star)),
            logdet=math.log(c),
        )
        assert np.all((d[..., 1] >= 0) if side > 0 else (d[..., 1] < 0))
        assert abs(fe["F"] - F_ex[side]) < 4 * fe["mcse"] + 0.02, (side, fe["F"], F_ex[side])
        F_est[side] = (fe["F"], fe["mcse"])
    w_ex = 1 / (1 + math.exp(F_ex[1] - F_ex[-1]))
    w_est = 1 / (1 + math.exp(F_est[1][0] - F_est[-1][0]))
    se = math.hypot(F_est[1][1], F_est[-1][1]) + 0.03
    assert abs(w_est - w_ex) < 4 * se * w_ex * (1 - w_ex), (w_est, w_ex)  # delta method


def test_progress_is_called_once_per_step_for_the_batch_and_changes_nothing():
    """``progress`` depends on the loop counter only: under vmap over runs, rungs and chains it
    is called once per adaptation step and once per block of ``thin`` steps, ending at the
    total; the draws equal those of a run without it, bit for bit."""
    calls = []
    kw = dict(n_iter=40, thin=10, step_size=0.3, n_adapt=20)

    def run(progress):
        def one(k):
            return path_rungs(
                k,
                U_GAUSS,
                lambda w: w[0],
                TS[:3],
                side=0,
                threshold=0.0,
                n=2,
                U_star=0.0,
                progress=progress,
                **kw,
            )

        keys = jax.random.split(jax.random.key(5), 2 * 3 * 2).reshape(2, 3, 2)
        return jax.block_until_ready(jax.jit(jax.vmap(one))(keys))

    with_progress = run(lambda done, total: calls.append((done, total)))
    total = kw["n_adapt"] + kw["n_iter"]
    blocks = [kw["n_adapt"] + (j + 1) * kw["thin"] for j in range(kw["n_iter"] // kw["thin"])]
    assert sorted(calls) == [(d, total) for d in [*range(1, kw["n_adapt"] + 1), *blocks]]

    def leaves(chains):  # the chains' final state carries PRNG keys: compare their bits
        return [
            jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x
            for x in jax.tree.leaves(chains)
        ]

    for a, b in zip(leaves(with_progress), leaves(run(None)), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_path_rungs_extra_record_is_appended_and_changes_no_draw():
    """``extra(w)`` is recorded third; the chains (same keys) and their (g, order) records are
    the ones without it (the extra record only reads the state)."""
    keys = jax.random.split(jax.random.key(5), 6).reshape(3, 2)
    kw = dict(
        side=1,
        threshold=0.2,
        n=2,
        U_star=0.0,
        w_start=jnp.array([1.0, 0.0]),
        n_iter=40,
        thin=2,
        step_size=0.5,
        n_adapt=10,
    )
    ts = TS[[0, 2, -1]]
    a = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, **kw)
    b = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, extra=lambda w: 2 * w[0] - 1, **kw)
    da, db = np.asarray(a.records), np.asarray(b.records)
    assert da.shape[-1] == 2 and db.shape[-1] == 3
    np.testing.assert_array_equal(da, db[..., :2])
    np.testing.assert_allclose(db[..., 2], 2 * db[..., 1] - 1, rtol=1e-6, atol=1e-6)
    c = path_rungs(
        keys, U_GAUSS, lambda w: w[0], ts, extra=lambda w: 2 * w[0] - 1, extra_last_only=True, **kw
    )
    dc = np.asarray(c.records)
    np.testing.assert_array_equal(dc[..., :2], da)  # the chains are the same
    np.testing.assert_array_equal(dc[-1], db[-1])  # the last rung records extra
    assert np.all(dc[:-1, ..., 2] == 0)  # the others record 0


def test_path_rungs_steps_per_rung_are_kept_without_adaptation_and_a_scalar_broadcasts():
    """``step_size`` one per rung with ``n_adapt = 0``: each rung's chains run at its own step
    (reported back unchanged); a scalar step gives the chains of the same step per rung."""
    keys = jax.random.split(jax.random.key(7), 6).reshape(3, 2)
    kw = dict(side=0, threshold=0.0, n=2, U_star=0.0, n_iter=40, thin=2, n_adapt=0)
    ts = TS[[0, 2, -1]]
    steps = np.array([0.2, 0.5, 0.9], np.float32)
    st = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, step_size=steps, **kw)
    np.testing.assert_allclose(np.asarray(st.step_size), np.repeat(steps[:, None], 2, 1), rtol=1e-6)
    one = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, step_size=0.5, **kw)
    same = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, step_size=np.full(3, 0.5), **kw)
    np.testing.assert_array_equal(np.asarray(one.records), np.asarray(same.records))
    assert not np.array_equal(np.asarray(st.records[0]), np.asarray(one.records[0]))


@pytest.mark.slow  # three compiled rung programs; the round loop's fast test: test_rung_rounds.py
def test_continued_rungs_equal_one_run_and_a_stopped_rung_keeps_its_state():
    """Rungs continued from their states (``state``, ``first_draw``) give the records of one
    call of the summed length, bit for bit, for the rungs marked active; an inactive rung
    draws nothing (NaN records and acceptances) and hands its state back unchanged, so it
    continues later as if never paused."""
    keys = jax.random.split(jax.random.key(3), 6).reshape(3, 2)
    kw = dict(
        side=1,
        threshold=0.2,
        n=2,
        U_star=0.0,
        w_start=jnp.array([1.0, 0.0]),
        thin=2,
        step_size=0.5,
        n_adapt=10,
        sequential=True,
    )
    ts = TS[[0, 2, -1]]
    full = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, n_iter=40, **kw)
    a = path_rungs(keys, U_GAUSS, lambda w: w[0], ts, n_iter=20, **kw)
    b = path_rungs(
        keys,
        U_GAUSS,
        lambda w: w[0],
        ts,
        n_iter=20,
        state=a.state,
        first_draw=10,
        active=np.array([True, False, True]),
        **kw,
    )
    both = np.concatenate([np.asarray(a.records), np.asarray(b.records)], 2)
    for k in (0, 2):
        np.testing.assert_array_equal(both[k], np.asarray(full.records)[k])
    assert np.isnan(np.asarray(b.records)[1]).all() and np.isnan(np.asarray(b.accept)[1]).all()
    data = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    for x, y in zip(jax.tree.leaves(a.state), jax.tree.leaves(b.state), strict=True):
        np.testing.assert_array_equal(np.asarray(data(x))[1], np.asarray(data(y))[1])
