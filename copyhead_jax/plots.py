"""Figures: a result in, a matplotlib ``Figure`` out (Agg backend, nothing shown)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from .results import SweepResult  # noqa: E402

COLORS = {"linear": ("tab:blue", "tab:cyan"), "softmax": ("tab:red", "tab:orange")}


def _band(ax, x, y, label, marker="o", color=None, ls="-"):
    """Mean +- sd over seeds (columns), NaNs (diverged runs) ignored."""
    with np.errstate(all="ignore"):
        m, s = np.nanmean(y, axis=1), np.nanstd(y, axis=1)
    line = ax.plot(x, m, marker=marker, ms=4, label=label, color=color, ls=ls)[0]
    ax.fill_between(x, m - s, m + s, alpha=0.2, color=line.get_color())
    return line


def sweep_figure(results: list[SweepResult] | SweepResult, theory: dict | None = None) -> Figure:
    """Order parameters, coverage, losses and copy accuracy versus P for one or more sweeps.

    ``theory`` (optional): ``{attention: {"P": [...], "c1"/"cG" or "a1"/"aG", "mse": [...]}}``
    curves (e.g. ``theory.theory_curve``) drawn as dashed lines over the measured points.
    """
    results = [results] if isinstance(results, SweepResult) else list(results)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    (ax_o, ax_c), (ax_l, ax_a) = axes
    for res in results:
        att = res.config.model.attention
        ok = res["finite"].astype(bool)
        get = lambda k: np.where(ok, res[k].astype(float), np.nan)
        P = res.P
        n1, nG = ("a1", "aG") if att == "softmax" else ("c1", "cG")
        c_main, c_alt = COLORS.get(att, ("k", "gray"))
        _band(ax_o, P, get("c1"), f"{att}: {n1}", marker="s", color=c_alt)
        _band(ax_o, P, get("cG"), f"{att}: {nG}", color=c_main)
        _band(ax_c, P, get("coverage"), f"{att}: mean-A cosine", color=c_main)
        _band(ax_c, P, get("sample_coverage"), f"{att}: per-sample", marker="^", color=c_alt)
        _band(ax_l, P, get("train_loss"), f"{att}: train", color=c_main)
        _band(ax_l, P, get("test_loss"), f"{att}: test", marker="^", color=c_alt, ls=":")
        _band(ax_a, P, get("copy_accuracy"), f"{att}", color=c_main)
        if theory and att in theory:
            th = theory[att]
            for k, col in ((n1, c_alt), (nG, c_main)):
                if k in th:
                    ax_o.plot(th["P"], th[k], "--", lw=1.2, color=col, label=f"EK theory: {k}")
            if "mse" in th:
                ax_l.plot(
                    th["P"],
                    th["mse"],
                    "--",
                    lw=1.2,
                    color=c_main,
                    label="EK theory: population loss",
                )
    L = results[0].config.task.L
    V = results[0].config.task.V
    ax_l.axhline(L, color="gray", lw=0.8, ls=":", label="no attention (L)")
    ax_l.axhline((1 - 1 / V) * (L - 1), color="gray", lw=0.8, ls="-.", label="pooling")
    ax_a.axhline(1 / V, color="gray", lw=0.8, ls=":", label="chance 1/V")
    titles = ["order parameters", "subspace coverage", "loss per sequence", "copy accuracy (test)"]
    for ax, t in zip(axes.flat, titles):
        ax.set_xscale("log")
        ax.set_xlabel("P (training sequences)")
        ax.set_title(t)
        ax.legend(fontsize=7)
    c = results[0].config
    fig.suptitle(
        f"L={L}, V={V}, N={c.model.width}, sigma2={c.posterior.sigma2}, chi={c.posterior.chi}, "
        f"{c.posterior.likelihood}, seeds={c.sweep.n_seeds}"
    )
    return fig


def curves_figure(res: SweepResult) -> Figure:
    """Training curves U(epoch) per P (seed 0) — did each run converge?"""
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    ep = res["curve_epoch"]
    cmap = plt.get_cmap("viridis")
    for i, P in enumerate(res.P):
        ax.plot(ep, res["curve_loss"][i, 0], color=cmap(i / max(len(res.P) - 1, 1)), label=f"P={P}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("train loss per sequence")
    ax.set_xscale("log")
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(f"{res.config.model.attention}: training curves (seed 0)")
    return fig


def posterior_figure(post, sweep: SweepResult | None = None) -> Figure:
    """Posterior mean +- sd of the order parameters versus P (MAP overlaid), the
    susceptibility var(cG), and the training loss."""
    fig, (ax_o, ax_v, ax_l) = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
    att = post.config.model.attention
    c_main, c_alt = COLORS.get(att, ("k", "gray"))
    n1, nG = ("a1", "aG") if att == "softmax" else ("c1", "cG")
    P = post.P
    for name, label, col in (("c1", n1, c_alt), ("cG", nG, c_main)):
        m, v = post.moments(name)
        _band(ax_o, P, m, f"SGLD {label}", color=col)
        if sweep is not None:
            ok = sweep["finite"].astype(bool)
            ax_o.plot(P, np.nanmean(np.where(ok, sweep[name], np.nan), 1), "k--", lw=1,
                      marker="x", label=f"MAP {label}")  # fmt: skip
    _, vG = post.moments("cG")
    _band(ax_v, P, vG, f"var({nG})", color=c_main)
    ax_v.set_yscale("log")
    mL, _ = post.moments("train_loss")
    _band(ax_l, P, mL, "SGLD train loss", color=c_main)
    for ax, t in zip((ax_o, ax_v, ax_l), ("posterior order parameters", "susceptibility",
                                         "loss per sequence")):  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("P")
        ax.set_title(t)
        ax.legend(fontsize=7)
    s = post.sgld
    fig.suptitle(f"{att}: SGLD eta={s.step_size:g}, {s.n_steps} steps, {s.n_chains} chains")
    return fig


def trace_figure(post, field: str = "cG", seed: int = 0) -> Figure:
    """Per-chain traces of ``field`` at every P (one panel per P) for one seed."""
    n = len(post.P)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False,
                             constrained_layout=True)  # fmt: skip
    x = post["draw_step"]
    for i, P in enumerate(post.P):
        ax = axes.flat[i]
        ax.plot(x, post[field][i, seed].T, lw=0.8)
        ax.set_title(f"P={P}", fontsize=8)
    for ax in axes.flat[n:]:
        ax.axis("off")
    fig.suptitle(f"{field} traces (seed {seed}, one line per chain)")
    return fig
