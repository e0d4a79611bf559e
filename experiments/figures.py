"""The artefacts' figures: result dict in, matplotlib Figure out (``common.save_artefact`` saves
and closes them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .features import KEYS, SINGLE, THEORY_KEY, P_star


def main_figure(res: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True)
    ek, th = res["theory_ek_curves"], res["theory_ek_points"]
    cur = res["curves"]
    if "measured_located" in res:  # a fresh run; its JSON keeps the plain dicts
        mp = {k: P_star(v) for k, v in res["measured_located"].items()}
    else:
        mp = {k: (v or {}).get("P_star") for k, v in res["measured"].items()}
    solver = res.get("header", {}).get("engine", {}).get("train", {}).get("solver")
    base = "exact MAP" if solver == "exact" else "Adam"
    width = res.get("width")
    fit = f"{base} N={width}" if width else base
    other = {w: r for w, r in (res.get("widths") or {}).items() if w != width}

    def band(a, x, m, s, label, **kw):
        x, m = np.asarray(x, float), np.asarray(m, float)
        line = a.errorbar(
            x,
            m,
            yerr=None if s is None else np.asarray(s, float),
            ms=4,
            capsize=2,
            label=label,
            **kw,
        )
        return line

    def vlines(a, keys):
        for k, col in keys:
            if th.get(k):
                a.axvline(th[k], color=col, ls="--", lw=0.9)
            if mp.get(k):
                a.axvline(mp[k], color=col, ls="-", lw=0.9, alpha=0.7)

    # (0,0) linear order parameters
    a = ax[0, 0]
    e = ek["linear"]["map"]
    a.plot(e["P"], e["c1"], "--", color="tab:cyan", label="EK theory c1")
    a.plot(e["P"], e["cG"], "--", color="tab:blue", label="EK theory cG")
    f = cur["finite_linear"]
    a.plot(f["P"], f["c1"], ":", color="tab:cyan", label="finite-width theory c1")
    a.plot(f["P"], f["cG"], ":", color="tab:blue", label="finite-width theory cG")
    lin = cur["linear"]
    band(a, lin["P"], lin["c1"], lin["c1_sd"], f"{fit} c1", fmt="s", color="tab:cyan")
    band(a, lin["P"], lin["cG"], lin["cG_sd"], f"{fit} cG", fmt="o", color="tab:blue")
    if cur.get("sgld_linear"):
        pl = cur["sgld_linear"]
        band(
            a,
            pl["P"],
            pl["cG_mean"],
            np.sqrt(pl["cG_var"]),
            "SGLD cG",
            fmt="^",
            color="k",
            mfc="none",
        )
    for w, r in other.items():
        cs = r.get("curves_small", {}).get("linear")
        if cs:
            a.plot(cs["P"], cs["cG"], "x", color="tab:blue", alpha=0.6, label=f"{base} N={w} cG")
    vlines(a, (("P_c1", "tab:green"), ("P_cG", "tab:purple")))
    a.set_title("linear: order parameters (dashed: theory P*, solid: measured)")

    # (1,0) softmax aG
    a = ax[1, 0]
    e = ek["softmax"]["map"]
    a.plot(e["P"], e["aG"], "--", color="tab:red", label="EK theory aG (global)")
    mv = np.asarray(e["minima_valid"], bool)
    maG = np.where(mv, e["minima_aG"], np.nan)
    for k in range(1, maG.shape[1]):
        a.plot(e["P"], maG[:, k], ".", ms=1.5, color="tab:red", alpha=0.5)
    f = cur["finite_softmax"]
    a.plot(f["P"], f["aG"], ":", color="tab:red", label="finite-width theory aG")
    for name, fmt, col in (("pool", "o", "tab:orange"), ("copy", "v", "tab:brown")):
        c = cur[name]
        band(a, c["P"], c["cG"], c["cG_sd"], f"{fit} aG ({name} start)", fmt=fmt, color=col)
        for w, r in other.items():
            cs = r.get("curves_small", {}).get(name)
            if cs:
                a.plot(cs["P"], cs["cG"], "x", color=col, alpha=0.6, label=f"{base} N={w} ({name})")
    if cur.get("sgld_softmax"):
        ps = cur["sgld_softmax"]
        band(
            a,
            ps["P"],
            ps["cG_mean"],
            np.sqrt(ps["cG_var"]),
            "SGLD aG",
            fmt="^",
            color="k",
            mfc="none",
        )
    sp = th.get("spinodals")
    if sp:
        a.axvspan(sp[0], sp[1], color="tab:red", alpha=0.08, label="theory coexistence")
    vlines(a, (("P_aG", "tab:red"),))
    a.set_title("softmax: aG, both starts (shaded: theory spinodals)")

    # (0,1) losses
    a = ax[0, 1]
    for name, col, key in (("linear", "tab:blue", "linear"), ("softmax", "tab:red", "pool")):
        c = cur[key]
        for split, fmt, alpha in (("train", "o", 1.0), ("test", "x", 0.5)):
            band(a, c["P"], c[f"{split}_loss"], c[f"{split}_loss_sd"], f"{fit} {name} {split}",
                 fmt=fmt, color=col, alpha=alpha)  # fmt: skip
        e = ek[name]["map"]
        a.plot(e["P"], e["mse"], "--", color=col, label=f"EK population MSE ({name})")
    a.set_title("loss per sequence")

    # (1,1) branch objective difference
    a = ax[1, 1]
    br = cur["branches"]
    if len(br["P"]):
        a.plot(
            br["P"], br["dU_per_seq"], "o-", color="tab:red", label=f"{fit}: (U_pool - U_copy)/P"
        )
        dist = np.asarray(br["distinct"], float) > 0
        a.plot(
            np.asarray(br["P"])[~dist],
            np.asarray(br["dU_per_seq"])[~dist],
            "x",
            color="gray",
            label="branches merged (excluded)",
        )
    f = cur["finite_softmax"]
    if "dS_per_seq" in f:
        a.plot(
            f["P"], f["dS_per_seq"], ":", color="tab:red", label="finite theory (S_weak-S_strong)/P"
        )
    a.axhline(0, color="k", lw=0.6)
    vlines(a, (("P_aG", "tab:red"),))
    a.set_title("softmax: objective gap between branches")

    # (0,2) susceptibility
    a = ax[0, 2]
    for key, fld, col, lab in (
        ("sgld_linear", "r", "tab:green", "linear var(r)"),
        ("sgld_linear", "cG", "tab:blue", "linear var(cG)"),
        ("sgld_softmax", "cG", "tab:red", "softmax var(aG)"),
    ):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p[f"{fld}_var"], "o-", color=col, label=lab)
    a.set_yscale("log")
    vlines(a, (("P_c1", "tab:green"), ("P_cG", "tab:purple"), ("P_aG", "tab:red")))
    a.set_title("SGLD susceptibility (early-warning signal)")

    # (1,2) coverage
    a = ax[1, 2]
    for key, col, lab in (("linear", "tab:blue", "linear"), ("pool", "tab:red", "softmax")):
        c = cur[key]
        band(a, c["P"], c["coverage"], c["coverage_sd"], f"{fit} {lab} mean-A", fmt="o", color=col)
        a.plot(c["P"], c["sample_coverage"], "x:", color=col, label=f"{fit} {lab} per-sample")
    for key, col, lab in (
        ("sgld_linear", "tab:blue", "linear"),
        ("sgld_softmax", "tab:red", "softmax"),
    ):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p["coverage_mean"], "^--", color=col, mfc="none", label=f"SGLD {lab}")
    a.set_title("subspace coverage")
    for a in ax.flat:
        a.set_xscale("log")
        a.set_xlabel("P (training sequences)")
        a.legend(fontsize=6)
    e = res["header"]["engine"]
    fig.suptitle(
        f"main, {res['header']['preset']} preset, {res['header']['mode']}: L={e['task']['L']}, "
        f"V={e['task']['V']}, N={e['model']['width']}, seeds={e['sweep']['n_seeds']}"
    )
    return fig


def coverage_figure(res: dict[str, Any], res_main: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True)
    cur = res_main["curves"]
    for a, att, key, post in (
        (ax[0], "linear", "linear", "sgld_linear"),
        (ax[1], "softmax", "pool", "sgld_softmax"),
    ):
        c = cur[key]
        a.errorbar(
            c["P"],
            c["coverage"],
            yerr=c["coverage_sd"],
            fmt="o-",
            ms=4,
            capsize=2,
            label="Adam, mean attention",
        )
        a.errorbar(
            c["P"],
            c["sample_coverage"],
            yerr=c["sample_coverage_sd"],
            fmt="x:",
            ms=4,
            capsize=2,
            label="Adam, per sample",
        )
        p = cur.get(post)
        if p:
            a.plot(
                p["P"],
                np.asarray(p["coverage_mean"], float),
                "^--",
                mfc="none",
                label="SGLD, mean attention",
            )
        a.axhline(res["a1_threshold"], color="gray", lw=0.7, ls=":", label="A1 threshold")
        a.set_xscale("log")
        a.set_xlabel("P")
        a.set_ylabel("subspace cosine")
        a.set_title(f"{att} attention")
        a.legend(fontsize=7)
    lin = res["linear_regimes"]
    colors = {"no": "0.9", "poo": "tab:green", "cro": "tab:orange", "cop": "tab:purple"}
    for P, name in zip(lin["P"], lin["regime"]):
        ax[0].axvline(P, color=colors.get(name[:3], "0.8"), alpha=0.25, lw=6)
    h = res["header"]
    fig.suptitle(
        f"coverage, {h['preset']} preset, {h['mode']} (bands: linear regime from EK psi: "
        "green pooling, orange crossover, purple copying)"
    )
    return fig


def hysteresis_figure(res: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5), constrained_layout=True)
    b = res["softmax"]
    a = ax[0]
    ek = res["theory_ek_softmax"]
    mv = np.asarray(ek["minima_valid"], bool)
    maG = np.where(mv, np.asarray(ek["minima_aG"], float), np.nan)
    for k in range(maG.shape[1]):
        a.plot(
            ek["P"],
            maG[:, k],
            ".",
            ms=2,
            color="tab:red",
            alpha=0.6,
            label="EK local minima" if k == 0 else None,
        )
    for name, fmt, col in (("pool", "o", "tab:orange"), ("copy", "v", "tab:brown")):
        a.errorbar(
            b["P"],
            b[f"aG_{name}"],
            yerr=b[f"aG_{name}_sd"],
            fmt=fmt,
            color=col,
            ms=4,
            capsize=2,
            label=f"Adam, {name} start",
        )
    sp = res["theory_ek_spinodals"]
    if sp:
        a.axvspan(sp[0], sp[1], color="tab:red", alpha=0.1, label="EK spinodal window")
    w = res["measured_window"]
    if w["lower"] and w["upper"]:
        a.axvspan(w["lower"], w["upper"], color="tab:blue", alpha=0.1, label="measured window")
    a.set_title("softmax: a_G from both starts")
    a = ax[1]
    a.plot(b["P"], b["dU_per_seq"], "o-", color="tab:red", label="(U_pool - U_copy)/P")
    a.axhline(0, color="k", lw=0.6)
    a.set_title("softmax: objective gap between the two starts")
    a = ax[2]
    lin = res["linear"]
    if lin:
        a.plot(lin["P"], lin["cG_prior"], "o-", label="Adam cG, prior start")
        a.plot(lin["P"], lin["cG_copy"], "v--", label="Adam cG, copy start")
        a.plot(
            res["theory_ek_linear"]["P"], res["theory_ek_linear"]["cG"], "k:", label="EK theory cG"
        )
    a.set_title(
        f"linear: both starts (max |dcG| = {(lin or {}).get('max_abs_dcG', float('nan')):.3g})"
    )
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("P")
        a.legend(fontsize=7)
    h = res["header"]
    fig.suptitle(f"hysteresis, {h['preset']} preset, {h['mode']}")
    return fig


def scaling_figure(res: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = res["axis"]
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8), constrained_layout=True)
    pd = res["phase"]
    colors = {"P_c1": "tab:green", "P_cG": "tab:blue", "P_aG": "tab:red"}
    for a, att, field, title in (
        (ax[0], "linear", "psi", "linear: EK copy fraction psi"),
        (ax[1], "softmax", "aG", "softmax: EK a_G"),
    ):
        d = pd[att]
        z = np.asarray(d[field], float)
        m = a.pcolormesh(d["values"], d["P"], z.T, shading="nearest", cmap="viridis")
        fig.colorbar(m, ax=a)
        keys = ("P_c1", "P_cG") if att == "linear" else ("P_aG", "spinodal_lo", "spinodal_hi")
        for k in keys:
            y = np.asarray([np.nan if v is None else v for v in pd["boundaries"][k]], float)
            a.plot(pd["boundary_values"], y, "--" if "spin" in k else "-", color="w", lw=1.2)
        for k in ("P_c1", "P_cG") if att == "linear" else ("P_aG",):
            for r in res["rows"]:
                mk = r["measured"].get(k)
                if mk and mk.get("bracketed"):
                    lo, hi = mk["bracket"]
                    a.errorbar(
                        [r["value"]],
                        [mk["P_star"]],
                        yerr=[[mk["P_star"] - lo], [hi - mk["P_star"]]],
                        fmt="o",
                        color=colors[k],
                        mec="w",
                        capsize=3,
                    )
        a.set_yscale("log")
        a.set_xlabel(axis)
        a.set_ylabel("P")
        a.set_title(title + " (lines: EK P*, dots: measured)")
    a = ax[2]
    x = np.asarray(res["values"], float)
    colors[SINGLE] = "tab:orange"
    for k in (*KEYS, SINGLE):
        tk = THEORY_KEY[k]
        ek = [r["theory_ek"].get(tk) for r in res["rows"]]
        a.plot(
            x,
            [np.nan if v is None else v for v in ek],
            "-" if k != SINGLE else "--",
            color=colors[k],
            label=f"{tk} EK (k={_fmt(res['fits'][k]['theory_ek']['exponent'])})",
        )
        fin = [(r.get("theory_finite") or {}).get(tk) for r in res["rows"]]
        a.plot(
            x,
            [np.nan if v is None else v for v in fin],
            ":",
            color=colors[k],
            label=f"{tk} finite width",
        )
        me = [(r["measured"].get(k) or {}) for r in res["rows"]]
        y = [m["P_star"] if m.get("bracketed") else np.nan for m in me]
        a.plot(
            x,
            y,
            "o" if k != SINGLE else "x",
            color=colors[k],
            label=f"{k} measured (k={_fmt(res['fits'][k]['measured']['exponent'])}; "
            f"paper {res['fits'][k]['paper_law']}: "
            f"{_fmt(res['fits'][k]['paper_exponent'])})",
        )
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel(axis)
    a.set_ylabel("P*")
    a.legend(fontsize=6)
    a.set_title("P* and fitted exponents")
    h = res["header"]
    fig.suptitle(f"{h['artefact']}, {h['preset']} preset, {h['mode']}")
    return fig


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def width_figure(res: dict[str, Any]):
    """The width table's figure: every P* relative to the EK theory versus the width N
    (measured with its CI, finite-width theory), and the order parameters versus P per width."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 4, figsize=(19, 4.6), constrained_layout=True)
    widths = res["widths"]
    finite = [w for w in widths if w != "inf"]
    # infinity drawn one decade right of the largest finite width
    x_of = {w: float(w) for w in finite}
    x_inf = 10 * max(x_of.values()) if x_of else 1.0
    x_of["inf"] = x_inf
    a = ax[0]
    colors = {
        "P_c1": "tab:green",
        "P_cG": "tab:blue",
        "P_cG_half": "tab:cyan",
        "P_aG": "tab:red",
        "P_aG_single": "tab:orange",
        "window_lo": "tab:purple",
    }
    for j, row in enumerate(res["rows"]):
        ek = row["theory_ek"]
        if not ek:
            continue
        col = colors.get(row["key"], "k")
        shift = 1.0 + 0.03 * (j - len(res["rows"]) / 2)
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
        a.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", color=col, ms=4, capsize=2, label=row["key"])
        a.plot(xf, yf, ":", color=col, lw=1)
        old = (row.get("reference_128") or {}).get("measured")
        if old:
            a.plot([128 * shift], [old / ek], "x", color=col, ms=8, mew=2)
    a.axhline(1.0, color="k", lw=0.8)
    a.set_xscale("log")
    a.set_xticks([*(x_of[w] for w in finite), x_inf])
    a.set_xticklabels([*(f"{int(float(w)):,}" for w in finite), "inf"])
    a.set_xlabel("width N")
    a.set_ylabel("P* / P*(EK)")
    a.set_title(
        "P* / EK vs N (o: exact MAP, 95% CI; dotted: finite theory; x: old Adam N=128)",
        fontsize=8,
    )
    a.legend(fontsize=7)
    cmap = plt.get_cmap("viridis")
    shade = {w: cmap(i / max(1, len(widths) - 1)) for i, w in enumerate(widths)}
    panels = (
        (ax[1], "linear", "psi", "linear: copy fraction psi"),
        (ax[2], "linear", "r", "linear: row sum r of the attention"),
        (ax[3], "pool", "cG", "softmax: a_G, pooling start (o) and copy start (s)"),
    )
    for a, branch, q, title in panels:
        for w in widths:
            c = res["curves"].get(w)
            if not c or q not in c[branch]:
                continue
            label = "N = inf" if w == "inf" else f"N = {int(float(w)):,}"
            a.plot(c[branch]["P"], c[branch][q], "o-", ms=3, color=shade[w], label=label)
            if branch == "pool":
                a.plot(c["copy"]["P"], c["copy"][q], "s--", ms=3, color=shade[w])
        a.set_xscale("log")
        a.set_xlabel("P")
        a.set_title(title, fontsize=9)
        a.legend(fontsize=7)
    fig.suptitle(f"width table, {res['preset']} preset (exact MAP, {res['n_seeds']} seeds)")
    return fig


