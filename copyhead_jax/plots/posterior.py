"""Figures of per-run posterior summaries against P (:func:`copyhead_jax.sampling.summary.
branch_summary` dicts, arrays ``[P, seed]``; result in, Figure out): order parameters of MAP and
posterior beside EK theory curves, susceptibilities ``P Var`` with MCSE, lambda-hat (the
posterior's own and devinterp's), and the branch free energies of
:func:`copyhead_jax.transition.laplace_sgld.free_energies`. A block is
``(name, summary, colour, marker)``."""

from __future__ import annotations

import numpy as np

from ..compare.crossing import quiet
from ..models import head_class
from . import style as st

#: the softmax blocks of a posterior result: key, name, colour, marker
SOFT = (
    ("pool", "pooling start", st.ORANGE, "s"),
    ("copy", "copy start", st.PURPLE, "v"),
    ("copy_high", "copy start, high P", st.VERMILLION, "^"),
)


#: below this a susceptibility ``P Var`` of an O(1) order parameter is float64 rounding (the
#: softmax row sum r is 1 by construction), not a variance: named, not drawn
NUMERICAL_ZERO = 1e-9


def band(ax, P, y, label, **kw) -> None:
    """The seed mean of ``y[P, seed]`` against P, error bars the sd over seeds; joined by a
    line only through at least ``MIN_POINTS`` finite means."""
    y = np.asarray(y, float).reshape(len(P), -1)
    with quiet():
        m, s = np.nanmean(y, 1), np.nanstd(y, 1)
    kw.setdefault("marker", "o")
    if np.isfinite(m).sum() < st.MIN_POINTS:
        kw["ls"] = "none"
    ax.errorbar(P, m, yerr=s, ms=4, capsize=2, label=label, **kw)


@st.styled
def orderparams_figure(lin: dict, soft: list, curves: dict, tag: str, fe: dict | None = None):
    """Left: linear attention's MAP and posterior-mean cG, r and psi with the EK curves
    (``curves``: ``P`` and per objective ``map``/``post`` the arrays ``cG``, ``c1``, ``aG``);
    right: softmax aG per block of ``soft`` (its summaries' MAP filled, posterior open) and, with
    a TI result ``fe``, its seed-mean copy weight scaled to the first block's largest MAP aG."""
    import matplotlib.pyplot as plt

    Pc = np.asarray(curves["P"])
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.8), layout="constrained")
    a = ax[0]
    with quiet():
        for k, name, col in (("cG", "$c_G$", st.BLUE), ("r", "$r$", st.GREEN)):
            band(a, lin["P"], lin["map"][k], f"MAP {name}", color=col)
            band(
                a,
                lin["P"],
                lin["post_mean"][k],
                f"posterior mean {name}",
                color=col,
                mfc="none",
                marker="s",
                ls=":",
            )
        band(
            a,
            lin["P"],
            lin["post_mean"]["psi"],
            "posterior mean $\\psi$",
            color=st.ORANGE,
            marker="^",
            ls=":",
        )
        for o, k, ls, col, who in (
            ("map", "cG", "-", st.BLACK, "MAP"),
            ("post", "cG", "--", st.BLACK, "posterior"),
            ("map", "c1", "-", st.SKY, "MAP"),
        ):
            a.plot(
                Pc, curves[o][k], ls, color=col, lw=1, label=f"EK theory ${k[0]}_{k[1]}$ ({who})"
            )
        a.set(ylabel="order parameter (dimensionless)", title=f"linear attention ({tag})")
        a = ax[1]
        for name, b, col, _ in soft:
            band(a, b["P"], b["map"]["cG"], f"MAP $a_G$, {name}", color=col)
            band(
                a,
                b["P"],
                b["post_mean"]["cG"],
                f"posterior mean $a_G$, {name}",
                color=col,
                mfc="none",
                marker="s",
                ls=":",
            )
        for o, ls, who in (("map", "-", "MAP"), ("post", "--", "posterior")):
            a.plot(Pc, curves[o]["aG"], ls, color=st.BLACK, lw=1, label=f"EK theory $a_G$ ({who})")
        if fe is not None:
            top = np.nanmax(np.asarray(soft[0][1]["map"]["cG"], float))
            st.curve(
                a,
                fe["P"],
                np.nanmean(np.asarray(fe["w_copy"], float), 1) * top,
                ":",
                marker="D",
                color=st.GREY,
                ms=4,
                label=f"posterior weight of copying $w_{{copy}}$ x {top:.2g}",
            )
    a.set(ylabel="copy logit $a_G$ (dimensionless)", title=f"softmax attention ({tag})")
    for a in ax:
        st.log_P_axis(a, Pc)
        a.set_xlabel(st.P_LABEL)
        st.legend(a)
    fig.suptitle("posterior (collapsed HMC) against MAP; error bars: sd over seeds")
    return fig


