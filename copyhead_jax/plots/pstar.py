"""Figures of P* versus a parameter (result dict in, Figure out): versus L or V (the scaling
artefacts: the EK phase diagrams with the measured P*, and P* with its fitted exponents) and
versus the stickiness rho (Markov or causal runs); versus the width N:
:func:`copyhead_jax.plots.width_figure`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compare.branches import KEYS, SINGLE, THEORY_KEY
from ..models import head_class
from . import style as S
from .style import KEY_COLORS, P_LABEL, legend, log_P_axis, styled

__all__ = ["beyond_curves_figure", "beyond_pstar_figure", "branch_follow_figure", "scaling_figure"]


@styled
def scaling_figure(res: dict[str, Any]):
    """The EK phase diagrams over (L or V, P) with the measured P*, and P* with its fitted
    exponents versus L or V."""
    import matplotlib.pyplot as plt

    axis, pd, rows = res["axis"], res["phase"], res["rows"]
    fig, ax = plt.subplots(1, 3, figsize=(17, 6.2), layout="constrained")
    colors = dict(KEY_COLORS, **{SINGLE: S.ORANGE})
    for a, att, field, title, cbar in (
        (ax[0], "linear", "psi", "linear: EK copy fraction $\\psi$", "copy fraction $\\psi$"),
        (ax[1], "softmax", "aG", "softmax: EK $a_G$", "copy logit $a_G$"),
    ):
        d = pd[att]
        m = a.pcolormesh(
            d["values"], d["P"], np.asarray(d[field], float).T, shading="nearest", cmap="viridis"
        )
        fig.colorbar(m, ax=a, label=f"{cbar} (EK theory, dimensionless)")
        kind = head_class(att)
        stars = [k for k in kind.theory.point_keys if k in pd["boundaries"]]
        keys = stars + (["spinodal_lo", "spinodal_hi"] if kind.two_branches else [])
        for k in keys:
            spin = "spin" in k
            a.plot(
                pd["boundary_values"],
                _nan(pd["boundaries"][k]),
                "--" if spin else (":" if k == "P_c1" else "-"),
                color="w",
                lw=1.4,
                label=("EK spinodals" if k == "spinodal_lo" else None)
                if spin
                else f"EK {S.star_label(k)}",
            )
        for k in stars:
            first = True
            for r in rows:
                mk = r["measured"].get(k)
                if mk and mk.get("bracketed"):
                    (lo, hi), y = mk["bracket"], mk["P_star"]
                    lab = f"measured {S.star_label(k)} (bar: bracket)" if first else None
                    a.errorbar(
                        [r["value"]],
                        [y],
                        yerr=[[y - lo], [hi - y]],
                        fmt="o",
                        color=colors[k],
                        mec="w",
                        capsize=3,
                        label=lab,
                    )
                    first = False
        what = "sequence length" if axis == "L" else "vocabulary size"
        a.set(yscale="log", xlabel=f"{axis} ({what})", ylabel=P_LABEL, title=title)
        leg = legend(a)
        leg.set_frame_on(True)  # a grey ground for the white lines
        leg.get_frame().set_facecolor("0.6")
    a, x = ax[2], np.asarray(res["values"], float)
    for k in (*KEYS, SINGLE):
        tk, fits, one = THEORY_KEY[k], res["fits"][k], k == SINGLE
        S.curve(
            a,
            x,
            _nan(r["theory_ek"].get(tk) for r in rows),
            "--" if one else "-",
            color=colors[k],
            label=f"EK {S.star_label(tk)} (exponent {_fmt(fits['theory_ek']['exponent'])})",
        )
        fin = _nan((r.get("theory_finite") or {}).get(tk) for r in rows)
        S.curve(
            a,
            x,
            fin,
            ":",
            marker="D",
            mfc="none",
            color=colors[k],
            label=f"finite-width {S.star_label(tk)}",
        )
        me = [(r["measured"].get(k) or {}) for r in rows]
        y = np.array([m["P_star"] if m.get("bracketed") else np.nan for m in me], float)
        if np.isfinite(y).any():
            a.plot(
                x,
                y,
                "x" if one else "o",
                color=colors[k],
                label=f"measured {S.star_label(k)} (exponent "
                f"{_fmt(fits['measured']['exponent'])}; paper {S.law_tex(fits['paper_law'])}: "
                f"{_fmt(fits['paper_exponent'])})",
            )
    a.set(xscale="log", yscale="log")
    log_P_axis(a, x)
    a.set(
        xlabel=f"{axis} (log scale)", ylabel="$P^*$ (sequences)", title="$P^*$ and fitted exponents"
    )
    legend(a, ncol=1)
    h = res["header"]
    fig.suptitle(f"{h['artefact']}, {h['preset']} preset, {h['mode']}")
    return fig


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _nan(xs) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in xs], float)


@styled
def beyond_pstar_figure(res: dict):
    """P* versus rho (``python -m experiments markov|causal``): the full-minimiser theory
    (lines), the ansatz (dashed), networks (CIs); the softmax coexistence window versus rho."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.0, 5.6), layout="constrained")
    rows = res["rows"]
    rho = np.array([r["rho"] for r in rows])
    for k in KEYS:
        c = KEY_COLORS[k]
        for sp, ls in (("full", "-"), ("ansatz", "--")):
            if sp in rows[0]["theory"]:
                lab = f"{S.star_label(k)} theory ({sp})" if sp == "full" or k == "P_aG" else None
                S.curve(
                    a,
                    rho,
                    _nan(r["theory"][sp].get(k) for r in rows),
                    ls,
                    marker="_",
                    ms=10,
                    color=c,
                    label=lab,
                )
        for mk, dx, what in (("measured", 0.0, ""), ("measured_inf", 0.015, ", width inf")):
            m = [_point(r.get(mk), k) for r in rows]
            y = np.array([x.get("mean") or np.nan for x in m], float)
            lo, hi = np.array([_interval(x) for x in m], float).reshape(-1, 2).T
            err = np.abs(
                np.stack([y - np.where(np.isnan(lo), y, lo), np.where(np.isnan(hi), y, hi) - y])
            )
            jump = np.array([x.get("_key") == "P_aG_jump" for x in m])
            for sel, fmt, tag in ((~jump, "o", ""), (jump, "D", " (largest $a_G$ step)")):
                if np.isfinite(y[sel]).any():
                    a.errorbar(
                        rho[sel] + dx,
                        y[sel],
                        yerr=err[:, sel],
                        fmt=fmt,
                        color=c,
                        capsize=3,
                        mfc="none" if mk == "measured_inf" else c,
                        label=f"{S.star_label(k)}{tag} measured{what}",
                    )
    a.set(
        yscale="log",
        xlabel=r"stickiness $\rho$",
        ylabel=r"$P^*$ (bars: seeds' CI and grid brackets)",
    )
    legend(a, ncol=2)
    full = [r["theory"]["full"] for r in rows]
    win = np.array([t.get("spinodals") or (np.nan, np.nan) for t in full], float)
    if np.isfinite(win).all(1).sum() >= S.MIN_POINTS:
        b.fill_between(
            rho,
            win[:, 0],
            win[:, 1],
            color=S.PALETTE[1],
            alpha=0.3,
            label="coexistence window (full)",
        )
    else:  # too few rho for an area: the window's edges as bars
        y = win.mean(1)  # NaN where the window has no edges
        b.errorbar(
            rho,
            y,
            yerr=np.abs([y - win[:, 0], win[:, 1] - y]),
            fmt="none",
            color=S.PALETTE[1],
            capsize=4,
            label="coexistence window (full)",
        )
    S.curve(
        b,
        rho,
        [t.get("P_aG") or np.nan for t in full],
        "-",
        marker="_",
        ms=10,
        color=S.BLACK,
        label=r"$P^*_{aG}$ (full)",
    )
    S.curve(
        b,
        rho,
        _nan(t.get("P_aG_crossover") for t in full),
        ":",
        color=S.PALETTE[2],
        label="steepest $a_G$ (crossover)",
    )
    b.set(yscale="log", xlabel=r"stickiness $\rho$", ylabel="softmax window in $P$")
    legend(b)
    nets = f", networks at $N$ = {res['width']}" if any(r.get("measured") for r in rows) else ""
    fig.suptitle(
        f"{res['artefact']}: $L$ = 25, $V$ = 5, {res['preset']}; EK theory ($N$ = inf)"
        f"{nets or ', no network runs'}"
    )
    return fig


