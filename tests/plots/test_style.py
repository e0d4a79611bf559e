"""Every figure type, drawn on a small result, passes a reviewer's checks
(:func:`copyhead_jax.plots.style.figure_problems`): x and y labels on every axes, no empty panel
(data or "not measured"), legends at >= 8 pt that cover no data point, tick labels that do not
collide; and vector output on request."""

from pathlib import Path

import matplotlib
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.plots import figure_problems
from copyhead_jax.results import REQUIRED, SCALARS, SweepResult

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CFG = ch.TINY.replace(sweep=dict(P=(2, 4, 8, 16), n_seeds=2))


def _results_dir() -> Path | None:
    """The committed artefact JSON (docs/results, or wherever docs/ keeps them)."""
    for d in (ROOT / "docs" / "results", *sorted(ROOT.glob("docs/**/results"))):
        if (d / "main_plain.json").exists():
            return d
    return None


def _check(fig) -> None:
    problems = figure_problems(fig)
    plt.close(fig)
    assert not problems, "\n".join(problems)


def fake_sweep(cfg=CFG, *, n_logs: int = 4) -> SweepResult:
    """A synthetic sweep with every required array (no training); ``n_logs=1`` is what the
    exact solver records (its final iterate)."""
    nP, nS, L = len(cfg.sweep.P), cfg.sweep.n_seeds, cfg.task.L
    rng = np.random.default_rng(0)
    a = {k: rng.uniform(0.1, 1.0, (nP, nS)) for k in (*SCALARS, *REQUIRED) if k}
    a["finite"] = np.ones((nP, nS), bool)
    a["mean_attention"] = np.full((nP, nS, L, L), 1 / L)
    a["positional_logits"] = np.zeros((nP, nS, L, L))
    a["curve_U"] = np.tile(np.linspace(20.0, 10.0, n_logs), (nP, nS, 1))
    a["curve_loss"] = np.tile(np.linspace(1.0 * L, 0.5 * L, n_logs), (nP, nS, 1))
    a["curve_epoch"] = np.arange(1, n_logs + 1) * 5
    return SweepResult(config=cfg, arrays=a, meta={"wall_seconds": 1.0})


def test_the_checks_can_fail():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1, 2, 3], "o", label="data")
    ax.legend(loc="center", fontsize=6)  # over the middle point, too small
    fig.add_subplot(2, 2, 4)  # empty, unlabelled
    problems = " ".join(figure_problems(fig))
    plt.close(fig)
    for p in ("no x label", "no y label", "legend under 8 pt", "legend covers", "empty panel"):
        assert p in problems


def test_sweep_and_curves_figures():
    from copyhead_jax.plots import curves_figure, sweep_figure

    res = [fake_sweep(CFG.replace(model=dict(attention=a))) for a in ("linear", "softmax")]
    _check(sweep_figure(res))
    _check(curves_figure(res[0]))


def test_curves_of_an_exact_solver_sweep_say_not_measured():
    from copyhead_jax.plots import curves_figure

    fig = curves_figure(fake_sweep(n_logs=1))
    assert any("not measured" in t.get_text() for t in fig.axes[0].texts)
    _check(fig)


def test_theory_figures():
    from copyhead_jax.plots import plot_curve

    P = np.geomspace(1.0, 300.0, 8)
    ramp = np.clip(np.log(P) / 5, 0, 1)
    valid = np.zeros((8, 3), bool)
    valid[:, 0] = True
    valid[3:5, 1] = True  # a metastable minimum near the transition
    minima = np.stack([ramp, 1 - ramp, ramp], 1)
    params = {"L": 6, "V": 3, "likelihood": "per_position", "linear_scale": "inv_L"}
    base = {
        "P": P,
        "minima_valid": valid,
        "mse": 6 - 5 * ramp,
        "params": params,
        "objective": "map",
    }
    lin = dict(base, attention="linear", c1=ramp, cG=ramp**2, psi=ramp, minima_cG=minima)
    soft = dict(
        base,
        attention="softmax",
        beta=3 * ramp,
        minima_beta=3 * minima,
        p=ramp,
        aG=3 * ramp,
        a1=1 - ramp,
        minima_aG=3 * minima,
    )
    pts = {"P_c1": 3.0, "P_cG": 30.0, "P_cG_half": 40.0, "P_aG": 20.0, "spinodals": [15.0, 25.0]}
    _check(plot_curve(lin, pts))
    _check(plot_curve(soft, pts))


def test_plot_format_svg_writes_svg(tmp_path):
    from copyhead_jax.cli import main

    f = fake_sweep().save(tmp_path / "r.npz")
    assert main(["plot", str(f), "--format", "svg", "--curves"]) == 0
    svg = tmp_path / "r.svg"
    assert "<svg" in svg.read_text()[:2000]
    (curves,) = tmp_path.glob("r_curves_*.svg")
    assert "<svg" in curves.read_text()[:2000]


RESULTS = _results_dir()
needs_results = pytest.mark.skipif(RESULTS is None, reason="no committed artefact JSON")


