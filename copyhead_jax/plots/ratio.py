"""Theory against measurement as a ratio: per configuration, each prediction of a transition
point divided by the measured one on a log axis, the measurement's interval as a band around 1
(:func:`ratio_figure`). A flagged measurement (chains that did not mix) draws its row's markers
hollow and is named in the legend.

A panel is ``{"title": str, "rows": [row, ...]}`` (optional: ``"name"``, the prefix of its
flagged rows in the legend; ``"xlabel"``, ``"ylabel"``); a row is ``{"label": str, "measured":
{"P_star", "lo", "hi", "flag": str | None}, "series": {name: {"P", "lo"?, "hi"?} | None}}``
(``None``: not computed for that row, nothing drawn). ``styles`` maps a series name to its
legend text, colour and marker. :func:`bayes_compare_figure` draws the Bayesian transition's
comparison (``python -m experiments bayes-figure``'s ``bayes_compare.json``) this way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .style import BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION

HALF = 0.38  # half the width of a row's slot on the category axis
#: the transition theories and the measurements of the Bayesian P* beside the reference one
ROUTE_STYLES = {
    "ek_map": dict(label="EK MAP", color=SKY, marker="v"),
    "ek_post": dict(label="EK + readout", color=BLUE, marker="^"),
    "route_B": dict(label="route B (replica 95% interval)", color=VERMILLION, marker="o"),
    "route_A": dict(label="route A (one loop; mean of its token samples)", color=GREEN, marker="s"),
    "profile": dict(label="measured: free-energy profile", color=PURPLE, marker="D"),
    "smc": dict(label="measured: tempered SMC", color=ORANGE, marker="P"),
    "branch_ti": dict(label="measured: branch TI", color=GREY, marker="X"),
}


def _ratio_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a ratio axis between ``lo`` and ``hi``: 1, 2, 5 per decade, and 0.9, 1.1 where
    the axis spans under 1.5 decades (wider, their labels would collide with 1's)."""
    dec = range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1)
    near = {0.9, 1.1} if np.log10(hi / lo) < 1.5 else set()
    t = sorted({m * 10.0**d for d in dec for m in (1, 2, 5)} | near)
    return [v for v in t if lo <= v <= hi]


