"""``copyhead theory ...``: JSON output, figures, argument errors."""

import argparse
import json

import jax
import pytest

from copyhead_jax.cli import main
from copyhead_jax.cli import theory as cli
from tests.helpers import no_work, one_line_error


@pytest.fixture(autouse=True)
def _strict():
    """Same promotion context as the other theory tests: their compiled programs are reused."""
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


@pytest.mark.slow
def test_points_json_has_every_key(capsys):
    cli.main(["points", "--attention", "both", "--preset", "plain", "--json"])
    out = json.loads(capsys.readouterr().out)
    for k in ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "inputs"):
        assert k in out
    assert out["inputs"]["likelihood"] == "per_sequence" and out["inputs"]["L"] == 25
    assert out["P_c1"] < out["P_cG"] and out["spinodals"][0] < out["P_aG"]


def test_points_overrides_and_empty_window(capsys):
    cli.main(["theory", "points", "--attention", "softmax", "--L", "6", "--sigma2", "30", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["P_aG"] is None and out["first_order"] is False and out["inputs"]["L"] == 6


@pytest.mark.slow
def test_figures_are_written(tmp_path, capsys):
    cli.main(
        [*"curve --attention softmax --preset plain --n-P 24 --out".split(), str(tmp_path / "c")]
    )
    cli.main(
        ["landscape", "--attention", "softmax", "--preset", "plain", "--out", str(tmp_path / "l")]
    )
    cli.main(["scaling", "--preset", "plain", "--L", "25", "--V", "5", "--attention", "softmax"])
    assert (tmp_path / "c_softmax.png").stat().st_size > 1000
    assert (tmp_path / "l_softmax.png").stat().st_size > 1000
    assert "P_aG" in capsys.readouterr().out


def test_range_parser_and_errors():
    assert cli.parse_range("10:14") == [10, 11, 12, 13, 14]
    assert cli.parse_range("10:20:5") == [10, 15, 20]
    assert cli.parse_range("3,5") == [3, 5]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_range("a:b")
    with pytest.raises(SystemExit):
        cli.main(["points", "--attention", "relu"])


# bad input (moved from test_bad_input.py)


def test_theory_curve_checks_its_figure_path_first(tmp_path, monkeypatch, capsys):
    from copyhead_jax.theory import minima

    monkeypatch.setattr(minima, "theory_curve", no_work)
    (tmp_path / "file").write_text("")
    rc = main(["theory", "curve", "--preset", "plain", "--out", str(tmp_path / "file" / "c")])
    one_line_error(capsys, rc, r"--out '.*file/c_linear\.png' is not writable")


def test_theory_scaling_checks_its_figure_path_first(tmp_path, monkeypatch, capsys):
    """The figure under a file is refused before the scaling table is computed (it took 31 s
    of theory, then failed)."""
    from copyhead_jax.theory import scaling

    monkeypatch.setattr(scaling, "scaling_table", no_work)
    (tmp_path / "file").write_text("")
    rc = main(
        [
            *"theory scaling --preset plain --L 8:12 --V 3 --out".split(),
            str(tmp_path / "file" / "s.png"),
        ]
    )
    one_line_error(capsys, rc, r"--out '.*file/s\.png' is not writable")
