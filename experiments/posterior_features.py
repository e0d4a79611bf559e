"""Figures of the posterior artefact (``experiments.posterior``): result dict in, Figures out."""

from __future__ import annotations

import numpy as np

from copyhead_jax.compare.crossing import quiet


def _band(ax, P, y, label, **kw):
    y = np.asarray(y, float).reshape(len(P), -1)
    with quiet():
        m, s = np.nanmean(y, 1), np.nanstd(y, 1)
    kw.setdefault("marker", "o")
    ax.errorbar(P, m, yerr=s, ms=4, capsize=2, label=label, **kw)


def figures(res: dict, curves: dict) -> dict:
    """``orderparams``, ``susceptibility``, ``llc`` and (plain) ``free_energy`` figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from copyhead_jax.style import RC

    with quiet(), matplotlib.rc_context(RC):
        return _figures(plt, res, curves)


def _stars(a, marks) -> None:
    """EK P* as vertical lines, each with its legend entry: ``marks`` = (name, P, colour)."""
    for name, v, col in marks:
        if v:
            a.axvline(v, color=col, ls="--", lw=1, label=f"EK MAP {name} = {v:,.1f}")


def _figures(plt, res, curves):
    from copyhead_jax.style import (
        BLACK,
        BLUE,
        GREEN,
        GREY,
        KEY_COLORS,
        ORANGE,
        P_LABEL,
        PURPLE,  # fmt: skip
        SKY,
        VERMILLION,
        legend,
        log_P_axis,
    )

    lin, soft, th = res["linear"], res["softmax"], res["theory"]
    pre = res["preset"]
    Pc = np.asarray(curves["P"])
    figs = {}
    # order parameters: MAP (filled) against the posterior mean (open), EK theory as lines
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.8), layout="constrained")
    a = ax[0]
    for k, name, col in (("cG", "$c_G$", BLUE), ("r", "$r$", GREEN)):
        _band(a, lin["P"], lin["map"][k], f"MAP {name}", color=col)
        _band(a, lin["P"], lin["post_mean"][k], f"posterior mean {name}", color=col, mfc="none",
              marker="s", ls=":")  # fmt: skip
    _band(a, lin["P"], lin["post_mean"]["psi"], "posterior mean $\\psi$", color=ORANGE,
          marker="^", ls=":")  # fmt: skip
    a.plot(Pc, curves["map"]["cG"], "-", color=BLACK, lw=1, label="EK theory $c_G$ (MAP)")
    a.plot(Pc, curves["post"]["cG"], "--", color=BLACK, lw=1, label="EK theory $c_G$ (posterior)")
    a.plot(Pc, curves["map"]["c1"], "-", color=SKY, lw=1, label="EK theory $c_1$ (MAP)")
    a.set(ylabel="order parameter (dimensionless)", title=f"linear attention ({pre})")
    a = ax[1]
    cols = {"pool": ORANGE, "copy": PURPLE, "copy_high": VERMILLION}
    names = {"pool": "pooling start", "copy": "copy start", "copy_high": "copy start, high P"}
    for br in ("pool", "copy", "copy_high"):
        if soft.get(br) is None:
            continue
        _band(a, soft[br]["P"], soft[br]["map"]["cG"], f"MAP $a_G$, {names[br]}", color=cols[br])
        _band(a, soft[br]["P"], soft[br]["post_mean"]["cG"], f"posterior mean $a_G$, {names[br]}",
              color=cols[br], mfc="none", marker="s", ls=":")  # fmt: skip
    a.plot(Pc, curves["map"]["aG"], "-", color=BLACK, lw=1, label="EK theory $a_G$ (MAP)")
    a.plot(Pc, curves["post"]["aG"], "--", color=BLACK, lw=1, label="EK theory $a_G$ (posterior)")
    fe = soft.get("free_energy")
    if fe is not None:
        top = np.nanmax(np.asarray(soft["pool"]["map"]["cG"], float))
        a.plot(fe["P"], np.nanmean(np.asarray(fe["w_copy"], float), 1) * top, "D:", color=GREY,
               ms=4, label=f"posterior weight of copying $w_{{copy}}$ x {top:.2g}")  # fmt: skip
    a.set(ylabel="copy logit $a_G$ (dimensionless)", title=f"softmax attention ({pre})")
    for a in ax:
        log_P_axis(a, Pc)
        a.set_xlabel(P_LABEL)
        legend(a)
    fig.suptitle("posterior (collapsed HMC) against MAP; error bars: sd over seeds")
    figs["orderparams"] = fig
    # susceptibilities P Var(x) over the draws
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.4), layout="constrained")
    syms = {"c1": "c_1", "cG": "c_G", "r": "r", "U": "U"}
    for a, b, att, stars, title in (
        (ax[0], lin, "linear", (("$P^*_{c1}$", th["map"]["P_c1"], KEY_COLORS["P_c1"]),
                                ("$P^*_{cG}$", th["map"]["P_cG"], KEY_COLORS["P_cG"])),
         "linear attention"),
        (ax[1], soft["pool"], "softmax", (("$P^*_{aG}$", th["map"]["P_aG"], KEY_COLORS["P_aG"]),),
         "softmax attention, pooling start"),
    ):  # fmt: skip
        P = np.asarray(b["P"], float)
        for (k, sym), col, mk in zip(syms.items(), (SKY, BLUE, GREEN, ORANGE), "osD^"):
            if att == "softmax":
                sym = sym.replace("c_", "a_")
            v = np.asarray(b["susceptibility"][k]["value"], float)
            e = np.asarray(b["susceptibility"][k]["mcse"], float)
            with quiet():
                m = np.nanmean(v, 1)
                lab = f"$P\\,\\mathrm{{Var}}({sym})$"
                if not (m > 0).any():  # nothing a log axis can show: say so, draw nothing
                    a.plot([], [], marker=mk, color=col, ls="", label=lab + " = 0 (not drawn)")
                    continue
                # c1 and r nearly coincide in the linear head: c1 open, larger, on top
                big = dict(mfc="none", ms=8, ls="--", zorder=3) if k == "c1" else dict(ms=4)
                a.errorbar(P, m, yerr=np.sqrt(np.nanmean(e**2, 1)), marker=mk, capsize=2,
                           color=col, label=lab, **big)  # fmt: skip
        _stars(a, [(n, v, c) for n, v, c in stars if v and P[0] <= v <= P[-1]])
        a.set_yscale("log")
        log_P_axis(a, P)
        a.set(xlabel=P_LABEL, ylabel="susceptibility $P\\,\\mathrm{Var}$ over draws", title=title)
        legend(a)
    fig.suptitle(f"posterior susceptibilities ({pre}); error bars: MCSE over seeds")
    figs["susceptibility"] = fig
    # the learning coefficient
    fig, a = plt.subplots(figsize=(7, 5.4), layout="constrained")
    Ps = []
    for name, b, col, mk in (("linear", lin, BLUE, "o"),
                             ("softmax, pooling start", soft["pool"], ORANGE, "s"),
                             ("softmax, copy start", soft.get("copy"), PURPLE, "v"),
                             ("softmax, copy start (high P)", soft.get("copy_high"), VERMILLION,
                              "^")):  # fmt: skip
        if b is not None:
            _band(a, b["P"], b["llc"]["value"], name, color=col, marker=mk)
            Ps += list(b["P"])
    log_P_axis(a, Ps)
    a.set(
        xlabel=P_LABEL,
        ylabel="learning coefficient $\\hat\\lambda$ (dimensionless)",
        title=f"$\\hat\\lambda$ from the posterior draws ($n\\beta = n$, $\\gamma = 0$; {pre})",
    )
    legend(a)
    figs["llc"] = fig
    if fe is not None:
        fig, a = plt.subplots(figsize=(7, 5.6), layout="constrained")
        P = np.asarray(fe["P"], float)
        dF = (np.asarray(fe["F"][0], float) - np.asarray(fe["F"][1], float)) / P[:, None]
        err = np.hypot(np.asarray(fe["F_mcse"][0], float), np.asarray(fe["F_mcse"][1], float))
        a.errorbar(
            P,
            np.nanmean(dF, 1),
            yerr=np.nanstd(dF, 1),
            marker="o",
            capsize=2,
            color=VERMILLION,
            label="$(F_{pool} - F_{copy})/P$, TI (bars: sd over seeds)",
        )
        a.plot(P, np.nanmean(err / P[:, None], 1), ".", color=SKY, label="TI MCSE / P (mean)")
        dW = (np.asarray(fe["wbic"][0], float) - np.asarray(fe["wbic"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dW, 1), "s--", color=GREEN, label="WBIC difference / P")
        dU = (np.asarray(fe["U_star"][0], float) - np.asarray(fe["U_star"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dU, 1), "^--", color=ORANGE, label="MAP objective difference / P")
        a.axhline(0, color=BLACK, lw=0.5)
        for v, ls, lab in ((th["map"]["P_aG"], "-", "EK MAP"), (th["post"]["P_aG"], "--",
                                                                  "EK posterior")):  # fmt: skip
            if v:
                a.axvline(v, color=BLACK, ls=ls, lw=0.8, label=f"{lab} $P^*_{{aG}}$ = {v:.1f}")
        log_P_axis(a, P)
        a.set(xlabel=P_LABEL, ylabel="difference per sequence (nats)",
              title="softmax branches: free energy, pooling minus copying")  # fmt: skip
        legend(a)
        figs["free_energy"] = fig
    return figs