def _panel(ax, panel: dict, styles: dict, names: list[str]) -> list[str]:
    """Draw one panel; returns the names of its flagged rows."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    from .style import BLACK, GREY

    rows = panel["rows"]
    x = np.arange(len(rows), dtype=float)
    flagged, ys = [], [1.0]
    for i, r in enumerate(rows):
        m = r["measured"]
        lo, hi = m["lo"] / m["P_star"], m["hi"] / m["P_star"]
        ax.fill_between(
            [x[i] - HALF, x[i] + HALF],
            [lo, lo],
            [hi, hi],
            color=GREY,
            alpha=0.3,
            lw=0,
            label="measured 95% interval / measured $P^*$" if i == 0 else None,
        )
        ys += [lo, hi]
        if m.get("flag"):
            name = " ".join([panel.get("name", ""), *r["label"].split("\n")]).strip()
            flagged.append(f"{name} ({m['flag']})")
    ax.axhline(1.0, color=BLACK, lw=0.8)
    present = [n for n in names if any((r["series"].get(n) is not None) for r in rows)]
    offs = np.linspace(-HALF * 0.8, HALF * 0.8, len(present)) if len(present) > 1 else [0.0]
    for k, name in enumerate(present):
        st, labelled = styles[name], False
        for hollow in (False, True):
            pts = [
                (i, r)
                for i, r in enumerate(rows)
                if r["series"].get(name) is not None and bool(r["measured"].get("flag")) == hollow
            ]
            if not pts:
                continue
            xs = np.array([x[i] + offs[k] for i, _ in pts])
            P = np.array([r["measured"]["P_star"] for _, r in pts])
            y = np.array([r["series"][name]["P"] for _, r in pts]) / P
            lo = np.array([r["series"][name].get("lo", np.nan) for _, r in pts], float) / P
            hi = np.array([r["series"][name].get("hi", np.nan) for _, r in pts], float) / P
            err = np.where(np.isfinite([lo, hi]), np.abs(np.array([y - lo, hi - y])), 0.0)
            drawn = ax.errorbar(
                xs,
                y,
                yerr=err if (err > 0).any() else None,
                ls="none",
                marker=st["marker"],
                ms=7,
                color=st["color"],
                mec=st["color"],
                mfc="none" if hollow else st["color"],
                capsize=2,
                label=None if labelled else st["label"],
            )
            labelled = True
            drawn[0].set_gid(name)  # the markers' line, found by its series' name
            ys += [*y, *lo[np.isfinite(lo)], *hi[np.isfinite(hi)]]
    ax.set_yscale("log")
    lo, hi = min(ys) / 1.25, max(ys) * 1.25
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(FixedLocator(_ratio_ticks(lo, hi)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xticks(x, [r["label"] for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel(panel.get("ylabel", "predicted $P^*$ / measured $P^*$"))
    ax.set_xlabel(panel.get("xlabel", "configuration (reading, $L$, $V$)"))
    ax.set_title(panel["title"])
    return flagged


def ratio_figure(panels: Sequence[dict], styles: dict[str, dict], *, width: float = 10.0):
    """One panel per entry of ``panels`` (module docstring), side by side, widths in proportion
    to their rows, one legend below them all. Series are drawn in the order of ``styles``."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from .style import GREY, LEGEND_PT, RC

    if not panels or any(not p["rows"] for p in panels):
        raise ValueError("ratio_figure: every panel needs at least one row")
    names = list(styles)
    with plt.rc_context(RC):
        n = [len(p["rows"]) for p in panels]
        fig, axes = plt.subplots(
            1,
            len(panels),
            figsize=(width, 5.6),
            layout="constrained",
            width_ratios=[max(k + 1.0, 2.6) for k in n],  # a title fits
            squeeze=False,
        )
        handles: dict[str, object] = {}
        flagged: list[str] = []
        for ax, panel in zip(axes[0], panels, strict=True):
            flagged += _panel(ax, panel, styles, names)
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        if flagged:
            handles["hollow: measurement flagged\n" + "\n".join(flagged)] = Line2D(
                [], [], ls="none", marker="o", mfc="none", mec=GREY, ms=7
            )
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncol=3,
            fontsize=LEGEND_PT,
            frameon=False,
        )
    return fig


def _compare_rows(rows: list[dict]) -> list[dict]:
    """Panel rows of ``bayes_compare.json`` rows: the flag is the count of flagged runs; a
    measured crossover is named under its configuration."""
    out = []
    for r in rows:
        m = r["measured"]
        flag = m["n_flagged"] and f"{m['n_flagged']}/{m['n_runs']} {m.get('unit', 'runs')}"
        label = f"{r['reading']}\n$L={r['L']}$, $V={r['V']}$"
        if r.get("rho") is not None:  # Markov tokens
            label += f"\nMarkov $\\rho={r['rho']:g}$"
        if m.get("verdict") == "crossover":  # P*: the posterior mean midway, not equal weights
            label += "\n(crossover)"
        out.append(
            dict(
                label=label,
                series=r["series"],
                measured=dict(P_star=m["P_star"], lo=m["lo"], hi=m["hi"], flag=flag or None),
            )
        )
    return out


def bayes_compare_figure(doc: dict):
    """The Bayesian transition's theory over measurement: softmax ``P*_aG`` per configuration
    (Markov-token rows too, where a route covers them) and, where measured, the linear head's
    posterior crossover (``doc``: a ``bayes_compare.json``, rows with ``reading``, ``L``, ``V``,
    ``measured`` and ``series``)."""
    # Markov rows where some route covers them
    markov = [r for r in doc.get("markov", []) if any(r.get("series", {}).values())]
    panels = [
        dict(
            title="softmax: Bayesian $P^*_{a_G}$",
            name="softmax",
            rows=_compare_rows(doc["softmax"] + markov),
        )
    ]
    if doc.get("linear"):
        panels.append(
            dict(
                title="linear: posterior $\\psi=1/2$",
                name="linear",
                rows=_compare_rows(doc["linear"]),
                xlabel="configuration",
            )
        )
    n = sum(len(p["rows"]) for p in panels)
    return ratio_figure(panels, ROUTE_STYLES, width=max(9.0, 3.0 + 0.85 * n))  # ~0.85 in a row
