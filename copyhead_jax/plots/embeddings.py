"""Figures of the embedding studies (result dict in, Figure out): how far the paper's Adam
moves trained embeddings against the uniform-shrink prediction (docs/theory.md §2e), and the
posterior embedding Gram with every weight sampled against the quenched one (§2f); the joint
and quenched MAP's P* against the width (§2d)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..models import head_class  # noqa: E402
from . import style  # noqa: E402

__all__ = [
    "SHRINK",
    "embeddings_posterior_figure",
    "embeddings_protocol_figure",
    "embeddings_width_figure",
    "lr_cumsum",
]

SHRINK = 2 * math.sqrt(2 / math.pi)  # docs/theory.md §2e: delta ~ 2 sqrt(2/pi) sum_t eta_t


def lr_cumsum(epochs: np.ndarray, attention: str, lr=1e-5, total=2000) -> np.ndarray:
    """sum of the paper schedule's learning rates over the first ``epochs`` epochs."""
    warm = int(round(head_class(attention).warmup_default * total))
    t = np.arange(total)
    eta = np.where(t < warm, lr * t / max(warm, 1), lr)
    return np.concatenate([[0.0], np.cumsum(eta)])[epochs]


@style.styled
def embeddings_protocol_figure(res: dict):
    """(a) the embedding Gram's relative change along training, against the uniform-shrink
    prediction; (b) the order parameter of each run: trained, frozen-embedding Adam, exact MAP."""
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.8), layout="constrained")
    seen = set()
    for r in res["runs"]:
        if not r["trained"]:
            continue
        ep = np.array([x["epoch"] for x in r["trace"]])
        d = np.array([x["all"] for x in r["trace"]])
        lab = f"{r['attention']}, N={r['width']:,}"
        ls = "-" if r["width"] == 2000 else "--"
        style.curve(
            a,
            ep,
            d,
            ls,
            color=style.COLORS[r["attention"]],
            lw=1.0,
            alpha=0.8,
            label=None if lab in seen else lab,
        )
        seen.add(lab)
    ep = np.arange(0, 2001, 20)
    for att in ("softmax", "linear"):
        a.plot(
            ep,
            SHRINK * lr_cumsum(ep, att),
            color=style.BLACK,
            lw=0.8,
            ls=head_class(att).plot_style["ls"],
            label=f"$2\\sqrt{{2/\\pi}}\\sum\\eta_t$ ({att})",
        )
    a.set_xlabel("epoch (paper schedule, lr $10^{-5}$)")
    a.set_ylabel(r"$\|C-C_{\rm init}\|_F/\|C_{\rm init}\|_F$")
    a.set_title("(a) embedding Gram change under the paper's Adam")
    style.legend(a, ncol=2)
    exact = res["exact_map"]
    for att, name, mk in (("softmax", "aG", "o"), ("linear", "cG", "s")):
        for r in res["runs"]:
            if r["attention"] != att:
                continue
            key = f"{r['P']}/{r['seed']}"
            ex = exact.get(f"{att}/{r['width']}", {}).get(key)
            x = r["P"] * (1.04 if not r["trained"] else 1.0)
            fill = style.COLORS[att] if r["trained"] else "none"
            b.plot(x, r["order"][name], mk, color=style.COLORS[att], mfc=fill, ms=5)
            if ex is not None and r["trained"]:
                b.plot(r["P"] * 0.96, ex[name], mk, color=style.GREY, ms=5)
    for att, name, mk in (("softmax", "$a_G$", "o"), ("linear", "$c_G$", "s")):  # the keys
        b.plot([], [], mk, color=style.COLORS[att], label=f"{name}: Adam, trained emb.", gid="key")
        b.plot(
            [],
            [],
            mk,
            color=style.COLORS[att],
            mfc="none",
            gid="key",
            label=f"{name}: Adam, frozen emb.",
        )
        b.plot([], [], mk, color=style.GREY, label=f"{name}: quenched exact MAP", gid="key")
    style.log_P_axis(b, [r["P"] for r in res["runs"]])
    b.set_xlabel(style.P_LABEL)
    b.set_ylabel("order parameter")
    b.set_title("(b) after 2,000 epochs vs the exact MAP")
    style.legend(b, ncol=2)
    return fig


