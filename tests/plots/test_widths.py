"""The exact width reduction's figure (copyhead_jax.plots.widths)."""

import math

from copyhead_jax.plots import reduction_width_figure
from tests.helpers import checked_figure


def test_reduction_width_figure_has_both_heads_and_the_gap_panel():
    P = [8, 32, 128]
    per = lambda s: {"cG": [s * x for x in (0.1, 1.0, 2.0)]}  # noqa: E731
    att = {"P": P, "EK_cG": [0.1, 1.0, 2.0], "N=16": per(0.5), "N=64": per(0.9), "N=inf": per(1.0)}
    axes = checked_figure(reduction_width_figure({"linear": att, "softmax": att}))
    assert len(axes) == 3
    # per head: the EK curve and one line per width; the gap panel: 2 heads x 2 P >= 32
    assert len(axes[0].get_lines()) == 1 + 3
    assert math.isclose(axes[2].get_lines()[0].get_ydata()[0], 0.5)  # |0.5 cG / cG - 1|
