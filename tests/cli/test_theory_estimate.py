"""``copyhead theory scaling`` and ``theory landscape`` say what they will cost before the work:
one ``estimate:`` line on stderr (stdout stays pure JSON under ``--json``), the configurations
or P values times one of them timed here, and a warning past an hour that names a smaller
command. The theory is stood in for (nothing compiled): the count and the arithmetic are what
is tested; that the real commands print the same numbers as before is checked by hand."""

import json

import numpy as np

from copyhead_jax.cli import main
from copyhead_jax.cli import theory_estimate as est
from copyhead_jax.theory import minima, scaling


def _timed(monkeypatch, seconds):
    """``seconds_per_run`` answers ``seconds`` in turn (the function timed is not called)."""
    it = iter(seconds)
    monkeypatch.setattr(est, "seconds_per_run", lambda fn, **kw: next(it))


def _fake_table(params, *, L_values, V_values, attention, objective):
    shape = (len(L_values), len(V_values))
    return {"L": np.asarray(L_values), "V": np.asarray(V_values), "P_c1": np.ones(shape)}


def _scaling(monkeypatch, capsys, L, unit):
    _timed(monkeypatch, [unit])
    monkeypatch.setattr(scaling, "scaling_table", _fake_table)
    monkeypatch.setattr(scaling, "scaling_fits", lambda table: {})
    argv = ["theory", "scaling", "--attention", "linear", "--L", L, "--V", "3,5", "--json"]
    assert main([*argv, "--no-plot"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_scaling_says_its_configurations_and_time_before_the_table(monkeypatch, capsys):
    res, err = _scaling(monkeypatch, capsys, "8:10", 2.0)
    assert res["table"]["L"] == [8, 9, 10]  # stdout: the one JSON document
    (line,) = [x for x in err.splitlines() if "estimate:" in x]
    assert "theory scaling, 3 L x 2 V (linear, map): 6 configurations, 12 s" in line
    assert "warning" not in err


def test_scaling_past_an_hour_warns_with_a_smaller_command(monkeypatch, capsys):
    _, err = _scaling(monkeypatch, capsys, "8:10", 1000.0)  # 6 x 1000 s = 1.7 h
    assert "6 configurations, 1.7 h" in err
    (warning,) = [x for x in err.splitlines() if x.startswith("copyhead: warning:")]
    assert "at least 1.7 h" in warning and "give fewer --L or --V values" in warning


def test_landscape_is_a_fixed_part_and_a_part_per_P(monkeypatch, capsys):
    """The landscape takes 2 s at one P and 3.5 s at two: 1.5 s per P and 0.5 s fixed (the
    curve, one bucket of 32 for up to 32 P, and the grid's operations), so three P take
    0.5 + 3 x 1.5 = 5 s."""
    _timed(monkeypatch, [2.0, 3.5])
    monkeypatch.setattr(minima, "landscape", lambda params, P, att, obj: {"P": np.asarray(P)})
    argv = ["theory", "landscape", "--attention", "softmax", "--P", "50", "60", "70"]
    assert main([*argv, "--no-plot", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["softmax"]["P"] == [50.0, 60.0, 70.0]
    (line,) = [x for x in err.splitlines() if "estimate:" in x]
    assert "theory landscape, 3 P value(s) (softmax, map): 3 P values, 5 s" in line
