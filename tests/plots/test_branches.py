"""plots/branches.py: the main, coverage and hysteresis figures drawn from the committed result
JSON, with the panels, titles and labels they promise and no reviewer's problem."""

import json
from pathlib import Path

import pytest

import copyhead_jax as ch
from copyhead_jax.plots import (
    P_LABEL,
    coverage_figure,
    hysteresis_figure,
    main_figure,
    solver_kind,
    width_name,
)
from copyhead_jax.storage import nulls_in_lists_to_nan
from tests.helpers import checked_figure

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"
needs = pytest.mark.skipif(not (RESULTS / "main_plain.json").exists(), reason="no result JSON")


def _load(name: str) -> dict:
    return nulls_in_lists_to_nan(json.loads((RESULTS / f"{name}.json").read_text()))


def test_width_name_and_solver_kind():
    assert [width_name(w) for w in ("128", "10000", "inf")] == ["128", "10,000", "inf"]
    assert solver_kind({}) is None
    for cfg in (ch.TINY, ch.preset("paper")):
        assert solver_kind({"header": {"engine": cfg.to_dict()}}) == cfg.solver.kind


@needs
def test_main_figure_has_a_panel_for_every_measured_quantity():
    res = _load("main_plain")
    assert res["curves"]["sgld_linear"] is None  # no sampler in the main artefact: no panel
    fig = main_figure(res)
    title = fig._suptitle.get_text()
    axes = checked_figure(fig)
    assert len(axes) == 5 and title.startswith("main, plain preset")
    assert all(a.get_xlabel() == P_LABEL for a in axes)
    titles = " ".join(a.get_title() for a in axes)
    for what in (
        "linear attention",
        "train and test loss",
        "objective gap",
        "subspace coverage",
        "softmax attention",
    ):
        assert what in titles
    assert "susceptibility" not in titles
    labels = [ln.get_label() for a in axes for ln in a.get_lines()]
    assert any(lab.startswith("EK $P^*_{aG}$") for lab in labels)  # the theory's P* marked
    assert any(lab.startswith("measured $P^*_{") for lab in labels)


@needs
def test_coverage_and_hysteresis_figures():
    axes = checked_figure(coverage_figure(_load("coverage_plain"), _load("main_plain")))
    assert [a.get_title() for a in axes] == [
        "linear attention",
        "softmax attention (pooling start)",
    ]
    axes = checked_figure(hysteresis_figure(_load("hysteresis_plain")))
    assert len(axes) == 3 and axes[0].get_title() == "softmax: $a_G$ from both starts"
    windows = [ln.get_label() for ln in axes[0].get_lines() if "window" in ln.get_label()]
    assert any(w.startswith("EK spinodal window") for w in windows)
