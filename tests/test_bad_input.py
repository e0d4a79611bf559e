"""Issue 31: the bad-input matrix of the newer surfaces (reduced engine, samplers, polish, I/O).

Every case is refused before any work with one line naming the parameter or the path, or does
the right thing (a flagged run, a kept file). Work that must not start is replaced by a function
that fails the test; two tiny sweeps (module fixtures) are the only training.
"""

import contextlib
import errno
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax import polish as polish_mod
from copyhead_jax import sample as sample_mod
from copyhead_jax import sample_cli
from copyhead_jax.cli import main
from copyhead_jax.results import SweepResult
from copyhead_jax.storage import atomic_save_npz

TINY = ch.TINY.replace(sweep=dict(P=(2, 4), n_seeds=1), train=dict(max_epochs=20, min_epochs=5))
UNCONVERGED = TINY.replace(model=dict(engine="reduced"), train=dict(exact_max_steps=1))
SHORT = ch.SGLDConfig(step_size=1e-4, n_steps=6, burn_in=0, thin=2, n_chains=2)


def one_line_error(capsys, rc, pattern):
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert err.startswith("copyhead: error:") and re.search(pattern, err), err


def no_work(*a, **k):
    raise AssertionError("the work started before the input was checked")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """A full-engine sweep file with every array and prior-drawn weights (no training: the
    cases below need its shapes, not its fits)."""
    from copyhead_jax.results import REQUIRED

    nP, nS, L, V, N = len(TINY.sweep.P), TINY.sweep.n_seeds, TINY.task.L, TINY.task.V, 16
    rng = np.random.default_rng(0)
    a = {k: rng.uniform(0.1, 1.0, (nP, nS)) for k in REQUIRED}
    a["finite"] = np.ones((nP, nS), bool)
    a["mean_attention"] = np.full((nP, nS, L, L), 1 / L)
    a["positional_logits"] = np.zeros((nP, nS, L, L))
    a["curve_U"] = a["curve_loss"] = np.tile(np.linspace(2.0, 1.0, 4), (nP, nS, 1))
    a["curve_epoch"] = np.arange(1, 5) * 5
    for k, shape in dict(W_E=(N, V), b=(N, L), W_G=(N, N), W_O_hat=(V, N)).items():
        a[f"params/{k}"] = rng.normal(size=(nP, nS, *shape)).astype(np.float32)
    path = tmp_path_factory.mktemp("full") / "full.npz"
    return SweepResult(config=TINY, arrays=a, meta={"wall_seconds": 1.0}).save(path)


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory):
    """A reduced sweep whose exact fits stop after one step (issue 31.5), and its stderr."""
    path = tmp_path_factory.mktemp("reduced") / "reduced.npz"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        ch.run_sweep(UNCONVERGED, out=path, progress=False, keep_params=True)
    return path, err.getvalue()


@pytest.fixture(scope="module")
def reduced(reduced_run):
    return reduced_run[0]


# 2, 7, 8: the sampler's sizes are checked before sampling -------------------------------------


@pytest.mark.parametrize("which", ["full", "reduced"])
def test_sample_too_many_steps_is_refused_before_work(which, request, monkeypatch, capsys):
    path = request.getfixturevalue(which)
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    flag = "--steps" if which == "full" else "--iterations"  # SGLD steps, HMC iterations
    rc = main(["sample", str(path), flag, "1000000000", "--quiet", "--no-plot"])
    one_line_error(capsys, rc, rf"needs about [\d.]+ GiB.*GiB is available.*{flag}")
    assert not list(path.parent.glob("*posterior*"))


def test_reduced_sampler_checks_its_draw_count_first(reduced, tmp_path, monkeypatch):
    monkeypatch.setattr(sample_mod, "sample_collapsed", no_work)
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    with pytest.raises(ValueError, match=r"HMCConfig.thin"):
        ch.HMCConfig(n_iter=4, thin=5)  # keeps no draw: refused when the config is made
    sgld = ch.SGLDConfig(step_size=0.3, n_steps=100, burn_in=99, thin=5)
    with pytest.raises(ValueError, match=r"reduced sweep is sampled by collapsed HMC"):
        sample_mod.run_sampler(SweepResult.load(reduced), sgld, out=tmp_path / "p.npz")
    assert not list(tmp_path.iterdir())  # no .chunks folder, no lock


@pytest.mark.parametrize("bad", [-1, "a", 1.5, True])
def test_chunk_runs_must_be_an_int(full, bad, monkeypatch):
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    with pytest.raises(ValueError, match=r"chunk_runs must be an int in \[0, "):
        sample_mod.run_sampler(SweepResult.load(full), SHORT, chunk_runs=bad, progress=False)


def test_chunk_runs_from_the_cli(full, capsys):
    one_line_error(capsys, main(["sample", str(full), "--chunk-runs", "-1"]), "chunk_runs")


# 4, 11: output paths are checked before the work and never replace an input ------------------


