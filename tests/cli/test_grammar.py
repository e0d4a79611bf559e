"""One grammar for every command's flags, checked over the whole parser tree (so a new command
or flag is covered without being named): every boolean is ``--flag`` / ``--no-flag`` taking no
value; every real-valued flag is a finite number (hypothesis draws the text: a finite number
parses to itself; ``nan``, ``inf``, ``-inf``, an overflowing literal or a word is refused by the
parser itself, before any work, in one line naming the flag)."""

import argparse
import math

import hypothesis as hyp  # a test dependency (pyproject): never skipped
import hypothesis.strategies as st
import pytest

from copyhead_jax.cli.flags import finite_float
from copyhead_jax.cli.main import build_parser
from tests.helpers import parser_tree

REAL_FLAGS = [(path, a.option_strings[0], a.nargs) for path, p in parser_tree(build_parser())
              for a in p._actions if a.type is finite_float and a.option_strings]  # fmt: skip


def test_every_real_flag_is_finite_checked():
    """No command parses a real number with plain ``float`` (which takes nan and inf)."""
    plain = [(path, a.option_strings) for path, p in parser_tree(build_parser())
             for a in p._actions if a.type is float]  # fmt: skip
    assert REAL_FLAGS and not plain, plain


def test_every_boolean_is_a_flag_and_its_negation():
    """No ``store_true`` / ``store_false`` / value-taking boolean: each boolean action is
    argparse's ``BooleanOptionalAction`` (``--x`` and ``--no-x``), and ``--x`` takes no value."""
    odd = []
    for path, p in parser_tree(build_parser()):
        pairs = {a.dest for a in p._actions if isinstance(a, argparse.BooleanOptionalAction)}
        for a in p._actions:
            alias = a.help == argparse.SUPPRESS and a.dest in pairs  # --quiet: --no-progress
            if isinstance(a, argparse._StoreTrueAction | argparse._StoreFalseAction) and not alias:
                odd.append((path, a.option_strings))
            if isinstance(a, argparse.BooleanOptionalAction):
                pos = [o for o in a.option_strings if not o.startswith("--no-")]
                assert a.nargs == 0 and len(a.option_strings) == 2 * len(pos), a.option_strings
    assert not odd, odd


@hyp.settings(max_examples=60, deadline=None, derandomize=True)
@hyp.given(x=st.floats(allow_nan=True, allow_infinity=True),
           word=st.sampled_from(["nan", "inf", "-inf", "NaN", "1e400", "-1e999", "thirty"]))
def test_finite_float_accepts_exactly_the_finite_numbers(x, word):
    if math.isfinite(x):
        assert finite_float(repr(x)) == x
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            finite_float(repr(x))
    with pytest.raises(argparse.ArgumentTypeError):
        finite_float(word)


@pytest.mark.parametrize("path, flag, nargs", REAL_FLAGS,
                         ids=[" ".join((*p, f)) for p, f, _ in REAL_FLAGS])  # fmt: skip
def test_a_non_finite_value_is_refused_naming_the_flag(path, flag, nargs, capsys):
    n = nargs if isinstance(nargs, int) else 1
    values = ["inf"] if n == 1 else ["1"] * (n - 1) + ["inf"]
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*path, *(["X"] if path[-1] in POSITIONAL else []), flag,
                                   *values])  # fmt: skip
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err and "finite" in err, err


#: commands whose first argument is a positional file
POSITIONAL = {"sample", "llc", "show", "plot", "polish"}
