"""Issue 14: no hang, no silent bad run, one-line errors for bad input, recovery, paper figures.

Most cases are checked without training (validation paths, synthetic results); one tiny sweep
(module fixture) covers the CLI round trip, and the heavier training cases are marked slow.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax import sweep as sweep_mod
from copyhead_jax.cli import main, save_figure
from copyhead_jax.config import Config
from copyhead_jax.results import REQUIRED, SweepResult, divergence_flags
from copyhead_jax.storage import acquire_lock, atomic_save_npz, release_lock, remove_tmp_orphans
from copyhead_jax.sweep import run_chunked

CFG = ch.TINY.replace(sweep=dict(P=(2, 4, 8), n_seeds=2))


def fake_sweep(cfg: Config = CFG, *, loss=None, drop=(), diverged=None) -> SweepResult:
    """A synthetic sweep result with every required array (no training)."""
    nP, nS, L = len(cfg.sweep.P), cfg.sweep.n_seeds, cfg.task.L
    rng = np.random.default_rng(0)
    a = {k: rng.uniform(0.1, 1.0, (nP, nS)) for k in REQUIRED}
    a["finite"] = np.ones((nP, nS), bool)
    a["train_loss"] = np.full((nP, nS), 0.5 * L) if loss is None else np.asarray(loss, float)
    a["U"] = np.full((nP, nS), 10.0)
    a["mean_attention"] = np.full((nP, nS, L, L), 1 / L)
    a["positional_logits"] = np.zeros((nP, nS, L, L))
    a["curve_U"] = np.tile(np.linspace(20.0, 10.0, 4), (nP, nS, 1))
    a["curve_loss"] = np.tile(np.linspace(1.0 * L, 0.5 * L, 4), (nP, nS, 1))
    a["curve_epoch"] = np.arange(1, 5) * 5
    if diverged is not None:
        a["diverged"] = np.asarray(diverged, bool)
    for k in drop:
        a.pop(k)
    return SweepResult(config=cfg, arrays=a, meta={"wall_seconds": 1.0})


def fake_posterior(cfg: Config = CFG):
    from copyhead_jax.results import DRAW_FIELDS, PosteriorResult

    nP, nS, nC, nD = len(cfg.sweep.P), cfg.sweep.n_seeds, 2, 5
    rng = np.random.default_rng(1)
    arrays = {
        "draws": rng.normal(size=(nP, nS, nC, nD, len(DRAW_FIELDS))),
        "finite": np.ones((nP, nS, nC), bool),
        "draw_step": np.arange(nD) * 10,
        "rhat": np.ones((nP, nS)), "ess": np.full((nP, nS), 50.0),
        "accept_mean": np.full((nP, nS), 0.9),
    }  # fmt: skip
    return PosteriorResult(cfg, ch.SGLDConfig(), arrays, {"wall_seconds": 1.0, "warnings": []})


def one_line_error(capsys, rc, pattern):
    """The CLI failed with exit 2 and one line naming the problem, no traceback."""
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert err.startswith("copyhead: error:") and re.search(pattern, err), err


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny sweep through the CLI: ``--out FILE.npz`` (single attention), params kept, and
    a killed final write's ``.tmp`` orphan planted beforehand."""
    folder = tmp_path_factory.mktemp("run")
    out = folder / "r.npz"
    orphan = folder / ".r.npz.x1y2.tmp"
    orphan.write_bytes(b"\0" * 1000)
    old = os.umask(0o022)
    try:
        rc = main(["sweep", "--preset", "tiny", "--attention", "softmax", "--P", "2,4",
                   "--n-seeds", "1", "--max-epochs", "20", "--min-epochs", "5", "--out", str(out),
                   "--quiet", "--no-theory", "--keep-params"])  # fmt: skip
    finally:
        os.umask(old)
    assert rc == 0
    return out, orphan


# 1. memory --------------------------------------------------------------------------------------


def test_width_too_large_is_refused_before_compiling(tmp_path, monkeypatch, capsys):
    def no_training(*a, **k):
        raise AssertionError("training started")

    monkeypatch.setattr(sweep_mod, "Trainer", no_training)
    rc = main(["sweep", "--preset", "tiny", "--no-plot", "--n-seeds", "1", "--P", "2",
               "--width", "65536", "--out", str(tmp_path / "x")])  # fmt: skip
    one_line_error(capsys, rc, r"needs about [\d.]+ GiB.*but [\d.]+ GiB is available.*--engine")
    need = sweep_mod.per_run_bytes(CFG.replace(model=dict(width=65536)))
    assert need > 64 * 2**30  # the N x N key-query matrix and its Adam state


