"""``copyhead theory {points,curve,landscape,scaling,sensitivity,fit}``: a thin CLI over the
theory API.

``add_theory_subparser(subparsers)`` registers the ``theory`` command on an argparse
subparsers object; ``python -m copyhead_jax.theory.cli points --json`` runs it stand-alone.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .fit_cli import add_fit_subparsers
from .options_cli import parse_range
from .points_cli import add_points_subparsers

__all__ = ["add_theory_subparser", "main", "parse_range"]  # parse_range: kept importable here


def add_theory_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``theory`` with ``points``, ``curve``, ``landscape``, ``scaling``,
    ``sensitivity``, ``fit``."""
    theory = subparsers.add_parser(
        "theory", help="EK theory: transition points, curves, scaling, sensitivity, fits"
    )
    sub = theory.add_subparsers(dest="theory_cmd", required=True)

    add_points_subparsers(sub)
    add_fit_subparsers(sub)
    return theory


def main(argv: list[str] | None = None) -> Any:
    """``python -m copyhead_jax.theory.cli points --json`` (the ``theory`` word is optional)."""
    parser = argparse.ArgumentParser(prog="copyhead")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_theory_subparser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "theory":
        argv = ["theory", *argv]
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as e:
        parser.error(str(e))


if __name__ == "__main__":
    main()
