"""ArviZ output of a posterior: dims, coordinates and values survive InferenceData/DataTree and
netCDF; ``az.summary`` reads it; ``copyhead sample --netcdf FILE --run P,SEED`` writes one run,
on whose file as written ``az.loo``, ``az.bfmi`` and ``az.summary`` work."""

import json
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.results import DRAW_FIELDS, PosteriorResult
from copyhead_jax.sampling import save_netcdf, to_arviz

az = pytest.importorskip("arviz")

CFG = ch.TINY.replace(sweep=dict(P=(2, 8, 16), n_seeds=2))
SGLD = ch.SGLDConfig(step_size=1e-5, n_steps=100, burn_in=20, thin=10, n_chains=3)
SHAPE = (3, 2, 3, 8)  # P, seed, chain, draw


@pytest.fixture
def post():
    rng = np.random.default_rng(0)
    finite = np.ones(SHAPE[:3], bool)
    finite[1, 0, 2] = False  # one diverged chain
    arrays = dict(
        draws=rng.normal(size=(*SHAPE, len(DRAW_FIELDS))),
        accept=rng.uniform(size=SHAPE),
        distance=rng.uniform(size=SHAPE),
        U0=rng.normal(size=SHAPE[:3]),
        finite=finite,
        draw_step=np.arange(30, 101, 10),
    )
    return PosteriorResult(CFG, SGLD, arrays)


def _posterior(data):
    return data.posterior if hasattr(data, "posterior") else data["posterior"]


def _stats(data):
    return data.sample_stats if hasattr(data, "sample_stats") else data["sample_stats"]


def _back(da):
    """A variable as ``[P, seed, chain, draw]`` again."""
    return np.asarray(da.transpose("P", "seed", "chain", "draw").values)


def _check(data, post):
    p, s = _posterior(data), _stats(data)
    assert set(p.data_vars) == set(DRAW_FIELDS)
    for name in DRAW_FIELDS:
        assert p[name].dims == ("chain", "draw", "P", "seed")
        np.testing.assert_array_equal(_back(p[name]), post[name])
    np.testing.assert_array_equal(p["P"].values, [2, 8, 16])
    np.testing.assert_array_equal(p["seed"].values, [0, 1])
    np.testing.assert_array_equal(p["chain"].values, [0, 1, 2])
    np.testing.assert_array_equal(p["draw"].values, np.arange(8))
    np.testing.assert_array_equal(p["step"].values, np.arange(30, 101, 10))
    np.testing.assert_array_equal(_back(s["lp"]), -post["U"])
    np.testing.assert_array_equal(_back(s["acceptance_rate"]), post["accept"])
    np.testing.assert_array_equal(_back(s["distance"]), post["distance"])
    div = _back(s["diverging"])
    assert div[1, 0, 2].all() and div.sum() == SHAPE[3]  # exactly the diverged chain's draws
    assert json.loads(p.attrs["sampler_settings"])["n_chains"] == 3
    assert p.attrs["sampler"] == "SGLD" and p.attrs["sampler_kind"] == "sgld"
    assert p.attrs["attention"] == CFG.model.attention


def test_to_arviz_keeps_dims_coordinates_and_values(post):
    data = to_arviz(post)
    kind = "DataTree" if int(az.__version__.split(".")[0]) >= 1 else "InferenceData"
    assert type(data).__name__ == kind
    _check(data, post)


def test_summary_reads_every_run(post):
    summ = az.summary(to_arviz(post), var_names=["cG", "U"], kind="stats")
    assert len(summ) == 2 * 3 * 2  # one row per variable x P x seed
    np.testing.assert_allclose(summ.loc["cG[8, 1]", "mean"], post["cG"][1, 1].mean(), atol=5e-4)


def test_netcdf_round_trip(post, tmp_path):
    f = save_netcdf(post, tmp_path / "post.nc")
    _check(az.from_netcdf(f), post)


def test_to_arviz_rejects_other_objects():
    with pytest.raises(ValueError, match="post must be a PosteriorResult"):
        to_arviz({"draws": np.zeros(3)})


def _cli(post, tmp_path, monkeypatch, *extra):
    """``copyhead sample`` on a stand-in sweep whose sampler returns ``post``: the sampling
    itself is tested elsewhere; here the flags' wiring and the file written."""
    import copyhead_jax.results
    import copyhead_jax.sampling.run
    from copyhead_jax.cli import main

    class Sweep:
        has_params = True
        config = post.config  # default_sampler reads the engine off it
        P = np.asarray(post.P)

        def __getitem__(self, name):
            return np.zeros(SHAPE[:2])

    post.arrays.update(
        rhat=np.ones(SHAPE[:2]), ess=np.ones(SHAPE[:2]), accept_mean=np.ones(SHAPE[:3])
    )
    post.meta.update(wall_seconds=0.0, warnings=[])
    monkeypatch.setattr(copyhead_jax.results.SweepResult, "load", lambda path: Sweep())
    called = []
    monkeypatch.setattr(
        copyhead_jax.sampling.run, "run_sampler", lambda *a, **k: called.append(1) or post
    )
    argv = ["sample", str(tmp_path / "sweep.npz"), "--quiet", "--no-plot", *extra]
    return main(argv), called


