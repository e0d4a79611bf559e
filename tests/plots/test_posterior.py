"""``copyhead_jax.plots.posterior`` on a planted summary: what is drawn is the seed mean (error bar
the sd over seeds), and every figure passes :func:`copyhead_jax.plots.style.figure_problems`."""

import matplotlib
import numpy as np

from copyhead_jax.plots import figure_problems
from copyhead_jax.plots import posterior as PP
from copyhead_jax.sampling.summary import OBSERVABLES

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

P = [4, 8, 16]


def _summary(scale: float) -> dict:
    x = scale * np.array([[1.0, 3.0], [2.0, 4.0], [5.0, np.nan]])  # [P, seed], one seed missing
    return {
        "P": P,
        "map": {"cG": x, "r": x / 2},
        "post_mean": {"cG": x, "r": x / 2, "psi": x / 9},
        "susceptibility": {k: {"value": x, "mcse": x / 10} for k in OBSERVABLES},
        "llc": {"value": x, "mcse": x / 10},
        "llc_dv": {"gamma=100": {"value": x - 2.0}},
    }


def _close(fig) -> list[str]:
    problems = figure_problems(fig)
    plt.close(fig)
    return problems


def test_the_drawn_points_are_seed_means():
    fig = PP.llc_figure([("linear", _summary(1.0), "C0", "o")], "plain")
    line = fig.axes[0].lines[0]
    np.testing.assert_allclose(np.asarray(line.get_xdata(), float), P)
    np.testing.assert_allclose(line.get_ydata(), [2.0, 3.0, 5.0])  # NaN seeds left out
    assert _close(fig) == []


def test_every_figure_passes_the_reviewer_checks():
    lin, soft = _summary(1.0), _summary(2.0)
    curves = {"P": np.geomspace(2, 32, 8)}
    curves |= {o: {k: np.linspace(0, 1, 8) for k in ("cG", "c1", "aG")} for o in ("map", "post")}
    fe = {"P": P, "w_copy": np.full((3, 2), 0.5)}
    for k in ("F", "F_mcse", "wbic", "U_star"):
        fe[k] = np.stack([np.ones((3, 2)), np.zeros((3, 2))])
    stars = (("$P^*$", 8.0, "k"), ("off grid", 100.0, "k"))
    figs = [
        PP.orderparams_figure(lin, [("pool", soft, "C1", "s")], curves, "plain", fe),
        PP.susceptibility_figure(
            [("linear", lin, "linear", stars), ("softmax", soft, "softmax", stars)], "plain"
        ),
        PP.devinterp_figure([("linear", lin, "C0", "o")], {"P_cG": 8.0}, "plain"),
        PP.free_energy_figure(fe, {"map": 8.0, "post": None}),
    ]
    # the TI difference per sequence: (1 - 0) / P; the off-grid P* draws no line
    assert np.allclose(figs[3].axes[0].lines[0].get_ydata(), 1 / np.asarray(P, float))
    labels = [t.get_text() for t in figs[1].axes[0].get_legend().get_texts()]
    assert any("$P^*$ = 8.0" in t for t in labels) and not any("off grid" in t for t in labels)
    for f in figs:
        assert _close(f) == []
