"""``--config FILE.toml`` on every command: the file's values parse exactly as the same flags
typed (over every leaf command and every flag of a simple kind), typed flags win, and a bad
file or key is one error naming the file."""

import argparse

import pytest

from copyhead_jax.cli.config_file import FLAG, expand_config_file
from copyhead_jax.cli.flags import finite_float
from copyhead_jax.cli.main import build_parser, main
from tests.helpers import parser_tree

PARSER = build_parser()


def _value(a):
    """A TOML value and the typed tokens of one action, or None for kinds not drawn here."""
    if isinstance(a, argparse.BooleanOptionalAction):
        pos = next(o for o in a.option_strings if not o.startswith("--no-"))
        return False, ["--no-" + pos[2:]]
    if a.nargs not in (None, "?") or a.option_strings[0] in (FLAG, "--help", "--version"):
        return None
    if a.choices:
        c = list(a.choices)[-1]
        return c, [a.option_strings[0], str(c)]
    if a.type is finite_float:
        return 0.5, [a.option_strings[0], "0.5"]
    if a.type is int:
        return 3, [a.option_strings[0], "3"]
    if a.type in (None, str):
        return "out_dir", [a.option_strings[0], "out_dir"]
    return None


def _positionals(p):
    return [
        a.metavar or a.dest
        for a in p._actions
        if not a.option_strings and a.required and not isinstance(a, argparse._SubParsersAction)
    ]


LEAVES = [
    (path, p)
    for path, p in parser_tree(PARSER)
    if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
]
#: required flags of a custom kind, typed on both sides
REQUIRED = {("theory", "fit"): ["--target", "P_aG=300", "--free", "sigma2"]}


@pytest.mark.parametrize("path,leaf", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_a_file_parses_like_the_typed_flags(tmp_path, path, leaf):
    keys, typed = {}, []
    for a in leaf._actions:
        if a.option_strings and (v := _value(a)) is not None:
            keys[a.option_strings[0][2:]] = v[0]
            typed += v[1]
    assert keys or path == ("show",), path  # every command but show has a flag to set
    toml = tmp_path / "c.toml"
    toml.write_text("\n".join(f"{k.replace('-', '_')} = {_toml(v)}" for k, v in keys.items()))
    pos = [f"x{i}.npz" for i, _ in enumerate(_positionals(leaf))] + REQUIRED.get(path, [])
    want = PARSER.parse_args([*path, *typed, *pos])
    got = PARSER.parse_args(expand_config_file(PARSER, [*path, FLAG, str(toml), *pos]))
    assert vars(got) == vars(want)


def _toml(v):
    return (
        ("true" if v else "false")
        if isinstance(v, bool)
        else repr(v)
        if isinstance(v, str)
        else str(v)
    )


def test_typed_flags_win_and_tables_only_group(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('preset = "plain"\n[task]\nL = 8\nV = 3\n[model]\nattention = "softmax"\n')
    args = PARSER.parse_args(
        expand_config_file(PARSER, ["theory", "points", FLAG, str(f), "--L", "9"])
    )
    assert (args.preset, args.L, args.V, args.attention) == ("plain", 9, 3, "softmax")


@pytest.mark.parametrize(
    "text,msg",
    [
        ("foo = 3", "unknown key 'foo'"),
        ("L = [", "not TOML"),
        ("json = 3", "is on/off"),
        ("L = true", "takes a value"),
    ],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path, capsys, text, msg):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    assert main(["theory", "points", FLAG, str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(f) in err and msg in err
    assert main(["theory", "points", FLAG, str(tmp_path / "missing.toml")]) == 2
    assert "cannot read it" in capsys.readouterr().err
