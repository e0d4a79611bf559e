"""``python -m experiments ARTEFACT``: the paper's claims put to the test, one command per artefact.

One ``main(spec, out_dir)`` per artefact in this folder, configs in ``configs/*.py``; run
from the repository root:

python -m experiments all                         # the paper's configuration (width 10,000 and
                                                  # inf, exact MAP, 10 seeds), docs/ + report
python -m experiments main --preset paper         # one artefact, one preset
python -m experiments all --quick                 # small and fast (width 128, Adam, 1-2 seeds)
python -m experiments report                      # docs/results.md and README's table
python -m experiments main --full-network --preset paper --out results/full   # GPU protocol
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import common, coverage, features, hysteresis, report, scaling
from . import main as main_artefact

ARTEFACTS = common.ARTEFACTS
MODULES = {
    "main": main_artefact,
    "coverage": coverage,
    "scaling-L": scaling,
    "scaling-V": scaling,
    "hysteresis": hysteresis,
}
PRESETS = common.PRESET_NAMES
ROOT = Path(__file__).resolve().parents[1]


def run_artefact(artefact: str, *, mode: str, preset: str, out: Path, cache: Path) -> dict:
    """Run one artefact for one preset and return its result dict."""
    spec = common.load_spec(mode, preset, artefact, cache)
    return MODULES[artefact].main(spec, out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.split("\n")[0])
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
        help="small and fast: width 128, full-width Adam, 1-2 seeds (<= ~15 min per artefact)",
    )
    g.add_argument(
        "--full-network",
        "--full",
        dest="mode",
        action="store_const",
        const="full",
        help="the paper's full-network protocol (width 10,000, trained embeddings, Adam, "
        "10 seeds): a GPU job",
    )
    g.add_argument(
        "--tiny", dest="mode", action="store_const", const="tiny", help="seconds-sized smoke run"
    )
    # the default: the paper's configuration through the exact width reduction (a CPU job)
    p.set_defaults(mode="paper")
    p.add_argument(
        "--preset",
        choices=(*PRESETS, "both"),
        default="both",
        help="theory/engine conventions (default: both, plain first)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: docs for the default mode, results/reproduce/MODE else)",
    )
    p.add_argument(
        "--cache", default=None, help="sweep/sampler cache (default: results/reproduce/cache/MODE)"
    )
    return p


def run(args) -> int:
    out = (
        Path(args.out)
        if args.out
        else (ROOT / "docs" if args.mode == "paper" else ROOT / "results" / "reproduce" / args.mode)
    )
    cache = Path(args.cache) if args.cache else ROOT / "results" / "reproduce" / "cache" / args.mode
    presets = PRESETS if args.preset == "both" else (args.preset,)
    artefacts = (
        ARTEFACTS
        if args.artefact == "all"
        else (() if args.artefact == "report" else (args.artefact,))
    )
    # the main width's runs of every preset first (the extra widths, e.g. inf, come after):
    # on a slow machine the table's main column is the one to have first
    if "main" in artefacts and len(presets) > 1:
        for preset in presets:
            spec = common.load_spec(args.mode, preset, "main", cache)
            if spec.settings.get("extra_widths"):
                features.collect(spec)
    # scaling reuses main's measurement at the preset's (L, V), coverage reuses main's runs:
    # run main first when several artefacts are asked for
    for preset in presets:
        for a in artefacts:
            t0 = time.time()
            run_artefact(a, mode=args.mode, preset=preset, out=out, cache=cache)
            print(f"{a} ({preset}, {args.mode}): {time.time() - t0:.0f} s", flush=True)
    if args.artefact in ("all", "report"):
        path = report.main(out, mode=args.mode)
        print(f"wrote {path}")
        if out.resolve() == (ROOT / "docs").resolve():
            print(f"wrote {report.write_readme_block(out, ROOT / 'README.md')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ValueError as e:
        print(f"python -m experiments: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
