"""The copyhead command: P-grid parsing, errors with exit code 2, sweep/show/plot round trip."""

import re
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import build_parser, main, parse_P_grid, sweep_paths


def test_P_grid_forms():
    assert parse_P_grid("4,8,16") == (4, 8, 16)
    g = parse_P_grid("4:1000:24log")
    assert g[0] == 4 and g[-1] == 1000 and len(g) == 24
    assert np.all(np.diff(np.log(g)) > 0)
    assert parse_P_grid("10:100:10lin") == tuple(range(10, 101, 10))
    for bad in ("4:1000", "0:10:3log", "10:4:3log", "a,b"):
        with pytest.raises(ValueError, match="P grid"):
            parse_P_grid(bad)


@pytest.mark.parametrize(
    "argv, match",
    [
        (["sweep", "--preset", "huge"], "preset must be one of"),
        (["sweep", "--preset", "tiny", "--L", "1"], r"TaskConfig\.L must be an int in \[2, 4096\]"),
        (["sweep", "--preset", "tiny", "--lr", "-1"], r"AdamConfig\.lr must be a real number"),
        (["sweep", "--preset", "tiny", "--exact-gtol", "1e-6"],
         r"--exact-gtol is a setting of the exact solver; this sweep's solver is adam"),
        (["sweep", "--preset", "paper-map", "--lr", "0.1"],
         r"--lr is a setting of the adam solver; this sweep's solver is exact"),
        (["sweep", "--preset", "tiny", "--engine", "reduced", "--width", "64", "--max-epochs",
          "9"], r"--max-epochs is a setting of the adam solver"),
        (["sweep", "--preset", "tiny", "--solver", "exact"], r"needs ModelConfig\.engine="),
        (["sweep", "--preset", "tiny", "--sigma2", "0"], r"PosteriorConfig\.sigma2"),
        (["sweep", "--preset", "tiny", "--n-seeds", "0"], r"SweepConfig\.n_seeds"),
        (["sweep", "--preset", "tiny", "--width", "0"], r"ModelConfig\.width"),
        (["show", "nonexistent.npz"], "does not exist"),
    ],
)
def test_bad_input_exits_2_with_message(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "copyhead: error:" in err
    import re

    assert re.search(match, err), err


def test_bad_P_grid_and_attention_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--P", "10:4:3log"])
    assert e.value.code == 2 and "P grid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "--attention", "relu"])


def test_sweep_show_plot_round_trip(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["sweep", "--preset", "tiny", "--attention", "both", "--P", "2,4", "--n-seeds", "1",
            "--max-epochs", "40", "--min-epochs", "10", "--out", str(out), "--quiet",
            "--no-theory"]  # fmt: skip
    assert main(argv) == 0
    for f in ("sweep_linear.npz", "sweep_softmax.npz", "sweep.png"):
        assert (out / f).stat().st_size > 0
    assert main(["show", str(out / "sweep_linear.npz")]) == 0
    assert "linear attention" in capsys.readouterr().out
    png = tmp_path / "fig.png"
    assert main(["plot", str(out / "sweep_linear.npz"), str(out / "sweep_softmax.npz"),
                 "--out", str(png), "--curves"]) == 0  # fmt: skip
    assert png.stat().st_size > 0
    assert (tmp_path / "fig_curves_softmax.png").exists()


def test_exact_sweep_runs_both_softmax_branches_and_prints_the_P_star_table(tmp_path, capsys):
    # under the exact solver softmax is started on both branches (P*_aG is where their U
    # cross), the table compares with the EK theory, and the progress bar counts runs
    out = tmp_path / "ex"
    argv = ["sweep", "--preset", "tiny", "--engine", "reduced", "--attention", "softmax",
            "--P", "4,8", "--n-seeds", "1", "--out", str(out), "--no-plot"]  # fmt: skip
    assert main(argv) == 0
    for f in ("sweep_softmax.npz", "sweep_softmax_copy.npz"):
        assert (out / f).exists()
    inits = {ch.SweepResult.load(out / f).config.train.init_attention
             for f in ("sweep_softmax.npz", "sweep_softmax_copy.npz")}  # fmt: skip
    assert inits == {"zero", "copy"}
    cap = capsys.readouterr()
    assert "# P* at N = 16" in cap.out and "softmax copy transition P*_aG" in cap.out
    assert "EK theory" in cap.out
    assert "2/2 runs" in cap.err


def test_bool_config_flags_take_both_spellings():
    p = build_parser()
    parse = lambda *a: p.parse_args(["sweep", *a]).train_embeddings  # noqa: E731
    assert (parse(), parse("--train-embeddings"), parse("--no-train-embeddings")) == (
        None, True, False)  # fmt: skip
    assert (parse("--train-embeddings", "false"), parse("--train-embeddings", "yes")) == (
        False, True)  # fmt: skip


def test_every_subcommand_help_ends_with_examples():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in ("sweep", "polish", "show", "plot", "sample"):
        text = sub.choices[name].format_help()
        assert "examples:" in text and f"copyhead {name}" in text.split("examples:")[1], name


# issue 14, item 7 -------------------------------------------------------------------------------


def _sweep_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return parser, sub.choices["sweep"]


def test_every_sweep_flag_has_help_with_default_and_allowed_values():
    _, p = _sweep_parser()
    config_flags = [a for g in p._action_groups if g.title.endswith("config")
                    for a in g._group_actions]  # fmt: skip
    assert len(config_flags) > 30
    for a in config_flags:
        if a.dest in ("attention",):
            assert a.choices
            continue
        assert a.help and "default" in a.help, a.option_strings
    helps = {a.dest: a.help for a in config_flags}
    assert "an int in [1, 65536]" in helps["width"] and "small 128" in helps["width"]
    assert "one of 'raw', 'mup'" in helps["lr_scaling"] and "tiny mup" in helps["lr_scaling"]
    assert "paper-map True" in helps["exact_continuation"]
    assert p.format_help()  # every help string formats (no stray %)


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and ch.__version__ in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1e-3", "-1E+2", "-.5", "-2"])
def test_negative_numbers_are_values(value):
    parser, _ = _sweep_parser()
    a = parser.parse_args(["sweep", "--init-copy-logit", value, "--lr", value])
    assert a.init_copy_logit == a.lr == float(value)


@pytest.mark.parametrize(
    "flags, solver",
    [
        ([], ch.TINY.train.solver),
        (["--engine", "reduced", "--width", "64"], ch.TINY.train.solver),  # auto: exact there
        (["--max-epochs", "50"], ch.AutoConfig(adam=ch.AdamConfig(
            lr=2e-2, lr_scaling="mup", schedule="cosine", min_epochs=20, max_epochs=50,
            patience=20))),
        (["--engine", "reduced", "--width", "64", "--exact-continuation", "--exact-gtol", "1e-7"],
         ch.AutoConfig(adam=ch.TINY.train.solver.adam,
                       exact=ch.ExactConfig(gtol=1e-7, continuation=True))),
        (["--solver", "adam", "--lr", "0.5"],
         ch.AdamConfig(lr=0.5, lr_scaling="mup", schedule="cosine", min_epochs=20,
                       max_epochs=200, patience=20)),
        (["--solver", "exact", "--engine", "reduced", "--width", "64", "--exact-max-steps", "9"],
         ch.ExactConfig(max_steps=9)),
    ],
)  # fmt: skip
def test_solver_flags_build_the_typed_solver(flags, solver):
    """``--solver`` and its flags give the solver config, the preset's numbers kept."""
    from copyhead_jax.cli import config_from_args

    parser, _ = _sweep_parser()
    args = parser.parse_args(["sweep", "--preset", "tiny", *flags])
    assert config_from_args(args, "softmax").train.solver == solver


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
