"""sampling/run.py, the sweep sampler: finite chains near the MAP at small step size, resume,
CLI round trip, bad input and crash safety."""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.cli import sample as sample_cli
from copyhead_jax.results import POSTERIOR_KIND, PosteriorResult, SweepResult
from copyhead_jax.sampling import CollapsedHMC, run_sampler
from copyhead_jax.sampling import run as sample_mod
from tests.helpers import no_work, one_line_error

CFG = ch.TINY.replace(solver=dict(max_epochs=150), sweep=dict(P=(2, 8), n_seeds=2))
SGLD = ch.SGLDConfig(step_size=1e-5, n_steps=60, burn_in=20, thin=10, n_chains=2)
#: runs per chunk: the 4 runs make a full chunk and a padded one (the progress-bar test counts
#: them), and one compiled program of that shape serves every SGLD run below
CHUNK = 3


@pytest.fixture(scope="module")
def sweep():
    return ch.run_sweep(CFG, progress=False)


def test_small_steps_stay_finite_and_near_the_map(sweep):
    post = run_sampler(sweep, SGLD, progress=False, chunk_runs=CHUNK)
    assert post["draws"].shape == (2, 2, 2, 4, len(post.fields))
    assert post["finite"].all()
    # 60 steps of eta = 1e-5: the noise moves each weight by ~ sqrt(2 eta t) ~ 0.035 in weight
    # units, the drift by eta |grad U| t, both far below what shifts the mean attention by 0.05
    for name in ("c1", "cG"):
        m, _ = post.moments(name)
        np.testing.assert_allclose(m, sweep[name], atol=0.05, err_msg=name)
    assert np.all(post["accept_mean"] > 0.99)  # eta tiny on the posterior's scale
    # the record at the first draw equals a direct measurement at the warm start, up to motion
    np.testing.assert_allclose(post["U0"][..., 0], sweep["U"], rtol=1e-3)


def test_sampler_resume_and_determinism(sweep, tmp_path):
    ref = run_sampler(sweep, SGLD, progress=False, chunk_runs=CHUNK)
    out = tmp_path / "post.npz"

    def stop(i, n):
        if i == 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sampler(sweep, SGLD, out=out, progress=False, chunk_runs=CHUNK, on_chunk=stop)
    res = run_sampler(sweep, SGLD, out=out, progress=False, chunk_runs=CHUNK)
    assert np.array_equal(res["draws"], ref["draws"])
    loaded = PosteriorResult.load(out)
    assert np.array_equal(loaded["draws"], ref["draws"]) and loaded.sampler == SGLD
    assert loaded.sampler_name == "SGLD" and loaded.meta["sampler_kind"] == "sgld"


def test_sampler_needs_weights(sweep):
    no_params = sweep.replace(
        arrays={k: v for k, v in sweep.arrays.items() if not k.startswith("params/")}
    )
    with pytest.raises(ValueError, match="no fitted weights"):
        run_sampler(no_params, SGLD, progress=False)
    with pytest.raises(ValueError, match="SGLDConfig.step_size"):
        ch.SGLDConfig(step_size=-1.0)