@style.styled
def embeddings_posterior_figure(res: dict):
    """(a) the posterior Gram's distance from the prior Gram vs N; (b) posterior aG, embeddings
    sampled vs quenched, vs N."""
    runs = list(res["runs"].values())
    Ps = sorted({r["P"] for r in runs if r["kind"] != "full"})
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.0, 3.8), layout="constrained")
    Ns = np.array(sorted({r["width"] for r in runs}), float)
    prior = [next(r["prior_gram_dist_rms"] for r in runs if r["width"] == n) for n in Ns]
    a.plot(Ns, prior, color=style.BLACK, lw=0.8, label="prior: rms $\\|C-\\Sigma\\|/\\|\\Sigma\\|$")
    for i, P in enumerate(Ps):
        c = style.PALETTE[i % len(style.PALETTE)]
        name = {"annealed": "emb. sampled", "quenched": "quenched"}
        for kind, mk in (("annealed", "o"), ("quenched", "s")):
            rs = sorted(
                (r for r in runs if r["kind"] == kind and r["P"] == P), key=lambda r: r["width"]
            )
            if not rs:
                continue
            N = [r["width"] for r in rs]
            line = len(N) >= style.MIN_POINTS  # fewer widths: markers, no line
            if kind == "annealed":
                a.errorbar(
                    N,
                    [r["gram_dist"]["mean"] for r in rs],
                    yerr=[r["gram_dist"]["mcse"] for r in rs],
                    fmt=mk + "-" * line,
                    color=c,
                    ms=4,
                    lw=0.8,
                    label=f"posterior, $P$ = {P}",
                )
                style.curve(
                    a,
                    N,
                    [r["mean_gram_shift"] for r in rs],
                    ":",
                    marker=mk,
                    color=c,
                    mfc="none",
                    ms=4,
                    lw=0.8,
                    label=f"$\\|E C-\\Sigma\\|/\\|\\Sigma\\|$, $P$ = {P}",
                )
            b.errorbar(
                N,
                [r["aG"]["mean"] for r in rs],
                yerr=[r["aG"]["mcse"] for r in rs],
                fmt=mk + ("-" if kind == "annealed" else "--") * line,
                color=c,
                ms=4,
                lw=0.8,
                mfc=c if kind == "annealed" else "none",
                label=f"{name[kind]}, $P$ = {P}",
            )
    top = sorted(
        (r for r in runs if r["kind"] == "annealed" and r["P"] == Ps[-1]), key=lambda r: r["width"]
    )
    if top:  # a 1/N reference through the smallest width (docs/theory.md §2f item 5)
        n0, s0 = top[0]["width"], top[0]["mean_gram_shift"]
        a.plot(Ns, s0 * n0 / Ns, color=style.GREY, lw=0.8, ls="--", label="$\\propto 1/N$")
    for r in runs:
        if r["kind"] == "full":
            for ax, k in ((a, "gram_dist"), (b, "aG")):
                ax.errorbar(
                    [r["width"] * 1.08],
                    [r[k]["mean"]],
                    yerr=[r[k]["mcse"]],
                    fmt="x",
                    color=style.GREY,
                    label=f"full-width NUTS, P={r['P']}",
                )
    for ax in (a, b):
        ax.set_xscale("log")
        ax.set_xticks(Ns, [f"{n:,.0f}" for n in Ns], minor=False)
        ax.set_xticks([], minor=True)
        ax.set_xlabel("width $N$")
    a.set_yscale("log")
    a.set_ylabel("relative Frobenius distance")
    a.set_title("(a) posterior embedding Gram vs the prior's $\\Sigma$")
    b.set_ylabel("posterior mean $a_G$")
    b.set_title("(b) posterior $a_G$: embeddings sampled vs quenched")
    style.legend(a, ncol=2)
    style.legend(b, ncol=2)
    return fig


@style.styled
def embeddings_width_figure(r: dict):
    """P* of both MAPs against the width, and the joint MAP's aG(P) per width."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    widths = sorted(int(w) for w in r["widths"])
    th = r["theory_ek"]
    keys = (
        ("softmax", "P_aG", style.VERMILLION),
        ("linear", "P_c1", style.SKY),
        ("linear", "P_cG", style.BLUE),
    )
    for att, k, col in keys:
        for obj, mk, ls in (("joint", "o", "-"), ("quenched", "s", ":")):
            pts = [r["widths"][str(w)][att]["points"][obj].get(k, {}) for w in widths]
            y = np.array([np.nan if p.get("P_star") is None else p["P_star"] for p in pts])
            style.curve(
                ax,
                widths,
                y,
                ls,
                marker=mk,
                color=col,
                mfc="none" if obj == "quenched" else col,
                label=f"{style.star_label(k)} {obj} MAP",
            )
            # not located, above the grid: a lower bound at the grid's largest P
            top = [
                (w, max(r["widths"][str(w)][att]["P"]))
                for w, p in zip(widths, pts)
                if p.get("P_star") is None and "above" in p.get("unlocated", [])
            ]
            if top:
                ax.plot(
                    *zip(*top),
                    "^",
                    color=col,
                    mfc="none" if obj == "quenched" else col,
                    ms=7,
                    ls="none",
                )
        if th[k] is not None:
            ax.axhline(th[k], color=col, lw=0.8, ls="--")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="width $N$",
        ylabel="$P^*$",
        title="transitions (dashed: EK theory; triangles: above the grid)",
    )
    style.legend(ax, ncol=2)
    for i, w in enumerate(widths):
        s = r["widths"][str(w)]["softmax"]
        aG = np.nanmean(np.asarray(s["joint"]["cG"], float), axis=1)
        col = style.PALETTE[i % len(style.PALETTE)]
        bx.plot(s["P"], aG, "-o", ms=3, color=col, label=f"N={w:,}")
    s = r["widths"][str(widths[-1])]["softmax"]
    bx.plot(
        s["P"],
        np.nanmean(np.asarray(s["quenched"]["cG"], float), axis=1),
        ":",
        color=style.GREY,
        label=f"quenched, N={widths[-1]:,}",
    )
    bx.set(xlabel=style.P_LABEL, ylabel="$a_G$ (seed mean)", title="softmax joint MAP")
    style.log_P_axis(bx, s["P"])
    style.legend(bx, ncol=2)
    return fig
