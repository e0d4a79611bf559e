"""Figures of the branch-run artefacts (result dict in, Figure out): the main artefact (both
attentions' order parameters, losses, the branches' U gap, susceptibility and coverage versus P,
every P* of the EK and finite-width theories against the measured one), the coverage ablation
and the hysteresis windows of the two starts; P* versus a parameter: :mod:`.pstar`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import Config
from ..models import head_class
from . import style as S
from .style import A_G_LABEL, KEY_COLORS, P_LABEL, legend, not_measured, num, styled

__all__ = ["coverage_figure", "hysteresis_figure", "main_figure", "solver_kind", "width_name"]


def solver_kind(res: dict) -> str | None:
    """The solver that ran an artefact (``"exact"``, ``"adam"``) from its header's engine config
    (files of either config layout), None without a header."""
    engine = res.get("header", {}).get("engine")
    return None if engine is None else Config.from_dict(engine).solver.kind


def width_name(w: str) -> str:
    """A width key of a result (``"128"``, ``"inf"``) as a label: ``128``, ``10,000``, ``inf``."""
    return "inf" if w == "inf" else f"{int(w):,}"


LOSS_LABEL = "loss per sequence $\\sum_a \\|f^a - y^a\\|^2$"
ORDER_LABEL = "order parameter (dimensionless)"
GAP_LABEL = "objective gap per sequence (loss units)"
COVERAGE_LABEL = "subspace coverage (cosine, 0 to 1)"


def _vlines(a, marks) -> None:
    """Vertical P* lines with a legend entry each: ``marks`` = ``(label, P, colour, style)``."""
    for label, v, col, ls in marks:
        if v is not None and np.isfinite(v):
            a.axvline(v, color=col, ls=ls, lw=1.0, label=f"{label} = {num(v)}")


def _fit_name(res: dict) -> str:
    return "exact MAP" if solver_kind(res) == "exact" else "Adam"


def _band(a, x, m, sd, label, **kw) -> None:
    """Seed means with their sd as error bars."""
    yerr = None if sd is None else np.asarray(sd, float)
    a.errorbar(
        np.asarray(x, float), np.asarray(m, float), yerr=yerr, ms=4, capsize=2, label=label, **kw
    )


def _other_minima(a, e: dict, skip_global: bool, label: str) -> np.ndarray:
    """The EK theory's local minima of a_G at each P as grey dots; returns them."""
    maG = np.where(np.asarray(e["minima_valid"], bool), np.asarray(e["minima_aG"], float), np.nan)
    Pm = np.broadcast_to(np.asarray(e["P"], float)[:, None], maG.shape)
    k = 1 if skip_global else 0
    a.plot(Pm[:, k:].ravel(), maG[:, k:].ravel(), ".", ms=2, color=S.GREY, label=label)
    return maG


