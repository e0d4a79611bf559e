"""The copyhead command: P-grid parsing, errors with exit code 2, sweep/show/plot round trip."""

import numpy as np
import pytest

from copyhead_jax.cli import main, parse_P_grid


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
        (["sweep", "--preset", "tiny", "--lr", "-1"], r"TrainConfig\.lr must be a real number"),
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