def _point(measured: dict | None, k: str) -> dict:
    """A measured P* of a row: ``P_aG`` from the branches' U crossing where a seed has one,
    else the pooling start's jump (``P_aG_jump``)."""
    pts = (measured or {}).get("points", {})
    p = pts.get(k) or {}
    if k == "P_aG" and not p.get("mean") and (pts.get("P_aG_jump") or {}).get("mean"):
        return dict(pts["P_aG_jump"], _key="P_aG_jump")
    return p


def _interval(p: dict) -> tuple[float, float]:
    """The hull of the seeds' bootstrap CI and their grid brackets (every error known)."""
    ends = [x for x in (p.get("ci"), p.get("bracket_hull")) if x and None not in x]
    if not ends or not p.get("mean"):
        return (np.nan, np.nan)
    return (min(e[0] for e in ends), max(e[1] for e in ends))


@styled
def beyond_curves_figure(res: dict):
    """Theory order parameters versus P (full minimiser) per rho, networks' seed means."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10.0, 4.6), layout="constrained")
    for i, r in enumerate(res["rows"]):
        col, th, lab = S.PALETTE[i % len(S.PALETTE)], r["theory"]["full"], rf"$\rho$={r['rho']:g}"
        a.plot(th["P"], th["linear_up"]["cG"], "-", color=col, label=lab)
        b.plot(th["P"], th["softmax_up"]["cG"], "-", color=col, label=lab)
        b.plot(th["P"], th["softmax_down"]["cG"], "--", color=col)
        if m := r.get("measured"):
            P = m.get("P_of") or dict.fromkeys(("linear", "pool", "copy"), m["P"])
            a.plot(P["linear"], _nan(m["curves"]["linear"]["cG"]), "o", color=col, ms=4)
            b.plot(P["pool"], _nan(m["curves"]["pool"]["cG"]), "o", color=col, ms=4)
            b.plot(P["copy"], _nan(m["curves"]["copy"]["cG"]), "s", color=col, ms=4, mfc="none")
    for ax, name in ((a, r"linear $c_G$"), (b, r"softmax $a_G$ (up: -, down: --)")):
        ax.set_xscale("log")
        log_P_axis(ax, np.asarray(res["rows"][0]["theory"]["full"]["P"], float))
        ax.set_xlabel(P_LABEL)
        ax.set_ylabel(name)
    legend(a)
    fig.suptitle("order parameters vs P: theory (lines), networks (markers)")
    return fig


@styled
def branch_follow_figure(rows: list[dict]):
    """One panel per followed grid (:mod:`copyhead_jax.compare.follow`, a row's ``followed``):
    each seed's a_G on the up pass (solid) and the down pass (dashed) versus P, the two passes'
    U crossings marked by vertical lines."""
    import matplotlib.pyplot as plt

    panels = [(r, f) for r in rows for f in r.get("followed", [])]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False, layout="constrained"
    )
    for ax, (r, f) in zip(axes[0], panels):
        P = np.asarray(f["P"], float)
        up, dn = np.asarray(f["up"]["aG"], float), np.asarray(f["down"]["aG"], float)
        for s in range(up.shape[1]):
            col = S.PALETTE[s % len(S.PALETTE)]
            ax.plot(P, up[:, s], "-o", color=col, ms=3, label=f"seed {s}: up" if s == 0 else None)
            ax.plot(
                P, dn[:, s], "--s", color=col, ms=3, mfc="none", label="down" if s == 0 else None
            )
        for x in f["coexistence"]["crossing"]:
            if x is not None:
                ax.axvline(x, color="0.6", lw=0.8, zorder=0)
        chain = ", ".join(f"$\\{k}$ = {r[k]:g}" for k in ("rho", "alpha") if k in r)
        ax.set(
            title=f"{chain}{', causal' if r['causal'] else ''}",
            xlabel=P_LABEL,
            ylabel="copy logit $a_G$",
        )
        legend(ax)
    return fig
