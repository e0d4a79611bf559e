"""plots/pstar.py: P* versus L or V (the scaling figure) and versus the stickiness rho, drawn
from the committed result JSON."""

import json
from pathlib import Path

import pytest

from copyhead_jax.plots import (
    beyond_curves_figure,
    beyond_pstar_figure,
    branch_follow_figure,
    scaling_figure,
)
from copyhead_jax.storage import nulls_in_lists_to_nan
from tests.helpers import checked_figure

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"


def _load(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no {path}")
    return nulls_in_lists_to_nan(json.loads(path.read_text()))


@pytest.mark.parametrize("axis", ["L", "V"])
def test_scaling_figure_has_two_phase_diagrams_and_the_fits(axis):
    axes = checked_figure(scaling_figure(_load(f"scaling-{axis}_plain")))
    main = [a for a in axes if a.get_title()]  # the colour bars have none
    assert [a.get_title() for a in main] == [
        "linear: EK copy fraction $\\psi$",
        "softmax: EK $a_G$",
        "$P^*$ and fitted exponents",
    ]
    assert len(axes) == 5  # and two colour bars
    labels = [ln.get_label() for ln in main[2].get_lines()]
    assert any("exponent" in lab and lab.startswith("measured") for lab in labels)


@pytest.mark.parametrize("which", ["markov", "causal"])
def test_beyond_figures(which):
    res = _load(which)
    axes = checked_figure(beyond_pstar_figure(res))
    assert len(axes) == 2 and axes[0].get_xlabel() == r"stickiness $\rho$"
    axes = checked_figure(beyond_curves_figure(res))
    assert [a.get_ylabel() for a in axes] == [r"linear $c_G$", r"softmax $a_G$ (up: -, down: --)"]
    assert len(axes[0].get_lines()) >= len(res["rows"])  # a theory line per rho


def test_branch_follow_figure_has_a_panel_per_followed_grid():
    """The committed markov-follow JSON: one panel per followed grid, each seed's up and down
    pass drawn (two lines per seed), labelled axes (the figure checks)."""
    res = _load("markov-follow")
    grids = [f for r in res["rows"] for f in r.get("followed", [])]
    axes = checked_figure(branch_follow_figure(res["rows"]))
    assert len(axes) == len(grids)
    for ax, f in zip(axes, grids):
        n_seeds = len(f["up"]["aG"][0])
        passes = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(f["P"])]
        assert len(passes) == 2 * n_seeds
