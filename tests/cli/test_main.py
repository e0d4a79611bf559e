"""The copyhead command end to end: sweep/show/plot round trip, help with examples, output
paths, errors with exit code 2, Ctrl-C, result files it refuses."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import build_parser, main, save_figure, sweep_paths
from copyhead_jax.results import SweepResult
from copyhead_jax.storage import remove_tmp_orphans
from copyhead_jax.sweep import run as sweep_mod
from tests.helpers import FAKE_CFG, fake_posterior, fake_sweep, one_line_error


def test_sweep_show_plot_round_trip(tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        *(
            "sweep --preset tiny --attention both --P 2,4 --n-seeds 1 --max-epochs "
            "40 --min-epochs 10 --out"
        ).split(),
        str(out),
        "--quiet",
        "--no-theory",
    ]
    assert main(argv) == 0
    for f in ("sweep_linear.npz", "sweep_softmax.npz", "sweep.png"):
        assert (out / f).stat().st_size > 0
    assert main(["show", str(out / "sweep_linear.npz")]) == 0
    assert "linear attention" in capsys.readouterr().out
    png = tmp_path / "fig.png"
    assert (
        main(
            [
                "plot",
                str(out / "sweep_linear.npz"),
                str(out / "sweep_softmax.npz"),
                "--out",
                str(png),
                "--curves",
            ]
        )
        == 0
    )
    assert png.stat().st_size > 0
    assert (tmp_path / "fig_curves_softmax.png").exists()


def test_exact_sweep_runs_both_softmax_branches_and_prints_the_P_star_table(tmp_path, capsys):
    # under the exact solver softmax is started on both branches (P*_aG is where their U
    # cross), the table compares with the EK theory, and the progress bar counts runs
    out = tmp_path / "ex"
    argv = [
        *(
            "sweep --preset tiny --engine reduced --attention softmax --P 4,8 --n-seeds 1 --out"
        ).split(),
        str(out),
        "--no-plot",
    ]
    assert main(argv) == 0
    for f in ("sweep_softmax.npz", "sweep_softmax_copy.npz"):
        assert (out / f).exists()
    inits = {
        ch.SweepResult.load(out / f).config.train.init_attention
        for f in ("sweep_softmax.npz", "sweep_softmax_copy.npz")
    }
    assert inits == {"zero", "copy"}
    cap = capsys.readouterr()
    assert "# P* at N = 16" in cap.out and "softmax copy transition P*_aG" in cap.out
    assert "EK theory" in cap.out
    assert "2/2 runs" in cap.err


def test_every_subcommand_help_ends_with_examples():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("sweep", "polish", "show", "plot", "sample"):
        text = sub.choices[name].format_help()
        assert "examples:" in text and f"copyhead {name}" in text.split("examples:")[1], name


# booleans and numbers as flags --------------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and ch.__version__ in capsys.readouterr().out


def test_out_paths():
    tiny = ch.TINY
    paths, png = sweep_paths("x/r.npz", "tiny", [tiny])
    assert paths == [Path("x/r.npz")] and png == Path("x/r.png")
    with pytest.raises(ValueError, match="one attention"):
        sweep_paths("r.npz", "tiny", [tiny, tiny.replace(model=dict(attention="linear"))])
    paths, _ = sweep_paths(None, "tiny", [tiny])
    assert paths[0].parent == Path("results/tiny")  # the preset as it is: plain name
    a, _ = sweep_paths(None, "tiny", [tiny.replace(sweep=dict(n_seeds=3))])
    b, _ = sweep_paths(None, "tiny", [tiny.replace(sweep=dict(n_seeds=4))])
    c, _ = sweep_paths(None, "tiny", [tiny.replace(sweep=dict(n_seeds=3))])
    assert a[0].parent != b[0].parent and a == c
    assert re.fullmatch(r"tiny-[0-9a-f]{8}", a[0].parent.name)
    lin, _ = sweep_paths(None, "tiny", [tiny.replace(model=dict(attention="linear"))])
    assert lin[0].parent == Path("results/tiny")  # the attention is in the file name
    # branch starts of an exact sweep: the preset's folder, the copy start beside the other
    soft = tiny.replace(model=dict(engine="reduced"))
    pool, copy = (soft.replace(train=dict(init_attention=i)) for i in ("zero", "copy"))
    paths, _ = sweep_paths(None, "tiny", [pool, copy], asked=soft)
    assert paths[0].parent == paths[1].parent
    assert [p.name for p in paths] == ["sweep_softmax.npz", "sweep_softmax_copy.npz"]


# bad input and crash safety (moved from test_reliability.py / test_bad_input.py)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny sweep through the CLI: ``--out FILE.npz`` (single attention), params kept, and
    a killed final write's ``.tmp`` orphan planted beforehand. Its settings are the softmax half
    of test_sweep_show_plot_round_trip's (40 epochs, at least 10): the same compiled program."""
    folder = tmp_path_factory.mktemp("run")
    out = folder / "r.npz"
    orphan = folder / ".r.npz.x1y2.tmp"
    orphan.write_bytes(b"\0" * 1000)
    old = os.umask(0o022)
    try:
        rc = main(
            [
                *(
                    "sweep --preset tiny --attention softmax --P 2,4 --n-seeds 1 "
                    "--max-epochs 40 --min-epochs 10 --out"
                ).split(),
                str(out),
                "--quiet",
                "--no-theory",
                "--keep-params",
            ]
        )
    finally:
        os.umask(old)
    assert rc == 0
    return out, orphan


