"""The posterior profile figure of ``copyhead transition``: F(a_G; P) at every probe of the
first seed measured (replica error bands, barrier tops marked) and d(P) = F_copy - F_pool per
seed with P* and its interval, the MAP switch beside it."""

from __future__ import annotations

import numpy as np


def _arr(x):
    return np.array([np.nan if v is None else v for v in x], float)


def profile_figure(res: dict):
    import matplotlib.pyplot as plt

    from .style import A_G_LABEL, BLACK, GREY, P_LABEL, RC, VERMILLION, interval_span, legend

    with plt.rc_context(RC):
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
        sd0 = res["seeds"][0]
        Ps = sorted(sd0["profiles"], key=int)
        cmap = plt.get_cmap("viridis")
        lo = np.inf
        for j, P in enumerate(Ps):
            p = sd0["profiles"][P]
            e = _arr(p["edges"])
            mid, F, se = 0.5 * (e[1:] + e[:-1]), _arr(p["F"]), _arr(p["F_se"])
            F = F - np.nanmin(F)
            ok = np.isfinite(F) & (F < 14)
            col = cmap(j / max(len(Ps) - 1, 1))
            b = p["basins"]
            ax.plot(
                mid[ok],
                F[ok],
                color=col,
                lw=1.4,
                label=f"$P={P}$ ({'bimodal' if b['bimodal'] else 'unimodal'})",
            )
            s = np.where(np.isfinite(se), se, 0.0)
            ax.fill_between(mid[ok], (F - 2 * s)[ok], (F + 2 * s)[ok], color=col, alpha=0.25, lw=0)
            if b["bimodal"]:
                k = int(np.argmin(abs(mid - b["a_top"])))
                ax.plot([b["a_top"]], [F[k]], "v", color=col, ms=6)
            lo = min(lo, float(np.nanmin(F)))
        ax.set_xlabel(A_G_LABEL)
        ax.set_ylabel(r"$F(a_G;P)-\min F$ (nats; bands 2 se)")
        ax.set_title(f"posterior profile, seed {sd0['seed']} (L={res['L']}, V={res['V']})")
        ax.set_ylim(-0.5, 14)
        legend(ax, ncol=2)
        for s in res["seeds"]:
            pr = [q for q in s["probes"] if not q["short"]]
            if not pr:
                continue
            P = _arr([q["P"] for q in pr])
            d = np.clip(_arr([q["d"] for q in pr]), -15, 15)
            de = _arr([q["d_se"] for q in pr])
            line = "o-" if np.isfinite(d).sum() >= 3 else "o"  # no curve through two points
            bx.errorbar(
                P,
                d,
                yerr=2 * de,
                fmt=line,
                ms=4,
                capsize=2,
                label=f"seed {s['seed']}: {s['verdict']}",
            )
        if res.get("P_star"):
            allP = [q["P"] for s in res["seeds"] for q in s["probes"]]
            lo_, hi_, iv = interval_span(res["interval"], allP)
            bx.axvline(res["P_star"], color=VERMILLION, lw=1)
            bx.axvspan(
                lo_, hi_, color=VERMILLION, alpha=0.2, label=f"$P^*={res['P_star']:.4g}$ {iv}"
            )
        for m in res.get("map", [])[:1]:
            if m.get("P_switch"):
                bx.axvline(
                    m["P_switch"],
                    color=GREY,
                    ls="--",
                    lw=1,
                    label=f"MAP switch {m['P_switch']:.3g} (coexistence: "
                    f"{'yes' if m['coexistence'] else 'no'})",
                )
        bx.axhline(0, color=BLACK, lw=0.5)
        bx.set_xscale("log")
        bx.set_xlabel(P_LABEL)
        bx.set_ylabel(r"$d=F_{copy}-F_{pool}$ (nats, clipped to $\pm15$)")
        bx.set_title(f"basin weights: {res['verdict']}")
        legend(bx)
    return fig
