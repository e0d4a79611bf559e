"""Posterior of reduced sweeps: whitened SGLD mixes and agrees with NUTS; polish of Adam fits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.bayes import ess, split_rhat
from copyhead_jax.models import head_template, init_reduced
from copyhead_jax.polish import polish
from copyhead_jax.posterior import Objective
from copyhead_jax.sample import Sampler, default_sgld, run_sampler
from copyhead_jax.sample_reduced import nuts_reference
from copyhead_jax.solve import solve_map
from copyhead_jax.sweep import _all_inputs

CFG = ch.TINY.replace(
    model=dict(engine="reduced", width=10_000, attention="softmax"),
    sweep=dict(P=(4, 16), n_seeds=1),
)


@pytest.fixture(scope="module")
def reduced_sweep():
    return ch.run_sweep(CFG, progress=False, keep_params=True)


def test_exact_sweep_is_stationary(reduced_sweep):
    r = reduced_sweep
    assert np.all(r["converged"]) and np.all(r["rel_grad"] <= 1e-8)
    assert np.all(r["min_eig"] > 0)  # a true local minimum, not a saddle
    assert r["params/W_G"].shape[-1] == CFG.task.V + CFG.task.L


def test_default_sampler_mixes(reduced_sweep):
    """The default protocol on a reduced sweep: split R-hat <= 1.05 and ESS >= 400 for U and
    the order parameters in every run."""
    post = run_sampler(reduced_sweep, default_sgld(reduced_sweep), progress=False)
    for name in ("U", "c1", "cG"):
        x = post[name]  # [P, seed, chain, draw]
        assert np.all(split_rhat(x) <= 1.05), name
        assert np.all(ess(x) >= 400), name


@pytest.mark.slow
def test_sgld_agrees_with_nuts():
    """Posterior means of U, a1, aG from whitened SGLD and from NUTS agree within 4 combined
    Monte-Carlo standard errors, plus the SGLD bias allowance of a Gaussian well (the variance
    is inflated by 1/(1 - eta/2), which moves the mean of U = sum of squares by ~ eta n / 4)."""
    cfg = CFG.replace(sweep=dict(P=(16,), n_seeds=1))
    inp = _all_inputs(cfg, None)
    with jax.enable_x64(True):
        obj = Objective.from_config(cfg)
        h0 = init_reduced(jax.random.key(0), cfg, head_template(cfg))
        t, m = inp.train[0], jnp.asarray(inp.mask[0], jnp.float64)
        fit = solve_map(h0, t, m, obj)
        sampler = Sampler(cfg, default_sgld(ch.SweepResult(cfg, {})))
        obs = lambda h: sampler.observe(h, t, m)[jnp.array([0, 2, 3])]
        ref = np.asarray(nuts_reference(jax.random.key(1), fit.head, t, m, obj, obs,
                                        n_warmup=300, n_samples=600, n_chains=2))  # fmt: skip
    res = ch.run_sweep(cfg, progress=False, keep_params=True)
    post = run_sampler(res, default_sgld(res), progress=False)
    sg = np.stack([post["U"][0, 0], post["c1"][0, 0], post["cG"][0, 0]], -1)  # [C, S, 3]
    n = fit.head.W_G.size + fit.head.W_O_hat.size
    eta = post.sgld.step_size
    for k in range(3):
        se = np.hypot(np.std(ref[..., k]) / np.sqrt(ess(ref[..., k])),
                      np.std(sg[..., k]) / np.sqrt(ess(sg[..., k])))  # fmt: skip
        bias = eta * n / 4 if k == 0 else 0.0
        assert abs(ref[..., k].mean() - sg[..., k].mean()) <= 4 * se + bias, k


def test_polish_descends_and_agrees_with_exact(tmp_path):
    """Polish of a full-width Adam sweep (quenched): the exact MAP has U <= U - U_perp of every
    Adam run (L-BFGS only descends), and from the prior start and from the Adam fit the exact
    solver reaches the same minimum (pooling branch of a small softmax task, unique here)."""
    cfg = ch.TINY.replace(model=dict(width=32), sweep=dict(P=(4, 8), n_seeds=1),
                          train=dict(max_epochs=400))  # fmt: skip
    res = ch.run_sweep(cfg, progress=False, keep_params=True)
    p = polish(res, out=tmp_path / "p.npz")
    assert np.all(p["polish/dU"] <= 1e-9 * np.abs(p["polish/U_adam"]))
    assert np.all(p["polish/converged"]) and np.all(p["polish/min_eig"] > 0)
    exact = ch.run_sweep(cfg.replace(model=dict(engine="reduced")), progress=False)
    # same data and embeddings (gram='realised' draws the full engine's embeddings)
    np.testing.assert_allclose(p["polish/U"], exact["U"], rtol=1e-7)
    np.testing.assert_allclose(p["polish/cG"], exact["cG"], atol=1e-6)
    assert ch.SweepResult.load(tmp_path / "p.npz")["polish/dU"].shape == (2, 1)