@styled
def main_figure(res: dict[str, Any]):
    """The main artefact: order parameters, losses, the branches' U gap, the SGLD
    susceptibility and the coverage versus P, theory against measured, with every P*."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 3, figsize=(16, 11), layout="constrained")
    ek, th, cur = res["theory_ek_curves"], res["theory_ek_points"], res["curves"]
    fit = _fit_name(res)
    if "measured_located" in res:  # a fresh run; its JSON keeps the plain dicts
        mp = {k: None if v is None else v.P_star for k, v in res["measured_located"].items()}
    else:
        mp = {k: (v or {}).get("P_star") for k, v in res["measured"].items()}
    width = res.get("width")
    other = {w: r for w, r in (res.get("widths") or {}).items() if w not in (width, str(width))}

    def stars(a, keys):
        for src, ls, what in ((th, "--", "EK"), (mp, "-", "measured")):
            _vlines(a, [(f"{what} {S.star_label(k)}", src.get(k), KEY_COLORS[k], ls) for k in keys])

    def sgld(a, key, q):
        if p := cur.get(key):
            _band(
                a,
                p["P"],
                p["cG_mean"],
                np.sqrt(p["cG_var"]),
                f"SGLD {q}",
                fmt="^",
                color=S.BLACK,
                mfc="none",
            )

    def smaller_widths(a, branch, col, label):
        for (w, r), mk in zip(other.items(), "x+1"):
            if cs := r.get("curves_small", {}).get(branch):
                a.plot(cs["P"], cs["cG"], mk, color=col, alpha=0.7, label=label(w))

    a, lin = ax[0, 0], cur["linear"]  # linear order parameters
    for src, ls, lw, name in (
        (ek["linear"]["map"], "--", None, "EK theory"),
        (cur["finite_linear"], ":", 1.5, "finite-width theory"),
    ):
        for q, col in (("c1", S.SKY), ("cG", S.BLUE)):
            a.plot(src["P"], src[q], ls, color=col, lw=lw, label=f"{name} ${q[0]}_{q[1]}$")
    for q, fmt, col in (("c1", "s", S.SKY), ("cG", "o", S.BLUE)):
        _band(a, lin["P"], lin[q], lin[f"{q}_sd"], f"{fit} ${q[0]}_{q[1]}$", fmt=fmt, color=col)
    smaller_widths(a, "linear", S.BLUE, lambda w: f"N={width_name(w)}: $c_G$")
    sgld(a, "sgld_linear", "$c_G$")
    stars(a, ("P_c1", "P_cG"))
    a.set(ylabel=ORDER_LABEL, title="linear attention: $c_1$, $c_G$ (error bars: sd over seeds)")

    a, e, f = ax[1, 0], ek["softmax"]["map"], cur["finite_softmax"]  # softmax a_G
    a.plot(e["P"], e["aG"], "--", color=S.VERMILLION, label="EK theory $a_G$ (global minimum)")
    _other_minima(a, e, True, "EK: other local minima")
    a.plot(f["P"], f["aG"], ":", color=S.VERMILLION, lw=1.5, label="finite-width theory $a_G$")
    for name, fmt, col in (("pool", "o", S.ORANGE), ("copy", "v", S.PURPLE)):
        c = cur[name]
        _band(a, c["P"], c["cG"], c["cG_sd"], f"{fit} $a_G$ ({name} start)", fmt=fmt, color=col)
        smaller_widths(a, name, col, lambda w: None)  # the colour says the start
    for (w, r), mk in zip(other.items(), "x+1"):  # one legend entry per width, in grey
        if r.get("curves_small", {}).get("pool"):
            a.plot([], [], mk, color=S.GREY, label=f"N={width_name(w)} (colour: start)", gid="key")
    sgld(a, "sgld_softmax", "$a_G$")
    if sp := th.get("spinodals"):
        a.axvspan(
            sp[0],
            sp[1],
            color=S.VERMILLION,
            alpha=0.1,
            lw=0,
            label="EK coexistence (between the spinodals)",
        )
    stars(a, ("P_aG",))
    Pm = np.concatenate([np.asarray(cur[k]["P"], float) for k in ("pool", "copy")])
    a.set_xlim(Pm.min() / 2, Pm.max() * 2)  # the transition, not the flat ends
    S.log_P_at_data(a, Pm)
    a.set(ylabel=A_G_LABEL, title="softmax attention: $a_G$ from both starts")

    a = ax[0, 1]  # losses
    for name, col, key in (("linear", S.BLUE, "linear"), ("softmax", S.VERMILLION, "pool")):
        c = cur[key]
        for split, fmt, mfc in (("train", "o", None), ("test", "s", "none")):
            _band(
                a,
                c["P"],
                c[f"{split}_loss"],
                c[f"{split}_loss_sd"],
                f"{fit} {name}, {split}",
                fmt=fmt,
                color=col,
                mfc=mfc,
            )
        e = ek[name]["map"]
        a.plot(e["P"], e["mse"], "--", color=col, label=f"EK population loss ({name})")
    a.set(ylabel=LOSS_LABEL, title="train and test loss")

    a, br, f = ax[1, 1], cur["branches"], cur["finite_softmax"]  # the branches' U gap
    if len(br["P"]):
        P, dU = np.asarray(br["P"], float), np.asarray(br["dU_per_seq"], float)
        dist = np.asarray(br["distinct"], float) > 0
        if dist.any():
            a.plot(
                P[dist],
                dU[dist],
                "o-",
                color=S.VERMILLION,
                label=f"{fit}: $(U_{{pool}} - U_{{copy}})/P$",
            )
        if (~dist).any():  # one minimum: the gap is zero up to float64 rounding, drawn as 0
            zero = np.where(np.abs(dU[~dist]) < 1e-9, 0.0, dU[~dist])
            a.plot(
                P[~dist],
                zero,
                "x",
                color=S.GREY,
                label="branches merged, gap 0 to rounding (excluded)",
            )
    if "dS_per_seq" in f and np.isfinite(np.asarray(f["dS_per_seq"], float)).any():
        lim = a.get_xlim() if len(br["P"]) else None
        a.plot(
            f["P"],
            f["dS_per_seq"],
            ":",
            color=S.VERMILLION,
            lw=1.5,
            label="finite-width theory $(S_{weak} - S_{strong})/P$",
        )
        if lim:
            a.set_xlim(lim)
            pad = 0.15 * (np.nanmax(dU) - np.nanmin(dU) or 1.0)
            a.set_ylim(np.nanmin(dU) - pad, np.nanmax(dU) + pad)
    a.axhline(0, color=S.BLACK, lw=0.6)
    stars(a, ("P_aG",))
    a.set(ylabel=GAP_LABEL, title="softmax: objective gap between the branches")

    if cur.get("sgld_linear") or cur.get("sgld_softmax"):
        a = ax[0, 2]  # SGLD susceptibility
        for key, q, col, lab in (
            ("sgld_linear", "r", S.GREEN, "linear: var($r$)"),
            ("sgld_linear", "cG", S.BLUE, "linear: var($c_G$)"),
            ("sgld_softmax", "cG", S.VERMILLION, "softmax: var($a_G$)"),
        ):
            if p := cur.get(key):
                a.plot(p["P"], p[f"{q}_var"], "o-", color=col, label=lab)
        a.set_yscale("log")
        stars(a, ("P_c1", "P_cG", "P_aG"))
        a.set(ylabel="posterior variance over draws", title="SGLD susceptibility (early warning)")
        a = ax[1, 2]
    else:  # no sampler in this run: no panel (the posterior's own figures have it)
        fig.delaxes(ax[1, 2])
        a = ax[0, 2]
    # coverage
    panels = (("linear", S.BLUE, "linear"), ("pool", S.VERMILLION, "softmax"))
    for key, col, lab in panels:
        c = cur[key]
        _band(
            a,
            c["P"],
            c["coverage"],
            c["coverage_sd"],
            f"{fit} {lab}, mean attention",
            fmt="o",
            color=col,
        )
        a.plot(
            c["P"],
            c["sample_coverage"],
            "s:",
            mfc="none",
            ms=4,
            color=col,
            label=f"{fit} {lab}, per sample",
        )
    for _, col, lab in panels:  # SGLD after the MAP curves (legend order)
        if p := cur.get(f"sgld_{lab}"):
            a.plot(p["P"], p["coverage_mean"], "^--", color=col, mfc="none", label=f"SGLD {lab}")
    a.set(ylabel=COVERAGE_LABEL, title="subspace coverage")
    for a in fig.axes:
        if a.has_data() and a is not ax[1, 0]:
            S.log_P_at_data(a)
        a.set_xlabel(P_LABEL)
        legend(a, ncol=2)
    h, e = res["header"], res["header"]["engine"]
    fig.suptitle(
        f"main, {h['preset']} preset, {h['mode']}: L={e['task']['L']}, V={e['task']['V']}"
        f"; points: {fit} at N={e['model']['width']:,}, error bars: sd over "
        f"{e['sweep']['n_seeds']} seeds; vertical lines: $P^*$ (dashed EK theory, solid "
        "measured)"
    )
    return fig


def _regime_tex(name: str) -> str:
    """A regime's name (``compare.coverage.regimes``) in mathtext."""
    return name.replace("P < P_c1", "$P < P^*_{c1}$").replace("psi", "$\\psi$")


