"""``python -m experiments.report.redraw [NAME ...] [--format png|pdf|svg] [--results DIR]
[--out DIR]``: every committed figure drawn again from its result JSON, without recomputing
anything but the posterior's EK curves; prints what :func:`copyhead_jax.style.figure_problems`
finds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..common import nulls_in_lists_to_nan, save_figure
from .figures import (
    coverage_figure,
    hysteresis_figure,
    main_figure,
    scaling_figure,
    width_figure,
)


def _load(results: Path, name: str) -> dict | None:
    p = results / f"{name}.json"
    return nulls_in_lists_to_nan(json.loads(p.read_text())) if p.exists() else None


def drawings(results: Path):
    """``(figure name, draw)`` for every figure whose result JSON is in ``results``; ``draw()``
    returns the matplotlib Figure (or ``None`` where the result has nothing to draw)."""
    from .. import embeddings, posterior_branches, posterior_smc, reduction

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


def _posterior(post: dict):
    """The posterior's figures (its EK curves computed once, on the first draw)."""
    from .. import posterior, posterior_llc
    from .. import posterior_features as PF

    preset, cache = post["preset"], {}

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

    if fmt not in ("png", "pdf", "svg"):
        raise ValueError(f"fmt must be one of png, pdf, svg; got {fmt!r}")
    paths = []
    for name, draw in drawings(Path(results)):
        fig = None if only and name not in only else draw()
        if fig is None:
            continue
        for p in figure_problems(fig):
            print(f"{name}: {p}")
        paths.append(save_figure(fig, Path(out) / f"{name}.{fmt}", dpi=110))
        print(f"wrote {paths[-1]}", flush=True)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m experiments.report.redraw",
        description="draw the artefacts' figures again from their result JSON (no recomputing)",
        epilog="example: python -m experiments.report.redraw --format pdf --out /tmp/figs "
        "main_paper",
    )
    p.add_argument("only", nargs="*", help="figure names (default: every figure)")
    p.add_argument("--results", default="docs/reports/results", help="folder of the result JSON")
    p.add_argument("--out", default="docs/reports/figures", help="folder the figures go to")
    p.add_argument("--format", default="png", choices=("png", "pdf", "svg"))
    a = p.parse_args(argv)
    render(a.results, a.out, a.format, a.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