def test_cli_sample_writes_one_run_that_arviz_reads_as_written(tmp_path, monkeypatch, capsys):
    """The netCDF of ``--run 8,1`` holds that run alone: ``az.loo`` finite (no NaN padding),
    ``az.bfmi`` one value per chain, ``az.summary`` a row per order parameter; its
    ``observed_data`` are the run's training sequences as the sweep drew them, ``y`` their
    copy targets; the attributes name the sampler and both libraries' versions."""
    from copyhead_jax.sampling.arviz import run_tokens

    post = _hmc_post(400, weights=False)
    nc = tmp_path / "post.nc"
    rc, _ = _cli(post, tmp_path, monkeypatch, "--netcdf", str(nc), "--run", "8,1")
    assert rc == 0 and f"saved {nc}" in capsys.readouterr().out
    assert not Path(str(nc) + ".lock").exists()  # released once written
    back = az.from_netcdf(nc)
    loo = az.loo(back)
    assert np.isfinite(float(loo["elpd_loo"] if "elpd_loo" in loo else loo.elpd_loo))
    bfmi = az.bfmi(back)
    assert bfmi.shape == (3,) and np.all(np.isfinite(bfmi))
    assert "aG" in az.summary(back, var_names=["aG"], kind="stats").index
    x = run_tokens(post.config, 8, 1)
    assert x.shape == (8, CFG.task.L)
    np.testing.assert_array_equal(back.observed_data["x"].values, x)
    np.testing.assert_array_equal(back.observed_data["y"][:, 1:].values, x[:, :-1])
    attrs = back.posterior.attrs
    assert attrs["copyhead_jax_version"] == ch.__version__ and attrs["arviz_version"]
    assert attrs["P"] == 8 and attrs["seed"] == 1 and attrs["sampler"] == "collapsed HMC"


def test_run_tokens_are_the_samplers_training_rows():
    """``run_tokens`` redraws exactly the rows the sweep and the sampler condition on."""
    from copyhead_jax.fit import sweep_inputs
    from copyhead_jax.sampling.arviz import run_tokens

    train = np.asarray(sweep_inputs(CFG, None).train)  # runs P-major: (P index, seed)
    for i, P in enumerate(CFG.sweep.P):
        for seed in range(CFG.sweep.n_seeds):
            np.testing.assert_array_equal(
                run_tokens(CFG, P, seed), train[i * CFG.sweep.n_seeds + seed, :P]
            )


@pytest.mark.parametrize(
    "extra, match",
    [
        (
            ("--netcdf", "X.nc"),
            r"--netcdf writes one run .* give --run P,SEED with P in \[2, 8, 16\]",
        ),
        (("--netcdf", "X.nc", "--run", "3,0"), r"--run: P must be one of the sweep's \[2, 8, 16\]"),
        (("--netcdf", "X.nc", "--run", "8,2"), r"--run: SEED must be in \[0, 1\]"),
        (("--run", "8,0"), "--run selects the run that --netcdf writes"),
    ],
)
def test_cli_netcdf_run_refused_before_any_work(tmp_path, monkeypatch, capsys, extra, match):
    extra = tuple(str(tmp_path / e) if e.endswith(".nc") else e for e in extra)
    rc, called = _cli(_hmc_post(4, weights=False), tmp_path, monkeypatch, *extra)
    assert rc != 0 and not called
    err = capsys.readouterr().err
    import re

    assert re.search(match, err), err


def test_cli_netcdf_of_another_live_writer_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """The netCDF is held like --out from the start: a live writer's lock on it (here the
    test runner's parent process) stops the command before it samples, naming the file."""
    import os

    nc = tmp_path / "post.nc"
    Path(str(nc) + ".lock").write_text(f"{os.getppid()}\n")
    rc, called = _cli(
        _hmc_post(4, weights=False), tmp_path, monkeypatch, "--netcdf", str(nc), "--run", "8,1"
    )
    assert rc != 0 and not called
    assert "being written by another process" in capsys.readouterr().err and not nc.exists()


HMC = ch.HMCConfig(n_iter=8, thin=1, n_chains=3, keep_loglik=True, keep_weights=True)
D = CFG.task.V + CFG.task.L