def test_reduced_engine_huge_P_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """Issue 31.1: the reduced engine has a memory model too (a huge P hung or died in the
    allocator and left a stale lock); both solvers, refused before the lock is taken."""
    monkeypatch.setattr(sweep_mod, "Trainer", lambda *a: pytest.fail("training started"))
    monkeypatch.setattr(sweep_mod, "acquire_lock", lambda *a: pytest.fail("lock taken"))
    out = tmp_path / "o"
    rc = main(["sweep", "--preset", "tiny", "--engine", "reduced", "--P", "10000000",
               "--L", "25", "--width", "inf", "--n-seeds", "1", "--no-plot", "--quiet",
               "--out", str(out)])  # fmt: skip
    one_line_error(capsys, rc, r"reduced-engine run at P = 10000000 needs about .*GiB.*--P")
    assert not out.exists()
    big = CFG.replace(task=dict(L=25), model=dict(engine="reduced", width=float("inf")),
                      sweep=dict(P=(10**7,)))
    for solver in ("adam", "exact"):
        with pytest.raises(ValueError, match="GiB is available"):
            ch.run_sweep(big.replace(train=dict(solver=solver)), out=tmp_path / "a.npz",
                         progress=False)  # fmt: skip
    assert not list(tmp_path.iterdir())


# 2. divergence ----------------------------------------------------------------------------------


def test_divergence_flags_blown_up_but_finite_runs():
    L = CFG.task.L
    res = fake_sweep(loss=[[3.0, 114.0], [3.0, 3.0], [3.0, 303.0]])
    flags = divergence_flags(res.arrays, L)
    assert flags.tolist() == [[False, True], [False, False], [False, True]]
    a = dict(res.arrays, train_loss=np.full((3, 2), 3.0))
    a["U"] = np.array([[10.0, 100.0], [10.0, 10.0], [10.0, 10.0]])  # U rose from 20 to 100
    assert divergence_flags(a, L).tolist() == [[False, True], [False, False], [False, False]]
    a["U"][:] = 10.0
    a["finite"] = np.array([[True, True], [False, True], [True, True]])
    assert divergence_flags(a, L).tolist() == [[False, False], [True, False], [False, False]]
    a["finite"][:] = True
    a["curve_U"] = np.full_like(a["curve_U"], np.nan)  # stopped before the first log
    assert not divergence_flags(a, L).any()
    a["curve_loss"] = np.full_like(a["curve_loss"], 4000.0)  # blown up by the first log
    a["train_loss"] = np.array([[82.0, 3.0], [14.0, 40.0], [3.0, 3.0]])
    assert divergence_flags(a, L).tolist() == [[True, False], [True, True], [False, False]]
    a["loss_init"] = np.full((3, 2), 15.0)  # a run that starts high is judged against its start
    assert divergence_flags(a, L).tolist() == [[True, False], [False, True], [False, False]]


def test_a_run_ending_above_its_start_and_the_zero_output_loss_is_diverged():
    """Issue 31.9: reduced engine + Adam at lr 10 (raw) ended at loss 17.5 from 9.0, with 6.0
    for a network that outputs nothing: finite, but worse than both; it must not count as ok."""
    a = fake_sweep().arrays
    a["train_loss"] = np.full((3, 2), 17.5)
    a["loss_init"] = np.full((3, 2), 9.0)
    assert divergence_flags(a, CFG.task.L).all()
    a["train_loss"] = np.full((3, 2), 8.0)  # worse than f = 0, but better than its start
    assert not divergence_flags(a, CFG.task.L).any()


def test_reduced_adam_blow_up_is_not_ok_and_lr_mult_must_be_positive(capsys):
    cfg = ch.TINY.replace(model=dict(engine="reduced"), sweep=dict(P=(2,), n_seeds=1),
                          train=dict(solver="adam", lr=10.0, lr_scaling="raw"))  # fmt: skip
    for bad in ([-1.0], [0.0], [float("nan")]):
        with pytest.raises(ValueError, match="lr_mult entries must be finite reals > 0"):
            ch.run_sweep(cfg, lr_mult=np.array(bad), progress=False)
    res = ch.run_sweep(cfg, progress=False)
    assert res["train_loss"][0, 0] > max(cfg.task.L, res["loss_init"][0, 0])
    assert not res.ok.any() and "diverged" in capsys.readouterr().err


