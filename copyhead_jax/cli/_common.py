"""Pieces shared by the ``copyhead`` command's modules (the modules of cli/): subcommands
with examples, the progress flags, the figure writer."""

from __future__ import annotations

import argparse
from pathlib import Path

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")  # as plots.style.FIGURE_SUFFIXES (no matplotlib here)


def save_figure(fig, path: Path, dpi: int = 150) -> Path:
    """:func:`copyhead_jax.plots.style.save_figure` (atomic; errors name the path), announced
    (matplotlib loads on use)."""
    from ..plots.style import save_figure as save

    path = save(fig, path, dpi, note="; any result files announced above are saved")
    print(f"saved {path}")
    return path


def figure_outputs(name: str, path, suffixes=FIGURE_SUFFIXES) -> list:
    """A figure as :func:`copyhead_jax.plots.style.save_figure` writes it: the file, and for a
    PNG its record ``NAME.png.json`` beside it."""
    from .._checks import Output

    path = Path(path)
    outs = [Output(name, path, suffixes=suffixes)]
    if path.suffix.lower() == ".png":
        outs.append(Output(f"the record of {name}", path.with_name(path.name + ".json")))
    return outs


def check_command_paths(args, read: list | tuple = ()) -> list[Path]:
    """The paths the parsed command ``args`` will write, derived up front by its ``paths``
    function and checked as a set against its inputs (and the files in ``read``: a
    ``--config`` file) and each other (:func:`copyhead_jax._checks.check_paths`); returns the
    outputs."""
    from .._checks import check_paths

    outputs, inputs = args.paths(args)
    return check_paths(outputs, [*inputs, *read])


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {x}" for x in lines)


def add_parser(sub, name: str, *, examples: tuple[str, ...], **kw) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with example lines."""
    return sub.add_parser(
        name,
        epilog=_examples(*examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kw,
    )


def cluster_flag(
    p: argparse.ArgumentParser, *, groups: str | None = None, why_not: str | None = None
) -> None:
    """``--cluster ADDRESS``, the one flag of every command with independent groups: they run
    on a Dask cluster (``runner.map_groups``) with the same numbers as without it. ``groups``
    names what fans out; a command whose groups cannot says ``why_not`` and refuses the flag
    (``cli.main``, before any work)."""
    help_ = (
        f"run {groups} on a Dask cluster: a scheduler tcp://HOST:PORT, or local:N worker "
        'processes started for the run (pip install "copyhead_jax[cluster]"); the same '
        "numbers as without it"
        if groups
        else f"not available here: {why_not}"
    )
    p.add_argument("--cluster", default=None, metavar="ADDRESS", help=help_)
    p.set_defaults(cluster_refused=why_not)


def refuse_cluster(args) -> None:
    """The one-line refusal of ``--cluster`` by a command that cannot fan out its groups."""
    if getattr(args, "cluster", None) is not None and getattr(args, "cluster_refused", None):
        raise ValueError(f"--cluster: {args.cluster_refused}")


def progress_flags(p: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` (``--quiet`` = ``--no-progress``)."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress bar on stderr (default on)",
    )
    p.add_argument("--quiet", dest="progress", action="store_false", help=argparse.SUPPRESS)
