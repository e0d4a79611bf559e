"""No command can write an output over one of its inputs. Every (sub)command of the parser
declares the paths it writes and reads (its ``paths``: results, their locks and chunk folders,
figures, netCDF, the transition's files), and ``cli.main`` checks them as one set before any
work (``_checks.check_paths``). Over every command (walked from the parser, so a new command is
covered without being named), hypothesis draws its path arguments from paths that collide with
its inputs in every known way (the same file, a case variant, a file under an input, a folder
holding an input that the command would remove, a sibling it reads, a folder); whatever passes
the check writes nothing over, under or around an input, and whatever does not is refused in
one line before the command's work starts."""

import argparse
import os
from pathlib import Path

import hypothesis as hyp  # a test dependency (pyproject): never skipped
import hypothesis.strategies as st
import numpy as np
import pytest

from copyhead_jax import Output, check_paths, same_path
from copyhead_jax.cli.main import build_parser, main
from tests.helpers import fake_posterior, fake_sweep, no_work, parser_tree


def _leaves():
    return [
        (path, p)
        for path, p in parser_tree(build_parser())
        if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
    ]


LEAVES = _leaves()
#: the arguments that name files or folders (positional files and these options)
PATH_OPTIONS = {"out", "netcdf", "tokens"}


def test_every_command_declares_what_it_writes_and_reads():
    assert len(LEAVES) >= 13  # sweep, polish, show, plot, 6 theory, sample, llc, transition
    for path, p in LEAVES:
        assert callable(p._defaults.get("paths")), f"copyhead {' '.join(path)} has no paths"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Inputs of every kind, and candidate paths that collide with them."""
    d = tmp_path_factory.mktemp("paths")
    sweep = fake_sweep().save(d / "sweep_softmax.npz")
    fake_sweep().save(d / "sweep_softmax_copy.npz")  # a sibling llc reads
    post = fake_posterior().save(d / "sweep_softmax_posterior.npz")
    np.save(d / "tok.npy", np.zeros((4, 3), int))
    (d / "dir").mkdir()
    inputs = {"sweep": str(sweep), "post": str(post), "tokens": str(d / "tok.npy")}
    names = (
        "sweep_softmax.npz SWEEP_SOFTMAX.NPZ sweep_softmax.npz/x.png "
        "sweep_softmax.npz/x.npz sweep_softmax_copy.npz "
        "sweep_softmax_posterior.npz sweep_softmax.png "
        "sweep_softmax_posterior.png sweep_softmax.npz.chunks "
        "sweep_softmax_llc.chunks sweep_softmax_llc.chunks/x.png tok.npy "
        "tok.npy/x.npz dir dir/new.npz new.npz NEW.NPZ new.png new.nc new.pdf "
        "new sweep_softmax_posterior.npz.chunks/x.nc new.npz.chunks/x.nc "
        "new.npz.lock sweep_softmax_posterior.npz.lock"
    ).split()
    return d, inputs, [str(d / n) for n in names]


def _path_actions(p):
    """The actions of parser ``p`` that take a path: positional files and PATH_OPTIONS."""
    return [
        a
        for a in p._actions
        if (not a.option_strings and a.dest != "help")
        or (a.option_strings and a.dest in PATH_OPTIONS)
    ]


#: the flags a command cannot parse without
REQUIRED = {("theory", "fit"): ["--target", "P_aG=300", "--free", "sigma2"]}


def _argv(path, p, draw, inputs, candidates):
    argv = [*path, *REQUIRED.get(path, [])]
    for a in _path_actions(p):
        if not a.option_strings:  # the files read: inputs, and sometimes a candidate
            pool = [inputs["sweep"], inputs["post"], *candidates[:3]]
            n = 1 if a.nargs is None else draw(st.integers(1, 2))
            argv += [draw(st.sampled_from(pool)) for _ in range(n)]
        elif draw(st.booleans()):
            pool = candidates + ([inputs["tokens"]] if a.dest != "tokens" else [])
            argv += [a.option_strings[0], draw(st.sampled_from(pool))]
    if path[0] == "sample" and "--netcdf" in argv:
        argv += ["--run", "1,0"]
    return argv


def _invariants(outs: list[Output], ins: list) -> None:
    """What a passed check guarantees, stated on resolved paths (independently of the check):
    no output is an input or lies under one, no input lies in a folder the command removes, no
    two outputs coincide, and none lies under another output that is a file."""
    ins = [Path(i).resolve() for i in ins if i is not None]
    res = [(o, o.path.resolve()) for o in outs]
    for o, r in res:
        for i in ins:
            assert r != i and i not in r.parents, (o, i)
            assert not (o.removed and r in i.parents), (o, i)
            if r.exists() and i.exists():
                assert not os.path.samefile(r, i), (o, i)
    for j, (a, ra) in enumerate(res):
        for b, rb in res[j + 1 :]:
            assert ra != rb, (a, b)
            assert not (rb in ra.parents and not b.folder), (a, b)
            assert not (ra in rb.parents and not a.folder), (a, b)


@pytest.mark.parametrize("path, parser", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
@hyp.settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[hyp.HealthCheck.function_scoped_fixture],
)
@hyp.given(data=st.data())
def test_no_command_writes_over_its_inputs(path, parser, data, world, capsys):
    d, inputs, candidates = world
    argv = _argv(path, parser, data.draw, inputs, candidates)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        capsys.readouterr()
        hyp.assume(False)
    try:
        outs, ins = args.paths(args)
        check_paths(outs, ins)
    except ValueError:
        return  # refused: main says it in one line before any work (the test below)
    _invariants(outs, ins)
    named = [Path(a) for f in ("out", "netcdf") if (a := getattr(args, f, None)) is not None]
    planned = [o.path.resolve() for o in outs]
    if path[0] == "theory":  # --out is a figure's stem, drawn only on some scans
        named = named if planned else []
    for n in named:  # a path given on the command line is among what it plans to write
        # (itself, a folder it fills, or the stem of its figures)
        assert any(same_path(n, q) or str(q).startswith(str(n.resolve())) for q in planned), (
            argv,
            planned,
        )


COLLISIONS = {
    ("sweep",): ["--tokens", "{d}/tok.npy", "--out", "{d}/tok.npy"],
    ("polish",): ["{d}/sweep_softmax.npz", "--out", "{d}/sweep_softmax.npz"],
    ("show",): None,  # writes nothing
    ("plot",): ["{d}/sweep_softmax.npz", "--out", "{d}/sweep_softmax.npz/x.png"],
    ("sample",): [
        "{d}/sweep_softmax.npz",
        "--out",
        "{d}/new.npz",
        "--netcdf",
        "{d}/new.npz.chunks/x.nc",
        "--run",
        "1,0",
    ],
    ("llc",): ["{d}/sweep_softmax.npz", "--out", "{d}/sweep_softmax_copy.npz"],
    ("transition",): ["--out", "{d}/sweep_softmax.npz"],
}


@pytest.mark.parametrize("path, parser", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_a_collision_is_refused_in_one_line_before_any_work(
    path, parser, world, capsys, monkeypatch
):
    """Each command with a path to write, given one that collides (the theory commands: a
    figure under a file), ends with exit 2 and one line; its work never starts."""
    import importlib

    cli_main = importlib.import_module("copyhead_jax.cli.main")  # the module, not main()
    d, _, _ = world
    build = cli_main.build_parser

    def parser_without_work():
        p = build()
        for _, leaf in parser_tree(p):
            if "func" in leaf._defaults:
                leaf.set_defaults(func=no_work)
        return p

    monkeypatch.setattr(cli_main, "build_parser", parser_without_work)
    argv = COLLISIONS.get(path, [])
    if path[0] == "theory":
        if not any(a.dest == "out" for a in parser._actions):
            return  # writes nothing
        argv = (
            ["--out", f"{d}/sweep_softmax.npz/fig", "--L", "4,5"]
            if path[1] == "scaling"
            else ["--out", f"{d}/sweep_softmax.npz/fig"]
        )
    if argv is None:
        return
    argv = [*path, *(x.format(d=d) for x in argv)]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("copyhead: error:") and err.strip().count("\n") == 0, err
    assert str(d) in err, err


def test_paths_differing_in_case_collide_on_a_case_insensitive_file_system(tmp_path):
    f = fake_sweep().save(tmp_path / "r.npz")
    out = Output("--out", tmp_path / "R.NPZ", suffixes=(".npz",))
    check_paths([out], [f])  # this file system tells case apart (tmp_path's): two files
    assert not same_path(out.path, f)
    assert same_path(out.path, f, fold_case=True)  # one file on macOS' default file system
    assert not same_path(tmp_path / "S.NPZ", f, fold_case=True)


def test_a_link_to_an_input_is_the_input(tmp_path):
    f = fake_sweep().save(tmp_path / "r.npz")
    (tmp_path / "link.npz").symlink_to(f)
    (tmp_path / "dirlink").symlink_to(tmp_path)
    for o in (tmp_path / "link.npz", tmp_path / "dirlink" / "r.npz"):
        with pytest.raises(ValueError, match="is the input file"):
            check_paths([Output("--out", o, suffixes=(".npz",))], [f])


@pytest.mark.parametrize("extra", [[], ["--curves"], ["--format", "pdf"]])
def test_what_plot_writes_is_what_it_declared(extra, tmp_path):
    """The declared outputs are what the command writes (the figures a drawing command adds,
    curves or traces, included): every file it leaves was declared, and every declared figure is
    there."""
    a = fake_sweep().save(tmp_path / "a.npz")
    b = fake_sweep().save(tmp_path / "b.npz")
    post = fake_posterior().save(tmp_path / "p.npz")
    for files in ([a, b], [post]):
        before = set(tmp_path.iterdir())
        argv = ["plot", *map(str, files), "--out", str(tmp_path / "fig.png"), *extra]
        args = build_parser().parse_args(argv)
        declared = {o.path.resolve() for o in args.paths(args)[0]}
        assert main(argv) == 0
        written = {p.resolve() for p in set(tmp_path.iterdir()) - before}
        assert written == declared and len(written) >= 1 + (
            len(files) == 1 or bool(extra[:1] == ["--curves"])
        )
        for p in written:
            p.unlink()


def test_the_config_file_is_an_input(world, tmp_path, capsys):
    d, inputs, _ = world
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    for argv in (
        ["sweep", "--out", str(cfg)],
        ["plot", inputs["sweep"], "--out", str(cfg / "x.png")],
    ):
        rc = main([*argv, "--config", str(cfg)])
        err = capsys.readouterr().err
        assert rc == 2 and str(cfg) in err and "input file" in err, err
    assert cfg.read_text() == ""
