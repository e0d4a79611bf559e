"""cli/console.py: inside the command, each of the package's warnings is one ``copyhead:
warning:`` line on stderr and each progress note one ``[area HH:MM:SS]`` line, stdout untouched;
outside it, the warnings are Python's (a test's ``pytest.warns`` sees them) and the logging state
is restored."""

import logging
import re
import warnings

import pytest

import copyhead_jax as ch
from copyhead_jax.cli.console import console
from copyhead_jax.fit import polish


def test_warnings_and_notes_are_one_line_each_on_stderr(capsys):
    log = logging.getLogger("copyhead_jax.transition.search")
    with console():
        warnings.warn("3 of 6 runs diverged", ch.RunHealthWarning, stacklevel=1)
        warnings.warn("3 of 6 runs diverged", ch.RunHealthWarning, stacklevel=1)  # every time
        log.info("seed 0 P=12: kept")
        log.debug("not shown")
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[:2] == ["copyhead: warning: 3 of 6 runs diverged"] * 2, err
    assert re.fullmatch(r"\[transition \d\d:\d\d:\d\d\] seed 0 P=12: kept", lines[2]), err
    assert len(lines) == 3
    assert logging.getLogger("copyhead_jax").handlers == []  # restored
    with pytest.warns(ch.RunHealthWarning):  # outside: a plain Python warning again
        warnings.warn("x", ch.RunHealthWarning, stacklevel=1)


def test_polish_that_does_not_converge_warns(reduced):
    res = ch.SweepResult.load(reduced)
    with pytest.warns(ch.RunHealthWarning, match=r"did not converge on 2 runs"):
        out = polish(res, max_steps=1)
    assert not out["polish/converged"].any()
