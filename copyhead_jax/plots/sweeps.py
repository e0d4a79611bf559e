"""Figures: a result in, a matplotlib ``Figure`` out (Agg backend, nothing shown).

Conventions, for every figure: one colour per attention (linear blue, softmax red) in every
panel, the quantity told apart by marker and line style, the EK theory dashed in the colour of
its attention, references grey; shaded bands are +-1 sd over seeds and say so in the legend;
axes carry symbol and unit; legends are at least 8 pt; a P axis spanning under two decades is
ticked at (a spread of) the measured P, so that labels never collide.
"""

from __future__ import annotations

import warnings
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import LogNorm, Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ..models import head_class  # noqa: E402
from ..results import SweepResult  # noqa: E402
from .style import (  # noqa: E402
    A_G_LABEL,
    BLACK,
    COLORS,
    GREY,
    KEY_COLORS,
    LEGEND_PT,
    MIN_POINTS,
    P_LABEL,
    legend,
    log_P_at_data,
    log_P_axis,
    not_measured,
    star_label,
)
from .style import styled as _styled  # noqa: E402

__all__ = [
    "COLORS",
    "LEGEND_PT",
    "P_LABEL",
    "curves_figure",
    "flag_counts",
    "log_P_axis",
    "posterior_figure",
    "sweep_figure",
    "trace_figure",
    "width_figure",
]
BAND_LABEL = "shaded: $\\pm 1$ sd over seeds"


def order_names(attention: str) -> tuple[str, str]:
    """Display names of the two order parameters: (a1, aG) for softmax, (c1, cG) for linear."""
    return head_class(attention).order_names


def _tex(name: str) -> str:
    return f"${name[0]}_{{{name[1:]}}}$"


