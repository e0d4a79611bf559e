"""Posterior of reduced sweeps: the collapsed HMC sampler mixes and agrees with NUTS for both heads;
chains from both branch starts; kept log-likelihoods and weights; polish of Adam fits."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.fit import polish, solve_map, sweep_inputs
from copyhead_jax.models import head_template, init_reduced
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import (
    default_sampler,
    ess,
    nuts_reference,
    run_sampler,
    sampler_for,
    split_rhat,
)

CFG = ch.TINY.replace(
    model=dict(engine="reduced", width=10_000, attention="softmax"),
    sweep=dict(P=(4, 16), n_seeds=1),
)
LIN = CFG.replace(model=dict(attention="linear"))
#: A full-width Adam sweep small enough to train (width 32) and its exact image: one compiled
#: exact sweep serves the stationarity, polish and short-chain tests.
ADAM = ch.TINY.replace(
    model=dict(width=32), sweep=dict(P=(4, 8), n_seeds=1), solver=dict(max_epochs=400)
)
EXACT = ADAM.replace(model=dict(engine="reduced"))


@pytest.fixture(scope="module")
def reduced_sweep():
    return ch.run_sweep(EXACT, progress=False, keep_params=True)


@pytest.fixture(scope="module")
def wide_sweep():
    return ch.run_sweep(CFG, progress=False, keep_params=True)


@pytest.fixture(scope="module")
def linear_sweep():
    return ch.run_sweep(LIN, progress=False, keep_params=True)


def test_exact_sweep_is_stationary(reduced_sweep):
    r = reduced_sweep
    assert np.all(r["converged"]) and np.all(r["rel_grad"] <= 1e-8)
    assert np.all(r["min_eig"] > 0)  # a true local minimum, not a saddle
    assert r["params/W_G"].shape[-1] == EXACT.task.V + EXACT.task.L


def test_marginal_energy_integrates_the_readout(linear_sweep):
    """U_m(W^G) = U(W^G, mean readout) + V/2 log det(sigma_O^2 Lambda) (Gaussian integral), the
    hand-written Cholesky equals LAPACK's, and the readout draws have the conditional's moments."""
    from copyhead_jax.fit import quenched_energy
    from copyhead_jax.models import head_class
    from copyhead_jax.sampling.collapsed import (
        cholesky,
        draw_readout,
        marginal_energy,
        readout_conditional,
    )

    inp = sweep_inputs(LIN, None)
    with jax.enable_x64(True):
        obj = Objective.from_config(LIN)
        arr = {
            k: jnp.asarray(linear_sweep[f"params/{k}"][1, 0], jnp.float64)
            for k in ("W_E", "b", "W_G", "W_O_hat")
        }
        h = head_class("linear").from_arrays(LIN, arr)
        t, m = inp.train[1], jnp.asarray(inp.mask[1], jnp.float64)
        Lam, B, _ = readout_conditional(h, t, m, obj)
        np.testing.assert_allclose(
            cholesky(Lam), np.linalg.cholesky(np.asarray(Lam)), rtol=1e-10, atol=1e-12
        )
        mean = np.linalg.solve(np.asarray(Lam), np.asarray(B)).T
        np.testing.assert_allclose(mean, h.W_O_hat, atol=1e-6)  # the fit is the conditional mode
        import equinox as eqx

        Uj = quenched_energy(eqx.tree_at(lambda x: x.W_O_hat, h, jnp.asarray(mean)), t, m, obj)
        logdet = np.linalg.slogdet(np.asarray(Lam) * obj.sigma_O**2)[1]
        np.testing.assert_allclose(
            marginal_energy(h, t, m, obj), Uj + 0.5 * B.shape[1] * logdet, rtol=1e-10
        )
        keys = jax.random.split(jax.random.key(0), 4000)
        W = jax.vmap(lambda k: draw_readout(k, h, t, m, obj).W_O_hat)(keys)  # [S, V, N]
        np.testing.assert_allclose(
            W.mean(0), mean, atol=5 * np.sqrt(np.diag(np.linalg.inv(np.asarray(Lam))).max() / 4000)
        )
        cov = np.cov(np.asarray(W[:, 0, :]).T)
        np.testing.assert_allclose(cov, np.linalg.inv(np.asarray(Lam)), atol=0.1 * cov.max())


@pytest.mark.heavy  # 4 chains x 1,500-3,500 HMC draws per run: ~30 s each idle
@pytest.mark.parametrize("att", ["softmax", "linear"])
def test_default_sampler_mixes(request, linear_sweep, att):
    """The default protocol on a reduced sweep: split R-hat <= 1.05 and ESS >= 400 for U and
    each order parameter in every run (the bar: R-hat 1.05 is Gelman-Rubin's working
    threshold, an ESS of 400 puts the Monte-Carlo error of a mean at 5% of the posterior
    standard deviation; 4 chains x 1,500 HMC draws, 3,500 for linear attention, clear both with
    a margin here), and no health warning. Linear attention is the case whitened SGLD could not
    sample (the bilinear valley of (W^G, W^O)); softmax (slow) is covered again because its
    default sampler changed too."""
    sweep = request.getfixturevalue("wide_sweep") if att == "softmax" else linear_sweep
    post = run_sampler(sweep, default_sampler(sweep), progress=False)
    n1, nG = post.order_names
    for name, rh, es in (
        ("U", "rhat", "ess"),
        (n1, f"rhat_{n1}", f"ess_{n1}"),
        (nG, f"rhat_{nG}", f"ess_{nG}"),
    ):
        assert np.all(post[rh] <= 1.05), (name, post[rh])
        assert np.all(post[es] >= 400), (name, post[es])
        x = post[name]  # [P, seed, chain, draw]: the same numbers from the draws
        assert np.all(split_rhat(x) <= 1.05) and np.all(ess(x) >= 400), name
    assert post.meta["warnings"] == [], post.meta["warnings"]


@pytest.mark.heavy  # minutes each (NUTS): `python -m pytest -m heavy`, not in the default run
@pytest.mark.parametrize("att", ["softmax", "linear"])
def test_default_sampler_agrees_with_nuts(att):
    """Posterior means of U, c1, cG from the default sampler (collapsed HMC, Metropolis-corrected:
    no step-size bias) and from NUTS on the joint posterior of (W^G, W_O_hat) agree within 4
    combined Monte-Carlo standard errors."""
    cfg = (CFG if att == "softmax" else LIN).replace(sweep=dict(P=(16,), n_seeds=1))
    inp = sweep_inputs(cfg, None)
    with jax.enable_x64(True):
        obj = Objective.from_config(cfg)
        h0 = init_reduced(jax.random.key(0), cfg, head_template(cfg))
        t, m = inp.train[0], jnp.asarray(inp.mask[0], jnp.float64)
        fit = solve_map(h0, t, m, obj)
        sampler = sampler_for(cfg, ch.HMCConfig())
        obs = lambda h: sampler.observe(h, t, m)[jnp.array([0, 2, 3])]
        ref = np.asarray(
            nuts_reference(
                jax.random.key(1), fit.head, t, m, obj, obs, n_warmup=300, n_samples=600, n_chains=2
            )
        )
    res = ch.run_sweep(cfg, progress=False, keep_params=True)
    post = run_sampler(res, default_sampler(res), progress=False)
    sg = np.stack([post["U"][0, 0], post["c1"][0, 0], post["cG"][0, 0]], -1)  # [C, S, 3]
    for k in range(3):
        se = np.hypot(
            np.std(ref[..., k]) / np.sqrt(ess(ref[..., k])),
            np.std(sg[..., k]) / np.sqrt(ess(sg[..., k])),
        )
        diff = abs(ref[..., k].mean() - sg[..., k].mean())
        assert diff <= 4 * se, (k, ref[..., k].mean(), sg[..., k].mean(), se)


def test_polish_descends_and_agrees_with_exact(reduced_sweep, tmp_path):
    """Polish of a full-width Adam sweep (quenched): the exact MAP has U <= U - U_perp of every
    Adam run (L-BFGS only descends), and from the prior start and from the Adam fit the exact
    solver reaches the same minimum (pooling branch of a small softmax task, unique here)."""
    res = ch.run_sweep(ADAM, progress=False, keep_params=True)
    p = polish(res, out=tmp_path / "p.npz")
    assert np.all(p["polish/dU"] <= 1e-9 * np.abs(p["polish/U_adam"]))
    assert np.all(p["polish/converged"]) and np.all(p["polish/min_eig"] > 0)
    exact = reduced_sweep  # the exact sweep of the same config
    # same data and embeddings (gram='realised' draws the full engine's embeddings)
    np.testing.assert_allclose(p["polish/U"], exact["U"], rtol=1e-7)
    np.testing.assert_allclose(p["polish/cG"], exact["cG"], atol=1e-6)
    assert ch.SweepResult.load(tmp_path / "p.npz")["polish/dU"].shape == (2, 1)


#: A short collapsed-HMC protocol: properties of the output, not of mixing (seconds per run).
SHORT = ch.HMCConfig(n_iter=24, n_warmup=10, n_adapt=10, thin=2, n_chains=2)
#: ... from both branch starts, log-likelihoods and weights kept: one compiled program (one run
#: per chunk) serves the records test and the energy/resume test below
BOTH = dataclasses.replace(
    SHORT, starts="both", branch_threshold=0.05, keep_loglik=True, keep_weights=True
)


@pytest.fixture(scope="module")
def short_post(reduced_sweep):
    return run_sampler(reduced_sweep, BOTH, progress=False, chunk_runs=1)


def test_both_starts_branch_weight_and_kept_records(short_post):
    """One short run (compiled once) from both branch starts, log-likelihoods and weights kept:

    * the pooled branch weight is the mean of the starts' (equal groups), each the fraction of
      draws with aG >= the threshold; the MCSE is >= 0 and the between-start R-hat finite; a
      run warns exactly when that R-hat passes its bar; outputs name the sampler;
    * at every draw sum_alpha log p(y^alpha) = -w P loss + P (n_y / 2) log(w / pi) and
      U = w P loss + |W^G|^2 / 2 sigma_G^2 + |W_O_hat|^2 / 2 sigma_O^2 (quenched U, docs/theory.md
      §2 and §9b): three records of one draw agree (float32 sums of ~100 terms: rtol 1e-4)."""
    from copyhead_jax.sampling.starts import RHAT_BETWEEN_MAX

    post = short_post
    a, aG = post.arrays, post["aG"]  # [P, seed, chain, draw]
    by = (aG >= 0.05).reshape(*aG.shape[:2], 2, -1).mean(-1)
    np.testing.assert_allclose(a["branch_weight_by_start"], by, rtol=1e-12)
    np.testing.assert_allclose(a["branch_weight"], by.mean(-1), rtol=1e-12)
    assert np.all(a["branch_weight_mcse"] >= 0) and np.all(np.isfinite(a["rhat_between"]))
    warned = any("different starts" in w for w in post.meta["warnings"])
    assert warned == bool(np.any(a["rhat_between"] > RHAT_BETWEEN_MAX))
    assert post.sampler_name == "collapsed HMC" and post.meta["sampler_name"] == "collapsed HMC"

    obj = Objective.from_config(EXACT)
    w, n_y = obj.likelihood_weight, EXACT.task.L * EXACT.task.V  # TINY: no causal mask
    assert not EXACT.model.causal
    for i, P in enumerate(post.P):
        ll = post["log_lik"][i]  # [seed, C, S, P_max]
        assert np.all(np.isnan(ll[..., P:])) and np.all(np.isfinite(ll[..., :P]))
        loss = post["train_loss"][i]
        np.testing.assert_allclose(
            ll[..., :P].sum(-1), -w * P * loss + P * 0.5 * n_y * np.log(w / np.pi), rtol=1e-4
        )
        prior = (post["W_G"][i] ** 2).sum((-1, -2)) / (2 * obj.sigma_G**2) + (
            post["W_O_hat"][i] ** 2
        ).sum((-1, -2)) / (2 * obj.sigma_O**2)
        np.testing.assert_allclose(post["U"][i], w * P * loss + prior, rtol=1e-4)


def test_collapsed_hmc_energy_resumes_exactly_and_feeds_bfmi(reduced_sweep, short_post, tmp_path):
    """A collapsed-HMC run of a small reduced sweep, weights kept, interrupted after its first
    chunk and resumed: its energies equal an uninterrupted run's (``short_post``) bit for bit and
    are saved. ``sample_stats.energy`` is there (HMC only), ``(chain, draw)`` on one run and
    finite. It is the Hamiltonian ``U_m(W_G) + |p|^2 / 2`` at each draw (its momentum is
    replayed in test_kernels.py), so energy minus ``U_m`` recomputed from the kept ``W_G``
    (sample_reduced.marginal_energy) is the kinetic energy: >= 0 (float32 energies of size
    ~1e2: atol 1e-2) and, as HMC leaves ``exp(-U_m) N(p; 0, I)`` invariant, of mean n/2
    (n = D^2 weights; 5 standard errors, half the draws counted as independent: the momentum
    is fresh at every iteration). ``az.bfmi`` gives one finite positive value per chain. (Moved
    from test_arviz_io.py, where it ran its own sweep and sampler: here it shares their
    compiled programs with the records test.)"""
    az = pytest.importorskip("arviz")
    from copyhead_jax.models import head_class
    from copyhead_jax.sampling import marginal_energy, to_arviz, with_WG

    cfg, mc, sweep, ref = EXACT, BOTH, reduced_sweep, short_post

    def stop(i, n):
        if i == 0:
            raise KeyboardInterrupt

    out = tmp_path / "post.npz"
    with pytest.raises(KeyboardInterrupt):
        run_sampler(sweep, mc, out=out, progress=False, chunk_runs=1, on_chunk=stop)
    hmc = run_sampler(sweep, mc, out=out, progress=False, chunk_runs=1)  # resumed
    E = hmc["energy"]
    for name in ("energy", "draws"):  # resumed = uninterrupted, bit for bit, and saved
        assert np.array_equal(E if name == "energy" else hmc[name], ref[name])
        assert np.array_equal(ch.PosteriorResult.load(out)[name], ref[name])
    assert E.shape == hmc["accept"].shape and np.all(np.isfinite(E))  # [P, seed, chain, draw]
    P = int(hmc.P[-1])
    run = to_arviz(hmc, P=P, seed=0)
    s = run.sample_stats if hasattr(run, "sample_stats") else run["sample_stats"]
    assert s["energy"].dims == ("chain", "draw")
    assert s["energy"].shape == (mc.n_chains, mc.n_iter // mc.thin)
    np.testing.assert_array_equal(s["energy"].values, E[-1, 0])
    bfmi = np.asarray(az.bfmi(run))
    assert bfmi.shape == (mc.n_chains,) and np.all(np.isfinite(bfmi)) and np.all(bfmi > 0)

    obj, inp = Objective.from_config(cfg), sweep_inputs(cfg, None)
    for i in range(len(cfg.sweep.P)):  # runs are P-major, one seed
        head = head_class(cfg.model.attention).from_arrays(
            cfg,
            {k: jnp.asarray(sweep[f"params/{k}"][i, 0]) for k in ("W_E", "b", "W_G", "W_O_hat")},
        )
        t, m = inp.train[i], jnp.asarray(inp.mask[i])
        Um = jax.jit(jax.vmap(lambda x: marginal_energy(with_WG(head, x), t, m, obj)))
        WG = hmc["W_G"][i, 0].reshape(-1, head.W_G.size)  # [chain * draw, D * D]
        kinetic = E[i, 0].ravel() - np.asarray(Um(jnp.asarray(WG, jnp.float32)))
        assert np.all(kinetic >= -1e-2), kinetic.min()
        n = head.W_G.size  # HMC keeps exp(-U_m) N(p; 0, I) invariant: kinetic ~ Gamma(n/2, 1)
        assert abs(kinetic.mean() - n / 2) < 5 * np.sqrt(n / 2 / (kinetic.size / 2))


@pytest.mark.slow
def test_small_default_softmax_adam_ends_at_its_own_minimum():
    """Adam runs of the small default end stationary. The exact solver started from
    the Adam fit (polish) measures how far the run was from its own local minimum; an Adam run
    that stopped early would move there by a visible amount. Bound: order parameters move by
    under 1e-3 relative (the three digits the docs' tables print) and U by under 1e-4 relative
    (at P = 32 the measured moves were 7e-5 and 1e-7 in docs/reports/results/reduction.json).

    Linear attention is left out on purpose: its small-default Adam fits are *not* stationary
    (|grad U|_span up to 4 at P = 128, polish dU = -0.7; reduction.json), a recorded finding,
    which is why the reduced engine defaults to the exact solver."""
    cfg = ch.SMALL.replace(model=dict(attention="softmax"), sweep=dict(P=(32,), n_seeds=1))
    res = polish(ch.run_sweep(cfg, progress=False, keep_params=True))
    assert bool(res["polish/converged"][0, 0])
    for k in ("c1", "cG"):
        adam, exact = float(res[k][0, 0]), float(res[f"polish/{k}"][0, 0])
        assert abs(adam - exact) <= 1e-3 * max(abs(exact), 1e-2), (k, adam, exact)
    U = float(res["polish/U"][0, 0])
    assert abs(float(res["polish/dU"][0, 0])) <= 1e-4 * abs(U)


def test_chains_one_after_the_other_are_the_batched_chains(linear_sweep, monkeypatch):
    """Runs and chains run batched or one after the other by the size of their logits
    (``batch_chains``). The same HMC chains on the collapsed target either way, up to float
    rounding (5 iterations of 4 chains); and a whole sweep sampled one after the other gives
    finite draws of the batched shapes. (Its draws differ from the batched sweep's: the
    whitening's eigenvectors within the prior-floored eigenvalues, a degenerate subspace, follow
    the rounding of the warm-up's end point, and the chains are drawn in those coordinates.)"""
    from copyhead_jax.sampling import chains, collapsed_target
    from copyhead_jax.sampling.hmc import hmc_chains

    assert chains.batch_chains(4, 32, 25) and not chains.batch_chains(4, 1000, 25)
    cfg = linear_sweep.config
    head = init_reduced(jax.random.key(0), cfg, head_template(cfg), jnp.float32)
    tokens = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0])
    mask = jnp.ones(tokens.shape[:1], jnp.float32)
    n = head.W_G.size
    pot, rec, vga = collapsed_target(
        head, tokens, mask, Objective.from_config(cfg), 0.05 * jnp.eye(n), lambda h: h.W_O_hat
    )
    keys = jax.random.split(jax.random.key(1), 4)
    x = head.W_G.ravel()[None] + 0.01 * jax.random.normal(jax.random.key(2), (4, n))
    batched, apart = (
        hmc_chains(
            keys,
            pot,
            jnp.zeros_like(x),
            rec,
            n_iter=5,
            step_size=0.3,
            n_adapt=5,
            adapt_mass=True,
            chain_args=(x,),
            batched=b,
            value_and_grad=vga,
        )
        for b in (True, False)
    )
    for u, v in zip(jax.tree.leaves(batched.records), jax.tree.leaves(apart.records)):
        np.testing.assert_allclose(np.asarray(v), np.asarray(u), rtol=1e-4, atol=1e-5)
    mc = dataclasses.replace(default_sampler(linear_sweep), n_iter=12, n_warmup=4, n_adapt=4)
    monkeypatch.setattr(chains, "CPU_BATCH_BYTES", 0)  # every run and chain one after the other
    post = run_sampler(linear_sweep, mc, progress=False)
    draws = np.asarray(post.arrays["draws"])
    assert draws.shape[2:4] == (mc.n_chains, 12) and np.all(np.isfinite(draws))


def test_pooled_adaptation_gives_a_start_groups_chains_one_step(reduced_sweep):
    """``pooled_adaptation`` reaches the sampler's chains: the two chains of each branch start
    end their warm-up with one step (the kernel's pooling: tests/sampling/test_hmc.py), where
    chains adapting alone end with their own."""
    mc = dataclasses.replace(
        SHORT, starts="both", n_chains=4, n_adapt=24, branch_threshold=0.05, pooled_adaptation=True
    )
    step = run_sampler(reduced_sweep, mc, progress=False)["step"]  # [P, seed, chain]
    groups = step.reshape(*step.shape[:-1], 2, 2)  # the starts' chains side by side
    np.testing.assert_array_equal(groups[..., 0], groups[..., 1])
    assert np.all(groups[..., 0, 0] != groups[..., 1, 0])  # the two starts adapt apart