def test_cli_sample_and_plot(sweep, tmp_path, capsys):
    f = tmp_path / "sweep.npz"
    sweep.save(f)
    # the sampler and chunk of test_sgld_keeps_the_log_likelihood_for_loo: one compiled program
    argv = [
        "sample",
        str(f),
        "--steps",
        "60",
        "--burn-in",
        "20",
        "--thin",
        "10",
        "--chains",
        "2",
        "--step-size",
        "1e-5",
        "--keep-loglik",
        "--chunk-runs",
        "4",
        "--quiet",
    ]
    assert main(argv) == 0
    post = tmp_path / "sweep_posterior.npz"
    assert post.exists() and (tmp_path / "sweep_posterior.png").exists()
    assert "susceptibility" in capsys.readouterr().out
    assert main(["plot", str(post), str(f), "--out", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p_traces.png").exists()


def test_progress_bar_counts_runs_not_padded_slots(sweep, monkeypatch):
    # 4 runs in chunks of CHUNK = 3: the last holds 1 run and 2 padding slots; the bar counts 4
    import copyhead_jax.runner.harness as harness

    bars = []

    class Bar:
        def __init__(self, total, **kw):
            self.total, self.n, self.desc = total, 0, kw.get("desc", "")
            bars.append(self)

        def update(self, k=1):
            self.n += k

        def refresh(self):
            pass

        def set_postfix_str(self, s):
            pass

        def close(self):
            pass

    monkeypatch.setattr(harness, "tqdm", Bar)
    run_sampler(sweep, SGLD, progress=True, chunk_runs=CHUNK)
    assert [(b.total, b.n) for b in bars] == [(4, 4)]
    assert bars[0].desc.startswith("SGLD ")  # the sampler's real name


def test_old_posterior_files_read_with_their_sampler(tmp_path):
    """Files written before HMCConfig hold an SGLDConfig under ``sgld``: a full sweep's stays
    SGLD; a reduced sweep's was the collapsed HMC (steps = warm-up + iterations) and reads as
    that HMCConfig."""
    from copyhead_jax.storage import atomic_save_npz, load_npz

    red = CFG.replace(model=dict(engine="reduced", width=64), train=dict(train_embeddings=False))
    arrays = dict(draws=np.zeros((2, 2, 2, 4, 7)), finite=np.ones((2, 2, 2), bool))
    for cfg, want in (
        (CFG, SGLD),
        (
            red,
            ch.HMCConfig(
                step_size=1e-5,
                n_iter=40,
                n_warmup=20,
                thin=10,
                n_chains=2,
                n_adapt=100,
                adapt_mass=False,
            ),
        ),
    ):
        path = PosteriorResult(cfg, SGLD, arrays).save(tmp_path / "p.npz")
        a, meta = load_npz(path, kind=POSTERIOR_KIND)
        for k in ("sampler", "sampler_kind", "sampler_name"):
            meta.pop(k)
        meta["sgld"] = dict(step_size=1e-5, n_steps=60, burn_in=20, thin=10, n_chains=2, seed=1)
        atomic_save_npz(path, a, meta)
        assert PosteriorResult.load(path).sampler == want
    # an HMCConfig saved before the mass adaptation existed ran unit mass
    hmc = ch.HMCConfig(n_iter=40, n_chains=2)
    path = PosteriorResult(red, hmc, arrays).save(tmp_path / "h.npz")
    a, meta = load_npz(path, kind=POSTERIOR_KIND)
    assert PosteriorResult.load(path).sampler == hmc  # saved with its adapt_mass: as it ran
    del meta["sampler"]["adapt_mass"]
    atomic_save_npz(path, a, meta)
    assert PosteriorResult.load(path).sampler == dataclasses.replace(hmc, adapt_mass=False)


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--sampler", "hmc"], "collapsed HMC .HMCConfig. needs a reduced sweep"),
        (
            ["--iterations", "10"],
            "--iterations is a flag of --sampler hmc; this run uses --sampler "
            "sgld .SGLD counts --steps",
        ),
        (["--starts", "both"], "--starts is a flag of --sampler hmc"),
    ],
)
def test_cli_flags_belong_to_one_sampler(sweep, tmp_path, capsys, argv, pattern):
    f = tmp_path / "sweep.npz"
    sweep.save(f)
    rc = main(["sample", str(f), "--quiet", "--no-plot", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("copyhead: error:") and "Traceback" not in err, err
    import re

    assert re.search(pattern, err), err
    assert not (tmp_path / "sweep_posterior.npz").exists()


def test_sgld_keeps_the_log_likelihood_for_loo(sweep):
    """SGLD with ``keep_loglik``: at every draw sum_alpha log p(y^alpha) =
    -w P loss + P (n_y / 2) log(w / pi) (docs/theory.md §9b; float32 sums: rtol 1e-4), rows
    past a run's P are NaN, and one run's export carries its P sequences for ``az.loo``."""
    import dataclasses

    post = run_sampler(
        sweep, dataclasses.replace(SGLD, keep_loglik=True), progress=False, chunk_runs=4
    )
    w = ch.Objective.from_config(CFG).likelihood_weight
    n_y = CFG.task.L * CFG.task.V
    assert not CFG.model.causal
    for i, P in enumerate(post.P):
        ll = post["log_lik"][i]
        assert np.all(np.isnan(ll[..., P:])) and np.all(np.isfinite(ll[..., :P]))
        np.testing.assert_allclose(
            ll[..., :P].sum(-1),
            -w * P * post["train_loss"][i] + P * 0.5 * n_y * np.log(w / np.pi),
            rtol=1e-4,
        )
    pytest.importorskip("arviz")
    one = ch.to_arviz(post, P=8, seed=1)
    assert one.log_likelihood["y"].shape == (2, 4, 8)
    assert one.posterior.attrs["sampler"] == "SGLD"


# bad input and crash safety (moved from test_bad_input.py)


SHORT = ch.SGLDConfig(step_size=1e-4, n_steps=6, burn_in=0, thin=2, n_chains=2)


@pytest.mark.parametrize("which", ["full", "reduced"])
def test_sample_too_many_steps_is_refused_before_work(which, request, monkeypatch, capsys):
    path = request.getfixturevalue(which)
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    flag = "--steps" if which == "full" else "--iterations"  # SGLD steps, HMC iterations
    rc = main(["sample", str(path), flag, "1000000000", "--quiet", "--no-plot"])
    one_line_error(capsys, rc, rf"needs about [\d.]+ GiB.*GiB is available.*{flag}")
    assert not list(path.parent.glob("*posterior*"))


def test_reduced_sampler_checks_its_draw_count_first(reduced, tmp_path, monkeypatch):
    monkeypatch.setattr(CollapsedHMC, "sample", no_work)
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    with pytest.raises(ValueError, match=r"HMCConfig.thin"):
        ch.HMCConfig(n_iter=4, thin=5)  # keeps no draw: refused when the config is made
    sgld = ch.SGLDConfig(step_size=0.3, n_steps=100, burn_in=99, thin=5)
    with pytest.raises(ValueError, match=r"reduced sweep is sampled by collapsed HMC"):
        sample_mod.run_sampler(SweepResult.load(reduced), sgld, out=tmp_path / "p.npz")
    assert not list(tmp_path.iterdir())  # no .chunks folder, no lock


@pytest.mark.parametrize("bad", [-1, "a", 1.5, True])
@pytest.mark.bad_input
def test_chunk_runs_must_be_an_int(full, bad, monkeypatch):
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    with pytest.raises(ValueError, match=r"chunk_runs must be an int in \[0, "):
        sample_mod.run_sampler(SweepResult.load(full), SHORT, chunk_runs=bad, progress=False)


def test_chunk_runs_from_the_cli(full, capsys):
    one_line_error(capsys, main(["sample", str(full), "--chunk-runs", "-1"]), "--chunk-runs")


def test_sample_out_cannot_destroy_data(full, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sample_mod, "run_sampler", no_work)
    before = full.read_bytes()
    one_line_error(
        capsys,
        main(["sample", str(full), "--out", str(tmp_path / "x.png")]),
        r"--out .*x\.png' must end in \.npz",
    )
    one_line_error(capsys, main(["sample", str(full), "--out", str(full)]), "is the input file")
    other = tmp_path / "other.npz"
    other.write_bytes(before)
    one_line_error(
        capsys,
        main(["sample", str(full), "--out", str(other)]),
        r"holds a 'copyhead_jax\.SweepResult'; refusing to replace it",
    )
    assert full.read_bytes() == before and other.read_bytes() == before


def test_run_sampler_never_replaces_a_sweep(full, tmp_path):
    other = tmp_path / "s.npz"
    other.write_bytes(full.read_bytes())
    with pytest.raises(ValueError, match="refusing to replace it"):
        sample_mod.run_sampler(SweepResult.load(full), SHORT, out=other, progress=False)


@pytest.mark.parametrize("flag", ["--netcdf", "--out"])
def test_sample_paths_checked_before_sampling(full, tmp_path, flag, monkeypatch, capsys):
    monkeypatch.setattr(sample_mod, "run_sampler", no_work)
    (tmp_path / "file").write_text("")
    name = "p.nc" if flag == "--netcdf" else "p.npz"
    rc = main(["sample", str(full), flag, str(tmp_path / "file" / name), "--quiet"])
    one_line_error(capsys, rc, rf"{flag} .* is not writable")


def test_nan_sampler_diagnostics_are_not_healthy(full, capsys):
    with pytest.warns(ch.RunHealthWarning) as seen:  # 3 draws
        post = sample_mod.run_sampler(SweepResult.load(full), SHORT, progress=False)
    assert np.isnan(post["rhat"]).all()
    err = "\n".join(str(w.message) for w in seen)
    assert "is NaN" in err and "raise --steps" in err and "runs flagged" in err
    assert any("NaN" in w for w in post.meta["warnings"])
    assert post["flagged"].all()
    sample_cli.print_posterior(post)
    assert f"# {post['flagged'].size} run(s) flagged" in capsys.readouterr().out


def test_sample_takes_a_lock_and_cleans_orphans(full, tmp_path, monkeypatch):
    out = tmp_path / "post.npz"
    Path(str(out) + ".lock").write_text(f"{os.getppid()}\n")  # a live writer
    with monkeypatch.context() as m:
        m.setattr(sample_mod, "sweep_inputs", no_work)
        with pytest.raises(ValueError, match="being written by another process"):
            sample_mod.run_sampler(SweepResult.load(full), SHORT, out=out, progress=False)
    Path(str(out) + ".lock").unlink()
    orphan = tmp_path / ".post.npz.k1ll3d.tmp"
    orphan.write_bytes(b"\0" * 100)
    sample_mod.run_sampler(SweepResult.load(full), SHORT, out=out, progress=False)
    assert out.is_file() and not orphan.exists() and not Path(str(out) + ".lock").exists()


def test_collapsed_hmc_refuses_joint_map_fits(reduced, tmp_path, monkeypatch):
    """Trained embeddings on the reduced engine are joint-MAP fits (§2d), not the quenched
    posterior's centre: the collapsed sampler refuses them before any work."""
    import dataclasses

    monkeypatch.setattr(CollapsedHMC, "sample", no_work)
    sweep = SweepResult.load(reduced)
    sweep = dataclasses.replace(
        sweep, config=sweep.config.replace(train=dict(train_embeddings=True))
    )
    with pytest.raises(ValueError, match=r"trained embeddings holds joint-MAP fits"):
        sample_mod.run_sampler(sweep, ch.HMCConfig(n_iter=4), out=tmp_path / "p.npz")
    assert not list(tmp_path.iterdir())


def test_samplers_that_differ_only_in_what_the_host_reads_share_one_program():
    """The compiled programs take ``Sampler.program`` as their static argument: configs that
    differ only in the seed or the target's values give equal programs (one compilation); a
    field the programs read (leapfrog steps, SGLD's step) or whether there is a target (it sets
    a round's length) gives another."""
    from copyhead_jax.sampling import sampler_for

    red = ch.TINY.replace(model=dict(engine="reduced"))
    for cfg, mc, read in (
        (red, ch.HMCConfig(seed=1, ess_target=400.0, rhat_target=1.01), dict(n_leapfrog=6)),
        (ch.TINY, ch.SGLDConfig(seed=1, ess_target=400.0, rhat_target=1.01), dict(step_size=2e-6)),
    ):
        prog = lambda m: sampler_for(cfg, m).program  # noqa: B023, E731
        other = dataclasses.replace(mc, seed=7, ess_target=50.0, rhat_target=1.1)
        assert prog(mc) == prog(other) and hash(prog(mc)) == hash(prog(other))
        assert prog(mc) != prog(dataclasses.replace(mc, **read))
        assert prog(mc) != prog(dataclasses.replace(mc, ess_target=0.0))
        assert prog(mc).mc.round_draws == mc.round_draws  # what the programs read is kept
