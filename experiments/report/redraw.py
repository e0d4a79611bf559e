"""``python -m experiments.report.redraw [NAME ...] [--format png|pdf|svg] [--results DIR]
[--out DIR]``: every committed figure (every PNG under docs/) drawn again from the result JSON
it was drawn from, without recomputing anything but the theory curves some figures overlay
(about 3 CPU-minutes in all); prints what :func:`copyhead_jax.plots.check_png` finds in
each PNG. By default each figure goes where docs/ keeps it (:data:`PLACES`, else
docs/reports/figures); ``--out DIR`` puts them all in ``DIR``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from copyhead_jax.plots import (
    bayes_compare_figure,
    beyond_curves_figure,
    beyond_pstar_figure,
    branch_figure,
    branch_follow_figure,
    embeddings_posterior_figure,
    embeddings_protocol_figure,
    embeddings_width_figure,
    reduction_width_figure,
    scaling_figure,
    smc_figure,
    transition_figure,
    width_figure,
)
from copyhead_jax.plots import branches as F
from copyhead_jax.storage import nulls_in_lists_to_nan

from ..common import save_figure

ROOT = Path(__file__).resolve().parents[2]
#: figures kept outside docs/reports/figures: name -> folder (relative to the repository)
PLACES = {"paper-map": "docs/guide/img"}
#: the readings whose artefacts are drawn (``paper-chi-lik``: ``python -m experiments.reading``)
PRESETS = ("plain", "paper", "paper-chi-lik")


def _load(results: Path, name: str) -> dict | None:
    p = results / f"{name}.json"
    return nulls_in_lists_to_nan(json.loads(p.read_text())) if p.exists() else None


def drawings(results: Path):
    """``(figure name, draw)`` for every figure whose result JSON is in ``results``; ``draw()``
    returns the matplotlib Figure (or ``None`` where the result has nothing to draw)."""
    if (results / "paper-map.json").exists():
        from .lead import figure

        yield "paper-map", lambda: figure(results / "paper-map.json")
    for p in PRESETS:
        main = _load(results, f"main_{p}")
        arts = [
            ("main", F.main_figure),
            ("hysteresis", F.hysteresis_figure),
            ("scaling-L", scaling_figure),
            ("scaling-V", scaling_figure),
            ("width", width_figure),
        ]
        if main:
            arts.insert(1, ("coverage", lambda r, m=main: F.coverage_figure(r, m)))
        for name, draw in arts:
            if res := _load(results, f"{name}_{p}"):
                yield f"{name}_{p}", lambda r=res, d=draw: d(r)
        if post := _load(results, f"posterior_{p}"):
            yield from _posterior(post)
        if br := _load(results, "posterior_branches" + ("" if p == "plain" else f"_{p}")):
            P_aG = ((main or {}).get("measured", {}).get("P_aG") or {}).get("P_star")
            yield f"posterior_branches_{p}", lambda r=br, m=P_aG: branch_figure(r, m)
    if smc := _load(results, "posterior_smc"):
        yield "posterior_smc_plain", lambda r=smc: smc_figure(r, r.get("ti_crossing_F"))
    if emb := _load(results, "embeddings"):
        yield "embeddings", lambda r=emb: embeddings_width_figure(r)
    if (red := _load(results, "reduction")) and "width" in red:
        yield "reduction_width", lambda r=red: reduction_width_figure(r["width"])
    for name, draw in (
        ("embeddings_protocol", embeddings_protocol_figure),
        ("embeddings_posterior", embeddings_posterior_figure),
    ):
        if emb := _load(results, name):
            yield name, lambda r=emb, d=draw: d(r)
    yield from _beyond(results)
    yield from _transitions(results)
    if cmp := _load(results, "bayes_compare"):
        yield "bayes_theory_vs_measured", lambda r=cmp: bayes_compare_figure(r)


def _beyond(results: Path):
    """The Markov and causal studies: P* and curves against rho, branches followed in P (as
    ``experiments/beyond.py`` draws them)."""
    for name in ("markov", "markov_plain", "causal", "causal_plain"):
        if res := _load(results, name):
            rows = [r for r in res["rows"] if "rho" in r and r["theory"]]
            if rows:
                yield f"{name}_pstar", lambda r=dict(res, rows=rows): beyond_pstar_figure(r)
                yield f"{name}_curves", lambda r=dict(res, rows=rows): beyond_curves_figure(r)
    for name in ("markov-follow", "causal-follow"):
        if (res := _load(results, name)) and any("followed" in r for r in res["rows"]):
            yield name, lambda r=res: branch_follow_figure(r["rows"])


def _transitions(results: Path):
    """``copyhead transition`` results: the windows' crossing (``transition_*``) and the free
    energy profile (``transition_profile_*``)."""
    from copyhead_jax.plots import profile_figure

    for p in sorted(results.glob("transition_*.json")):
        res = _load(results, p.stem)
        yield (
            p.stem,
            lambda r=res, d=(profile_figure if "profile" in p.stem else transition_figure): d(r),
        )


def _posterior(post: dict):
    """The posterior's figures (its EK curves computed once, on the first draw)."""
    from copyhead_jax.plots import result_figures

    from ..configs.posterior import CONFIGS
    from ..posterior_runs import theory

    preset, cache = post["preset"], {}

    def fig(name):
        if not cache:
            mc = CONFIGS[post["mode"]]
            cache.update(result_figures(post, theory(mc, preset)["curves"]))
        return cache.pop(name)

    names = ["orderparams", "susceptibility", "llc", "llc_devinterp"]
    if post["softmax"].get("free_energy") is not None:
        names.append("free_energy")
    for name in names:
        yield f"posterior_{name}_{preset}", lambda n=name: fig(n)


def place(name: str, out: str | Path | None) -> Path:
    """Where the figure ``name`` goes: ``out`` if given, else its folder under docs/."""
    if out is not None:
        return Path(out)
    return ROOT / PLACES.get(name, "docs/reports/figures")


def render(
    results: str | Path, out: str | Path | None = None, fmt: str = "png", only=None
) -> list[Path]:
    """Draw every figure of ``results/*.json`` into ``place(NAME, out)/NAME.FMT``; ``only``:
    names to draw. Prints the defects :mod:`copyhead_jax.plots.check` finds in each PNG."""
    from copyhead_jax.plots import check_png

    if fmt not in ("png", "pdf", "svg"):
        raise ValueError(f"fmt must be one of png, pdf, svg; got {fmt!r}")
    paths = []
    for name, draw in drawings(Path(results)):
        fig = None if only and name not in only else draw()
        if fig is None:
            continue
        paths.append(save_figure(fig, place(name, out) / f"{name}.{fmt}"))
        print(f"wrote {paths[-1]}", flush=True)
        for p in check_png(paths[-1]) if fmt == "png" else ():
            print(f"{name}: {p}")
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
    p.add_argument(
        "--out", default=None, help="folder the figures go to (default: where docs/ keeps each)"
    )
    p.add_argument("--format", default="png", choices=("png", "pdf", "svg"))
    a = p.parse_args(argv)
    render(a.results, a.out, a.format, a.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
