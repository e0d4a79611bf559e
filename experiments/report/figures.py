"""The artefacts' figures: result dict in, matplotlib Figure out (``common.save_artefact`` saves
and closes them), in the shared style of :mod:`copyhead_jax.style`; ``python -m
experiments.report.redraw`` draws the committed ones again from their JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from copyhead_jax.style import (
    BLACK,
    BLUE,
    COLORS,
    GREEN,
    GREY,
    KEY_COLORS,
    ORANGE,
    P_LABEL,
    PALETTE,
    PURPLE,
    SKY,
    VERMILLION,
    legend,
    log_P_axis,
    not_measured,
    num,
    styled,
)

from ..features import KEYS, SINGLE, THEORY_KEY, P_star

LOSS_LABEL = "loss per sequence $\\sum_a \\|f^a - y^a\\|^2$"
ORDER_LABEL = "order parameter (dimensionless)"


def _vlines(a, marks) -> None:
    """Vertical P* lines with a legend entry each: ``marks`` = ``(label, P, colour, style)``."""
    for label, v, col, ls in marks:
        if v is not None and np.isfinite(v):
            a.axvline(v, color=col, ls=ls, lw=1.0, label=f"{label} = {num(v)}")


STAR_NAMES = {"P_cG_half": "cG,1/2", "P_aG_single": "aG,\\ one\\ start",
              "window_lo": "window,\\ low", "spinodal_lo": "spinodal,\\ lower",
              "spinodal_hi": "spinodal,\\ upper"}  # fmt: skip


def _star(name: str) -> str:
    """``P_cG`` -> ``$P^*_{cG}$`` for legends."""
    return f"$P^*_{{{STAR_NAMES.get(name, name[2:])}}}$"


def _log_P(a, P=None) -> None:
    """Log P axis ticked at the data's P (or ``P``) within the current limits (no colliding
    labels)."""
    a.set_xscale("log")
    lo, hi = a.get_xlim()
    xs = [
        np.asarray(ln.get_xdata(), float)
        for ln in a.lines
        if ln.get_transform() == a.transData and ln.get_marker() not in (None, "None", "")
    ]
    if P is not None:
        xs = [np.asarray(P, float)]
    x = np.concatenate([v.ravel() for v in xs]) if xs else np.array([lo, hi])
    x = x[(x >= lo) & (x <= hi)]
    log_P_axis(a, x if len(x) else [lo, hi])
    a.set_xlim(lo, hi)


@styled
def main_figure(res: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 3, figsize=(16, 11), layout="constrained")
    ek, th = res["theory_ek_curves"], res["theory_ek_points"]
    cur = res["curves"]
    if "measured_located" in res:  # a fresh run; its JSON keeps the plain dicts
        mp = {k: P_star(v) for k, v in res["measured_located"].items()}
    else:
        mp = {k: (v or {}).get("P_star") for k, v in res["measured"].items()}
    solver = res.get("header", {}).get("engine", {}).get("train", {}).get("solver")
    base = "exact MAP" if solver == "exact" else "Adam"
    width = res.get("width")
    fit = base  # the suptitle names the width
    other = {w: r for w, r in (res.get("widths") or {}).items() if w != width and w != str(width)}

    def band(a, x, m, sd, label, **kw):
        a.errorbar(np.asarray(x, float), np.asarray(m, float),
                   yerr=None if sd is None else np.asarray(sd, float), ms=4, capsize=2,
                   label=label, **kw)  # fmt: skip

    def stars(a, keys):
        _vlines(a, [(f"EK {_star(k)}", th.get(k), KEY_COLORS[k], "--") for k in keys]
                + [(f"measured {_star(k)}", mp.get(k), KEY_COLORS[k], "-")
                   for k in keys])  # fmt: skip

    def wlabel(w):
        return "inf" if w == "inf" else f"{int(float(w)):,}"

    # (0,0) linear order parameters
    a = ax[0, 0]
    e, f, lin = ek["linear"]["map"], cur["finite_linear"], cur["linear"]
    a.plot(e["P"], e["c1"], "--", color=SKY, label="EK theory $c_1$")
    a.plot(e["P"], e["cG"], "--", color=BLUE, label="EK theory $c_G$")
    a.plot(f["P"], f["c1"], ":", color=SKY, lw=1.5, label="finite-width theory $c_1$")
    a.plot(f["P"], f["cG"], ":", color=BLUE, lw=1.5, label="finite-width theory $c_G$")
    band(a, lin["P"], lin["c1"], lin["c1_sd"], f"{fit} $c_1$", fmt="s", color=SKY)
    band(a, lin["P"], lin["cG"], lin["cG_sd"], f"{fit} $c_G$", fmt="o", color=BLUE)
    for (w, r), mk in zip(other.items(), "x+1"):
        cs = r.get("curves_small", {}).get("linear")
        if cs:
            a.plot(cs["P"], cs["cG"], mk, color=BLUE, alpha=0.7, label=f"N={wlabel(w)}: $c_G$")
    if cur.get("sgld_linear"):
        pl = cur["sgld_linear"]
        band(a, pl["P"], pl["cG_mean"], np.sqrt(pl["cG_var"]), "SGLD $c_G$", fmt="^", color=BLACK,
             mfc="none")  # fmt: skip
    stars(a, ("P_c1", "P_cG"))
    a.set(ylabel=ORDER_LABEL, title="linear attention: $c_1$, $c_G$ (error bars: sd over seeds)")

    # (1,0) softmax aG
    a = ax[1, 0]
    e, f = ek["softmax"]["map"], cur["finite_softmax"]
    a.plot(e["P"], e["aG"], "--", color=VERMILLION, label="EK theory $a_G$ (global minimum)")
    mv = np.asarray(e["minima_valid"], bool)
    maG = np.where(mv, np.asarray(e["minima_aG"], float), np.nan)
    Pm = np.broadcast_to(np.asarray(e["P"], float)[:, None], maG.shape)[:, 1:]
    a.plot(Pm.ravel(), maG[:, 1:].ravel(), ".", ms=2, color=GREY, label="EK: other local minima")
    a.plot(f["P"], f["aG"], ":", color=VERMILLION, lw=1.5, label="finite-width theory $a_G$")
    for name, fmt, col in (("pool", "o", ORANGE), ("copy", "v", PURPLE)):
        c = cur[name]
        band(a, c["P"], c["cG"], c["cG_sd"], f"{fit} $a_G$ ({name} start)", fmt=fmt, color=col)
        for (w, r), mk in zip(other.items(), "x+1"):
            cs = r.get("curves_small", {}).get(name)
            if cs:  # one legend entry per width, in grey: the colour says the start
                a.plot(cs["P"], cs["cG"], mk, color=col, alpha=0.7)
                if name == "pool":
                    a.plot([], [], mk, color=GREY, label=f"N={wlabel(w)} (colour: start)")
    if cur.get("sgld_softmax"):
        ps = cur["sgld_softmax"]
        band(a, ps["P"], ps["cG_mean"], np.sqrt(ps["cG_var"]), "SGLD $a_G$", fmt="^", color=BLACK,
             mfc="none")  # fmt: skip
    sp = th.get("spinodals")
    if sp:
        a.axvspan(sp[0], sp[1], color=VERMILLION, alpha=0.1, lw=0,
                  label="EK coexistence (between the spinodals)")  # fmt: skip
    stars(a, ("P_aG",))
    Pm = np.concatenate([np.asarray(cur[k]["P"], float) for k in ("pool", "copy")])
    a.set_xlim(Pm.min() / 2, Pm.max() * 2)  # the transition, not the flat ends
    _log_P(a, Pm)
    a.set(ylabel="copy logit $a_G$ (dimensionless)",
          title="softmax attention: $a_G$ from both starts")  # fmt: skip

    # (0,1) losses
    a = ax[0, 1]
    for name, col, key in (("linear", BLUE, "linear"), ("softmax", VERMILLION, "pool")):
        c = cur[key]
        for split, fmt, mfc in (("train", "o", None), ("test", "s", "none")):
            band(a, c["P"], c[f"{split}_loss"], c[f"{split}_loss_sd"], f"{fit} {name}, {split}",
                 fmt=fmt, color=col, mfc=mfc)  # fmt: skip
        e = ek[name]["map"]
        a.plot(e["P"], e["mse"], "--", color=col, label=f"EK population loss ({name})")
    a.set(ylabel=LOSS_LABEL, title="train and test loss")

    # (1,1) branch objective difference
    a = ax[1, 1]
    br = cur["branches"]
    if len(br["P"]):
        P, dU = np.asarray(br["P"], float), np.asarray(br["dU_per_seq"], float)
        dist = np.asarray(br["distinct"], float) > 0
        a.plot(P[dist], dU[dist], "o-", color=VERMILLION,
               label=f"{fit}: $(U_{{pool}} - U_{{copy}})/P$")  # fmt: skip
        if (~dist).any():
            a.plot(P[~dist], dU[~dist], "x", color=GREY, label="branches merged (excluded)")
    f = cur["finite_softmax"]
    if "dS_per_seq" in f:
        lim = a.get_xlim() if len(br["P"]) else None
        a.plot(f["P"], f["dS_per_seq"], ":", color=VERMILLION, lw=1.5,
               label="finite-width theory $(S_{weak} - S_{strong})/P$")  # fmt: skip
        if lim:
            a.set_xlim(lim)
            y = np.asarray(br["dU_per_seq"], float)
            pad = 0.15 * (np.nanmax(y) - np.nanmin(y) or 1.0)
            a.set_ylim(np.nanmin(y) - pad, np.nanmax(y) + pad)
    a.axhline(0, color=BLACK, lw=0.6)
    stars(a, ("P_aG",))
    a.set(ylabel="objective gap per sequence (loss units)",
          title="softmax: objective gap between the branches")  # fmt: skip

    # (0,2) susceptibility (SGLD), or "not measured"
    a = ax[0, 2]
    drawn = False
    for key, fld, col, lab in (
        ("sgld_linear", "r", GREEN, "linear: var($r$)"),
        ("sgld_linear", "cG", BLUE, "linear: var($c_G$)"),
        ("sgld_softmax", "cG", VERMILLION, "softmax: var($a_G$)"),
    ):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p[f"{fld}_var"], "o-", color=col, label=lab)
            drawn = True
    if drawn:
        a.set_yscale("log")
        stars(a, ("P_c1", "P_cG", "P_aG"))
    else:
        not_measured(a, "no SGLD in this run\n(see posterior_susceptibility)")
        a.set(xticks=[], yticks=[])
    a.set(ylabel="posterior variance over draws", title="SGLD susceptibility (early warning)")

    # (1,2) coverage
    a = ax[1, 2]
    for key, col, lab in (("linear", BLUE, "linear"), ("pool", VERMILLION, "softmax")):
        c = cur[key]
        band(a, c["P"], c["coverage"], c["coverage_sd"], f"{fit} {lab}, mean attention", fmt="o",
             color=col)  # fmt: skip
        a.plot(c["P"], c["sample_coverage"], "s:", mfc="none", ms=4, color=col,
               label=f"{fit} {lab}, per sample")  # fmt: skip
    for key, col, lab in (("sgld_linear", BLUE, "linear"), ("sgld_softmax", VERMILLION, "softmax")):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p["coverage_mean"], "^--", color=col, mfc="none", label=f"SGLD {lab}")
    a.set(ylabel="subspace coverage (cosine, 0 to 1)", title="subspace coverage")
    for a in ax.flat:
        if a.has_data() and a is not ax[1, 0]:
            _log_P(a)
        a.set_xlabel(P_LABEL)
        legend(a, ncol=2)
    e = res["header"]["engine"]
    fig.suptitle(
        f"main, {res['header']['preset']} preset, {res['header']['mode']}: L={e['task']['L']}, "
        f"V={e['task']['V']}; points: {base} at N={e['model']['width']:,}, error bars: sd over "
        f"{e['sweep']['n_seeds']} seeds; vertical lines: $P^*$ (dashed EK theory, solid measured)"
    )
    return fig


REGIME_COLORS = {"no": GREY, "poo": GREEN, "cro": ORANGE, "cop": PURPLE}


def _regime_bands(a, P, names) -> None:
    """Shade each P by its regime, boundaries half way (in log P) between neighbours; one legend
    entry per regime present."""
    P = np.asarray(P, float)
    edges = np.sqrt(P[1:] * P[:-1])
    lo = np.r_[P[0] / 1.3, edges]
    hi = np.r_[edges, P[-1] * 1.3]
    seen = set()
    for x0, x1, name in zip(lo, hi, names):
        key = name[:3]
        label = None if name in seen else f"EK regime: {name}"
        seen.add(name)
        a.axvspan(x0, x1, color=REGIME_COLORS.get(key, GREY), alpha=0.15, lw=0, label=label)


@styled
def coverage_figure(res: dict[str, Any], res_main: dict[str, Any]):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
    cur = res_main["curves"]
    solver = res_main.get("header", {}).get("engine", {}).get("train", {}).get("solver")
    fit = "exact MAP" if solver == "exact" else "Adam"
    for a, att, key, post in (
        (ax[0], "linear", "linear", "sgld_linear"),
        (ax[1], "softmax", "pool", "sgld_softmax"),
    ):
        c = cur[key]
        col = COLORS[att]
        a.errorbar(c["P"], c["coverage"], yerr=c["coverage_sd"], fmt="o-", ms=4, capsize=2,
                   color=col, label=f"{fit}, mean attention")  # fmt: skip
        a.errorbar(c["P"], c["sample_coverage"], yerr=c["sample_coverage_sd"], fmt="s:", ms=4,
                   capsize=2, color=col, mfc="none", label=f"{fit}, per sample")  # fmt: skip
        p = cur.get(post)
        if p:
            a.plot(p["P"], np.asarray(p["coverage_mean"], float), "^--", mfc="none", color=BLACK,
                   label="SGLD, mean attention")  # fmt: skip
        a.axhline(res["a1_threshold"], color=GREY, lw=0.8, ls="--",
                  label=f"A1 threshold ({res['a1_threshold']:g})")  # fmt: skip
        a.set_xscale("log")
        a.set(
            xlabel=P_LABEL,
            ylabel="subspace coverage (cosine, 0 to 1)",
            title=f"{att} attention" + (" (pooling start)" if att == "softmax" else ""),
        )
    lin = res["linear_regimes"]
    _regime_bands(ax[0], lin["P"], lin["regime"])
    for a in ax:
        _log_P(a)
        legend(a)
    h = res["header"]
    fig.suptitle(f"subspace coverage, {h['preset']} preset, {h['mode']} (error bars: sd over "
                 "seeds; linear panel shaded by the EK regime at each P)")  # fmt: skip
    return fig


@styled
def hysteresis_figure(res: dict[str, Any]):
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    fig, ax = plt.subplots(1, 3, figsize=(16, 5.8), layout="constrained")
    b = res["softmax"]
    a = ax[0]
    ek = res["theory_ek_softmax"]
    mv = np.asarray(ek["minima_valid"], bool)
    maG = np.where(mv, np.asarray(ek["minima_aG"], float), np.nan)
    Pm = np.broadcast_to(np.asarray(ek["P"], float)[:, None], maG.shape)
    a.plot(Pm.ravel(), maG.ravel(), ".", ms=2, color=GREY, label="EK theory: local minima")
    for name, fmt, col in (("pool", "o", ORANGE), ("copy", "v", PURPLE)):
        a.errorbar(b["P"], b[f"aG_{name}"], yerr=b[f"aG_{name}_sd"], fmt=fmt, color=col, ms=4,
                   capsize=2, label=f"exact MAP / Adam, {name} start")  # fmt: skip
    # the windows as separate bars above the data (they overlap; one band would merge them)
    vals = np.r_[maG.ravel(), np.asarray(b["aG_pool"], float), np.asarray(b["aG_copy"], float)]
    top = np.nanmax(vals) if np.isfinite(vals).any() else 1.0
    a.set_ylim(top=1.45 * max(top, 1e-3))
    tr = blended_transform_factory(a.transData, a.transAxes)
    w = res["measured_window"]
    bars = [
        ("EK spinodal window", res["theory_ek_spinodals"], VERMILLION, 0.95),
        ("finite-width spinodal window", res.get("theory_finite_spinodals"), SKY, 0.90),
        ("measured window (both starts)", [w.get("lower"), w.get("upper")], BLUE, 0.85),
    ]
    for label, win, col, y in bars:
        if win and all(v is not None and np.isfinite(v) for v in win):
            a.plot(win, [y, y], "-|", color=col, lw=3, ms=10, transform=tr,
                   label=f"{label}: {num(win[0])} to {num(win[1])}")  # fmt: skip
    Pd = np.asarray(b["P"], float)
    a.set_xlim(Pd.min() / 1.5, Pd.max() * 1.5)
    _log_P(a, Pd)
    a.set(ylabel="copy logit $a_G$ (dimensionless)", title="softmax: $a_G$ from both starts")
    a = ax[1]
    a.plot(b["P"], b["dU_per_seq"], "o-", color=VERMILLION, label="$(U_{pool} - U_{copy})/P$")
    a.axhline(0, color=BLACK, lw=0.6)
    a.set(ylabel="objective gap per sequence (loss units)",
          title="softmax: objective gap between the two starts")  # fmt: skip
    a = ax[2]
    lin = res["linear"]
    if lin:
        a.plot(lin["P"], lin["cG_prior"], "o-", color=BLUE, label="$c_G$, prior start")
        a.plot(lin["P"], lin["cG_copy"], "v--", color=SKY, label="$c_G$, copy start")
        t = res["theory_ek_linear"]
        a.plot(t["P"], t["cG"], ":", color=BLACK, label="EK theory $c_G$")
        a.set_title(f"linear: both starts (max $|\\Delta c_G|$ = {lin['max_abs_dcG']:.3g})")
    else:
        not_measured(a, "linear starts")
        a.set_title("linear: both starts")
    a.set(ylabel=ORDER_LABEL)
    for a in ax[1:]:
        if a.has_data():
            _log_P(a)
    for a in ax:
        a.set_xlabel(P_LABEL)
        legend(a)
    h = res["header"]
    fig.suptitle(f"hysteresis, {h['preset']} preset, {h['mode']} (error bars: sd over seeds)")
    return fig


@styled
def scaling_figure(res: dict[str, Any]):
    import matplotlib.pyplot as plt

    axis = res["axis"]
    fig, ax = plt.subplots(1, 3, figsize=(17, 6.2), layout="constrained")
    pd = res["phase"]
    colors = dict(KEY_COLORS, **{SINGLE: ORANGE})
    for a, att, field, title, cbar in (
        (ax[0], "linear", "psi", "linear: EK copy fraction $\\psi$", "copy fraction $\\psi$"),
        (ax[1], "softmax", "aG", "softmax: EK $a_G$", "copy logit $a_G$"),
    ):
        d = pd[att]
        z = np.asarray(d[field], float)
        m = a.pcolormesh(d["values"], d["P"], z.T, shading="nearest", cmap="viridis")
        fig.colorbar(m, ax=a, label=f"{cbar} (EK theory, dimensionless)")
        keys = ("P_c1", "P_cG") if att == "linear" else ("P_aG", "spinodal_lo", "spinodal_hi")
        for k in keys:
            y = np.asarray([np.nan if v is None else v for v in pd["boundaries"][k]], float)
            spin = "spin" in k
            ls = "--" if spin else (":" if k == "P_c1" else "-")
            a.plot(pd["boundary_values"], y, ls, color="w", lw=1.4,
                   label=("EK spinodals" if k == "spinodal_lo" else None) if spin
                   else f"EK {_star(k)}")  # fmt: skip
        for k in ("P_c1", "P_cG") if att == "linear" else ("P_aG",):
            first = True
            for r in res["rows"]:
                mk = r["measured"].get(k)
                if mk and mk.get("bracketed"):
                    lo, hi = mk["bracket"]
                    a.errorbar([r["value"]], [mk["P_star"]],
                               yerr=[[mk["P_star"] - lo], [hi - mk["P_star"]]], fmt="o",
                               color=colors[k], mec="w", capsize=3,
                               label=f"measured {_star(k)} (bar: bracket)" if first
                               else None)  # fmt: skip
                    first = False
        a.set_yscale("log")
        a.set(xlabel=f"{axis} ({'sequence length' if axis == 'L' else 'vocabulary size'})",
              ylabel=P_LABEL, title=title)  # fmt: skip
        leg = legend(a)
        leg.set_frame_on(True)  # a grey ground for the white lines
        leg.get_frame().set_facecolor("0.6")
    a = ax[2]
    x = np.asarray(res["values"], float)
    for k in (*KEYS, SINGLE):
        tk = THEORY_KEY[k]
        fits = res["fits"][k]
        ek = [r["theory_ek"].get(tk) for r in res["rows"]]
        a.plot(x, [np.nan if v is None else v for v in ek], "-" if k != SINGLE else "--",
               color=colors[k],
               label=f"EK {_star(tk)} (exponent "
               f"{_fmt(fits['theory_ek']['exponent'])})")  # fmt: skip
        fin = [(r.get("theory_finite") or {}).get(tk) for r in res["rows"]]
        if any(v is not None and np.isfinite(v) for v in fin):
            a.plot(x, [np.nan if v is None else v for v in fin], ":", color=colors[k],
                   label=f"finite-width {_star(tk)}")  # fmt: skip
        me = [(r["measured"].get(k) or {}) for r in res["rows"]]
        y = [m["P_star"] if m.get("bracketed") else np.nan for m in me]
        a.plot(x, y, "o" if k != SINGLE else "x", color=colors[k],
               label=f"measured {_star(k)} (exponent {_fmt(fits['measured']['exponent'])}; "
               f"paper {fits['paper_law']}: {_fmt(fits['paper_exponent'])})")  # fmt: skip
    a.set_xscale("log")
    a.set_yscale("log")
    log_P_axis(a, x)
    a.set(xlabel=f"{axis} (log scale)", ylabel="$P^*$ (sequences)",
          title="$P^*$ and fitted exponents")  # fmt: skip
    legend(a, ncol=1)
    h = res["header"]
    fig.suptitle(f"{h['artefact']}, {h['preset']} preset, {h['mode']}")
    return fig


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


@styled
def width_figure(res: dict[str, Any]):
    """The width table's figure: every P* relative to the EK theory versus the width N
    (measured with its CI, finite-width theory as open markers), and the order parameters
    versus P per width."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(1, 4, figsize=(20, 6.2), layout="constrained",
                           gridspec_kw={"width_ratios": [1.4, 1, 1, 1]})  # fmt: skip
    widths = res["widths"]
    finite = [w for w in widths if w != "inf"]
    # infinity drawn one decade right of the largest finite width
    x_of = {w: float(w) for w in finite}
    x_inf = 10 * max(x_of.values()) if x_of else 1.0
    x_of["inf"] = x_inf
    a = ax[0]
    rows = [r for r in res["rows"] if r["theory_ek"]]
    for j, row in enumerate(rows):
        ek = row["theory_ek"]
        col = KEY_COLORS.get(row["key"], BLACK)
        shift = 1.0 + 0.04 * (j - (len(rows) - 1) / 2)  # side by side, not on top
        xs, ys, lo, hi, xf, yf = [], [], [], [], [], []
        for w in widths:
            m = row["measured"][w]
            if m.get("estimate") is not None:
                xs.append(x_of[w] * shift)
                ys.append(m["estimate"] / ek)
                lo.append((m["estimate"] - (m.get("lo") or m["estimate"])) / ek)
                hi.append(((m.get("hi") or m["estimate"]) - m["estimate"]) / ek)
            t = row["theory_finite"][w]
            if t.get("estimate") is not None:
                xf.append(x_of[w] * shift)
                yf.append(t["estimate"] / ek)
        a.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", color=col, ms=4, capsize=2,
                   label=_star(row["key"]))  # fmt: skip
        a.plot(xf, yf, "D", mfc="none", color=col, ms=5)
        old = (row.get("reference_128") or {}).get("measured")
        if old:
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
    a.set(xlabel="width $N$", ylabel="$P^*$ / $P^*$(EK theory)",
          title="$P^*$ relative to the EK theory versus width")  # fmt: skip
    h, lab = a.get_legend_handles_labels()
    h += [Line2D([], [], marker="o", color=GREY, ls="-"),
          Line2D([], [], marker="D", mfc="none", color=GREY, ls=""),
          Line2D([], [], marker="x", color=GREY, ls="")]  # fmt: skip
    lab += ["exact MAP (bars: 95% CI)", "finite-width theory", "old Adam run, N = 128"]
    legend(a, handles=h, labels=lab, ncol=3)
    cmap = plt.get_cmap("viridis")
    shade = {w: cmap(0.85 * i / max(1, len(widths) - 1)) for i, w in enumerate(widths)}
    panels = (
        (ax[1], "linear", "psi", "linear: copy fraction $\\psi$", "copy fraction $\\psi$"),
        (ax[2], "linear", "r", "linear: attention row sum $r$", "row sum $r$ (dimensionless)"),
        (
            ax[3],
            "pool",
            "cG",
            "softmax: $a_G$ (solid: pooling start, dashed: copy start)",
            "copy logit $a_G$ (dimensionless)",
        ),
    )
    for a, branch, q, title, yl in panels:
        for w in widths:
            c = res["curves"].get(w)
            if not c or q not in c[branch]:
                continue
            label = "N = inf" if w == "inf" else f"N = {int(float(w)):,}"
            a.plot(c[branch]["P"], c[branch][q], "o-", ms=3, color=shade[w], label=label)
            if branch == "pool":
                a.plot(c["copy"]["P"], c["copy"][q], "s--", ms=3, color=shade[w])
        if branch == "pool":
            a.plot([], [], "o-", color=GREY, label="pooling start")
            a.plot([], [], "s--", color=GREY, label="copy start")
        if a.has_data():
            _log_P(a)
        a.set(xlabel=P_LABEL, ylabel=yl, title=title)
        legend(a)
    fig.suptitle(f"width table, {res['preset']} preset (exact MAP, {res['n_seeds']} seeds)")
    return fig


