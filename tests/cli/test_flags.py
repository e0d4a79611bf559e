"""cli/flags.py: the P-grid forms, one flag per config field with its help, both spellings of
bool flags, negative numbers as values, the typed solver from its flags."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import build_parser, main, parse_P_grid


def test_P_grid_forms():
    assert parse_P_grid("4,8,16") == (4, 8, 16)
    g = parse_P_grid("4:1000:24log")
    assert g[0] == 4 and g[-1] == 1000 and len(g) == 24
    assert np.all(np.diff(np.log(g)) > 0)
    assert parse_P_grid("10:100:10lin") == tuple(range(10, 101, 10))
    for bad in ("4:1000", "0:10:3log", "10:4:3log", "a,b"):
        with pytest.raises(ValueError, match="P grid"):
            parse_P_grid(bad)


def test_bad_P_grid_and_attention_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sweep", "--P", "10:4:3log"])
    assert e.value.code == 2 and "P grid" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", "--attention", "relu"])


def test_bool_config_flags_are_a_flag_and_its_negation(capsys):
    p = build_parser()
    parse = lambda *a: p.parse_args(["sweep", *a]).train_embeddings  # noqa: E731
    assert (parse(), parse("--train-embeddings"), parse("--no-train-embeddings")) == (
        None,
        True,
        False,
    )
    with pytest.raises(SystemExit):  # a value is not part of the grammar any more
        parse("--train-embeddings", "false")
    assert "unrecognized arguments: false" in capsys.readouterr().err


# booleans and numbers as flags --------------------------------------------------------------------


def _sweep_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return parser, sub.choices["sweep"]


def test_every_sweep_flag_has_help_with_default_and_allowed_values():
    _, p = _sweep_parser()
    config_flags = [
        a for g in p._action_groups if g.title.endswith("config") for a in g._group_actions
    ]
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
        (
            ["--max-epochs", "50"],
            ch.AutoConfig(
                adam=ch.AdamConfig(
                    lr=2e-2,
                    lr_scaling="mup",
                    schedule="cosine",
                    min_epochs=20,
                    max_epochs=50,
                    patience=20,
                )
            ),
        ),
        (
            [
                "--engine",
                "reduced",
                "--width",
                "64",
                "--exact-continuation",
                "--exact-gtol",
                "1e-7",
            ],
            ch.AutoConfig(
                adam=ch.TINY.train.solver.adam, exact=ch.ExactConfig(gtol=1e-7, continuation=True)
            ),
        ),
        (
            ["--solver", "adam", "--lr", "0.5"],
            ch.AdamConfig(
                lr=0.5,
                lr_scaling="mup",
                schedule="cosine",
                min_epochs=20,
                max_epochs=200,
                patience=20,
            ),
        ),
        (
            ["--solver", "exact", "--engine", "reduced", "--width", "64", "--exact-max-steps", "9"],
            ch.ExactConfig(max_steps=9),
        ),
    ],
)
def test_solver_flags_build_the_typed_solver(flags, solver):
    """``--solver`` and its flags give the solver config, the preset's numbers kept."""
    from copyhead_jax.cli import config_from_args

    parser, _ = _sweep_parser()
    args = parser.parse_args(["sweep", "--preset", "tiny", *flags])
    assert config_from_args(args, "softmax").train.solver == solver


# bad input and crash safety (moved from test_reliability.py / test_bad_input.py)


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["sweep", "--width", "-inf"], "--width"),
        (["sweep", "--width", "-4"], "--width"),
        (["sweep", "--P", "-4,8"], "--P"),
        (["transition", "--width", "-inf"], "--width"),
        (["transition", "--method", "ti", "--P", "-4,8"], "--P"),
        (["transition", "--method", "ti", "--P", "8,100000000"], "--P"),
        (["sweep", "--P", "8,100000000"], "--P"),
        (["sweep", "--width", "16,16"], "--width"),
        (["sweep", "--preset", "small", "--lr", "-1e-3"], "--lr"),
    ],
)
def test_negative_duplicate_and_huge_values_are_refused_with_the_range(
    argv, flag, capsys, monkeypatch
):
    """A value with a minus sign reaches its option's check (argparse would read ``-4,8`` or
    ``-inf`` as another option: "expected one argument"), which refuses it in one line naming
    the flag and its range; a width listed twice is refused (it would run the same sweep twice
    into one file); a grid past its range is refused before the theory places the grid."""
    from copyhead_jax.cli import sweep as sweep_cli
    from copyhead_jax.transition import search
    from tests.helpers import no_work

    monkeypatch.setattr(sweep_cli, "run_sweep", no_work, raising=False)
    monkeypatch.setattr(search, "theory_points", no_work)
    try:
        rc = main([*argv, "--quiet"])
    except SystemExit as e:  # argparse's own refusal (a type function's)
        rc = e.code
    err = capsys.readouterr().err.strip()
    last = err.splitlines()[-1]  # argparse prints its usage above
    assert rc == 2 and "expected one argument" not in err and "Traceback" not in err, err
    assert flag in last and any(w in last for w in ("[1,", ">= 1", "(0.0,", "once")), err


def test_polish_names_the_solver_of_the_fit_it_polished():
    from copyhead_jax.fit import polish_table
    from tests.helpers import fake_sweep

    for engine, solver in (("full", ch.AdamConfig()), ("reduced", ch.ExactConfig())):
        cfg = ch.TINY.replace(
            sweep=dict(P=(2, 4), n_seeds=1), model=dict(engine=engine), train=dict(solver=solver)
        )
        res = fake_sweep(cfg)
        shape = res["U"].shape
        res = res.replace(
            arrays={
                **res.arrays,
                **{
                    f"polish/{k}": np.ones(shape)
                    for k in ("U", "c1", "cG", "a1", "aG", "dU", "rel_grad", "min_eig", "converged")
                },
            }
        )
        table = polish_table(res)
        assert f"{res.order_names[0]} {solver.kind}" in table, table
        assert ("adam" in table) == (solver.kind == "adam"), table