def test_summary_excludes_diverged_runs_and_says_so(tmp_path, capsys):
    res = fake_sweep(loss=[[3.0, 114.0], [3.0, 3.0], [3.0, 5.0]])
    s = res.summary()
    assert s["n_diverged"].tolist() == [1, 0, 0] and s["n_ok"].tolist() == [1, 2, 2]
    assert s["n_finite"].tolist() == [2, 2, 2]
    np.testing.assert_allclose(s["train_loss"], [3.0, 3.0, 4.0])  # 114 left out
    path = res.save(tmp_path / "old.npz")  # no "diverged" array: a file from before the flag
    assert "diverged" not in np.load(path).files
    old = SweepResult.load(path)
    assert old.diverged.tolist() == [[False, True], [False, False], [False, False]]
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\bok div\b", out) and "1 diverged run(s)" in out and "excluded" in out
    stored = fake_sweep(diverged=[[True, False]] * 3)  # a stored flag wins
    assert stored.summary()["n_diverged"].tolist() == [1, 1, 1]


@pytest.mark.slow
def test_lr_blow_up_is_flagged_in_a_real_sweep(capsys):
    cfg = ch.TINY.replace(
        train=dict(lr=10.0, lr_scaling="raw", max_epochs=20, min_epochs=5),
        sweep=dict(P=(2,), n_seeds=1),
    )
    res = ch.run_sweep(cfg, progress=False)
    assert res["diverged"].all() and res.summary()["n_ok"].tolist() == [0]
    assert "diverged" in capsys.readouterr().err


# 3. config values -------------------------------------------------------------------------------


def test_numpy_numbers_become_python_numbers():
    cfg = CFG.replace(task=dict(L=np.int64(4)), train=dict(lr=np.float32(0.5)),
                      sweep=dict(P=(np.int64(2), np.int32(4))))  # fmt: skip
    assert type(cfg.task.L) is int and type(cfg.train.lr) is float
    assert all(type(p) is int for p in cfg.sweep.P)
    text = json.dumps(cfg.to_dict())  # was: TypeError, int64 is not JSON serializable
    assert Config.from_dict(json.loads(text)) == cfg


@pytest.mark.parametrize(
    "update, match",
    [
        (dict(posterior=dict(sigma2="30")), r"PosteriorConfig\.sigma2 .*string '30'"),
        (dict(train=dict(lr="1e-3")), r"TrainConfig\.lr .*string"),
        (dict(task=dict(L="4")), r"TaskConfig\.L must be an int"),
        (dict(model=dict(widht=8)), r"ModelConfig has no field.*widht.*valid fields: .*width"),
        (dict(modle=dict(width=8)), r"Config has no section 'modle'"),
        (dict(task=dict(L=1)), r"TaskConfig\.L must be an int in \[2, 4096\], got 1"),
        (dict(train=dict(lr=float("nan"))), r"TrainConfig\.lr must be a finite"),
        (dict(sweep=dict(P=(8, 4))), r"SweepConfig\.P must be strictly increasing"),
        (dict(sweep=dict(P=())), r"SweepConfig\.P must be a non-empty"),
        (dict(train=dict(train_embeddings=1)), r"train_embeddings must be a bool"),
    ],
)
def test_bad_config_values_name_the_field(update, match):
    with pytest.raises(ValueError, match=match):
        CFG.replace(**update)


def test_from_dict_typo_lists_valid_fields():
    d = CFG.to_dict()
    d["train"]["lrr"] = 1.0
    with pytest.raises(ValueError, match=r"TrainConfig has no field.*lrr.*valid fields: lr"):
        Config.from_dict(d)


# 4. file modes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_result_files_honour_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = atomic_save_npz(tmp_path / "r.npz", {"x": np.zeros(2)}, {"kind": "k"})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == mode


# 5. one-line errors -----------------------------------------------------------------------------


def test_plot_to_an_unwritable_place_is_one_line(tmp_path, capsys):
    f = fake_sweep().save(tmp_path / "r.npz")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    one_line_error(capsys, main(["plot", str(f), "--out", str(blocker / "x.png")]),
                   r"cannot write the figure|not a directory")  # fmt: skip
    one_line_error(capsys, main(["plot", str(f), "--out", "/proc/copyhead_x.png"]), "figure")


def test_run_sweep_refuses_a_folder_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep_mod, "Trainer", lambda *a: pytest.fail("training started"))
    with pytest.raises(ValueError, match="is a folder"):
        ch.run_sweep(CFG, out=tmp_path, progress=False)