# ---------------------------------------------------------------------------------------------
# Every committed figure, drawn again from the committed JSON (nothing recomputed but the
# posterior's EK curves, a few seconds of theory)


def _load(results: Path, name: str) -> dict | None:
    import json

    from .common import nulls_in_lists_to_nan

    p = results / f"{name}.json"
    return nulls_in_lists_to_nan(json.loads(p.read_text())) if p.exists() else None


def drawings(results: Path):
    """``(figure name, draw)`` for every figure whose result JSON is in ``results``; ``draw()``
    returns the matplotlib Figure (or ``None`` where the result has nothing to draw)."""
    from . import embeddings, posterior_branches, posterior_llc, posterior_smc, reduction

    for preset in ("plain", "paper"):
        main = _load(results, f"main_{preset}")
        if main:
            yield f"main_{preset}", lambda r=main: main_figure(r)
        cov = _load(results, f"coverage_{preset}")
        if cov and main:
            yield f"coverage_{preset}", lambda r=cov, m=main: coverage_figure(r, m)
        hys = _load(results, f"hysteresis_{preset}")
        if hys:
            yield f"hysteresis_{preset}", lambda r=hys: hysteresis_figure(r)
        for ax in ("L", "V"):
            sc = _load(results, f"scaling-{ax}_{preset}")
            if sc:
                yield f"scaling-{ax}_{preset}", lambda r=sc: scaling_figure(r)
        wd = _load(results, f"width_{preset}")
        if wd:
            yield f"width_{preset}", lambda r=wd: width_figure(r)
        post = _load(results, f"posterior_{preset}")
        if post:
            yield from _posterior(post)
        br = _load(results, "posterior_branches" + ("" if preset == "plain" else f"_{preset}"))
        if br:
            main_P = ((main or {}).get("measured", {}).get("P_aG") or {}).get("P_star")
            yield (f"posterior_branches_{preset}",
                   lambda r=br, m=main_P: posterior_branches.draw(r, m))  # fmt: skip
    smc = _load(results, "posterior_smc")
    if smc:
        yield "posterior_smc_plain", lambda r=smc: posterior_smc.draw(r, r.get("ti_crossing_F"))
    emb = _load(results, "embeddings")
    if emb:
        yield "embeddings", lambda r=emb: embeddings.figure(r)
    red = _load(results, "reduction")
    if red and "width" in red:
        yield "reduction_width", lambda r=red: reduction.draw(r["width"])
    _ = posterior_llc  # drawn with the posterior's figures