def _nan(xs) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in xs], float)


@styled
def beyond_pstar_figure(res: dict):
    """P* versus rho (``python -m experiments markov|causal``): the full-minimiser theory
    (lines), the ansatz (dashed), networks (CIs); the softmax coexistence window versus rho."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    rows = res["rows"]
    rho = np.array([r["rho"] for r in rows])
    for k in KEYS:
        c = KEY_COLORS[k]
        for sp, ls in (("full", "-"), ("ansatz", "--")):
            if sp in rows[0]["theory"]:
                lab = f"{k} theory ({sp})" if sp == "full" or k == "P_aG" else None
                a.plot(rho, _nan(r["theory"][sp].get(k) for r in rows), ls, color=c, label=lab)
        m = [r.get("measured", {}).get("points", {}).get(k, {}) for r in rows]
        if any(x.get("mean") for x in m):
            y = np.array([x.get("mean") or np.nan for x in m], float)
            ci = np.array([x.get("ci") or [np.nan, np.nan] for x in m], float)
            ci = np.where(np.isnan(ci), y[:, None], ci)
            err = np.abs(np.stack([y - ci[:, 0], ci[:, 1] - y]))
            a.errorbar(rho, y, yerr=err, fmt="o", color=c, capsize=3, label=f"{k} measured")
    a.set(yscale="log", xlabel=r"stickiness $\rho$", ylabel=r"$P^*$")
    legend(a, ncol=2)
    full = [r["theory"]["full"] for r in rows]
    win = np.array([t.get("spinodals") or (np.nan, np.nan) for t in full], float)
    b.fill_between(rho, win[:, 0], win[:, 1], color=PALETTE[1], alpha=0.3,
                   label="coexistence window (full)")  # fmt: skip
    b.plot(rho, [t.get("P_aG") or np.nan for t in full], "k-", label=r"$P^*_{aG}$ (full)")
    b.plot(rho, _nan(t.get("P_aG_crossover") for t in full), ":", color=PALETTE[2],
           label="steepest aG (crossover)")  # fmt: skip
    b.set(yscale="log", xlabel=r"stickiness $\rho$", ylabel="softmax window in $P$")
    legend(b)
    nets = f", networks at N={res['width']}" if any(r.get("measured") for r in rows) else ""
    fig.suptitle(f"{res['artefact']}: L=25, V=5, {res['preset']}; EK theory (N = inf)"
                 f"{nets or ', no network runs'}")  # fmt: skip
    return fig


@styled
def beyond_curves_figure(res: dict):
    """Theory order parameters versus P (full minimiser) per rho, networks' seed means."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for i, r in enumerate(res["rows"]):
        col, th, lab = PALETTE[i % len(PALETTE)], r["theory"]["full"], rf"$\rho$={r['rho']:g}"
        a.plot(th["P"], th["linear_up"]["cG"], "-", color=col, label=lab)
        b.plot(th["P"], th["softmax_up"]["cG"], "-", color=col, label=lab)
        b.plot(th["P"], th["softmax_down"]["cG"], "--", color=col)
        if m := r.get("measured"):
            a.plot(m["P"], m["curves"]["linear"]["cG"], "o", color=col, ms=4)
            b.plot(m["P"], m["curves"]["pool"]["cG"], "o", color=col, ms=4)
            b.plot(m["P"], m["curves"]["copy"]["cG"], "s", color=col, ms=4, mfc="none")
    for ax, name in ((a, r"linear $c_G$"), (b, r"softmax $a_G$ (up: -, down: --)")):
        ax.set_xscale("log")
        log_P_axis(ax, np.asarray(res["rows"][0]["theory"]["full"]["P"], float))
        ax.set_ylabel(name)
    legend(a)
    fig.suptitle("order parameters vs P: theory (lines), networks (markers)")
    return fig


def beyond_figures(res: dict, dest: Path, which: str) -> list[Path]:
    """``which_pstar.png`` and ``which_curves.png`` of a markov or causal result in ``dest``."""
    import matplotlib.pyplot as plt

    Path(dest).mkdir(parents=True, exist_ok=True)
    out = []
    for name, draw in (("pstar", beyond_pstar_figure), ("curves", beyond_curves_figure)):
        fig = draw(res)
        out.append(Path(dest) / f"{which}_{name}.png")
        fig.savefig(out[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return out
