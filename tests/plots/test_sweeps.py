"""plots/sweeps.py: figures fit for a paper (axis labels, legend size, one colour per attention, no
overlapping tick labels), drawn from synthetic results (no training)."""

import numpy as np
import pytest

from tests.helpers import FAKE_CFG, fake_posterior, fake_sweep


def _texts_overlap(fig, ax) -> bool:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [
        t.get_window_extent(r)
        for t in ax.get_xticklabels(which="both")
        if t.get_visible() and t.get_text()
    ]
    boxes.sort(key=lambda b: b.x0)
    return any(b.x0 < a.x1 for a, b in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("P", [(2, 4, 8, 16, 24, 32, 64, 128), (10, 12, 15, 20, 30, 50, 70)])
def test_sweep_figure_is_fit_for_a_paper(P):
    import matplotlib.pyplot as plt

    from copyhead_jax.plots.sweeps import BAND_LABEL, COLORS, LEGEND_PT, sweep_figure

    base = FAKE_CFG.replace(sweep=dict(P=P))
    res = [
        fake_sweep(base.replace(model=dict(attention=a)), loss=np.full((len(P), 2), 3.0))
        for a in ("linear", "softmax")
    ]
    th = {
        "softmax": {
            "P": np.geomspace(P[0], P[-1], 5),
            "aG": np.ones(5),
            "a1": np.ones(5),
            "mse": np.ones(5),
        }
    }
    fig = sweep_figure(res, th)
    for ax in fig.axes:
        assert ax.get_xlabel() == "training set size $P$ (sequences)" and ax.get_ylabel()
        leg = ax.get_legend()
        assert all(t.get_fontsize() >= LEGEND_PT >= 8 for t in leg.get_texts())
        assert BAND_LABEL in [t.get_text() for t in leg.get_texts()]
        assert not _texts_overlap(fig, ax)
        for line in ax.get_lines():  # one colour per attention, in every panel
            lab = line.get_label()
            for att, col in COLORS.items():
                if lab.startswith(att) or (att == "softmax" and "EK theory" in lab):
                    assert line.get_color() == col, lab
    theory = [l for l in fig.axes[0].get_lines() if "EK theory" in l.get_label()]
    assert len(theory) == 2 and all(l.get_linestyle() in ("--", "-.") for l in theory)
    plt.close(fig)


def test_curves_colour_bar_and_trace_labels():
    import matplotlib.pyplot as plt

    from copyhead_jax.plots import curves_figure, trace_figure

    fig = curves_figure(fake_sweep())
    cbar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert cbar and "P" in cbar[0].get_ylabel()
    assert fig.axes[0].get_xlabel().startswith("epoch") and fig.axes[0].get_ylabel()
    plt.close(fig)
    post = fake_posterior(FAKE_CFG.replace(model=dict(attention="softmax")))
    fig = trace_figure(post)
    assert fig.axes[0].get_ylabel() == "$a_{G}$" and "$a_{G}$ traces" in fig._suptitle.get_text()
    assert fig.axes[0].get_xlabel() == "SGLD step"
    plt.close(fig)
    fig = trace_figure(fake_posterior(FAKE_CFG.replace(model=dict(attention="linear"))))
    assert fig.axes[0].get_ylabel() == "$c_{G}$"
    plt.close(fig)
