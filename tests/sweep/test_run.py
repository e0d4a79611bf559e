"""run_sweep: one compilation, per-run independence, failure flags, determinism, resume."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.fit import adam as train
from copyhead_jax.fit import adam_sweep
from copyhead_jax.fit import programs as programs_mod
from copyhead_jax.results import SweepResult
from copyhead_jax.runner import per_run_bytes, run_chunked
from copyhead_jax.sweep import run as sweep_mod
from tests.helpers import FAKE_CFG, SHORT_TINY, no_work, one_line_error

CFG = ch.TINY.replace(sweep=dict(P=(2, 4, 8), n_seeds=2, chunk_runs=2))
PER_RUN = ("c1", "cG", "coverage", "train_loss", "test_loss", "U", "stop_epoch", "params/W_G")


@pytest.fixture(scope="module")
def baseline():
    return ch.run_sweep(CFG, progress=False)


def _same(a, b, keys=PER_RUN, index=np.s_[:]):
    for k in keys:
        assert np.array_equal(a[k][index], b[k][index], equal_nan=True), k


def test_result_shapes_and_metadata(baseline):
    nP, nS, L = 3, 2, CFG.task.L
    assert baseline["c1"].shape == (nP, nS)
    assert baseline["mean_attention"].shape == (nP, nS, L, L)
    assert baseline["curve_U"].shape[:2] == (nP, nS)
    assert baseline["params/W_G"].shape == (nP, nS, CFG.model.width, CFG.model.width)
    assert baseline.meta["n_chunks"] == 3 and baseline["finite"].all()
    assert "jax" in baseline.meta["environment"]["versions"]


def test_sweep_compiles_once():
    # 4 chunks of 2 runs and several segments each: one compiled segment program serves all
    cfg = CFG.replace(solver=dict(max_epochs=120, min_epochs=120), sweep=dict(P=(2, 3, 5, 9)))
    before = train.run_segment._cache_size()
    res = ch.run_sweep(cfg, progress=False)
    assert res.meta["n_chunks"] == 4
    assert train.run_segment._cache_size() == before + 1


def test_deterministic(baseline):
    _same(baseline, ch.run_sweep(CFG, progress=False), PER_RUN + ("curve_U",))


@pytest.mark.slow
def test_run_alone_equals_run_in_batch(baseline):
    # same seed, same P, same padding, but a chunk of one run instead of two: vmap lanes are
    # independent, so the numbers agree to float32 rounding of a differently batched program
    alone = ch.run_sweep(CFG.replace(sweep=dict(chunk_runs=1)), progress=False)
    for k in ("c1", "cG", "train_loss", "U"):
        np.testing.assert_allclose(alone[k], baseline[k], rtol=1e-4, atol=1e-5, err_msg=k)
    # the same run in a sweep of its own (P_max = 4, seed 1): the data are nested prefixes so
    # it sees the same 4 sequences and the same init; only the padding length differs
    own = ch.run_sweep(
        CFG.replace(sweep=dict(P=(4,), seed=CFG.sweep.seed + 1, n_seeds=1)), progress=False
    )
    for k in ("c1", "cG", "train_loss"):
        np.testing.assert_allclose(own[k][0, 0], baseline[k][1, 1], rtol=2e-3, err_msg=k)


def test_forced_divergence_is_flagged_and_others_kept(baseline):
    lr = np.ones(6, np.float32)
    lr[3] = 1e30  # P=4, seed 1: parameters overflow at the first step
    with pytest.warns(ch.RunHealthWarning, match="1 of 6 runs diverged"):
        res = ch.run_sweep(CFG, progress=False, lr_mult=lr)
    assert not res["finite"][1, 1] and res["finite"].sum() == 5
    keep = np.ones((3, 2), bool)
    keep[1, 1] = False
    _same(res, baseline, index=keep)


def test_early_stopping_per_run():
    cfg = CFG.replace(solver=dict(min_epochs=10, patience=3, rel_tol=0.05, max_epochs=200))
    res = ch.run_sweep(cfg, progress=False)
    stop = res["stop_epoch"]
    assert np.all(stop >= 10) and np.all(stop < 200)  # every run stopped early on its own
    ep = res["curve_epoch"]
    for i in range(3):
        for s in range(2):
            after = ep > stop[i, s]
            assert np.all(np.isnan(res["curve_U"][i, s, after]))
            assert np.all(np.isfinite(res["curve_U"][i, s, ~after]))


def test_resume_equals_uninterrupted(baseline, tmp_path):
    out = tmp_path / "sweep.npz"

    def interrupt(i, n):
        if i == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(CFG, out=out, progress=False, on_chunk=interrupt)
    assert not out.exists() and len(list((tmp_path / "sweep.npz.chunks").rglob("chunk_*"))) == 2
    done = []
    res = ch.run_sweep(CFG, out=out, progress=False, on_chunk=lambda i, n: done.append(i))
    assert done == [2]  # only the unfinished chunk was recomputed
    _same(res, baseline, PER_RUN + ("curve_U", "mean_attention"))
    loaded = ch.SweepResult.load(out)
    _same(loaded, baseline)
    assert loaded.config == CFG
    assert not (tmp_path / "sweep.npz.chunks").exists()


def test_crash_inside_a_chunk_resumes_from_its_snapshot(tmp_path, monkeypatch):
    # one chunk of several segments; a snapshot after every segment; the run "crashes" in the
    # middle of the chunk and a rerun resumes from the snapshot: every number is the same as
    # an uninterrupted run (the state, Adam moments and stopping counters all travel)

    monkeypatch.setattr(adam_sweep, "SEGMENT_EPOCHS", 40)  # 3 segments of 40 epochs
    cfg = CFG.replace(
        solver=dict(max_epochs=120, min_epochs=120), sweep=dict(P=(2, 4), chunk_runs=4)
    )
    ref = ch.run_sweep(cfg, progress=False)
    out = tmp_path / "s.npz"
    real, calls = train.run_segment, []

    def crash_on_third(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(adam_sweep, "run_segment", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(cfg, out=out, progress=False, snapshot_every_s=0.0)
    snaps = list((tmp_path / "s.npz.chunks").rglob("chunk_*.partial.npz"))
    assert len(snaps) == 1
    calls.clear()
    res = ch.run_sweep(cfg, out=out, progress=False, snapshot_every_s=0.0)
    n_seg = -(-120 // (cfg.train.log_every * adam_sweep.segment_logs(cfg)))
    assert n_seg == 3
    assert len(calls) == n_seg - 2  # the two segments saved before the crash were not redone
    _same(res, ref, PER_RUN + ("curve_U", "mean_attention"))
    assert not (tmp_path / "s.npz.chunks").exists()
    with pytest.raises(ValueError, match="snapshot_every_s must be >= 0"):
        ch.run_sweep(cfg, snapshot_every_s=-1.0)


def test_bad_files_and_paths(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_text("not a result")
    with pytest.raises(ValueError, match="not a readable copyhead_jax result"):
        ch.SweepResult.load(junk)
    with pytest.raises(ValueError, match="does not exist"):
        ch.SweepResult.load(tmp_path / "missing.npz")
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.zeros(3))
    with pytest.raises(ValueError, match="no metadata"):
        ch.SweepResult.load(foreign)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="not writable"):
        ch.run_sweep(CFG, out=tmp_path / "file" / "x.npz", progress=False)
    with pytest.raises(ValueError, match="lr_mult must have one entry per run"):
        ch.run_sweep(CFG, lr_mult=np.ones(2), progress=False)


def test_pow2_padding_matches_max_padding(baseline):
    from copyhead_jax.sweep import padding_groups

    cfg = CFG.replace(sweep=dict(padding="pow2"))
    assert {p: list(r) for p, r in padding_groups(cfg).items()} == {2: [0, 1], 4: [2, 3], 8: [4, 5]}
    # run P = 4, 8 only (datasets and inits are per seed, nested in P): the P = 8 group has the
    # baseline's shapes and reuses its compiled program, so one new program (padding 4) is built
    res = ch.run_sweep(cfg.replace(sweep=dict(P=(4, 8))), progress=False)
    # only the number of all-zero padded rows differs (masked with where, so they add exact
    # zeros); float32 sums over differently shaped arrays may round differently
    for k in ("c1", "cG", "train_loss", "U"):
        np.testing.assert_allclose(res[k], baseline[k][1:], rtol=1e-4, atol=1e-5, err_msg=k)


# bad input and crash safety (moved from test_reliability.py / test_bad_input.py)


def test_width_too_large_is_refused_before_compiling(tmp_path, monkeypatch, capsys):
    def no_training(*a, **k):
        raise AssertionError("training started")

    monkeypatch.setattr(programs_mod, "Trainer", no_training)
    rc = main(
        [
            *"sweep --preset tiny --no-plot --n-seeds 1 --P 2 --width 65536 --out".split(),
            str(tmp_path / "x"),
        ]
    )
    one_line_error(capsys, rc, r"needs about [\d.]+ GiB.*but [\d.]+ GiB is available.*--engine")
    need = per_run_bytes(FAKE_CFG.replace(model=dict(width=65536)))
    assert need > 64 * 2**30  # the N x N key-query matrix and its Adam state


def test_reduced_engine_huge_P_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    """The reduced engine has a memory model too (a huge P hung or died in the
    allocator and left a stale lock); both solvers, refused before the lock is taken."""
    monkeypatch.setattr(programs_mod, "Trainer", lambda *a: pytest.fail("training started"))
    monkeypatch.setattr(sweep_mod, "claim", lambda *a, **k: pytest.fail("lock taken"))
    out = tmp_path / "o"
    rc = main(
        [
            *(
                "sweep --preset tiny --engine reduced --P 10000000 --L 25 --width inf "
                "--n-seeds 1 --no-plot --quiet --out"
            ).split(),
            str(out),
        ]
    )
    one_line_error(capsys, rc, r"reduced-engine run at P = 10000000 needs about .*GiB.*--P")
    assert not out.exists()
    big = FAKE_CFG.replace(
        task=dict(L=25), model=dict(engine="reduced", width=float("inf")), sweep=dict(P=(10**7,))
    )
    for solver in ("adam", "exact"):
        with pytest.raises(ValueError, match="GiB is available"):
            ch.run_sweep(
                big.replace(solver=dict(kind=solver)), out=tmp_path / "a.npz", progress=False
            )
    assert not list(tmp_path.iterdir())


def test_reduced_adam_blow_up_is_not_ok_and_lr_mult_must_be_positive():
    cfg = ch.TINY.replace(
        model=dict(engine="reduced"),
        sweep=dict(P=(2,), n_seeds=1),
        solver=dict(kind="adam", lr=10.0, lr_scaling="raw"),
    )
    for bad in ([-1.0], [0.0], [float("nan")]):
        with pytest.raises(ValueError, match="lr_mult entries must be finite reals > 0"):
            ch.run_sweep(cfg, lr_mult=np.array(bad), progress=False)
    with pytest.warns(ch.RunHealthWarning, match="1 of 1 runs diverged"):
        res = ch.run_sweep(cfg, progress=False)
    assert res["train_loss"][0, 0] > max(cfg.task.L, res["loss_init"][0, 0])
    assert not res.ok.any()


def test_lr_blow_up_is_flagged_in_a_real_sweep():
    cfg = ch.TINY.replace(
        solver=dict(lr=10.0, lr_scaling="raw", max_epochs=20, min_epochs=5),
        sweep=dict(P=(2,), n_seeds=1),
    )
    with pytest.warns(ch.RunHealthWarning, match="diverged"):
        res = ch.run_sweep(cfg, progress=False)
    assert res["diverged"].all() and res.summary()["n_ok"].tolist() == [0]


def test_run_sweep_refuses_a_folder_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(programs_mod, "Trainer", lambda *a: pytest.fail("training started"))
    with pytest.raises(ValueError, match="is a folder"):
        ch.run_sweep(FAKE_CFG, out=tmp_path, progress=False)


def test_corrupt_chunk_checkpoint_is_recomputed(tmp_path):
    from copyhead_jax.storage import DamagedCheckpointWarning

    calls = []

    def compute(idx):
        calls.append(idx.tolist())
        return {"x": idx * 2.0}

    kw = dict(n_runs=4, chunk=2, compute=compute, fingerprint="fp", ckpt_dir=tmp_path)
    first = run_chunked(**kw)
    (tmp_path / "chunk_00000.npz").write_bytes(b"PK\x03\x04 truncated")
    calls.clear()
    with pytest.warns(DamagedCheckpointWarning, match="chunk_00000.npz") as w:
        again = run_chunked(**kw)
    np.testing.assert_array_equal(again["x"], first["x"])
    assert calls == [[0, 1]]  # only the corrupt chunk is recomputed
    assert len(w) == 1  # named once, set aside beside its recomputed replacement
    assert (tmp_path / "chunk_00000.npz.damaged").read_bytes() == b"PK\x03\x04 truncated"


def test_corrupt_snapshot_is_ignored(tmp_path):
    import jax.numpy as jnp

    from copyhead_jax.storage import DamagedCheckpointWarning

    path = tmp_path / "chunk_00000.partial.npz"
    path.write_bytes(b"garbage")
    with pytest.warns(DamagedCheckpointWarning, match="chunk_00000.partial.npz"):
        assert adam_sweep.load_snapshot((path, "fp"), {"w": jnp.zeros(2)}) is None
    assert not path.exists() and (tmp_path / "chunk_00000.partial.npz.damaged").exists()


def test_progress_bar_says_resumed(tmp_path, capsys):
    cfg = CFG  # the baseline's config (3 chunks of 2 runs): its compiled program is reused
    out = tmp_path / "r.npz"

    def stop(i, n):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(cfg, out=out, progress=False, on_chunk=stop)
    capsys.readouterr()
    ch.run_sweep(cfg, out=out, progress=True)
    assert "resumed 1 chunk(s) from checkpoints" in capsys.readouterr().err


def test_progress_bar_says_resumed_from_a_snapshot(tmp_path, monkeypatch, capsys):
    # 3 segments of 40 epochs, test_crash_inside_a_chunk_resumes_from_its_snapshot's config:
    # its compiled segment is reused
    monkeypatch.setattr(adam_sweep, "SEGMENT_EPOCHS", 40)
    cfg = CFG.replace(
        solver=dict(max_epochs=120, min_epochs=120), sweep=dict(P=(2, 4), chunk_runs=4)
    )
    real, calls = adam_sweep.run_segment, []

    def crash_on_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(adam_sweep, "run_segment", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        ch.run_sweep(cfg, out=tmp_path / "r.npz", progress=False, snapshot_every_s=0.0)
    capsys.readouterr()
    ch.run_sweep(cfg, out=tmp_path / "r.npz", progress=True, snapshot_every_s=0.0)
    assert "resumed from a snapshot (1 segment(s) done)" in capsys.readouterr().err


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


@pytest.mark.bad_input
def test_bad_types_are_value_errors(tmp_path, monkeypatch):

    monkeypatch.setattr(programs_mod, "Trainer", no_work)
    with pytest.raises(ValueError, match=r"snapshot_every_s must be >= 0 seconds \(a number"):
        ch.run_sweep(SHORT_TINY, snapshot_every_s="abc", progress=False)
    with pytest.raises(ValueError, match="out must be a file path"):
        ch.run_sweep(SHORT_TINY, out=123, progress=False)
    with pytest.raises(ValueError, match="a result path must be a str or path"):
        SweepResult.load(123)
    assert ch.ModelConfig(engine="reduced", width=np.float32("inf")).width == float("inf")