def _posterior(post: dict):
    from . import posterior, posterior_llc
    from . import posterior_features as PF

    preset = post["preset"]
    cache = {}

    def fig(name):
        if not cache:
            mc = posterior.CONFIGS[post["mode"]]
            cache.update(PF.figures(post, posterior.theory(mc, preset)["curves"]))
            cache["llc_devinterp"] = posterior_llc.figure(post)
        return cache.pop(name)

    names = ["orderparams", "susceptibility", "llc", "llc_devinterp"]
    if post["softmax"].get("free_energy") is not None:
        names.append("free_energy")
    for name in names:
        yield f"posterior_{name}_{preset}", lambda n=name: fig(n)


def render(results: str | Path, out: str | Path, fmt: str = "png", only=None) -> list[Path]:
    """Draw every figure of ``results/*.json`` into ``out/NAME.FMT``; ``only``: names to draw.
    Prints what :func:`copyhead_jax.style.figure_problems` finds in each."""
    from copyhead_jax.style import figure_problems

    from .common import save_figure

    if fmt not in ("png", "pdf", "svg"):
        raise ValueError(f"fmt must be one of png, pdf, svg; got {fmt!r}")
    paths = []
    for name, draw in drawings(Path(results)):
        if only and name not in only:
            continue
        fig = draw()
        if fig is None:
            continue
        for p in figure_problems(fig):
            print(f"{name}: {p}")
        paths.append(save_figure(fig, Path(out) / f"{name}.{fmt}", dpi=110))
        print(f"wrote {paths[-1]}", flush=True)
    return paths


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m experiments.figures",
        description="draw the artefacts' figures again from their result JSON (no recomputing)",
        epilog="example: python -m experiments.figures --format pdf --out /tmp/figs main_paper",
    )
    p.add_argument("only", nargs="*", help="figure names (default: every figure)")
    p.add_argument("--results", default="docs/results", help="folder of the result JSON")
    p.add_argument("--out", default="docs/figures", help="folder the figures go to")
    p.add_argument("--format", default="png", choices=("png", "pdf", "svg"))
    a = p.parse_args(argv)
    render(a.results, a.out, a.format, a.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
