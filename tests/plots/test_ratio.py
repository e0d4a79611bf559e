"""``copyhead_jax.plots.ratio``: each prediction is drawn at its ratio to the measured point, the
measured interval as a band around 1, a flagged row hollow and named; the figure passes the
figure check."""

import matplotlib
import numpy as np
import pytest

from copyhead_jax.plots import ROUTE_STYLES, figure_problems, ratio_figure

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _rows():
    return [
        dict(
            label="a\n$L=8$",
            measured=dict(P_star=40.0, lo=36.0, hi=44.0, flag=None),
            series={
                "ek_map": {"P": 20.0},
                "route_B": {"P": 42.0, "lo": 41.0, "hi": 43.0},
                "route_A": None,
            },
        ),
        dict(
            label="b\n$L=12$",
            measured=dict(P_star=50.0, lo=25.0, hi=100.0, flag="3/4 runs"),
            series={"ek_map": {"P": 10.0}, "route_B": {"P": 60.0}, "route_A": {"P": 55.0}},
        ),
    ]


def _points(ax, name):
    """(x, y, face colour) of the markers of series ``name``."""
    return [
        (x, y, ln.get_markerfacecolor())
        for ln in ax.lines
        if ln.get_gid() == name
        for x, y in zip(*ln.get_data(), strict=True)
    ]


def test_ratio_figure_draws_each_prediction_over_the_measurement():
    fig = ratio_figure([dict(title="softmax", name="s", rows=_rows())], ROUTE_STYLES)
    ax = fig.axes[0]
    ek = _points(ax, "ek_map")
    # the unflagged row's marker filled, at 20/40; the flagged row's hollow, at 10/50
    assert sorted((round(x), y) for x, y, _ in ek) == [(0, 0.5), (1, 0.2)]
    assert {round(x): fc for x, _, fc in ek}[1] == "none"
    assert {round(x): fc for x, _, fc in ek}[0] != "none"
    ra = _points(ax, "route_A")
    assert [(round(x), y) for x, y, _ in ra] == [(1, pytest.approx(1.1))]  # None: not drawn
    # the measured band of the flagged row spans 25/50 .. 100/50
    band = ax.collections[1].get_paths()[0].vertices[:, 1]
    np.testing.assert_allclose([band.min(), band.max()], [0.5, 2.0])
    assert ax.get_yscale() == "log"
    texts = fig.legends[0].get_texts()
    assert any("s b $L=12$ (3/4 runs)" in t.get_text() for t in texts)
    assert figure_problems(fig) == []
    plt.close(fig)


def test_ratio_figure_refuses_an_empty_panel():
    with pytest.raises(ValueError, match="at least one row"):
        ratio_figure([dict(title="x", rows=[])], ROUTE_STYLES)
