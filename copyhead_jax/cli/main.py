"""The ``copyhead`` command: a thin layer over the public API.

copyhead sweep --preset paper-map --attention both --out results/paper-map
copyhead sweep --preset small --attention both --out results/small
copyhead show results/small/sweep_softmax.npz
copyhead plot results/small/sweep_*.npz --out results/small/sweep.png
copyhead theory points --preset paper --json
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ._common import check_command_paths, refuse_cluster, save_figure
from .config_file import add_config_file_flag, expand_config_file
from .console import console
from .flags import config_from_args, parse_P_grid
from .llc import add_llc_subparser
from .refusals import as_typed, command_parser
from .results import add_result_subparsers
from .sample import add_sample_subparser
from .sweep import add_sweep_subparser, print_table, sweep_paths
from .theory import add_theory_subparser
from .transition import add_transition_subparser

# the entry point; each subcommand family lives in its own module of cli/, whose public helpers
# the cli face re-exports
__all__ = [
    "build_parser",
    "config_from_args",
    "main",
    "parse_P_grid",
    "print_table",
    "save_figure",
    "sweep_paths",
]


class _Parser(argparse.ArgumentParser):
    """argparse that reads a value beginning with a minus sign and a digit, a point or a
    non-finite word (``--lr -1e-3``, ``--P -4,8``, ``--width -inf``) as the option's value, not
    as another option (argparse's own test takes only plain negative numbers), so that the
    option's own check refuses it with its range; subparsers inherit it."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._negative_number_matcher = re.compile(r"^-(\d|\.\d|inf|nan)", re.I)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = _Parser(prog="copyhead", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"copyhead_jax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    add_sweep_subparser(sub)
    add_result_subparsers(sub)
    add_theory_subparser(sub)
    add_sample_subparser(sub)
    add_llc_subparser(sub)
    add_transition_subparser(sub)
    add_config_file_flag(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # the console command, not a call from Python
    argv = sys.argv[1:] if argv is None else list(argv)
    from .._runtime import catch_sigterm, enable_compilation_cache, exit_now, interrupt_status

    parser = build_parser()
    read = _config_file(argv)  # an input too: no output may replace it
    try:
        argv = expand_config_file(parser, argv)
    except ValueError as e:
        print(f"copyhead: error: {e}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if process:  # SIGTERM ends like Ctrl-C (exit 143), both answered within seconds
        catch_sigterm(lambda: farewell(args))
        enable_compilation_cache()
    try:
        refuse_cluster(args)  # a command whose groups cannot fan out says why
        check_command_paths(args, read)  # every output against every input, before any work
        with console():  # the package's warnings and progress notes, one line each on stderr
            rc = args.func(args)
        return rc if isinstance(rc, int) else 0  # some subcommands return their result
    except (ValueError, OSError) as e:  # the API's names of values become the flags as typed
        print(f"copyhead: error: {as_typed(str(e), command_parser(parser, args))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"\n{farewell(args)}", file=sys.stderr)
        if process:
            exit_now(interrupt_status(e))  # no teardown under XLA's running threads
        return interrupt_status(e)


def _config_file(argv: list[str]) -> list[str]:
    """The ``--config FILE`` of ``argv``, as a list (empty without one)."""
    for i, a in enumerate(argv):
        if a == "--config" and i + 1 < len(argv):
            return [argv[i + 1]]
        if a.startswith("--config="):
            return [a.split("=", 1)[1]]
    return []


def farewell(args: argparse.Namespace) -> str:
    """The line an interrupted command ends with: what it kept and how to resume."""
    kept = [str(p) for p in getattr(args, "kept", []) if Path(p).exists()]
    said = (
        f"finished work is kept in {', '.join(kept)}; rerun the same command to resume"
        if kept
        else "nothing was kept"
    )
    return f"copyhead: interrupted; {said}"


if __name__ == "__main__":
    sys.exit(main())
