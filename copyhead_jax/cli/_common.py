"""Pieces shared by the ``copyhead`` command's modules (the modules of cli/): subcommands
with examples, the progress flags, the figure writer."""

from __future__ import annotations

import argparse
from pathlib import Path

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def save_figure(fig, path: Path, dpi: int = 150) -> Path:
    """``fig`` to ``path`` (PNG, PDF or SVG by suffix); errors name the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"figure path {str(path)!r} must end in one of {FIGURE_SUFFIXES}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=dpi)
    except OSError as e:
        raise ValueError(f"cannot write the figure {str(path)!r}: {e.strerror or e}") from None
    except ValueError as e:  # matplotlib cannot draw it (e.g. a log axis with no data left)
        raise ValueError(f"cannot draw the figure {str(path)!r} ({e}); any result files "
                         "announced above are saved") from None  # fmt: skip
    finally:
        plt.close(fig)
    print(f"saved {path}")
    return path


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {x}" for x in lines)


def add_parser(sub, name: str, *, examples: tuple[str, ...], **kw) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with example lines."""
    return sub.add_parser(name, epilog=_examples(*examples),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kw)  # fmt: skip


def progress_flags(p: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` (``--quiet`` = ``--no-progress``)."""
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                   help="progress bar on stderr (default on)")  # fmt: skip
    p.add_argument("--quiet", dest="progress", action="store_false", help=argparse.SUPPRESS)
