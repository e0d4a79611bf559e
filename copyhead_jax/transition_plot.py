"""The figure of :func:`copyhead_jax.posterior_transition.transition`: the measured difference
against P per seed (softmax: F_copy - F_pool; linear: posterior psi) with each seed's root, and
every estimate of the transition on one log-P strip (result in, Figure out)."""

from __future__ import annotations

import numpy as np


def transition_figure(res: dict):
    import matplotlib.pyplot as plt

    from .style import BLACK, BLUE, GREEN, GREY, P_LABEL, RC, VERMILLION, legend, log_P_axis

    soft = res["attention"] == "softmax"
    with plt.rc_context(RC):
        fig, ax = plt.subplots(1, 2, figsize=(11, 4.4), layout="constrained")
        a = ax[0]
        allP = []
        if soft:
            for i, sd in enumerate(res["seeds"]):
                pr = [g for g in sd["probes"] if np.isfinite(g["dF"])]
                P = np.array([g["P"] for g in pr], float)
                allP += list(P)
                a.errorbar(P, [g["dF"] for g in pr], yerr=[g["se"] + g["sys"] for g in pr],
                           fmt="o", ms=4, capsize=2, color=GREY if i else BLACK,
                           label="per seed (bars: MCSE + quadrature)" if i == 0
                           else None)  # fmt: skip
            a.axhline(0, color=BLACK, lw=0.5)
            a.set_ylabel("$F_{copy} - F_{pool}$ (nats)")
            a.set_title("free-energy difference of the branches")
        else:
            P = np.asarray(res["P"], float)
            allP += list(P)
            m, se = np.asarray(res["psi_mean"], float), np.asarray(res["psi_mcse"], float)
            for s in range(m.shape[1]):
                a.errorbar(P, m[:, s], yerr=se[:, s], fmt="o-", ms=4, capsize=2,
                           color=BLUE if s == 0 else GREY,
                           label="posterior mean $\\psi$ per seed" if s == 0 else None)  # fmt: skip
            a.axhline(0.5, color=BLACK, lw=0.5)
            a.set_ylabel("posterior mean $\\psi$")
            a.set_title("posterior copy fraction")
        if res["P_star"]:
            a.axvline(res["P_star"], color=VERMILLION, lw=1.2,
                      label=f"Bayesian $P^*$ = {res['P_star']:.4g}")  # fmt: skip
            a.axvspan(*res["interval"], color=VERMILLION, alpha=0.12, lw=0, label="its interval")
        if allP:
            log_P_axis(a, allP)
        a.set_xlabel(P_LABEL)
        legend(a)
        b = ax[1]
        th = res["theory"]
        cc = (res.get("cross_check") or {}).get("P_star")
        mu = (res.get("map_U_crossing") or {}).get("mean")
        marks = [("EK theory, MAP", th.get("map"), GREY, "s"),
                 ("EK theory, posterior", th.get("post"), GREY, "D"),
                 ("MAP $U$ crossing", mu, BLUE, "o"),
                 ("cross-check (SMC)", cc, GREEN, "^"),
                 ("Bayesian (this run)", res["P_star"], VERMILLION, "*")]  # fmt: skip
        marks = [m for m in marks if m[1]]
        for y, (lab, v, col, mk) in enumerate(marks):
            b.plot([v], [y], mk, color=col, ms=9, label=f"{lab}: {v:.4g}")
            if lab.startswith("Bayesian") and res["interval"][0]:
                b.plot(res["interval"], [y, y], "-", color=col, lw=2)
        b.set_yticks(range(len(marks)), [m[0] for m in marks])
        b.set_ylim(-0.6, len(marks) - 0.4)
        b.invert_yaxis()
        if marks:
            log_P_axis(b, [m[1] for m in marks] + [x for x in res["interval"] if x])
        b.set(xlabel="$P^*$ (sequences, log scale)", ylabel="estimate", title="every estimate")
        legend(b, ncol=1)
        fig.suptitle(f"Bayesian transition: {res['quantity']}")
    return fig