def test_sample_out_cannot_destroy_data(full, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sample_mod, "run_sampler", no_work)
    before = full.read_bytes()
    one_line_error(capsys, main(["sample", str(full), "--out", str(tmp_path / "x.png")]),
                   r"--out .*x\.png' must end in \.npz")  # fmt: skip
    one_line_error(capsys, main(["sample", str(full), "--out", str(full)]), "is the input file")
    other = tmp_path / "other.npz"
    other.write_bytes(before)
    one_line_error(capsys, main(["sample", str(full), "--out", str(other)]),
                   r"holds a 'copyhead_jax\.SweepResult'; refusing to replace it")  # fmt: skip
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


def test_polish_checks_its_output_before_work(reduced, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(polish_mod, "polish_runs", no_work)
    (tmp_path / "file").write_text("")
    rc = main(["polish", str(reduced), "--out", str(tmp_path / "file" / "p.npz")])
    one_line_error(capsys, rc, "is not writable")
    rc = main(["polish", str(reduced), "--out", str(tmp_path / "p.txt")])
    one_line_error(capsys, rc, r"must end in \.npz")


# 5, 6, 9: "ok" means ok ----------------------------------------------------------------------


def test_unconverged_exact_fits_are_flagged_and_excluded(reduced_run, capsys):
    path, err = reduced_run
    res = SweepResult.load(path)
    assert not res["converged"].any()
    assert "2 of 2 exact fits did not converge" in err
    s = res.summary()
    assert s["n_ok"].tolist() == [0, 0] and s["n_unconverged"].tolist() == [1, 1]
    assert np.isnan(s["train_loss"]).all()  # not averaged in
    assert main(["show", str(path)]) == 0
    assert "2 unconverged exact fit(s)" in capsys.readouterr().out


def test_nan_sampler_diagnostics_are_not_healthy(full, capsys):
    post = sample_mod.run_sampler(SweepResult.load(full), SHORT, progress=False)  # 3 draws
    assert np.isnan(post["rhat"]).all()
    err = capsys.readouterr().err
    assert "is NaN" in err and "raise --steps" in err
    assert any("NaN" in w for w in post.meta["warnings"])
    assert post["flagged"].all()
    sample_cli.print_posterior(post)
    assert f"# {post['flagged'].size} run(s) flagged" in capsys.readouterr().out


# 10: the sampler locks its output and removes a killed write's orphan -------------------------


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


# 12: loading checks the weights against the config --------------------------------------------


def test_weights_that_disagree_with_the_config_are_refused(reduced, tmp_path, monkeypatch):
    res = SweepResult.load(reduced)
    bad = dict(res.arrays)
    bad["params/W_G"] = bad["params/W_G"][..., :-1, :]
    path = res.replace(arrays=bad).save(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match=r"weights disagree with its config \(params/W_G"):
        SweepResult.load(path)
    monkeypatch.setattr(polish_mod, "polish_runs", no_work)
    with pytest.raises(ValueError, match="weights disagree"):
        polish_mod.polish(res.replace(arrays=bad))


# 13: the API answers bad types with a ValueError ----------------------------------------------


def test_bad_types_are_value_errors(tmp_path, monkeypatch):
    from copyhead_jax import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "Trainer", no_work)
    with pytest.raises(ValueError, match=r"snapshot_every_s must be >= 0 seconds \(a number"):
        ch.run_sweep(TINY, snapshot_every_s="abc", progress=False)
    with pytest.raises(ValueError, match="out must be a file path"):
        ch.run_sweep(TINY, out=123, progress=False)
    with pytest.raises(ValueError, match="a result path must be a str or path"):
        SweepResult.load(123)
    assert ch.ModelConfig(engine="reduced", width=np.float32("inf")).width == float("inf")


# 14: messages ---------------------------------------------------------------------------------


def test_load_messages_name_the_problem(tmp_path, capsys):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"this is not a zip file at all")
    with pytest.raises(ValueError, match="not a readable copyhead_jax result") as e:
        SweepResult.load(junk)
    assert "pickle" not in str(e.value)
    one_line_error(capsys, main(["show", str(tmp_path)]), "is a folder, not a result file")


def test_a_failed_write_names_the_file_and_leaves_no_tmp(tmp_path, monkeypatch):
    def disk_full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(ValueError, match=r"cannot write '.*r\.npz': No space left on device"):
        atomic_save_npz(tmp_path / "r.npz", {"x": np.zeros(3)}, {"kind": "k"})
    assert not list(tmp_path.iterdir())


def test_plot_curves_of_two_results_are_two_files(full, tmp_path):
    b = tmp_path / "b.npz"
    b.write_bytes(full.read_bytes())
    out = tmp_path / "fig.png"
    assert main(["plot", str(full), str(b), "--curves", "--out", str(out)]) == 0
    curves = sorted(p.name for p in tmp_path.glob("fig_curves_*.png"))
    assert curves == ["fig_curves_softmax_1.png", "fig_curves_softmax_2.png"]


# signals: SIGINT and SIGTERM end a command cleanly (130 / 143), no traceback, no lock left ----


ROOT = Path(__file__).resolve().parents[1]