def test_plot_to_an_unwritable_place_is_one_line(tmp_path, capsys):
    f = fake_sweep().save(tmp_path / "r.npz")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    one_line_error(
        capsys,
        main(["plot", str(f), "--out", str(blocker / "x.png")]),
        r"cannot write the figure|not a directory|is not a folder",
    )
    one_line_error(capsys, main(["plot", str(f), "--out", "/proc/copyhead_x.png"]), "figure")


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


def test_pdf_svg_and_theory_overlay_from_the_cli(tmp_path, monkeypatch, capsys):
    import copyhead_jax.cli.results as results_cli  # where `copyhead plot` lives

    f = fake_sweep(FAKE_CFG.replace(model=dict(attention="softmax"))).save(tmp_path / "r.npz")
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


def test_plot_curves_of_two_results_are_two_files(full, tmp_path):
    b = tmp_path / "b.npz"
    b.write_bytes(full.read_bytes())
    out = tmp_path / "fig.png"
    assert main(["plot", str(full), str(b), "--curves", "--out", str(out)]) == 0
    curves = sorted(p.name for p in tmp_path.glob("fig_curves_*.png"))
    assert curves == ["fig_curves_softmax_1.png", "fig_curves_softmax_2.png"]


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


@pytest.mark.parametrize(
    "argv, match",
    [
        (["sweep", "--preset", "huge"], "--preset must be one of"),
        (["sweep", "--preset", "tiny", "--L", "1"], r"--L must be an int in \[2, 10+\]"),
        (["sweep", "--preset", "tiny", "--V", "1"], r"--V must be an int"),
        (["sweep", "--preset", "tiny", "--lr", "-1"], r"--lr must be a real number"),
        (["sweep", "--preset", "tiny", "--lr", "-1e-3"], r"--lr must be a real"),
        (["sweep", "--preset", "tiny", "--lr", "100"], r"--lr .*\(0\.0, 10\.0\]"),
        (["sweep", "--preset", "tiny", "--sigma2", "0"], r"--sigma2 must be"),
        (["sweep", "--preset", "tiny", "--chi", "-3"], r"--chi must be"),
        (["sweep", "--preset", "tiny", "--n-seeds", "0"], r"--n-seeds must be"),
        (["sweep", "--preset", "tiny", "--width", "0"], r"--width must be"),
        (["sweep", "--preset", "tiny", "--min-epochs", "500"], r"--min-epochs must be"),
        (["sweep", "--preset", "tiny", "--likelihood", "poisson"], r"--likelihood must be one of"),
        (["sweep", "--preset", "tiny", "--b1", "1.5"], r"--b1 must be"),
        (
            ["sweep", "--preset", "tiny", "--exact-gtol", "1e-6"],
            r"--exact-gtol is a setting of the exact solver; this sweep's solver is adam",
        ),
        (
            ["sweep", "--preset", "paper-map", "--lr", "0.1"],
            r"--lr is a setting of the adam solver; this sweep's solver is exact",
        ),
        (
            "sweep --preset tiny --engine reduced --width 64 --max-epochs 9".split(),
            r"--max-epochs is a setting of the adam solver",
        ),
        (["sweep", "--preset", "tiny", "--solver", "exact"], r"ExactConfig needs --engine="),
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


def test_the_table_keeps_each_heads_theory_points():
    """The main job's table once showed "-" for the linear EK points: the softmax head's
    ``P_c1 = None`` (not its point) overwrote the linear head's 103.9. Merged in either order,
    both heads' located points survive."""
    from copyhead_jax.cli.sweep import merge_points
    from copyhead_jax.theory import TheoryParams, transition_points

    p = TheoryParams.preset("plain", L=8, V=3)
    lin, soft = transition_points(p, "linear"), transition_points(p, "softmax")
    for order in ((lin, soft), (soft, lin)):
        t: dict = {}
        for pts in order:
            merge_points(t, pts)
        assert t["P_c1"] == lin["P_c1"] and t["P_cG"] == lin["P_cG"]
        assert t["P_aG_crossover"] == soft["P_aG_crossover"]