@st.styled
def susceptibility_figure(panels: list, tag: str):
    """One panel per ``(title, summary, attention, stars)``: ``P Var`` of c1, cG, r, U over the
    draws (seed mean, MCSE over seeds; a log axis, so one that is zero to float64 rounding,
    under :data:`NUMERICAL_ZERO`, is named in the panel, not drawn) and the ``stars``
    ``(name, P*, colour)`` inside the grid as EK MAP lines."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, len(panels), figsize=(12, 5.4), layout="constrained")
    for a, (title, b, att, stars) in zip(np.atleast_1d(ax), panels, strict=True):
        P = np.asarray(b["P"], float)
        n1, nG = (lab.strip("$") for lab in head_class(att).order_labels)
        syms = {"c1": n1, "cG": nG, "r": "r", "U": "U"}
        zeros = []
        for (k, sym), col, mk in zip(syms.items(), (st.SKY, st.BLUE, st.GREEN, st.ORANGE), "osD^"):
            v = np.asarray(b["susceptibility"][k]["value"], float)
            e = np.asarray(b["susceptibility"][k]["mcse"], float)
            with quiet():
                m = np.nanmean(v, 1)
                lab = f"$P\\,\\mathrm{{Var}}({sym})$"
                if not (m > NUMERICAL_ZERO).any():
                    zeros.append(lab)
                    continue
                # c1 and r nearly coincide in the linear head: c1 open, larger, on top
                big = dict(mfc="none", ms=8, ls="--", zorder=3) if k == "c1" else dict(ms=4)
                if np.isfinite(m).sum() < st.MIN_POINTS:
                    big["ls"] = "none"
                a.errorbar(
                    P,
                    m,
                    yerr=np.sqrt(np.nanmean(e**2, 1)),
                    marker=mk,
                    capsize=2,
                    color=col,
                    label=lab,
                    **big,
                )
        if zeros:
            a.text(
                0.02,
                0.02,
                f"{', '.join(zeros)} < {NUMERICAL_ZERO:.0e}: zero to float64 rounding, not drawn",
                transform=a.transAxes,
                fontsize=st.LEGEND_PT,
                color=st.GREY,
            )
        for name, v, col in stars:
            if v and P[0] <= v <= P[-1]:
                a.axvline(v, color=col, ls="--", lw=1, label=f"EK MAP {name} = {v:,.1f}")
        a.set_yscale("log")
        st.log_P_axis(a, P)
        a.set(
            xlabel=st.P_LABEL, ylabel="susceptibility $P\\,\\mathrm{Var}$ over draws", title=title
        )
        st.legend(a)
    fig.suptitle(f"posterior susceptibilities ({tag}); error bars: MCSE over seeds")
    return fig


@st.styled
def llc_figure(blocks: list, tag: str):
    """The posterior's own lambda-hat (``llc``: n beta = n, gamma = 0) per block, seed mean ± sd."""
    import matplotlib.pyplot as plt

    fig, a = plt.subplots(figsize=(7, 5.4), layout="constrained")
    for name, b, col, mk in blocks:
        band(a, b["P"], b["llc"]["value"], name, color=col, marker=mk)
    st.log_P_axis(a, [p for _, b, _, _ in blocks for p in b["P"]])
    a.set(
        xlabel=st.P_LABEL,
        ylabel="learning coefficient $\\hat\\lambda$ (dimensionless)",
        title=f"$\\hat\\lambda$ from the posterior draws ($n\\beta = n$, $\\gamma = 0$; {tag})",
    )
    st.legend(a)
    return fig


