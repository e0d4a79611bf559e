"""Figures of the Bayesian transition (result in, Figure out): of
:func:`copyhead_jax.transition.search.transition`, the measured difference against P per seed
(softmax: F_copy - F_pool; linear: posterior psi) with each seed's root and every estimate of the
transition on one log-P strip (:func:`transition_figure`); of branch TI and tempered SMC over runs
(:mod:`copyhead_jax.compare.branch_tables`), :func:`branch_figure` and :func:`smc_figure`."""

from __future__ import annotations

import numpy as np


def transition_figure(res: dict):
    import matplotlib.pyplot as plt

    from ..models import head_class
    from .style import (
        BLACK,
        BLUE,
        GREEN,
        GREY,
        P_LABEL,
        RC,
        VERMILLION,
        interval_span,
        legend,
        log_P_axis,
        star_label,
    )

    soft = head_class(res["attention"]).two_branches
    with plt.rc_context(RC):
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
        a = ax[0]
        allP, anchored = [], False
        if soft:
            for i, sd in enumerate(res["seeds"]):
                pr = [g for g in sd["probes"] if np.isfinite(g["dF"])]
                P = np.array([g["P"] for g in pr], float)
                allP += list(P)
                a.errorbar(
                    P,
                    [g["dF"] for g in pr],
                    yerr=[g["se"] + g["sys"] for g in pr],
                    fmt="o",
                    ms=4,
                    capsize=2,
                    color=GREY if i else BLACK,
                    label="per seed (bars: MCSE + quadrature)" if i == 0 else None,
                )
                an = sd["crossing"].get("anchor")
                if an and sd["crossing"].get("P_star"):  # the borrowed slope to the root
                    x = np.geomspace(an["P"], sd["crossing"]["P_star"], 8)
                    d0 = [g["dF"] for g in pr if g["P"] == an["P"]][0]
                    a.plot(
                        x,
                        d0 + an["slope"] * np.log(x / an["P"]),
                        "--",
                        lw=0.8,
                        color=GREY,
                        label="one probe, earlier brackets' slope" if not anchored else None,
                    )
                    anchored = True
            a.axhline(0, color=BLACK, lw=0.5)
            a.set_ylabel("$F_{copy} - F_{pool}$ (nats)")
            a.set_title("free-energy difference of the branches")
        else:
            P = np.asarray(res["P"], float)
            allP += list(P)
            m, se = np.asarray(res["psi_mean"], float), np.asarray(res["psi_mcse"], float)
            for s in range(m.shape[1]):
                a.errorbar(
                    P,
                    m[:, s],
                    yerr=se[:, s],
                    fmt="o-",
                    ms=4,
                    capsize=2,
                    color=BLUE if s == 0 else GREY,
                    label="posterior mean $\\psi$ per seed" if s == 0 else None,
                )
            a.axhline(0.5, color=BLACK, lw=0.5)
            a.set_ylabel("posterior mean $\\psi$")
            a.set_title("posterior copy fraction")
        if res["P_star"]:
            a.axvline(
                res["P_star"],
                color=VERMILLION,
                lw=1.2,
                label=f"Bayesian $P^*$ = {res['P_star']:.4g}",
            )
            lo_, hi_, iv = interval_span(res["interval"], allP or [res["P_star"]])
            a.axvspan(
                lo_,
                hi_,
                color=VERMILLION,
                alpha=0.12,
                lw=0,
                label="its interval" + (f" {iv}" if "unbounded" in iv else ""),
            )
        if allP:
            log_P_axis(a, allP)
        a.set_xlabel(P_LABEL)
        legend(a)
        b = ax[1]
        th = res["theory"]
        cc = (res.get("cross_check") or {}).get("P_star")
        mu = (res.get("map_U_crossing") or {}).get("mean")
        marks = [
            ("EK theory, MAP", th.get("map"), GREY, "s"),
            ("EK theory, posterior", th.get("post"), GREY, "D"),
            ("MAP $U$ crossing", mu, BLUE, "o"),
            ("cross-check (SMC)", cc, GREEN, "^"),
            ("Bayesian (this run)", res["P_star"], VERMILLION, "*"),
        ]
        marks = [m for m in marks if m[1]]
        for y, (lab, v, col, mk) in enumerate(marks):
            b.plot([v], [y], mk, color=col, ms=9, label=f"{lab}: {v:.4g}")
            if lab.startswith("Bayesian"):
                b.hlines(
                    y, *interval_span(res["interval"], allP or [v])[:2], color=col, lw=2
                )  # the interval: a bar (an unbounded side to the probes' edge)
        b.set_yticks(range(len(marks)), [m[0] for m in marks])
        b.set_ylim(-0.6, len(marks) - 0.4)
        b.invert_yaxis()
        if marks:
            log_P_axis(
                b, [m[1] for m in marks] + [x for x in res["interval"] if x and np.isfinite(x)]
            )
        b.set(xlabel="$P^*$ (sequences, log scale)", ylabel="estimate", title="every estimate")
        legend(b, ncol=1)
        key, _, note = res["quantity"].partition(" ")  # "P_cG_half (posterior psi = 1/2)"
        name = star_label(key) if key.startswith("P_") else key
        note = note.replace("psi", r"$\psi$")
        fig.suptitle(f"Bayesian transition: {name} {note}".rstrip())
    return fig


