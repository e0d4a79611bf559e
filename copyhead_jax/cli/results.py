"""``copyhead polish``, ``show`` and ``plot``: the commands that read result files (sweeps,
posteriors) back, to refit them exactly, print them as tables, or draw them."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..compare.overlay import theory_overlay
from ._common import FIGURE_SUFFIXES, add_parser, save_figure
from .sweep import print_table


def add_result_subparsers(sub) -> None:
    """Register ``polish``, ``show`` and ``plot`` on an argparse subparsers object."""
    p = add_parser(
        sub,
        "polish",
        help="exact MAP (float64 L-BFGS on the width-(V+L) image) from every Adam fit of a "
        "quenched sweep: how far was each fit from its own minimum",
        examples=("copyhead polish results/small/sweep_linear.npz",),
    )
    p.add_argument("result", help="a sweep file with kept weights (copyhead sweep --keep-params)")
    p.add_argument("--out", default=None, help="default: RESULT_polished.npz")
    p.set_defaults(func=cmd_polish, paths=polish_outputs)

    p = add_parser(
        sub,
        "show",
        help="print a result file as a table",
        examples=(
            "copyhead show results/small/sweep_softmax.npz",
            "copyhead show results/small/sweep_softmax_posterior.npz",
        ),
    )
    p.add_argument("files", nargs="+", help="sweep or posterior result files (.npz)")
    p.set_defaults(func=cmd_show, paths=lambda args: ([], args.files))

    p = add_parser(
        sub,
        "plot",
        help="order parameters, coverage and loss versus P (PNG, PDF or SVG)",
        examples=(
            "copyhead plot results/small/sweep_linear.npz results/small/sweep_softmax.npz",
            "copyhead plot results/small/sweep_linear.npz --curves --out fig.pdf",
            "copyhead plot results/small/sweep_softmax_posterior.npz "
            "results/small/sweep_softmax.npz",
        ),
    )
    p.add_argument("files", nargs="+", help="sweep files, or one posterior file [+ its sweep]")
    p.add_argument(
        "--out",
        default=None,
        help="figure path, .png, .pdf or .svg (default: PNG next to the first file)",
    )
    p.add_argument(
        "--format",
        choices=("png", "pdf", "svg"),
        default=None,
        help="figure format (sets the suffix of --out; default: from --out, else png)",
    )
    p.add_argument(
        "--curves",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also plot training curves (Adam sweeps)",
    )
    p.add_argument(
        "--theory",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="overlay the EK theory curves",
    )
    p.set_defaults(func=cmd_plot, paths=plot_outputs)


def cmd_show(args) -> int:
    """Print each result file as a table (sweep or posterior)."""
    from ..results import SweepResult

    for f in args.files:
        if _kind(f) == "copyhead_jax.PosteriorResult":
            from ..results import PosteriorResult
            from .sample import print_posterior

            print(f"{f}: posterior")
            print_posterior(PosteriorResult.load(f), None)
            continue
        res = SweepResult.load(f)
        print(
            f"{f}: {res.meta.get('environment', {}).get('backend', '?')}, "
            f"{res.meta.get('wall_seconds', float('nan')):.1f} s"
        )
        print_table(res)
        if "polish/U" in res.arrays:
            from ..fit.polish import polish_table

            print(polish_table(res))
    return 0


def _polish_path(args) -> Path:
    return Path(args.out or Path(args.result).with_name(Path(args.result).stem + "_polished.npz"))


def polish_outputs(args):
    """``(outputs, inputs)`` of ``copyhead polish``: the polished sweep and its lock."""
    from ..results import SWEEP_KIND
    from .sweep import result_outputs

    return result_outputs("--out", _polish_path(args), SWEEP_KIND)[:2], [args.result]


def plot_outputs(args):
    """``(outputs, inputs)`` of ``copyhead plot``: every figure it draws."""
    from ._common import figure_outputs

    return [o for n, f in _plot_paths(args) for o in figure_outputs(n, f)], args.files


def _plot_paths(args) -> list[tuple[str, Path]]:
    """``(what, path)`` of each figure of ``copyhead plot``: the figure; a posterior's traces,
    or with ``--curves`` one curves figure per sweep."""
    out = Path(args.out or Path(args.files[0]).with_suffix(".png"))
    if args.format:  # vector output on request: the format names the suffix
        out = out.with_suffix(f".{args.format}")
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"--out {str(out)!r} must end in one of {FIGURE_SUFFIXES}")
    found = [("--out", out)]
    if _kind(args.files[0]) == "copyhead_jax.PosteriorResult":
        return found + [
            ("the traces figure of --out", out.with_name(out.stem + "_traces" + out.suffix))
        ]
    if args.curves:
        atts = [_attention(f) for f in args.files]
        for i, att in enumerate(atts):
            tag = att if atts.count(att) == 1 else f"{att}_{i + 1}"  # one file per result
            found.append(
                (
                    f"the curves figure of --out ({args.files[i]})",
                    out.with_name(f"{out.stem}_curves_{tag}{out.suffix}"),
                )
            )
    return found


def cmd_polish(args) -> int:
    """Exact MAP from every kept Adam fit of a sweep; saves and prints the result."""
    from ..fit.polish import polish, polish_table
    from ..results import SweepResult

    res = SweepResult.load(args.result)
    out = _polish_path(args)
    res = polish(res, out=out)
    print(f"saved {out}")
    print(polish_table(res))
    return 0


def _attention(path: str) -> str:
    """The attention a result file's metadata names (``?`` if unreadable: its loader will say
    why)."""
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["__meta__"]))["config"]["model"]["attention"]
    except Exception:  # noqa: BLE001 - the loaders give the precise error
        return "?"


def _kind(path: str) -> str | None:
    """The ``kind`` a result file's metadata names, or ``None``."""
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["__meta__"])).get("kind")
    except Exception:  # noqa: BLE001 - the loaders below give the precise error
        return None


def cmd_plot(args) -> int:
    """The sweep figure (and curves), or a posterior's figure and traces."""
    from ..plots.sweeps import curves_figure, sweep_figure
    from ..results import SweepResult

    paths = [p for _, p in _plot_paths(args)]
    if _kind(args.files[0]) == "copyhead_jax.PosteriorResult":
        from ..plots.sweeps import posterior_figure, trace_figure
        from ..results import PosteriorResult

        post = PosteriorResult.load(args.files[0])
        sweep = SweepResult.load(args.files[1]) if len(args.files) > 1 else None
        save_figure(posterior_figure(post, sweep), paths[0])
        save_figure(trace_figure(post), paths[1])
        return 0
    results = [SweepResult.load(f) for f in args.files]
    theory = theory_overlay(results) if args.theory else None
    save_figure(sweep_figure(results, theory), paths[0])
    for res, path in zip(results, paths[1:]):  # with --curves: one per result
        save_figure(curves_figure(res), path)
    return 0
