"""plots/embeddings.py: the embedding studies' figures from the committed result JSON, and the
uniform-shrink prediction they draw."""

import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from copyhead_jax.plots import figure_problems
from copyhead_jax.plots.embeddings import (
    SHRINK,
    embeddings_posterior_figure,
    embeddings_protocol_figure,
    lr_cumsum,
)
from tests.helpers import checked_figure

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"


def _load(name: str) -> dict:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no {path}")
    return json.loads(path.read_text())


def test_lr_cumsum_is_the_schedules_sum():
    assert SHRINK == pytest.approx(2 * math.sqrt(2 / math.pi))
    assert lr_cumsum(np.array([0, 10, 2000]), "linear") == pytest.approx([0.0, 1e-4, 2e-2])
    # softmax: a linear warm-up over the first 200 epochs (lr * t / 200 at epoch t)
    assert lr_cumsum(np.array([200]), "softmax")[0] == pytest.approx(1e-5 * 199 / 2)


@pytest.mark.parametrize(
    ("name", "draw", "title"),
    [
        ("embeddings_protocol", embeddings_protocol_figure, "(a) embedding Gram change"),
        ("embeddings_posterior", embeddings_posterior_figure, "(a) posterior embedding Gram"),
    ],
)
def test_figures_have_two_panels(name, draw, title):
    fig = draw(_load(name))
    problems = figure_problems(fig)
    axes = list(fig.axes)
    plt.close(fig)
    assert not problems, "\n".join(problems)
    assert len(axes) == 2 and axes[0].get_title().startswith(title)
    assert axes[1].get_title().startswith("(b)")


def test_embeddings_width_figure_draws_both_maps_per_width():
    """Two panels: P* of the joint and quenched MAP against the width, and aG(P) per width."""
    from copyhead_jax.plots import embeddings_width_figure

    P = [100, 200, 400]
    side = {"cG": [[0.0, 0.0], [0.1, 0.2], [2.0, 2.1]]}
    att = lambda: {
        "P": P,
        "joint": side,
        "quenched": side,  # noqa: E731
        "points": {
            "joint": {"P_aG": {"P_star": 300.0}, "P_c1": {}, "P_cG": {}},
            "quenched": {"P_aG": {"P_star": 250.0}, "P_c1": {}, "P_cG": {}},
        },
    }
    r = {
        "widths": {str(w): {"softmax": att(), "linear": att()} for w in (64, 1000)},
        "theory_ek": {"P_aG": 613.0, "P_c1": None, "P_cG": None},
    }
    axes = checked_figure(embeddings_width_figure(r))
    assert len(axes) == 2 and len(axes[1].get_lines()) == 3  # two widths + the quenched one
