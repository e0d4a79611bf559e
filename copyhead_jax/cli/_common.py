"""Pieces shared by the ``copyhead`` command's modules (the modules of cli/): subcommands
with examples, the progress flags, the figure writer."""

from __future__ import annotations

import argparse
from pathlib import Path

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def save_figure(fig, path: Path, dpi: int = 150) -> Path:
    """``fig`` to ``path`` (PNG, PDF or SVG by suffix), atomically; errors name the path."""
    path = Path(path)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"figure path {str(path)!r} must end in one of {FIGURE_SUFFIXES}")
    write_figure(fig, path, dpi=dpi, note="; any result files announced above are saved")
    print(f"saved {path}")
    return path


def write_figure(fig, path: Path, *, dpi: int, note: str = "") -> Path:
    """``fig`` to ``path`` through :func:`~copyhead_jax.storage.atomic_write` (a temporary
    beside it, then renamed: a failed draw or a full disk leaves neither a half-written figure
    nor a temporary), then closed. A figure matplotlib cannot draw (a log axis with no data
    left) is a one-line error too, ``note`` appended."""
    import matplotlib.pyplot as plt

    from ..storage import WriteError, atomic_write

    fmt = path.suffix.lower().lstrip(".")
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))
    except WriteError as e:
        if isinstance(e.__cause__, ValueError) and not isinstance(e.__cause__, OSError):
            raise ValueError(f"cannot draw the figure {str(path)!r} ({e.__cause__}){note}") from e
        raise ValueError(f"cannot write the figure {str(path)!r}: {e.why}") from e
    finally:
        plt.close(fig)
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