def _interrupt(argv, sig, tmp_path, wait_s=1.0, module="copyhead_jax.cli"):
    """Run the command, send ``sig`` ``wait_s`` after it took its first output lock (the
    work has begun; a slow start-up on a loaded machine does not matter), return
    ``(exit status, stderr)``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())",
           *argv]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not any(tmp_path.rglob("*.lock")) and proc.poll() is None and time.time() - t0 < 60:
        time.sleep(0.05)
    time.sleep(wait_s)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("sig, rc", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_end_a_sweep_cleanly(sig, rc, tmp_path):
    argv = ["sweep", "--preset", "tiny", "--P", "2,4", "--n-seeds", "1", "--max-epochs",
            "1000000", "--min-epochs", "900000", "--out", "r.npz", "--quiet",
            "--no-plot"]  # fmt: skip
    got, err = _interrupt(argv, sig, tmp_path)
    assert got == rc, err
    assert "Traceback" not in err and "copyhead: interrupted" in err
    assert not (tmp_path / "r.npz.lock").exists() and not (tmp_path / "r.npz").exists()


# 11, 14: theory and experiments check their outputs before computing ---------------------------


def test_theory_curve_checks_its_figure_path_first(tmp_path, monkeypatch, capsys):
    from copyhead_jax.theory import minima

    monkeypatch.setattr(minima, "theory_curve", no_work)
    (tmp_path / "file").write_text("")
    rc = main(["theory", "curve", "--preset", "plain", "--out", str(tmp_path / "file" / "c")])
    one_line_error(capsys, rc, r"--out '.*file/c_linear\.png' is not writable")


def test_experiments_check_out_and_refuse_an_empty_report(tmp_path, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from experiments.__main__ import main as experiments

    (tmp_path / "file").write_text("")
    rc = experiments(["main", "--tiny", "--out", str(tmp_path / "file" / "o"),
                      "--cache", str(tmp_path / "cache")])  # fmt: skip
    assert rc == 2 and "--out" in capsys.readouterr().err and not (tmp_path / "cache").exists()
    rc = experiments(["report", "--out", str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert rc == 2 and "holds no artefact results" in err and "Disagreements" not in err
    assert not (tmp_path / "empty").exists()


def test_ctrl_c_during_collapsed_hmc_exits_130(reduced, tmp_path):
    """Issue 31.3: an interrupt early in the reduced sampler (3 s from the start) exited 139
    (segfault in the interpreter's teardown under XLA's running threads); now 130."""
    argv = ["sample", str(reduced), "--out", "p.npz", "--iterations", "20000", "--quiet",
            "--no-plot"]  # fmt: skip
    got, err = _interrupt(argv, signal.SIGINT, tmp_path)
    assert got == 130, err
    assert "Traceback" not in err and not (tmp_path / "p.npz.lock").exists()


def test_a_sweep_with_no_ok_run_plots_or_names_the_figure(full, tmp_path, capsys):
    """Every run diverged (e.g. at an extreme --chi): the figure is drawn, or the one-line
    error names it (matplotlib's log axis with no data left said only 'Data cannot be
    log-scaled')."""
    res = SweepResult.load(full)
    bad = res.replace(arrays=dict(res.arrays, finite=np.zeros_like(res.arrays["finite"])))
    path = bad.save(tmp_path / "bad.npz")
    rc = main(["plot", str(path), "--out", str(tmp_path / "f.png")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert rc == 0 or (rc == 2 and "cannot draw the figure" in err and "f.png" in err), err


def test_sigterm_ends_the_exact_solver_with_continuation_cleanly(tmp_path):
    argv = ["sweep", "--preset", "tiny", "--engine", "reduced", "--exact-continuation", "true",
            "--P", "2:3000:12log", "--n-seeds", "4", "--out", "r.npz", "--quiet", "--no-plot"]
    got, err = _interrupt(argv, signal.SIGTERM, tmp_path)
    assert got == 143, err
    assert "Traceback" not in err and "copyhead: interrupted" in err
    assert not (tmp_path / "r.npz.lock").exists()


def test_sigterm_ends_the_experiments_cleanly(tmp_path):
    argv = ["main", "--tiny", "--preset", "plain", "--out", str(tmp_path / "o"), "--cache",
            str(tmp_path / "c")]  # fmt: skip
    got, err = _interrupt(argv, signal.SIGTERM, tmp_path, module="experiments.__main__")
    assert got == 143, err
    assert "Traceback" not in err and "interrupted" in err and "resume" in err


def test_collapsed_hmc_refuses_joint_map_fits(reduced, tmp_path, monkeypatch):
    """Trained embeddings on the reduced engine are joint-MAP fits (§2d), not the quenched
    posterior's centre: the collapsed sampler refuses them before any work."""
    import dataclasses

    monkeypatch.setattr(sample_mod, "sample_collapsed", no_work)
    sweep = SweepResult.load(reduced)
    sweep = dataclasses.replace(
        sweep, config=sweep.config.replace(train=dict(train_embeddings=True))
    )
    with pytest.raises(ValueError, match=r"trained embeddings holds joint-MAP fits"):
        sample_mod.run_sampler(sweep, ch.HMCConfig(n_iter=4), out=tmp_path / "p.npz")
    assert not list(tmp_path.iterdir())