def _hmc_post(S: int, weights: bool):
    """A collapsed-HMC posterior of ``S`` draws per chain with per-sequence log-likelihoods (NaN
    past each run's P, as run_sampler pads them) and, if asked, weights."""
    rng = np.random.default_rng(1)
    cfg = CFG.replace(model=dict(engine="reduced", width=64, attention="softmax"))
    nP, nS, C = SHAPE[:3]
    shape = (nP, nS, C, S)
    ll = rng.normal(-3.0, 0.1, size=(*shape, 16))
    for i, P in enumerate((2, 8, 16)):
        ll[i, ..., P:] = np.nan
    arrays = dict(
        draws=rng.normal(size=(*shape, len(DRAW_FIELDS))),
        accept=rng.uniform(size=shape),
        distance=rng.uniform(size=shape),
        U0=np.zeros(shape[:3]),
        finite=np.ones(shape[:3], bool),
        step=rng.uniform(0.2, 0.4, size=shape[:3]),
        log_lik=ll,
        energy=rng.normal(size=shape),
    )
    if weights:
        arrays.update(
            W_G=rng.normal(size=(*shape, D, D)), W_O_hat=rng.normal(size=(*shape, CFG.task.V, D))
        )
    fields = tuple(f.replace("c1", "a1").replace("cG", "aG") for f in DRAW_FIELDS)
    return PosteriorResult(cfg, HMC, arrays, {}, fields)


@pytest.fixture
def hmc_post():
    return _hmc_post(SHAPE[3], weights=True)


def test_hmc_export_has_log_likelihood_weights_and_step_size(hmc_post):
    data = to_arviz(hmc_post)
    p, s = _posterior(data), _stats(data)
    assert p.attrs["sampler"] == "collapsed HMC" and p.attrs["sampler_kind"] == "hmc"
    assert p["W_G"].dims == ("chain", "draw", "P", "seed", "W_G_row", "W_G_col")
    np.testing.assert_array_equal(
        p["W_G"].transpose("P", "seed", "chain", "draw", ...).values, hmc_post["W_G"]
    )
    np.testing.assert_array_equal(_back(s["step_size"])[..., 0], hmc_post["step"])
    ll = data.log_likelihood if hasattr(data, "log_likelihood") else data["log_likelihood"]
    assert ll["y"].dims == ("chain", "draw", "P", "seed", "sequence")


def test_one_run_export_feeds_az_loo(tmp_path):
    """``to_arviz(post, P=8, seed=1)`` keeps the run's 8 sequences only (no NaN padding);
    ``az.loo`` runs on it and, with log-likelihoods that barely vary across draws (sd 0.1), its
    elpd is the WAIC expansion lppd - sum_i Var_s(ll_i) (each LOO term is log of the harmonic
    mean of exp(ll), = mean - Var/2 + O(Var^2), the lppd term mean + Var/2; the O(Var^2 =
    1e-4) remainder and the draws' noise stay below 5e-3 over 8 sequences). 3 x 400 draws:
    ArviZ's Pareto-k bar is then 0.62."""
    hmc_post = _hmc_post(400, weights=False)
    run = to_arviz(hmc_post, P=8, seed=1)
    ll = run.log_likelihood if hasattr(run, "log_likelihood") else run["log_likelihood"]
    assert ll["y"].dims == ("chain", "draw", "sequence") and ll["y"].shape[-1] == 8
    loo = az.loo(run)
    x = hmc_post["log_lik"][1, 1, ..., :8].reshape(-1, 8)
    lppd = np.sum(np.log(np.mean(np.exp(x), axis=0)))
    elpd = float(loo["elpd_loo"] if "elpd_loo" in loo else loo.elpd_loo)
    assert abs(elpd - (lppd - np.sum(np.var(x, axis=0)))) < 5e-3
    path = save_netcdf(hmc_post, tmp_path / "run.nc", P=8, seed=1)
    back = az.from_netcdf(path)
    np.testing.assert_array_equal(back.log_likelihood["y"].values, ll["y"].values)
    assert back.posterior.attrs["P"] == 8 and back.posterior.attrs["sampler"] == "collapsed HMC"


def test_one_run_selection_checks_its_arguments(hmc_post):
    with pytest.raises(ValueError, match="P must be one of"):
        to_arviz(hmc_post, P=3, seed=0)
    with pytest.raises(ValueError, match="seed must be an int in"):
        to_arviz(hmc_post, P=8, seed=2)
    with pytest.raises(ValueError, match="both P and seed"):
        to_arviz(hmc_post, P=8)


def test_sgld_export_has_no_energy(post):
    """SGLD has no Hamiltonian: no ``sample_stats.energy`` (collapsed HMC's energy export:
    test_sample_reduced.py, which shares that sampler's compiled program)."""
    assert "energy" not in _stats(to_arviz(post))