REGIME_COLORS = {"no": S.GREY, "poo": S.GREEN, "cro": S.ORANGE, "cop": S.PURPLE}


@styled
def coverage_figure(res: dict[str, Any], res_main: dict[str, Any]):
    """Subspace coverage versus P, both attentions; linear shaded by the EK regime."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
    cur, fit = res_main["curves"], _fit_name(res_main)
    for a, att, key in ((ax[0], "linear", "linear"), (ax[1], "softmax", "pool")):
        c, col = cur[key], S.COLORS[att]
        _band(
            a,
            c["P"],
            c["coverage"],
            c["coverage_sd"],
            f"{fit}, mean attention",
            fmt="o-",
            color=col,
        )
        _band(
            a,
            c["P"],
            c["sample_coverage"],
            c["sample_coverage_sd"],
            f"{fit}, per sample",
            fmt="s:",
            color=col,
            mfc="none",
        )
        if p := cur.get(f"sgld_{att}"):
            a.plot(
                p["P"],
                np.asarray(p["coverage_mean"], float),
                "^--",
                mfc="none",
                color=S.BLACK,
                label="SGLD, mean attention",
            )
        a.axhline(
            res["a1_threshold"],
            color=S.GREY,
            lw=0.8,
            ls="--",
            label=f"A1 threshold ({res['a1_threshold']:g})",
        )
        a.set_xscale("log")
        start = " (pooling start)" if head_class(att).two_branches else ""
        a.set(xlabel=P_LABEL, ylabel=COVERAGE_LABEL, title=f"{att} attention{start}")
    lin = res["linear_regimes"]
    P = np.asarray(lin["P"], float)  # each P shaded by its regime, edges half way in log P
    edges = np.sqrt(P[1:] * P[:-1])
    seen = set()
    for x0, x1, name in zip(np.r_[P[0] / 1.3, edges], np.r_[edges, P[-1] * 1.3], lin["regime"]):
        lab = None if name in seen else f"EK regime: {_regime_tex(name)}"
        ax[0].axvspan(
            x0, x1, color=REGIME_COLORS.get(name[:3], S.GREY), alpha=0.15, lw=0, label=lab
        )
        seen.add(name)
    for a in ax:
        S.log_P_at_data(a)
        legend(a)
    h = res["header"]
    fig.suptitle(
        f"subspace coverage, {h['preset']} preset, {h['mode']} (error bars: sd over "
        "seeds; linear panel shaded by the EK regime at each P)"
    )
    return fig


@styled
def hysteresis_figure(res: dict[str, Any]):
    """Both starts of each attention versus P: a_G with the EK minima and the windows, the U
    gap between the softmax starts, c_G of the linear starts."""
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    fig, ax = plt.subplots(1, 3, figsize=(16, 5.8), layout="constrained")
    a, b = ax[0], res["softmax"]
    maG = _other_minima(a, res["theory_ek_softmax"], False, "EK theory: local minima")
    for name, fmt, col in (("pool", "o", S.ORANGE), ("copy", "v", S.PURPLE)):
        _band(
            a,
            b["P"],
            b[f"aG_{name}"],
            b[f"aG_{name}_sd"],
            f"exact MAP / Adam, {name} start",
            fmt=fmt,
            color=col,
        )
    # the windows as separate bars above the data (they overlap; one band would merge them)
    vals = np.r_[maG.ravel(), np.asarray(b["aG_pool"], float), np.asarray(b["aG_copy"], float)]
    top = np.nanmax(vals) if np.isfinite(vals).any() else 1.0
    a.set_ylim(top=1.45 * max(top, 1e-3))
    tr = blended_transform_factory(a.transData, a.transAxes)
    w = res["measured_window"]
    for label, win, col, y in (
        ("EK spinodal window", res["theory_ek_spinodals"], S.VERMILLION, 0.95),
        ("finite-width spinodal window", res.get("theory_finite_spinodals"), S.SKY, 0.90),
        ("measured window (both starts)", [w.get("lower"), w.get("upper")], S.BLUE, 0.85),
    ):
        if win and all(v is not None and np.isfinite(v) for v in win):
            a.plot(
                win,
                [y, y],
                "-|",
                color=col,
                lw=3,
                ms=10,
                transform=tr,
                label=f"{label}: {num(win[0])} to {num(win[1])}",
            )
    Pd = np.asarray(b["P"], float)
    a.set_xlim(Pd.min() / 1.5, Pd.max() * 1.5)
    S.log_P_at_data(a, Pd)
    a.set(ylabel=A_G_LABEL, title="softmax: $a_G$ from both starts")
    a = ax[1]
    a.plot(b["P"], b["dU_per_seq"], "o-", color=S.VERMILLION, label="$(U_{pool} - U_{copy})/P$")
    a.axhline(0, color=S.BLACK, lw=0.6)
    a.set(ylabel=GAP_LABEL, title="softmax: objective gap between the two starts")
    a, lin = ax[2], res["linear"]
    if lin:
        a.plot(lin["P"], lin["cG_prior"], "o-", color=S.BLUE, label="$c_G$, prior start")
        a.plot(lin["P"], lin["cG_copy"], "v--", color=S.SKY, label="$c_G$, copy start")
        t = res["theory_ek_linear"]
        a.plot(t["P"], t["cG"], ":", color=S.BLACK, label="EK theory $c_G$")
        a.set_title(f"linear: both starts (max $|\\Delta c_G|$ = {lin['max_abs_dcG']:.3g})")
    else:
        not_measured(a, "linear starts")
        a.set_title("linear: both starts")
    a.set(ylabel=ORDER_LABEL)
    for a in ax:
        if a is not ax[0] and a.has_data():
            S.log_P_at_data(a)
        a.set_xlabel(P_LABEL)
        legend(a)
    h = res["header"]
    fig.suptitle(f"hysteresis, {h['preset']} preset, {h['mode']} (error bars: sd over seeds)")
    return fig
