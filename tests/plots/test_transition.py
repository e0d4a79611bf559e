"""``copyhead_jax.plots.transition``'s figures of branch-TI and SMC tables: the seed means and the
crossings drawn are the result's, and the figures pass ``style.figure_problems``."""

import math

import matplotlib
import numpy as np

from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.plots import branch_figure, figure_problems, smc_figure

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _branches() -> dict:
    """F_copy - F_pool = 30 - P (+ seed) at P = 20, 40 (the tables of test_compare_crossing)."""
    runs = [
        dict(
            P=P,
            seed=s,
            branch=b,
            F=(30.0 - P + s) if b == "copy" else 0.0,
            mcse=0.1,
            rhat_g=[1.0],
            ess_g=[300.0],
            quad_corr=0.0,
            p_ref=1.0,
            ref_P=P,
            aG_t1=[0.0],
        )
        for P in (20, 40)
        for s in (0, 1)
        for b in ("pool", "copy")
    ]
    t = BT.branch_tables(runs, [20, 40], 2, 1.0)
    return dict(
        t,
        P=[20, 40],
        theory={"map": {"P_aG": 25.0}, "post": {"P_aG": 35.0}},
        map_U_crossing={"P_star": 28.0},
        preset="plain",
    )


def test_branch_figure_draws_the_seed_mean_and_the_crossing():
    res = _branches()
    fig = branch_figure(res, main_P=30.0)
    a = fig.axes[0]
    means = [ln for ln in a.lines if ln.get_label() == "seed mean"]
    np.testing.assert_allclose(means[0].get_ydata(), np.nanmean(res["dF"], 1))
    cross = res["crossing_F"]["P_star"]
    assert 20 < cross < 40 and any(np.allclose(ln.get_xdata(), cross) for ln in a.lines)
    assert figure_problems(fig) == []
    plt.close(fig)


def test_smc_figure_draws_the_weights_and_equal_weight_point():
    w = np.array([[0.2, 0.3], [0.7, 0.9]])
    odds = np.log(w / (1 - w))
    res = {
        "P": [48, 50],
        "w_copy": w,
        "w_copy_se": np.full((2, 2), 0.01),
        "log_odds_copy": odds,
        "dlog_Z_smc_minus_ti": np.zeros((2, 2)),
        "log_odds_clip": math.log(63),
        "w_copy_mean": w.mean(1),
        "weight_window": {"P_equal": 49.0},
        "ti_log_odds": {"P": [48, 50], "values": odds},
    }
    fig = smc_figure(res, ti_cross=49.2)
    mean = [ln for ln in fig.axes[0].lines if ln.get_label() == "SMC, seed mean"][0]
    np.testing.assert_allclose(mean.get_ydata(), [0.25, 0.8])
    assert figure_problems(fig) == []
    plt.close(fig)


def test_an_unbounded_interval_is_drawn_to_the_probes_edge_and_named():
    """The crossing rule gives lo = 0 / hi = inf (JSON: null) where it cannot bound a side: the
    span stops at the outermost probe and its text says unbounded; a bounded side is kept."""
    from copyhead_jax.plots.style import interval_span

    assert interval_span((0.0, math.inf), [20, 10, 40]) == (10.0, 40.0, "[unbounded, unbounded]")
    assert interval_span((None, 35.0), [20, 40]) == (20.0, 35.0, "[unbounded, 35]")
    assert interval_span((12.5, 30.0), [20, 40]) == (12.5, 30.0, "[12.5, 30]")