@st.styled
def devinterp_figure(blocks: list, ek_map: dict, tag: str):
    """lambda-hat: devinterp's default per localisation (``llc_dv``; beta = 1/log n) beside the
    posterior's own (``llc``), with the EK MAP ``P_cG``, ``P_aG`` of ``ek_map``. A negative
    devinterp value (chains below the MAP's loss: invalid) is shaded and said so."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
    Ps, neg = [], False
    for name, b, col, mk in blocks:
        for g, v in b["llc_dv"].items():
            band(
                ax[0],
                b["P"],
                v["value"],
                f"{name} ({g.replace('gamma', 'γ')})",
                color=col,
                marker=mk,
            )
            neg |= bool(np.nanmin(np.asarray(v["value"], float)) < 0)
        band(ax[1], b["P"], b["llc"]["value"], name, color=col, marker=mk)
        Ps += list(b["P"])
    for a in ax:
        for k in ("P_cG", "P_aG"):
            if ek_map.get(k):
                a.axvline(
                    ek_map[k],
                    color=st.KEY_COLORS[k],
                    ls="--",
                    lw=0.8,
                    label=f"EK MAP $P^*_{{{k[2:]}}}$ = {st.num(ek_map[k])}",
                )
        st.log_P_axis(a, Ps)
        a.set_xlabel(st.P_LABEL)
    a = ax[0]
    if neg:
        a.set_yscale("symlog", linthresh=1.0)
        bad = "$\\hat\\lambda < 0$: invalid (chains went below the MAP's loss)"
        a.axhspan(a.get_ylim()[0], 0, color=st.GREY, alpha=0.15, lw=0, label=bad)
        a.axhline(0, color=st.BLACK, lw=0.6)
    a.set(
        ylabel="$\\hat\\lambda$ (symmetric log scale)" if neg else "$\\hat\\lambda$",
        title="devinterp default: $n\\beta = n / \\log n$, $\\gamma = 100$",
    )
    ax[1].set_yscale("log")
    ax[1].set(
        ylabel="$\\hat\\lambda$ (log scale)",
        title="posterior: $n\\beta = n$, $\\gamma = 0$ (prior kept)",
    )
    for a in ax:
        st.legend(a)
    fig.suptitle(f"learning coefficient $\\hat\\lambda$ ({tag}); error bars: sd over seeds")
    return fig


@st.styled
def free_energy_figure(fe: dict, ek: dict):
    """Per P, pool minus copy of a TI result ``fe`` per sequence: F (sd over seeds), its MCSE,
    WBIC and the MAP objective U*; the EK ``P_aG`` of ``ek`` (``{"map": P, "post": P}``)."""
    import matplotlib.pyplot as plt

    fig, a = plt.subplots(figsize=(7, 5.6), layout="constrained")
    P = np.asarray(fe["P"], float)
    diff = lambda k: (np.asarray(fe[k][0], float) - np.asarray(fe[k][1], float)) / P[:, None]  # noqa: E731
    err = np.hypot(np.asarray(fe["F_mcse"][0], float), np.asarray(fe["F_mcse"][1], float))
    with quiet():
        dF = diff("F")
        a.errorbar(
            P,
            np.nanmean(dF, 1),
            yerr=np.nanstd(dF, 1),
            marker="o",
            capsize=2,
            color=st.VERMILLION,
            label="$(F_{pool} - F_{copy})/P$, TI (bars: sd over seeds)",
        )
        a.plot(P, np.nanmean(err / P[:, None], 1), ".", color=st.SKY, label="TI MCSE / P (mean)")
        a.plot(P, np.nanmean(diff("wbic"), 1), "s--", color=st.GREEN, label="WBIC difference / P")
        a.plot(
            P,
            np.nanmean(diff("U_star"), 1),
            "^--",
            color=st.ORANGE,
            label="MAP objective difference / P",
        )
    a.axhline(0, color=st.BLACK, lw=0.5)
    for v, ls, lab in ((ek["map"], "-", "EK MAP"), (ek["post"], "--", "EK posterior")):
        if v:
            a.axvline(v, color=st.BLACK, ls=ls, lw=0.8, label=f"{lab} $P^*_{{aG}}$ = {v:.1f}")
    st.log_P_axis(a, P)
    a.set(
        xlabel=st.P_LABEL,
        ylabel="difference per sequence (nats)",
        title="softmax branches: free energy, pooling minus copying",
    )
    st.legend(a)
    return fig


def result_figures(res: dict, curves: dict) -> dict:
    """Every figure of a posterior result (``python -m experiments posterior``: its ``linear``
    and ``softmax`` blocks, EK ``theory`` points; ``curves``: EK curves per objective):
    ``orderparams``, ``susceptibility``, ``llc``, ``llc_devinterp`` (None without devinterp's
    LLC) and, with a free-energy result, ``free_energy``."""
    lin, soft, th, pre = res["linear"], res["softmax"], res["theory"], res["preset"]
    blocks = [(n, soft[k], c, m) for k, n, c, m in SOFT if soft.get(k) is not None]
    fe = soft.get("free_energy")
    mark = lambda k: (f"$P^*_{{{k[2:]}}}$", th["map"][k], st.KEY_COLORS[k])  # noqa: E731
    panels = [
        ("linear attention", lin, "linear", (mark("P_c1"), mark("P_cG"))),
        ("softmax attention, pooling start", soft["pool"], "softmax", (mark("P_aG"),)),
    ]
    names = {
        "pool": "softmax, pooling start",
        "copy": "softmax, copy start",
        "copy_high": "softmax, copy start (high P)",
    }
    llc = [("linear", lin, st.BLUE, "o")] + [
        (names[k], soft[k], c, m) for k, _, c, m in SOFT if soft.get(k) is not None
    ]
    dv = (
        ("linear", lin, st.BLUE, "o"),
        ("softmax, pooling start", soft["pool"], st.ORANGE, "s"),
        ("softmax, copy start", soft.get("copy_high"), st.VERMILLION, "v"),
    )
    dv = [x for x in dv if x[1] is not None and x[1].get("llc_dv")]
    figs = {
        "orderparams": orderparams_figure(lin, blocks, curves, pre, fe),
        "susceptibility": susceptibility_figure(panels, pre),
        "llc": llc_figure(llc, pre),
        "llc_devinterp": devinterp_figure(dv, th["map"], pre) if dv else None,
    }
    if fe is not None:
        figs["free_energy"] = free_energy_figure(fe, {o: th[o]["P_aG"] for o in ("map", "post")})
    return figs