def test_incomplete_result_is_refused_at_load(tmp_path, capsys):
    path = fake_sweep(drop=("cG",)).save(tmp_path / "r.npz")
    with pytest.raises(ValueError, match=r"lacks the arrays \['cG'\]"):
        SweepResult.load(path)
    one_line_error(capsys, main(["show", str(path)]), "lacks the arrays")
    one_line_error(capsys, main(["plot", str(path)]), "lacks the arrays")
    bad = fake_sweep()
    bad.arrays["c1"] = bad.arrays["c1"][:1]
    with pytest.raises(ValueError, match=r"arrays \['c1'\] are not \[P, seed\]"):
        SweepResult.load(bad.save(tmp_path / "b.npz"))


def test_ctrl_c_exits_quietly_saying_what_was_kept(tmp_path, monkeypatch, capsys):
    def interrupted(cfg, *, out, **kw):
        Path(str(out) + ".chunks").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_mod, "run_sweep", interrupted)
    out = tmp_path / "r.npz"
    assert main(["sweep", "--preset", "tiny", "--attention", "linear", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "interrupted" in err
    assert f"{out}.chunks" in err and "resume" in err


# 6. recovery ------------------------------------------------------------------------------------


def test_corrupt_chunk_checkpoint_is_recomputed(tmp_path, capsys):
    calls = []

    def compute(idx):
        calls.append(idx.tolist())
        return {"x": idx * 2.0}

    kw = dict(n_runs=4, chunk=2, compute=compute, fingerprint="fp", ckpt_dir=tmp_path)
    first = run_chunked(**kw)
    (tmp_path / "chunk_00000.npz").write_bytes(b"PK\x03\x04 truncated")
    calls.clear()
    again = run_chunked(**kw)
    np.testing.assert_array_equal(again["x"], first["x"])
    assert calls == [[0, 1]]  # only the corrupt chunk is recomputed
    assert "unreadable, recomputing" in capsys.readouterr().err


def test_corrupt_snapshot_is_ignored(tmp_path, capsys):
    import jax.numpy as jnp

    path = tmp_path / "chunk_00000.partial.npz"
    path.write_bytes(b"garbage")
    assert sweep_mod.load_snapshot((path, "fp"), {"w": jnp.zeros(2)}) is None
    assert "unreadable" in capsys.readouterr().err and not path.exists()


def test_tmp_orphans_of_a_killed_write_are_removed(tmp_path, tiny_run):
    out, orphan = tiny_run
    assert out.is_file() and not orphan.exists()
    keep = tmp_path / "other.npz.tmp"  # not an orphan of ours
    keep.write_text("x")
    chunk_orphan = tmp_path / "r.npz.chunks" / "pad8" / ".chunk_00000.npz.abc.tmp"
    chunk_orphan.parent.mkdir(parents=True)
    chunk_orphan.write_text("x")
    assert remove_tmp_orphans(tmp_path / "r.npz", tmp_path / "r.npz.chunks") == 1
    assert keep.exists() and not chunk_orphan.exists()


def test_lock_refuses_a_live_writer_and_takes_over_a_dead_one(tmp_path, monkeypatch):
    out = tmp_path / "r.npz"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        Path(str(out) + ".lock").write_text(f"{live.pid}\n")
        with pytest.raises(ValueError, match=rf"another process \(pid {live.pid}"):
            acquire_lock(out)
        monkeypatch.setattr(sweep_mod, "Trainer", lambda *a: pytest.fail("training started"))
        with pytest.raises(ValueError, match=f"pid {live.pid}"):
            ch.run_sweep(CFG, out=out, progress=False)
    finally:
        live.kill()
        live.wait()
    lock = acquire_lock(out)  # the holder is dead: stale, taken over
    assert lock.read_text().strip() == str(os.getpid())
    release_lock(lock)
    assert not lock.exists()


# 7. CLI (argument parsing: tests/test_cli.py) ---------------------------------------------------


def test_out_file_round_trip_with_kept_params(tiny_run, capsys):
    out, _ = tiny_run
    assert out.with_suffix(".png").stat().st_size > 0
    res = SweepResult.load(out)
    assert res.has_params and "diverged" in res.arrays
    assert (out.stat().st_mode & 0o777) == 0o644


def test_sample_without_params_names_the_flag(tmp_path, capsys):
    f = fake_sweep().save(tmp_path / "r.npz")
    one_line_error(capsys, main(["sample", str(f)]), r"copyhead sweep \.\.\. --keep-params")


def test_show_accepts_posterior_files(tmp_path, capsys):
    f = fake_posterior().save(tmp_path / "p.npz")
    assert main(["show", str(f)]) == 0
    out = capsys.readouterr().out
    assert "posterior" in out and re.search(r"^\s+8\s", out, re.M)


@pytest.mark.slow
def test_progress_bar_says_resumed(tmp_path, capsys):
    cfg = ch.TINY.replace(train=dict(max_epochs=20, min_epochs=5),
                          sweep=dict(P=(2, 4), n_seeds=1, chunk_runs=1))  # fmt: skip
    out = tmp_path / "r.npz"

    def stop(i, n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(cfg, out=out, progress=False, on_chunk=stop)
    capsys.readouterr()
    ch.run_sweep(cfg, out=out, progress=True)
    assert "resumed 1 chunk(s) from checkpoints" in capsys.readouterr().err


@pytest.mark.slow
def test_progress_bar_says_resumed_from_a_snapshot(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sweep_mod, "SEGMENT_EPOCHS", 10)  # 2 segments of 10 epochs
    cfg = ch.TINY.replace(train=dict(max_epochs=20, min_epochs=20),
                          sweep=dict(P=(2,), n_seeds=1))  # fmt: skip
    real, calls = sweep_mod.run_segment, []

    def crash_on_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(sweep_mod, "run_segment", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(cfg, out=tmp_path / "r.npz", progress=False, snapshot_every_s=0.0)
    capsys.readouterr()
    ch.run_sweep(cfg, out=tmp_path / "r.npz", progress=True, snapshot_every_s=0.0)
    assert "resumed from a snapshot (1 segment(s) done)" in capsys.readouterr().err


# 8. figures -------------------------------------------------------------------------------------


def _texts_overlap(fig, ax) -> bool:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(r) for t in ax.get_xticklabels(which="both")
             if t.get_visible() and t.get_text()]  # fmt: skip
    boxes.sort(key=lambda b: b.x0)
    return any(b.x0 < a.x1 for a, b in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("P", [(2, 4, 8, 16, 24, 32, 64, 128), (10, 12, 15, 20, 30, 50, 70)])
def test_sweep_figure_is_fit_for_a_paper(P):
    import matplotlib.pyplot as plt

    from copyhead_jax.plots import BAND_LABEL, COLORS, LEGEND_PT, sweep_figure

    base = CFG.replace(sweep=dict(P=P))
    res = [fake_sweep(base.replace(model=dict(attention=a)), loss=np.full((len(P), 2), 3.0))
           for a in ("linear", "softmax")]  # fmt: skip
    th = {"softmax": {"P": np.geomspace(P[0], P[-1], 5), "aG": np.ones(5), "a1": np.ones(5),
                      "mse": np.ones(5)}}  # fmt: skip
    fig = sweep_figure(res, th)
    for ax in fig.axes:
        assert ax.get_xlabel() == "training set size $P$ (sequences)" and ax.get_ylabel()
        leg = ax.get_legend()
        assert all(t.get_fontsize() >= LEGEND_PT >= 8 for t in leg.get_texts())
        assert BAND_LABEL in [t.get_text() for t in leg.get_texts()]
        assert not _texts_overlap(fig, ax)
        for line in ax.get_lines():  # one colour per attention, in every panel
            lab = line.get_label()
            for att, col in COLORS.items():
                if lab.startswith(att) or (att == "softmax" and "EK theory" in lab):
                    assert line.get_color() == col, lab
    theory = [l for l in fig.axes[0].get_lines() if "EK theory" in l.get_label()]
    assert len(theory) == 2 and all(l.get_linestyle() in ("--", "-.") for l in theory)
    plt.close(fig)


def test_curves_colour_bar_and_trace_labels():
    import matplotlib.pyplot as plt

    from copyhead_jax.plots import curves_figure, trace_figure

    fig = curves_figure(fake_sweep())
    cbar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert cbar and "P" in cbar[0].get_ylabel()
    assert fig.axes[0].get_xlabel().startswith("epoch") and fig.axes[0].get_ylabel()
    plt.close(fig)
    post = fake_posterior(CFG.replace(model=dict(attention="softmax")))
    fig = trace_figure(post)
    assert fig.axes[0].get_ylabel() == "$a_{G}$" and "$a_{G}$ traces" in fig._suptitle.get_text()
    assert fig.axes[0].get_xlabel() == "SGLD step"
    plt.close(fig)
    fig = trace_figure(fake_posterior(CFG.replace(model=dict(attention="linear"))))
    assert fig.axes[0].get_ylabel() == "$c_{G}$"
    plt.close(fig)


def test_pdf_svg_and_theory_overlay_from_the_cli(tmp_path, monkeypatch, capsys):
    import copyhead_jax.results_cli as results_cli  # where `copyhead plot` lives

    f = fake_sweep(CFG.replace(model=dict(attention="softmax"))).save(tmp_path / "r.npz")
    asked = []

    def overlay(results):
        asked.append(len(results))
        return {"softmax": {"P": np.array([2.0, 8.0]), "aG": np.ones(2), "mse": np.ones(2)}}

    monkeypatch.setattr(results_cli, "theory_overlay", overlay)
    assert main(["plot", str(f), "--out", str(tmp_path / "a.pdf"), "--curves"]) == 0
    assert asked == []  # no theory unless asked
    assert (tmp_path / "a.pdf").read_bytes()[:4] == b"%PDF"
    assert (tmp_path / "a_curves_softmax.pdf").exists()
    assert main(["plot", str(f), "--out", str(tmp_path / "a.svg"), "--theory"]) == 0
    assert asked == [1] and b"<svg" in (tmp_path / "a.svg").read_bytes()[:500]
    one_line_error(capsys, main(["plot", str(f), "--out", str(tmp_path / "a.jpg")]), "one of")
    with pytest.raises(ValueError, match="must end in one of"):
        save_figure(None, tmp_path / "a.gif")


# 9. the bad-input matrix ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, match",
    [
        (["sweep", "--preset", "huge"], "preset must be one of"),
        (["sweep", "--preset", "tiny", "--L", "1"], r"TaskConfig\.L must be an int in \[2, 4096\]"),
        (["sweep", "--preset", "tiny", "--V", "1"], r"TaskConfig\.V must be an int"),
        (["sweep", "--preset", "tiny", "--lr", "-1"], r"TrainConfig\.lr must be a real number"),
        (["sweep", "--preset", "tiny", "--lr", "-1e-3"], r"TrainConfig\.lr must be a real"),
        (["sweep", "--preset", "tiny", "--lr", "100"], r"TrainConfig\.lr .*\(0\.0, 10\.0\]"),
        (["sweep", "--preset", "tiny", "--sigma2", "0"], r"PosteriorConfig\.sigma2"),
        (["sweep", "--preset", "tiny", "--chi", "-3"], r"PosteriorConfig\.chi"),
        (["sweep", "--preset", "tiny", "--n-seeds", "0"], r"SweepConfig\.n_seeds"),
        (["sweep", "--preset", "tiny", "--width", "0"], r"ModelConfig\.width"),
        (["sweep", "--preset", "tiny", "--min-epochs", "500"], r"TrainConfig\.min_epochs"),
        (["sweep", "--preset", "tiny", "--likelihood", "poisson"], r"PosteriorConfig\.likelihood"),
        (["sweep", "--preset", "tiny", "--b1", "1.5"], r"TrainConfig\.b1"),
        (["sweep", "--preset", "tiny", "--attention", "both", "--out", "x.npz"], "one attention"),
        (["show", "nonexistent.npz"], "does not exist"),
        (["plot", "nonexistent.npz"], "does not exist"),
        (["sample", "nonexistent.npz"], "does not exist"),
        (["theory", "curve", "--n-P", "0"], r"--n-P must be an int in \[2, "),
        (["theory", "curve", "--P-min", "100", "--P-max", "10"], r"--P-min \(100\) must be below"),
        (["theory", "curve", "--P-min", "0"], r"--P-min must be > 0"),
        (["theory", "curve", "--P-max", "-5"], r"--P-max must be > 0"),
    ],
)
def test_bad_input_matrix(argv, match, capsys):
    one_line_error(capsys, main(argv), match)


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--P", "10:4:3log"],
        ["sweep", "--attention", "relu"],
        ["sweep", "--width", "wide"],
        ["sweep", "--train-embeddings", "maybe"],
        ["plot"],
        ["frobnicate"],
    ],
)
def test_bad_syntax_exits_2_through_argparse(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and "Traceback" not in capsys.readouterr().err


def test_not_a_result_file(tmp_path, capsys):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    one_line_error(capsys, main(["show", str(junk)]), "not a readable copyhead_jax result")
    np.savez(tmp_path / "plain.npz", x=np.zeros(2))
    one_line_error(capsys, main(["show", str(tmp_path / "plain.npz")]), "no metadata")