def branch_figure(res: dict, main_P=None):
    """F_copy - F_pool and the copy weight against P (per seed and the seed mean, zoomed on the
    sampled P), and every P*_aG estimate on one log-P strip (most lie far from the sampled P),
    of a :func:`copyhead_jax.compare.branch_tables.branch_tables` result with its ``theory``
    (EK), ``map_U_crossing``, ``preset`` and ``paper_P_aG``; ``main_P``: another MAP crossing."""
    import matplotlib
    import matplotlib.pyplot as plt

    from ..compare.crossing import quiet
    from . import style as st

    pre = res.get("preset", "plain")

    P = np.asarray(res["P"], float)
    dF, se, w = (np.asarray(res[k], float) for k in ("dF", "dF_mcse", "w_copy"))
    nS = dF.shape[1]
    cross = res["crossing_F"]["P_star"]
    with matplotlib.rc_context(st.RC):
        fig, ax = plt.subplots(
            1, 3, figsize=(16, 5.4), layout="constrained", gridspec_kw={"width_ratios": [1, 1, 1.1]}
        )
        jit = 1 + 0.008 * (np.arange(nS) - (nS - 1) / 2) / max(1, nS - 1)
        with quiet():
            for s in range(nS):
                lab = f"per seed ({nS} seeds; bars: MCSE)" if s == 0 else None
                ax[0].errorbar(
                    P * jit[s],
                    dF[:, s],
                    yerr=se[:, s],
                    fmt=".",
                    ms=4,
                    capsize=2,
                    color=st.GREY,
                    alpha=0.7,
                    label=lab,
                )
                ax[1].plot(
                    P * jit[s],
                    w[:, s],
                    ".",
                    ms=5,
                    color=st.GREY,
                    alpha=0.7,
                    label=f"per seed ({nS} seeds)" if s == 0 else None,
                )
            st.curve(ax[0], P, np.nanmean(dF, 1), "-o", color=st.BLACK, ms=5, label="seed mean")
            st.curve(ax[1], P, res["w_copy_mean"], "-o", color=st.BLACK, ms=5, label="seed mean")
        ax[0].axhline(0, color=st.BLACK, lw=0.5)
        ax[1].axhline(0.5, color=st.BLACK, lw=0.5)
        for a in ax[:2]:
            if cross:
                a.axvline(
                    cross,
                    color=st.VERMILLION,
                    lw=1.2,
                    label=f"Bayesian $P^*_{{aG}}$ ($F$ crossing) = {cross:,.1f}",
                )
            pad = (P.max() / P.min()) ** 0.08 if P.max() > P.min() else 1.1
            a.set_xlim(P.min() / pad, P.max() * pad)
            st.log_P_axis(a, P)
            a.set_xlabel(st.P_LABEL)
            st.legend(a)
        ax[0].set(
            ylabel="$F_{copy} - F_{pool}$ (nats)",
            title="free-energy difference between the branches",
        )
        ax[1].set(
            ylabel="$w_{copy} = 1/(1 + e^{F_{copy} - F_{pool}})$",
            title="posterior weight of copying",
        )
        # every estimate of P*_aG on one strip
        a = ax[2]
        th = res["theory"]
        ci = res["crossing_F"].get("per_seed_ci") or {}
        marks = [
            ("EK theory, MAP", th["map"]["P_aG"], st.GREY, "s"),
            ("EK theory, posterior", th["post"]["P_aG"], st.GREY, "D"),
            ("MAP $U$ crossing (these sweeps)", res["map_U_crossing"]["P_star"], st.BLUE, "o"),
            (f"MAP $U$ crossing (main artefact, {pre}, 10 seeds)", main_P, st.GREEN, "o"),
            ("Bayesian ($F$ crossing)", cross, st.VERMILLION, "*"),
            ("paper", res.get("paper_P_aG") if pre == "paper" else None, st.PURPLE, "^"),
        ]
        marks = [m for m in marks if m[1]]
        for y, (lab, v, col, mk) in enumerate(marks):
            a.plot([v], [y], mk, color=col, ms=9, label=f"{lab}: {v:,.1f}")
            if lab.startswith("Bayesian") and ci.get("lo") is not None:
                a.hlines(y, ci["lo"], ci["hi"], color=col, lw=2)  # the interval: a bar
        a.axvspan(P.min(), P.max(), color=st.ORANGE, alpha=0.15, lw=0, label="sampled P range")
        a.set_yticks(range(len(marks)), [m[0] for m in marks])
        a.set_ylim(-0.6, len(marks) - 0.4)
        a.invert_yaxis()
        st.log_P_axis(a, [m[1] for m in marks] + list(P))
        a.set(
            xlabel="$P^*_{aG}$ (sequences, log scale)",
            ylabel="estimate",
            title="$P^*_{aG}$: every estimate",
        )
        st.legend(a, ncol=1)
        fig.suptitle(f"softmax branches ({pre}): thermodynamic integration of each branch")
    return fig


