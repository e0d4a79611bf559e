"""Figures of ``python -m experiments markov|causal``: P* versus rho (theory and measured with
CIs), the softmax coexistence window versus rho, order parameters versus P per rho."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from copyhead_jax.style import KEY_COLORS, PALETTE, legend, log_P_axis, styled

KEYS = ("P_c1", "P_cG", "P_aG")


@styled
def pstar_figure(res: dict):
    """P* versus rho: the full-minimiser theory (lines), the ansatz (dashed), networks (CIs)."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    rows = res["rows"]
    rho = np.array([r["rho"] for r in rows])
    for k in KEYS:
        c = KEY_COLORS[k]
        for sp, ls in (("full", "-"), ("ansatz", "--")):
            if sp not in rows[0]["theory"]:
                continue
            y = [r["theory"][sp].get(k) for r in rows]
            y = np.array([np.nan if v is None else v for v in y], float)
            a.plot(rho, y, ls, color=c, label=f"{k} theory ({sp})" if sp == "full" or k == "P_aG"
                   else None)  # fmt: skip
        m = [r.get("measured", {}).get("points", {}).get(k, {}) for r in rows]
        if any(x.get("mean") for x in m):
            y = np.array([x.get("mean") or np.nan for x in m], float)
            ci = np.array([x.get("ci") or [np.nan, np.nan] for x in m], float)
            ci = np.where(np.isnan(ci), y[:, None], ci)
            err = np.abs(np.stack([y - ci[:, 0], ci[:, 1] - y]))
            a.errorbar(rho, y, yerr=err, fmt="o", color=c, capsize=3, label=f"{k} measured")
    a.set_yscale("log")
    a.set_xlabel(r"stickiness $\rho$")
    a.set_ylabel(r"$P^*$")
    legend(a, ncol=2)
    lo = [r["theory"]["full"].get("spinodals") for r in rows]
    y0 = np.array([s[0] if s else np.nan for s in lo], float)
    y1 = np.array([s[1] if s else np.nan for s in lo], float)
    b.fill_between(rho, y0, y1, color=PALETTE[1], alpha=0.3, label="coexistence window (full)")
    b.plot(rho, [r["theory"]["full"].get("P_aG") or np.nan for r in rows], "k-",
           label=r"$P^*_{aG}$ (full)")  # fmt: skip
    cross = [r["theory"]["full"].get("P_aG_crossover") for r in rows]
    b.plot(rho, [np.nan if c is None else c for c in cross], ":", color=PALETTE[2],
           label="steepest aG (crossover)")  # fmt: skip
    b.set_yscale("log")
    b.set_xlabel(r"stickiness $\rho$")
    b.set_ylabel("softmax window in $P$")
    legend(b)
    nets = any(r.get("measured") for r in rows)
    fig.suptitle(
        f"{res['artefact']}: L=25, V=5, {res['preset']}; EK theory (N = inf)"
        + (f", networks at N={res['width']}" if nets else ", no network runs")
    )
    return fig


@styled
def curves_figure(res: dict):
    """Theory order parameters versus P (full minimiser) per rho, networks' seed means."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for i, r in enumerate(res["rows"]):
        col = PALETTE[i % len(PALETTE)]
        th = r["theory"]["full"]
        P = np.asarray(th["P"], float)
        a.plot(P, th["linear_up"]["cG"], "-", color=col, label=rf"$\rho$={r['rho']:g}")
        b.plot(P, th["softmax_up"]["cG"], "-", color=col, label=rf"$\rho$={r['rho']:g}")
        b.plot(P, th["softmax_down"]["cG"], "--", color=col)
        m = r.get("measured")
        if m:
            Pm = np.asarray(m["P"], float)
            a.plot(Pm, m["curves"]["linear"]["cG"], "o", color=col, ms=4)
            b.plot(Pm, m["curves"]["pool"]["cG"], "o", color=col, ms=4)
            b.plot(Pm, m["curves"]["copy"]["cG"], "s", color=col, ms=4, mfc="none")
    for ax, name in ((a, r"linear $c_G$"), (b, r"softmax $a_G$ (up: -, down: --)")):
        ax.set_xscale("log")
        log_P_axis(ax, np.asarray(res["rows"][0]["theory"]["full"]["P"], float))
        ax.set_ylabel(name)
    legend(a)
    fig.suptitle("order parameters vs P: theory (lines), networks (markers)")
    return fig


def figures(res: dict, dest: Path, which: str) -> list[Path]:
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name, draw in (("pstar", pstar_figure), ("curves", curves_figure)):
        fig = draw(res)
        path = dest / f"{which}_{name}.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        out.append(path)
    return out