def test_star_label_and_log_P_at_data():
    from copyhead_jax.plots.style import log_P_at_data, star_label

    assert star_label("P_cG") == "$P^*_{cG}$"
    assert star_label("spinodal_hi") == "$P^*_{spinodal,\\ upper}$"
    fig, ax = plt.subplots()
    ax.plot([10, 20, 40, 400], [1, 2, 3, 4], "o")
    ax.set_xlim(15, 100)  # the ticks: the data's P inside the limits, which stay
    log_P_at_data(ax)
    assert ax.get_xscale() == "log" and ax.get_xlim() == pytest.approx((15, 100))
    assert list(ax.xaxis.get_major_locator()()) == [20, 40]
    plt.close(fig)


@needs_results
def test_width_figure_of_a_width_result():
    import json

    from copyhead_jax.compare.seeds import width_result
    from copyhead_jax.plots import width_figure

    main = json.loads((RESULTS / "main_plain.json").read_text())
    fig = width_figure(width_result(main))
    assert len(fig.axes) == 4 and "plain preset" in fig._suptitle.get_text()
    _check(fig)


def _experiment_figures():
    """(name, draw) of every committed figure except the posterior's (drawn below with
    stand-in theory curves: their EK curves cost seconds of theory)."""
    from experiments.report.redraw import drawings

    own = ("posterior_branches", "posterior_smc")  # drawn from their JSON alone
    return [
        (n, d) for n, d in drawings(RESULTS) if not n.startswith("posterior_") or n.startswith(own)
    ]


@needs_results
@pytest.mark.slow
def test_every_experiment_figure_passes_the_checks():
    names = []
    for name, draw in _experiment_figures():
        fig = draw()
        problems = figure_problems(fig)
        plt.close(fig)
        assert not problems, f"{name}: " + "; ".join(problems)
        names.append(name)
    assert {"main_plain", "hysteresis_plain", "width_plain", "posterior_branches_plain"} <= set(
        names
    )


@needs_results
@pytest.mark.parametrize("preset", ["plain", "paper"])
def test_posterior_figures(preset):
    import json

    from copyhead_jax.plots import result_figures
    from copyhead_jax.storage import nulls_in_lists_to_nan

    post = nulls_in_lists_to_nan(json.loads((RESULTS / f"posterior_{preset}.json").read_text()))
    P = np.geomspace(1.0, 3000.0, 12)
    ramp = np.clip(np.log(P) / 8, 0, 1)
    curves = {
        "P": P,
        **{o: {"cG": ramp, "c1": ramp, "psi": ramp, "aG": 3 * ramp} for o in ("map", "post")},
    }
    figs = result_figures(post, curves)
    for name, fig in figs.items():
        if fig is not None:
            problems = figure_problems(fig)
            plt.close(fig)
            assert not problems, f"{name}: " + "; ".join(problems)


@needs_results
def test_render_writes_vector_figures(tmp_path):
    from experiments.report.redraw import render

    (path,) = render(RESULTS, tmp_path, fmt="svg", only=["hysteresis_plain"])
    assert path.suffix == ".svg" and "<svg" in path.read_text()[:2000]
    with pytest.raises(ValueError, match="fmt must be one of"):
        render(RESULTS, tmp_path, fmt="gif")


def test_sweep_figure_draws_flagged_runs_hollow_and_counts_them():
    """Flagged runs stay out of the means and appear one by one as hollow markers, at their own
    value when it lies in the ok runs' range and at the panel edge when it is off scale."""
    from copyhead_jax.plots.sweeps import flag_counts, sweep_figure

    res = fake_sweep()
    a = res.arrays
    a["diverged"] = np.zeros_like(a["finite"])
    a["diverged"][1, 0] = True  # finite but blown up: loss far above the ok runs'
    a["train_loss"][1, 0] = 1e6
    a["finite"][2, 1] = False  # non-finite: counted, cannot be drawn
    a["train_loss"][2, 1] = np.nan
    a["converged"] = np.ones_like(a["finite"])
    a["converged"][3, 1] = False  # exact solver stopped early
    # each flagged run counted once, under its first reason
    assert flag_counts([res]) == dict(non_finite=1, diverged=1, unconverged=1)

    fig = sweep_figure(res)
    ax_o, ax_c, ax_l, ax_a = fig.axes[:4]
    hollow = [ln for ln in ax_l.get_lines() if ln.get_gid() == "flagged"]
    xs = np.concatenate([ln.get_xdata() for ln in hollow])
    ys = np.concatenate([ln.get_ydata() for ln in hollow])
    assert all(ln.get_markerfacecolor() == "none" for ln in hollow)
    # runs [1, 0] and [3, 1] in both loss series (train, test); [2, 1] only where its value
    # is finite (test loss)
    assert sorted(xs.tolist()) == [4.0, 4.0, 8.0, 16.0, 16.0]
    lo, hi = ax_l.get_ylim()
    assert hi < 1e6 and np.isclose(ys.max(), hi)  # the blown-up run sits at the panel edge
    # the means are over the ok runs only
    mean_train = next(ln for ln in ax_l.get_lines() if ln.get_label().endswith("train"))
    ok = res.ok
    want = np.nanmean(np.where(ok, a["train_loss"], np.nan), axis=1)
    np.testing.assert_allclose(mean_train.get_ydata(), want)
    labels = ax_l.get_legend().get_texts()
    assert any(t.get_text().startswith("hollow: 3 flagged") for t in labels)
    assert "3 flagged run(s) excluded from means (1 non-finite, 1 diverged, 1 unconverged)" in (
        fig._suptitle.get_text()
    )
    _check(fig)
