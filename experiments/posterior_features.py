"""Figures of the posterior artefact (``experiments.posterior``): result dict in, Figures out."""

from __future__ import annotations

import numpy as np

from copyhead_jax.compare.crossing import quiet


def band(ax, P, y, label, **kw):
    """The seed mean of ``y[P, seed]`` against P, error bars the sd over seeds."""
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

    from copyhead_jax import style as st

    with quiet(), matplotlib.rc_context(st.RC):
        return _figures(plt, res, curves)


def _stars(a, marks) -> None:
    """EK P* as vertical lines, each with its legend entry: ``marks`` = (name, P, colour)."""
    for name, v, col in marks:
        if v:
            a.axvline(v, color=col, ls="--", lw=1, label=f"EK MAP {name} = {v:,.1f}")


def _figures(plt, res, curves):
    from copyhead_jax import style as st

    lin, soft, th = res["linear"], res["softmax"], res["theory"]
    pre = res["preset"]
    Pc = np.asarray(curves["P"])
    figs = {}
    # order parameters: MAP (filled) against the posterior mean (open), EK theory as lines
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.8), layout="constrained")
    a = ax[0]
    for k, name, col in (("cG", "$c_G$", st.BLUE), ("r", "$r$", st.GREEN)):
        band(a, lin["P"], lin["map"][k], f"MAP {name}", color=col)
        band(a, lin["P"], lin["post_mean"][k], f"posterior mean {name}", color=col, mfc="none",
              marker="s", ls=":")  # fmt: skip
    band(a, lin["P"], lin["post_mean"]["psi"], "posterior mean $\\psi$", color=st.ORANGE,
          marker="^", ls=":")  # fmt: skip
    for o, k, ls, col, who in (("map", "cG", "-", st.BLACK, "MAP"),
                               ("post", "cG", "--", st.BLACK, "posterior"),
                               ("map", "c1", "-", st.SKY, "MAP")):  # fmt: skip
        a.plot(Pc, curves[o][k], ls, color=col, lw=1, label=f"EK theory ${k[0]}_{k[1]}$ ({who})")
    a.set(ylabel="order parameter (dimensionless)", title=f"linear attention ({pre})")
    a = ax[1]
    cols = {"pool": st.ORANGE, "copy": st.PURPLE, "copy_high": st.VERMILLION}
    names = {"pool": "pooling start", "copy": "copy start", "copy_high": "copy start, high P"}
    for br in ("pool", "copy", "copy_high"):
        if soft.get(br) is None:
            continue
        band(a, soft[br]["P"], soft[br]["map"]["cG"], f"MAP $a_G$, {names[br]}", color=cols[br])
        band(a, soft[br]["P"], soft[br]["post_mean"]["cG"], f"posterior mean $a_G$, {names[br]}",
              color=cols[br], mfc="none", marker="s", ls=":")  # fmt: skip
    for o, ls, who in (("map", "-", "MAP"), ("post", "--", "posterior")):
        a.plot(Pc, curves[o]["aG"], ls, color=st.BLACK, lw=1, label=f"EK theory $a_G$ ({who})")
    fe = soft.get("free_energy")
    if fe is not None:
        top = np.nanmax(np.asarray(soft["pool"]["map"]["cG"], float))
        a.plot(fe["P"], np.nanmean(np.asarray(fe["w_copy"], float), 1) * top, "D:", color=st.GREY,
               ms=4, label=f"posterior weight of copying $w_{{copy}}$ x {top:.2g}")  # fmt: skip
    a.set(ylabel="copy logit $a_G$ (dimensionless)", title=f"softmax attention ({pre})")
    for a in ax:
        st.log_P_axis(a, Pc)
        a.set_xlabel(st.P_LABEL)
        st.legend(a)
    fig.suptitle("posterior (collapsed HMC) against MAP; error bars: sd over seeds")
    figs["orderparams"] = fig
    # susceptibilities P Var(x) over the draws
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.4), layout="constrained")
    syms = {"c1": "c_1", "cG": "c_G", "r": "r", "U": "U"}
    mark = lambda k: (f"$P^*_{{{k[2:]}}}$", th["map"][k], st.KEY_COLORS[k])  # noqa: E731
    for a, b, att, stars, title in (
        (ax[0], lin, "linear", (mark("P_c1"), mark("P_cG")), "linear attention"),
        (ax[1], soft["pool"], "softmax", (mark("P_aG"),), "softmax attention, pooling start"),
    ):  # fmt: skip
        P = np.asarray(b["P"], float)
        for (k, sym), col, mk in zip(syms.items(), (st.SKY, st.BLUE, st.GREEN, st.ORANGE), "osD^"):
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
        st.log_P_axis(a, P)
        a.set(xlabel=st.P_LABEL, ylabel="susceptibility $P\\,\\mathrm{Var}$ over draws",
              title=title)  # fmt: skip
        st.legend(a)
    fig.suptitle(f"posterior susceptibilities ({pre}); error bars: MCSE over seeds")
    figs["susceptibility"] = fig
    # the learning coefficient
    fig, a = plt.subplots(figsize=(7, 5.4), layout="constrained")
    Ps = []
    for name, b, col, mk in (("linear", lin, st.BLUE, "o"),
                             ("softmax, pooling start", soft["pool"], st.ORANGE, "s"),
                             ("softmax, copy start", soft.get("copy"), st.PURPLE, "v"),
                             ("softmax, copy start (high P)", soft.get("copy_high"), st.VERMILLION,
                              "^")):  # fmt: skip
        if b is not None:
            band(a, b["P"], b["llc"]["value"], name, color=col, marker=mk)
            Ps += list(b["P"])
    st.log_P_axis(a, Ps)
    a.set(xlabel=st.P_LABEL, ylabel="learning coefficient $\\hat\\lambda$ (dimensionless)",
          title=f"$\\hat\\lambda$ from the posterior draws ($n\\beta = n$, $\\gamma = 0$; "
                f"{pre})")  # fmt: skip
    st.legend(a)
    figs["llc"] = fig
    if fe is not None:
        fig, a = plt.subplots(figsize=(7, 5.6), layout="constrained")
        P = np.asarray(fe["P"], float)
        dF = (np.asarray(fe["F"][0], float) - np.asarray(fe["F"][1], float)) / P[:, None]
        err = np.hypot(np.asarray(fe["F_mcse"][0], float), np.asarray(fe["F_mcse"][1], float))
        a.errorbar(P, np.nanmean(dF, 1), yerr=np.nanstd(dF, 1), marker="o", capsize=2,
                   color=st.VERMILLION,
                   label="$(F_{pool} - F_{copy})/P$, TI (bars: sd over seeds)")  # fmt: skip
        a.plot(P, np.nanmean(err / P[:, None], 1), ".", color=st.SKY, label="TI MCSE / P (mean)")
        dW = (np.asarray(fe["wbic"][0], float) - np.asarray(fe["wbic"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dW, 1), "s--", color=st.GREEN, label="WBIC difference / P")
        dU = (np.asarray(fe["U_star"][0], float) - np.asarray(fe["U_star"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dU, 1), "^--", color=st.ORANGE, label="MAP objective difference / P")
        a.axhline(0, color=st.BLACK, lw=0.5)
        for v, ls, lab in ((th["map"]["P_aG"], "-", "EK MAP"), (th["post"]["P_aG"], "--",
                                                                  "EK posterior")):  # fmt: skip
            if v:
                a.axvline(v, color=st.BLACK, ls=ls, lw=0.8, label=f"{lab} $P^*_{{aG}}$ = {v:.1f}")
        st.log_P_axis(a, P)
        a.set(xlabel=st.P_LABEL, ylabel="difference per sequence (nats)",
              title="softmax branches: free energy, pooling minus copying")  # fmt: skip
        st.legend(a)
        figs["free_energy"] = fig
    return figs
