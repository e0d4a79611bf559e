"""``copyhead reproduce ARTEFACT``: the paper's claims put to the test, one command per artefact.

The experiment scripts live in ``experiments/`` at the repository root (one ``main(spec,
out_dir)`` per artefact, configs in ``experiments/configs/{quick,full,tiny}.py``); this module
finds them next to the installed package, so it needs a source checkout (``pip install -e .``).

copyhead reproduce all --quick                 # both presets, every artefact, docs/ + report
copyhead reproduce main --quick --preset plain
copyhead reproduce hysteresis --full --preset paper --out results/full
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

ARTEFACTS = ("main", "coverage", "scaling-L", "scaling-V", "hysteresis")
MODULES = {
    "main": "main",
    "coverage": "coverage",
    "scaling-L": "scaling",
    "scaling-V": "scaling",
    "hysteresis": "hysteresis",
}
PRESETS = ("plain", "paper")


def experiments_dir() -> Path:
    """``experiments/`` of the source checkout this package was installed from."""
    import copyhead_jax

    root = Path(copyhead_jax.__file__).resolve().parents[1]
    d = root / "experiments"
    if not (d / "main.py").is_file():
        raise ValueError(
            f"the experiment scripts are not next to this installation (looked in {d}); "
            "`copyhead reproduce` needs a source checkout installed with `pip install -e .`"
        )
    return d


def load_experiments():
    """Import the ``experiments`` package of the checkout (its parent goes on ``sys.path``)."""
    d = experiments_dir()
    root = str(d.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module("experiments")


def experiment_module(artefact: str):
    load_experiments()
    return importlib.import_module(f"experiments.{MODULES[artefact]}")


def run_artefact(artefact: str, *, mode: str, preset: str, out: Path, cache: Path) -> dict:
    """Run one artefact for one preset and return its result dict."""
    load_experiments()
    common = importlib.import_module("experiments.common")
    spec = common.load_spec(mode, preset, artefact, cache)
    return experiment_module(artefact).main(spec, out)


def add_reproduce_subparser(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="reproduce the paper's artefacts (tables, figures, docs/results.md)",
        description=__doc__.split("\n")[0],
    )
    p.add_argument(
        "artefact",
        choices=(*ARTEFACTS, "all", "report"),
        help="an artefact, all of them (then the report), or only the report",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--quick",
        dest="mode",
        action="store_const",
        const="quick",
        help="2-core CPU, <= ~15 min per artefact and preset (default)",
    )
    g.add_argument(
        "--full",
        dest="mode",
        action="store_const",
        const="full",
        help="the paper's configuration (width 10,000, 10 seeds): a GPU job",
    )
    g.add_argument(
        "--tiny", dest="mode", action="store_const", const="tiny", help="seconds-sized smoke run"
    )
    p.set_defaults(mode="quick")
    p.add_argument(
        "--preset",
        choices=(*PRESETS, "both"),
        default="both",
        help="theory/engine conventions (default: both, plain first)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: docs for --quick, results/reproduce/MODE else)",
    )
    p.add_argument(
        "--cache", default=None, help="sweep/sampler cache (default: results/reproduce/cache/MODE)"
    )
    p.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args) -> int:
    root = experiments_dir().parent
    out = (
        Path(args.out)
        if args.out
        else (root / "docs" if args.mode == "quick" else root / "results" / "reproduce" / args.mode)
    )
    cache = Path(args.cache) if args.cache else root / "results" / "reproduce" / "cache" / args.mode
    presets = PRESETS if args.preset == "both" else (args.preset,)
    artefacts = (
        ARTEFACTS
        if args.artefact == "all"
        else (() if args.artefact == "report" else (args.artefact,))
    )
    # scaling reuses main's measurement at the preset's (L, V), coverage reuses main's runs:
    # run main first when several artefacts are asked for
    timings = {}
    for preset in presets:
        for a in artefacts:
            t0 = time.time()
            run_artefact(a, mode=args.mode, preset=preset, out=out, cache=cache)
            timings[f"{a}/{preset}"] = time.time() - t0
            print(f"{a} ({preset}, {args.mode}): {timings[f'{a}/{preset}']:.0f} s")
    if args.artefact in ("all", "report"):
        load_experiments()
        report = importlib.import_module("experiments.report")
        path = report.main(out, mode=args.mode)
        print(f"wrote {path}")
    return 0
