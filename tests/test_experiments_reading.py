"""``python -m experiments ARTEFACT --reading R``: the same meaning as ``--reading`` of every
``copyhead`` command (the preset's convention fields replaced by the reading's, every other
field and the artefact's grids kept), outputs named ``PRESET-READING``, and a one-line refusal
where a reading means nothing (command artefacts, artefacts built from their own records, two
presets at once, the report)."""

import dataclasses
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import experiments.main as M  # noqa: E402  (the main artefact, imported before its test)
from copyhead_jax.cli.flags import config_from_args  # noqa: E402
from copyhead_jax.cli.main import build_parser  # noqa: E402
from copyhead_jax.config import READINGS, reading_of  # noqa: E402
from experiments import common as C  # noqa: E402
from experiments.__main__ import main as experiments  # noqa: E402


@pytest.mark.parametrize("preset", C.PRESET_NAMES)
@pytest.mark.parametrize("reading", list(READINGS))
def test_a_reading_replaces_the_conventions_as_on_the_command_line(preset, reading, tmp_path):
    base = C.load_spec("paper", preset, "scaling-L", tmp_path)
    spec = C.load_spec("paper", preset, "scaling-L", tmp_path, reading)
    assert reading_of(spec.engine) == reading and spec.settings == base.settings
    # the fields a reading names are copyhead sweep --preset paper --reading R's; no other moved
    cli = config_from_args(
        build_parser().parse_args(["sweep", "--preset", "paper", "--reading", reading])
    )
    for sec, fields in READINGS[reading].items():
        for k in fields:
            assert getattr(getattr(spec.engine, sec), k) == getattr(getattr(cli, sec), k)
    named = {k for f in READINGS.values() for kv in f.values() for k in kv}
    for sec in ("task", "model", "posterior", "train", "sweep"):
        a, b = (
            dataclasses.asdict(getattr(spec.engine, sec)),
            dataclasses.asdict(getattr(base.engine, sec)),
        )
        assert {k for k in a if a[k] != b[k]} <= named, sec
    own = reading_of(base.engine) == reading  # the preset's own reading: the same spec
    assert spec.preset == (preset if own else f"{preset}-{reading}")
    assert (spec.engine == base.engine) == own
    main = C.sibling_spec(spec, "main")  # an ablation reuses the main runs of its own reading
    assert main.engine.posterior == spec.engine.posterior and main.preset == spec.preset


def test_the_runner_runs_an_artefact_under_the_reading(tmp_path, monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(M, "main", lambda spec, out, **kw: seen.append(spec) or {})
    argv = [
        *"main --tiny --preset paper --reading chi-lik --jobs 1 --out".split(),
        str(tmp_path / "o"),
        "--cache",
        str(tmp_path / "c"),
    ]
    assert experiments(argv) == 0
    (spec,) = seen
    assert spec.preset == "paper-chi-lik" and reading_of(spec.engine) == "chi-lik"
    tiny = C.load_spec("tiny", "paper", "main", tmp_path)
    assert spec.engine.model == tiny.engine.model and spec.settings == tiny.settings
    assert "main (paper under chi-lik, tiny)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, why",
    [
        (["conventions", "--reading", "plain"], "conventions takes none: it measures all three"),
        (
            ["posterior", "--tiny", "--preset", "plain", "--reading", "paper"],
            "posterior takes none: its configurations come from the preset's own",
        ),
        (["main", "--tiny", "--reading", "plain"], "give --preset paper or --preset plain"),
        (["all", "--tiny", "--preset", "paper", "--reading", "plain"], "all writes the report"),
    ],
)
def test_where_a_reading_means_nothing_it_is_refused_in_one_line(argv, why, tmp_path, capsys):
    rc = experiments(
        [*argv, "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]
        if argv[0] != "conventions"
        else argv
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and why in err, err
    assert not (tmp_path / "o").exists()  # refused before any work