def _band(ax, x, y, label, marker="o", color=None, ls="-"):
    """Mean +- sd over seeds (columns), NaNs (excluded runs) ignored."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a P with no ok run: a gap
        m, s = np.nanmean(y, axis=1), np.nanstd(y, axis=1)
    line = ax.plot(x, m, marker=marker, ms=4, label=label, color=color, ls=ls)[0]
    ax.fill_between(x, m - s, m + s, alpha=0.2, color=line.get_color(), lw=0)
    return line


def _legend(ax, band: bool = True, **kw) -> None:
    """The axes' legend below it (never over the data), with the band's key if ``band``."""
    handles, labels = ax.get_legend_handles_labels()
    if band:
        handles.append(Patch(color=GREY, alpha=0.3, lw=0))
        labels.append(BAND_LABEL)
    legend(ax, handles=handles, labels=labels, **kw)


def flag_counts(results: list[SweepResult]) -> dict[str, int]:
    """How many runs of ``results`` are flagged not-ok, by the first reason that applies:
    non-finite, diverged (finite but blown up), unconverged (exact solver)."""
    n = dict(non_finite=0, diverged=0, unconverged=0)
    for r in results:
        finite = r.arrays["finite"].astype(bool)
        n["non_finite"] += int((~finite).sum())
        n["diverged"] += int((finite & r.diverged).sum())
        n["unconverged"] += int((finite & ~r.diverged & r.unconverged).sum())
    return n


def _flagged(ax, P, y, flagged, marker: str, color) -> int:
    """Flagged runs' own values as hollow markers (they are not in the means), clamped to the
    panel's range set by the ok runs, so that a blown-up run neither hides nor squashes them;
    non-finite values cannot be drawn. Returns the number drawn."""
    lo, hi = ax.get_ylim()
    y = np.asarray(y, float)
    sel = np.asarray(flagged, bool) & np.isfinite(y)
    if sel.any():
        x = np.broadcast_to(np.asarray(P, float)[:, None], y.shape)
        ax.plot(
            x[sel],
            np.clip(y[sel], lo, hi),
            ls="none",
            marker=marker,
            ms=6,
            mfc="none",
            mec=color,
            mew=1.0,
            gid="flagged",
        )
        ax.set_ylim(lo, hi)
    return int(sel.sum())


@_styled
def sweep_figure(
    results: list[SweepResult] | SweepResult, theory: dict | None = None, marks: dict | None = None
) -> Figure:
    """Order parameters, coverage, losses and copy accuracy versus P for one or more sweeps.

    Means and bands are over the ok runs; flagged runs (non-finite, diverged, unconverged:
    ``SweepResult.ok``) are drawn one by one as hollow markers, counted in the legend and title.
    A sweep started on the copy branch (``train.init_attention == "copy"``) is drawn dashed
    beside the pooling start. ``theory`` (optional): ``{attention: {"P": [...], "c1"/"cG" or
    "a1"/"aG", "mse": [...]}}`` curves (e.g. ``theory.theory_curve``) drawn over the measured
    points. ``marks`` (optional): ``{"P_aG": P, "spinodals": [lo, hi]}``, the measured branch
    crossing (solid) and the EK theory's spinodals (dotted), drawn on every panel.
    """
    results = [results] if isinstance(results, SweepResult) else list(results)
    fig, axes = plt.subplots(2, 2, figsize=(11, 9), constrained_layout=True)
    (ax_o, ax_c), (ax_l, ax_a) = axes
    pending = []  # flagged runs, drawn once every panel's range is set by the ok runs
    two = {r.config.model.attention for r in results if r.config.train.init_attention == "copy"}
    for res in results:
        att = res.config.model.attention
        ok = res.ok
        P = res.P
        n1, nG = order_names(att)
        col = COLORS.get(att, "k")
        copy = res.config.train.init_attention == "copy"
        who = f"{att}, {'copy' if copy else 'pooling'} start" if att in two else att
        series = (
            (ax_o, "cG", f"{who}: {_tex(nG)}", "o", "-"),
            (ax_o, "c1", f"{who}: {_tex(n1)}", "s", ":"),
            (ax_c, "coverage", f"{who}: mean-A cosine", "o", "-"),
            (ax_c, "sample_coverage", f"{who}: per-sample", "^", ":"),
            (ax_l, "train_loss", f"{who}: train", "o", "-"),
            (ax_l, "test_loss", f"{who}: test", "^", ":"),
            (ax_a, "copy_accuracy", f"{who}", "o", "-"),
        )
        if copy:  # the copy start: open markers, dashed, beside the pooling start
            series = tuple(
                (ax, k, lab, "D" if mk == "o" else "v", "--" if ls == "-" else "-.")
                for ax, k, lab, mk, ls in series
            )
        for ax, k, label, mk, ls in series:
            y = np.asarray(res[k], float)
            line = _band(ax, P, np.where(ok, y, np.nan), label, marker=mk, color=col, ls=ls)
            if copy:
                line.set_markerfacecolor("none")
            pending.append((ax, P, y, ~ok, mk, col))
        if theory and att in theory and not copy:
            th = theory[att]
            for k, ls in ((nG, "--"), (n1, "-.")):
                if k in th:
                    ax_o.plot(th["P"], th[k], ls, lw=1.2, color=col, label=f"EK theory {_tex(k)}")
            if "mse" in th:
                ax_l.plot(
                    th["P"], th["mse"], "--", lw=1.2, color=col, label="EK theory: population loss"
                )
    c = results[0].config
    L, V = c.task.L, c.task.V
    ax_l.axhline(L, color="gray", lw=0.8, ls=":", label=f"zero output ($L$ = {L})")
    ax_l.axhline((1 - 1 / V) * (L - 1), color="gray", lw=0.8, ls="-.", label="pooling")
    ax_a.axhline(1 / V, color="gray", lw=0.8, ls=":", label="chance $1/V$")
    for item in pending:
        _flagged(*item)
    n = flag_counts(results)
    n_out = sum(n.values())
    why = ", ".join(f"{v} {k.replace('_', '-')}" for k, v in n.items() if v)
    ylabels = [
        "order parameter (dimensionless)",
        "coverage (cosine, 0 to 1)",
        "loss per sequence $\\sum_a \\|f^a - y^a\\|^2$",
        "copy accuracy (fraction of positions)",
    ]
    titles = ["order parameters", "subspace coverage", "loss", "copy accuracy (test)"]
    P_all = np.concatenate([r.P for r in results])
    for ax, t, yl in zip(axes.flat, titles, ylabels):
        log_P_axis(ax, P_all)
        ax.set_xlabel(P_LABEL)
        ax.set_ylabel(yl)
        ax.set_title(t)
        _marks(ax, marks or {})
        if n_out:  # the key of the hollow markers (an empty line: no data, no range change)
            ax.plot(
                [],
                [],
                ls="none",
                marker="o",
                mfc="none",
                mec=GREY,
                gid="key",
                label=f"hollow: {n_out} flagged, not in means",
            )
        _legend(ax, ncol=2)
    excluded = f"\n{n_out} flagged run(s) excluded from means ({why})" if n_out else ""
    fig.suptitle(
        f"$L$={L}, $V$={V}, $N$={c.model.width}, $\\sigma^2$={c.posterior.sigma2:g}, "
        f"$\\chi$={c.posterior.chi:g}, {c.posterior.likelihood.replace('_', '-')} likelihood, "
        f"seeds={c.sweep.n_seeds}{excluded}"
    )
    return fig


def _marks(ax, marks: dict) -> None:
    """The measured branch crossing P*_aG (solid) and the EK spinodals (dotted) as vertical
    lines, each named once in the legend."""
    if (p := marks.get("P_aG")) is not None:
        ax.axvline(
            p,
            color=KEY_COLORS["P_aG"],
            lw=1.0,
            label=f"{star_label('P_aG')} = {p:,.0f} (branch crossing)",
        )
    spin = [v for v in marks.get("spinodals") or () if v is not None]
    for i, v in enumerate(spin):
        ax.axvline(
            v,
            color=GREY,
            lw=1.0,
            ls=":",
            label=None if i else "EK spinodals " + ", ".join(f"{x:,.0f}" for x in spin),
        )


@_styled
def curves_figure(res: SweepResult) -> Figure:
    """Training loss per sequence versus epoch, one line per P (seed 0), coloured by P."""
    fig, ax = plt.subplots(figsize=(6.5, 5), constrained_layout=True)
    ep = np.asarray(res["curve_epoch"])
    if len(ep) < 2:  # the exact solver keeps its last iterate only: no curve to draw
        not_measured(
            ax,
            f"one logged point, no curve (solver '{res.config.solver.kind}';\n"
            "the exact solver keeps its final iterate only)",
        )
        ax.set(
            xlabel="epoch (Adam steps, full batch)",
            xticks=[],
            yticks=[],
            ylabel="train loss per sequence $\\sum_a \\|f^a - y^a\\|^2$",
            title=f"{res.config.model.attention}: training curves",
        )
        return fig
    P = res.P.astype(float)
    norm = LogNorm(P.min(), P.max()) if P.max() > P.min() else Normalize(P.min() - 1, P.max() + 1)
    cmap = plt.get_cmap("viridis")
    for i, p in enumerate(P):
        ax.plot(ep, res["curve_loss"][i, 0], color=cmap(norm(p)), lw=1)
    sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax)
    cb.set_label(P_LABEL)
    if isinstance(norm, LogNorm):
        log_P_axis(cb.ax, P, axis="y")
    ax.axhline(res.config.task.L, color="gray", lw=0.8, ls=":", label="zero output ($L$)")
    ax.set_xlabel("epoch (Adam steps, full batch)")
    ax.set_ylabel("train loss per sequence $\\sum_a \\|f^a - y^a\\|^2$")
    log_P_axis(ax, ep)  # any log axis: no colliding minor labels
    _legend(ax, band=False)
    ax.set_title(f"{res.config.model.attention}: training curves (seed 0)")
    return fig


@_styled
def posterior_figure(post, sweep: SweepResult | None = None) -> Figure:
    """Posterior mean +- sd of the order parameters versus P (MAP overlaid), the
    susceptibility var(cG), and the training loss."""
    fig, (ax_o, ax_v, ax_l) = plt.subplots(1, 3, figsize=(13, 4), constrained_layout=True)
    att = post.config.model.attention
    col = COLORS.get(att, "k")
    n1, nG = order_names(att)
    P = post.P
    who = post.sampler.name  # "SGLD" or "collapsed HMC"
    for name, label, ls, mk in (("cG", nG, "-", "o"), ("c1", n1, ":", "s")):
        m, _ = post.moments(name)
        _band(ax_o, P, m, f"{who} {_tex(label)}", color=col, ls=ls, marker=mk)
        if sweep is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a P with no ok run: a gap
                m_map = np.nanmean(np.where(sweep.ok, sweep[name], np.nan), 1)
            ax_o.plot(P, m_map, "k", ls=ls, lw=1, marker="x", label=f"MAP {_tex(label)}")
    _, vG = post.moments("cG")
    _band(ax_v, P, vG, f"var({_tex(nG)})", color=col)
    ax_v.set_yscale("log")
    mL, _ = post.moments("train_loss")
    _band(ax_l, P, mL, f"{who} train loss", color=col)
    ax_l.axhline(post.config.task.L, color="gray", lw=0.8, ls=":", label="zero output ($L$)")
    ylabels = (
        "order parameter (dimensionless)",
        f"susceptibility var({_tex(nG)}) over draws",
        "loss per sequence $\\sum_a \\|f^a - y^a\\|^2$",
    )
    titles = ("posterior order parameters", "susceptibility", "loss")
    for ax, t, yl in zip((ax_o, ax_v, ax_l), titles, ylabels):
        log_P_axis(ax, P)
        ax.set_xlabel(P_LABEL)
        ax.set_ylabel(yl)
        ax.set_title(t)
        _legend(ax)
    fig.suptitle(f"{att}: {post.sampler.describe()}")
    return fig


@_styled
def trace_figure(post, field: str = "cG", seed: int = 0) -> Figure:
    """Per-chain traces of ``field`` at every P (one panel per P) for one seed; the order
    parameters are named for the attention (aG, a1 for softmax)."""
    n = len(post.P)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, constrained_layout=True
    )
    names = order_names(post.config.model.attention)
    own = dict(zip(("c1", "cG"), names)).get(field, field)  # c1/cG: the generic names
    label = _tex(own) if own in names else field
    x = post["draw_step"]
    step = "iteration" if post.sampler.kind == "hmc" else "step"
    for i, P in enumerate(post.P):
        ax = axes.flat[i]
        ax.plot(x, post[field][i, seed].T, lw=0.8)
        ax.set_title(f"$P$={P}", fontsize=9)
        ax.set_xlabel(f"{post.sampler.name} {step}")
        ax.set_ylabel(label)
    for ax in axes.flat[n:]:
        ax.axis("off")
    fig.suptitle(f"{label} traces (seed {seed}, one line per chain)")
    return fig


@_styled
def width_figure(res: dict[str, Any]) -> Figure:
    """The figure of :func:`copyhead_jax.compare.seeds.width_result`: every P* relative to the
    EK theory versus the width N (measured with its CI, finite-width theory as open markers),
    and the order parameters versus P per width."""
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(
        1, 4, figsize=(20, 6.2), layout="constrained", gridspec_kw={"width_ratios": [1.4, 1, 1, 1]}
    )
    widths = res["widths"]
    finite = [w for w in widths if w != "inf"]
    x_of = {w: float(w) for w in finite}  # infinity one decade right of the largest width
    x_inf = x_of["inf"] = 10 * max(x_of.values()) if x_of else 1.0
    a, rows = ax[0], [r for r in res["rows"] if r["theory_ek"]]
    for j, row in enumerate(rows):
        ek, col = row["theory_ek"], KEY_COLORS.get(row["key"], BLACK)
        shift = 1.0 + 0.04 * (j - (len(rows) - 1) / 2)  # side by side, not on top
        got = [w for w in widths if row["measured"][w].get("estimate") is not None]
        y, lo, hi = (
            np.array(
                [row["measured"][w].get(k) or row["measured"][w]["estimate"] for w in got], float
            )
            for k in ("estimate", "lo", "hi")
        )
        a.errorbar(
            [x_of[w] * shift for w in got],
            y / ek,
            yerr=[(y - lo) / ek, (hi - y) / ek],
            fmt="o-" if len(got) >= MIN_POINTS else "o",
            color=col,
            ms=4,
            capsize=2,
            label=star_label(row["key"]),
        )
        t = [(x_of[w] * shift, row["theory_finite"][w].get("estimate")) for w in widths]
        t = [(x, v / ek) for x, v in t if v is not None]
        a.plot([x for x, _ in t], [v for _, v in t], "D", mfc="none", color=col, ms=5)
        if old := (row.get("reference_128") or {}).get("measured"):
            a.plot([128 * shift], [old / ek], "x", color=col, ms=7, mew=1.5)
    a.axhline(1.0, color=BLACK, lw=0.8)
    lo, hi = a.get_ylim()
    if hi / max(lo, 1e-9) > 3:  # a far outlier would squeeze the rest: a log ratio axis
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

        a.set_yscale("log")
        a.yaxis.set_major_locator(FixedLocator([0.25, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10, 20]))
        a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        a.yaxis.set_minor_formatter(NullFormatter())
    a.set_xscale("log")
    a.set_xticks([*(x_of[w] for w in finite), x_inf])
    a.set_xticklabels([*(f"{int(float(w)):,}" for w in finite), "inf"])
    a.set_xticks([], minor=True)
    a.set(
        xlabel="width $N$",
        ylabel="$P^*$ / $P^*$(EK theory)",
        title="$P^*$ relative to the EK theory versus width",
    )
    h, lab = a.get_legend_handles_labels()
    h += [
        Line2D([], [], marker="o", color=GREY, ls="-"),
        Line2D([], [], marker="D", mfc="none", color=GREY, ls=""),
        Line2D([], [], marker="x", color=GREY, ls=""),
    ]
    lab += ["exact MAP (bars: 95% CI)", "finite-width theory", "old Adam run, N = 128"]
    legend(a, handles=h, labels=lab, ncol=3)
    cmap = plt.get_cmap("viridis")
    shade = {w: cmap(0.85 * i / max(1, len(widths) - 1)) for i, w in enumerate(widths)}
    for a, branch, q, title, yl in (
        (ax[1], "linear", "psi", "linear: copy fraction $\\psi$", "copy fraction $\\psi$"),
        (ax[2], "linear", "r", "linear: attention row sum $r$", "row sum $r$ (dimensionless)"),
        (
            ax[3],
            "pool",
            "cG",
            "softmax: $a_G$ (solid: pooling start, dashed: copy start)",
            A_G_LABEL,
        ),
    ):
        for w in widths:
            c = res["curves"].get(w)
            if not c or q not in c[branch]:
                continue
            label = "N = inf" if w == "inf" else f"N = {int(float(w)):,}"
            a.plot(c[branch]["P"], c[branch][q], "o-", ms=3, color=shade[w], label=label)
            if branch == "pool":
                a.plot(c["copy"]["P"], c["copy"][q], "s--", ms=3, color=shade[w])
        if branch == "pool":
            a.plot([], [], "o-", color=GREY, label="pooling start", gid="key")
            a.plot([], [], "s--", color=GREY, label="copy start", gid="key")
        if a.has_data():
            log_P_at_data(a)
        a.set(xlabel=P_LABEL, ylabel=yl, title=title)
        legend(a)
    fig.suptitle(f"width table, {res['preset']} preset (exact MAP, {res['n_seeds']} seeds)")
    return fig