def smc_figure(res: dict, ti_cross=None):
    """SMC's copy weight, its log-odds against the branch TI's, and the evidence gap, per seed, of
    a :func:`copyhead_jax.compare.branch_tables.smc_tables` result with
    :func:`~copyhead_jax.compare.branch_tables.smc_against_ti`'s ``ti_log_odds``; ``ti_cross``:
    the TI's F crossing."""
    import matplotlib
    import matplotlib.pyplot as plt

    from . import style as st

    P = np.asarray(res["P"], float)
    w, wse, odds = (np.asarray(res[k], float) for k in ("w_copy", "w_copy_se", "log_odds_copy"))
    d = np.asarray(res["dlog_Z_smc_minus_ti"], float)
    clip = res["log_odds_clip"]
    with matplotlib.rc_context(st.RC):
        fig, ax = plt.subplots(1, 3, figsize=(16, 5.4), layout="constrained")
        nS = w.shape[1]
        for s in range(nS):
            dx = P + 0.04 * (s - nS / 2)
            first = s == 0
            ax[0].errorbar(
                dx,
                w[:, s],
                yerr=wse[:, s],
                fmt=".",
                ms=4,
                alpha=0.6,
                capsize=2,
                color=st.GREY,
                label="SMC, per seed (bars: 2 populations)" if first else None,
            )
            cl = np.abs(odds[:, s]) >= clip - 1e-9
            ax[1].plot(dx[~cl], odds[~cl, s], "o", ms=3, color=st.BLACK, alpha=0.5)
            ax[1].plot(dx[cl], odds[cl, s], "o", ms=5, mfc="none", color=st.BLACK, alpha=0.5)
            ax[2].plot(
                dx, d[:, s], ".", color=st.GREY, alpha=0.7, label="per seed" if first else None
            )
        st.curve(ax[0], P, res["w_copy_mean"], "-o", color=st.BLACK, ms=4, label="SMC, seed mean")
        ti = res.get("ti_log_odds")
        if ti:
            Pt, Lt = np.asarray(ti["P"], float), np.asarray(ti["values"], float)
            for s in range(Lt.shape[1]):
                ax[1].plot(
                    Pt + 0.04 * (s - nS / 2), Lt[:, s], "x", color=st.VERMILLION, ms=4, alpha=0.6
                )
            ax[1].plot(
                [],
                [],
                "x",
                color=st.VERMILLION,
                gid="key",
                label="constrained TI: $F_{pool} - F_{copy}$",
            )
        ax[1].plot(
            [],
            [],
            "o",
            ms=3,
            color=st.BLACK,
            gid="key",
            label="SMC: $\\log w_{copy}/(1 - w_{copy})$",
        )
        if (np.abs(odds) >= clip - 1e-9).any():
            ax[1].plot(
                [],
                [],
                "o",
                ms=5,
                mfc="none",
                color=st.BLACK,
                gid="key",
                label=f"SMC, clipped at $\\pm${clip:.2f} (not resolved)",
            )
        for a in ax[:2]:
            a.axhline(0.5 if a is ax[0] else 0.0, color=st.BLACK, lw=0.5)
            P_eq = res["weight_window"].get("P_equal")
            marks = (
                (P_eq, "SMC: $w = 1/2$", st.BLACK),
                (ti_cross, "TI: $F_{copy} = F_{pool}$", st.VERMILLION),
            )
            for v, lab, col in marks:
                if v:
                    a.axvline(v, color=col, ls="--", lw=1, label=f"{lab} at $P$ = {v:.2f}")
        ax[2].axhline(0, color=st.BLACK, lw=0.5)
        ax[0].set(
            ylabel="$w_{copy}$ (posterior weight of copying)",
            title="posterior weight of copying (SMC)",
        )
        ax[1].set(ylabel="log-odds of copying (nats)", title="SMC weights against the branch TI")
        ax[2].set(
            ylabel="$\\log Z_{SMC} - \\log(Z_{pool} + Z_{copy})_{TI}$ (nats)",
            title="evidence: SMC against the branch TI",
        )
        for a in ax:
            a.set_xlabel(st.P_LABEL)
            st.legend(a, ncol=1)
        fig.suptitle(
            "softmax (plain preset): sequential Monte Carlo against thermodynamic "
            "integration, per seed"
        )
    return fig
