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

REAL_FLAGS = [
    (path, a.option_strings[0], a.nargs)
    for path, p in parser_tree(build_parser())
    for a in p._actions
    if a.type is finite_float and a.option_strings
]


def test_every_real_flag_is_finite_checked():
    """No command parses a real number with plain ``float`` (which takes nan and inf)."""
    plain = [
        (path, a.option_strings)
        for path, p in parser_tree(build_parser())
        for a in p._actions
        if a.type is float
    ]
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
@hyp.given(
    x=st.floats(allow_nan=True, allow_infinity=True),
    word=st.sampled_from(["nan", "inf", "-inf", "NaN", "1e400", "-1e999", "thirty"]),
)
def test_finite_float_accepts_exactly_the_finite_numbers(x, word):
    if math.isfinite(x):
        assert finite_float(repr(x)) == x
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            finite_float(repr(x))
    with pytest.raises(argparse.ArgumentTypeError):
        finite_float(word)


@pytest.mark.parametrize(
    "path, flag, nargs", REAL_FLAGS, ids=[" ".join((*p, f)) for p, f, _ in REAL_FLAGS]
)
def test_a_non_finite_value_is_refused_naming_the_flag(path, flag, nargs, capsys):
    n = nargs if isinstance(nargs, int) else 1
    values = ["inf"] if n == 1 else ["1"] * (n - 1) + ["inf"]
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(
            [*path, *(["X"] if path[-1] in POSITIONAL else []), flag, *values]
        )
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err and "finite" in err, err


#: commands whose first argument is a positional file
POSITIONAL = {"sample", "llc", "show", "plot", "polish"}


# every refusal of a value names the flag as typed (the API's validators name the field; the
# command rewrites it in one place, cli/refusals.py), over every command and value-taking flag


class _Started(BaseException):
    """The command accepted its values and began its work (a stub ends it there)."""


def _started(*a, **k):
    raise _Started


#: every command's work, stubbed: a value is refused before it, or accepted
WORK = [
    ("copyhead_jax.sweep.run", "run_sweep"),
    ("copyhead_jax.sampling.run", "run_sampler"),
    ("copyhead_jax.sampling.run", "default_starts"),
    ("copyhead_jax.sampling.llc_runs", "llc_runs"),
    ("copyhead_jax.fit.polish", "polish"),
    ("copyhead_jax.transition.search", "transition"),
    ("copyhead_jax.transition.search", "theory_points"),
    ("copyhead_jax.transition.profile", "profile_transition"),
    ("copyhead_jax.theory.points", "transition_points"),
    ("copyhead_jax.theory.minima", "theory_curve"),
    ("copyhead_jax.theory.minima", "landscape"),
    ("copyhead_jax.theory.scaling", "scaling_table"),
    ("copyhead_jax.theory.bayes", "bayes_points"),
    ("copyhead_jax.theory.bayes", "scaling_table"),
    ("copyhead_jax.theory.sensitivity", "sensitivity"),
    ("copyhead_jax.theory.sensitivity", "fit"),
    ("copyhead_jax.theory.beyond", "beyond_points"),
]
#: flags that take a path (a drawn value would be a file name, not a bad value)
PATH_DESTS = {"config", "out", "netcdf", "tokens"}
#: flags a command needs, with a good value
REQUIRED = {("theory", "fit"): {"--target": "P_aG=300", "--free": "sigma2"}}

BAD_VALUE = st.one_of(
    st.integers(max_value=-1),
    st.integers(min_value=10**9),
    st.just(0),
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e9, allow_nan=False, allow_infinity=False),
    st.sampled_from(["bogus", "1,2,x", "-1e999"]),
).map(str)


def _valued(p) -> list[str]:
    return [
        a.option_strings[0]
        for a in p._actions
        if a.option_strings
        and a.nargs != 0
        and a.dest not in PATH_DESTS
        and a.help != argparse.SUPPRESS
        and a.dest != "help"
    ]


COMMANDS = [
    (path, p) for path, p in parser_tree(build_parser()) if "func" in p._defaults and _valued(p)
]


@pytest.fixture(scope="module")
def weights_file(tmp_path_factory):
    """A synthetic reduced-engine sweep with weights of the right shapes (no training): what
    sample, llc, polish and plot read before they check their flags."""
    import numpy as np

    from tests.helpers import UNCONVERGED, fake_sweep

    res = fake_sweep(UNCONVERGED)
    nP, nS, L, V = len(UNCONVERGED.sweep.P), 1, UNCONVERGED.task.L, UNCONVERGED.task.V
    n = L + V  # the reduced engine's width
    rng = np.random.default_rng(0)
    for k, shape in (("W_E", (n, V)), ("b", (n, L)), ("W_G", (n, n)), ("W_O_hat", (V, n))):
        res.arrays[f"params/{k}"] = rng.normal(size=(nP, nS, *shape)).astype(np.float32)
    return res.save(tmp_path_factory.mktemp("weights") / "sweep.npz")


@pytest.fixture
def stubbed(monkeypatch):
    import importlib

    for module, name in WORK:
        monkeypatch.setattr(importlib.import_module(module), name, _started)


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_refusal_names_the_flag_as_typed(path, parser, stubbed, request, capsys):
    """A bad value of any flag is either refused in a line naming that flag as typed (not the
    API's ``ModelConfig.width`` or ``n_chains``), or accepted; nothing else (hypothesis draws
    the flag and a value: negative, zero, huge, a word)."""
    import re

    from copyhead_jax.cli import main

    need = REQUIRED.get(path, {})
    head = [
        *path,
        *([str(request.getfixturevalue("weights_file"))] if path[-1] in POSITIONAL else []),
    ]

    @hyp.settings(
        max_examples=10,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(hyp.HealthCheck),
    )
    @hyp.given(flag=st.sampled_from(_valued(parser)), value=BAD_VALUE)
    def check(flag, value):
        rest = [x for f, v in need.items() if f != flag for x in (f, v)]
        try:
            rc = main([*head, *rest, flag, value])
        except SystemExit as e:  # argparse's refusal
            rc = e.code
        except _Started:  # accepted: its work began
            capsys.readouterr()
            return
        err = capsys.readouterr().err.strip()
        assert rc == 2, (flag, value, rc, err)  # never a run without its work stubbed
        last = err.splitlines()[-1]
        assert re.search(rf"{re.escape(flag)}(?![\w-])", last), (flag, value, last)

    check()


def test_one_name_per_concept_across_commands():
    """A concept shown under two spellings in two commands' help is a second grammar: the
    recorded-iterations flag is ``--iterations`` wherever it is shown (hidden older spellings
    parse to the same setting so that recorded commands still run)."""
    shown = {
        o
        for _, p in parser_tree(build_parser())
        for a in p._actions
        if a.help != argparse.SUPPRESS
        for o in a.option_strings
    }
    assert "--iterations" in shown and not {o for o in shown if o.endswith("-iters")} | (
        {"--iters"} & shown
    )
    transition = dict(parser_tree(build_parser()))[("transition",)]
    for old, new in (("--iters", "--iterations"), ("--window-iters", "--window-iterations")):
        assert vars(transition.parse_args([old, "7"])) == vars(transition.parse_args([new, "7"]))
