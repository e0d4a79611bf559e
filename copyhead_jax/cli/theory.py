"""``copyhead theory {points,curve,landscape,scaling,sensitivity,fit}``: a thin CLI over the
theory API.

``add_theory_subparser(subparsers)`` registers the ``theory`` command on an argparse
subparsers object; :func:`main` runs it from Python and returns the result it prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .theory_fit import add_fit_subparsers
from .theory_options import parse_range
from .theory_points import add_points_subparsers

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
    """``main(["points", "--json"])``: one theory subcommand from Python (the ``theory`` word is
    optional); returns its result (a dict for ``points``)."""
    parser = argparse.ArgumentParser(prog="copyhead")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_theory_subparser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "theory":
        argv = ["theory", *argv]
    args = parser.parse_args(argv)
    try:
        from ._common import check_command_paths

        check_command_paths(args)
        return args.func(args)
    except ValueError as e:
        parser.error(str(e))
