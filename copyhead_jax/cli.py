"""The ``copyhead`` command: a thin layer over the public API.

copyhead sweep --preset small --attention both --out results/small
copyhead show results/small/sweep_softmax.npz
copyhead plot results/small/sweep_*.npz --out results/small/sweep.png
copyhead theory points --preset paper --json
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import numpy as np

from .compare.overlay import theory_overlay
from .config import ATTENTIONS, PRESETS, Config, preset
from .sample_cli import add_sample_subparser
from .theory.cli import add_theory_subparser

_SECTIONS = ("task", "model", "posterior", "train", "sweep")


def parse_P_grid(text: str) -> tuple[int, ...]:
    """``"4,8,16"``, ``"4:1000:24log"`` (24 log-spaced) or ``"10:100:10lin"`` -> sorted ints."""
    text = text.strip()
    m = re.fullmatch(r"(\d+):(\d+):(\d+)(log|lin)", text)
    try:
        if m:
            lo, hi, n, kind = int(m[1]), int(m[2]), int(m[3]), m[4]
            if not (1 <= lo < hi) or n < 2:
                raise ValueError
            grid = np.geomspace(lo, hi, n) if kind == "log" else np.linspace(lo, hi, n)
            return tuple(sorted({int(round(p)) for p in grid}))
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(
            f"P grid {text!r} must be a comma list of ints >= 1 or LO:HI:Nlog / LO:HI:Nlin "
            "with 1 <= LO < HI and N >= 2"
        ) from None


def _P_arg(text: str) -> tuple[int, ...]:
    try:
        return parse_P_grid(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """One flag per config field (``--width``, ``--sigma2``, ``--P 4:1000:24log``, ...)."""
    base = Config()
    for sec in _SECTIONS:
        g = p.add_argument_group(f"{sec} config")
        for f in dataclasses.fields(getattr(base, sec)):
            flag = "--" + f.name.replace("_", "-")
            if f.name == "attention":
                g.add_argument(flag, choices=(*ATTENTIONS, "both"), default=None)
            elif f.name == "P":
                g.add_argument("--P", type=_P_arg, default=None, help="e.g. 4:1000:24log")
            else:
                typ = {bool: _bool, int: int, float: float}.get(type(f.default), str)
                g.add_argument(flag, type=typ, default=None, metavar=f.name.upper())


def config_from_args(args: argparse.Namespace, attention: str | None = None) -> Config:
    cfg = preset(args.preset)
    updates: dict[str, dict] = {}
    for sec in _SECTIONS:
        for f in dataclasses.fields(getattr(cfg, sec)):
            v = getattr(args, f.name, None)
            if f.name == "attention":
                v = attention
            if v is not None:
                updates.setdefault(sec, {})[f.name] = v
    return cfg.replace(**updates)


def cmd_sweep(args) -> int:
    from .plots import sweep_figure
    from .sweep import run_sweep

    attentions = ATTENTIONS if args.attention == "both" else (args.attention,)
    if args.attention is None:
        attentions = (preset(args.preset).model.attention,)
    configs = [config_from_args(args, a) for a in attentions]  # validate all before running
    out = Path(args.out or f"results/{args.preset}")
    results = []
    for cfg in configs:
        path = out / f"sweep_{cfg.model.attention}.npz"
        res = run_sweep(cfg, out=path, progress=not args.quiet)
        results.append(res)
        print(f"saved {path}  ({res.meta['wall_seconds']:.1f} s)")
        _print_table(res)
    if not args.no_plot:
        theory = None if args.no_theory else theory_overlay(results)
        png = out / "sweep.png"
        sweep_figure(results, theory).savefig(png, dpi=110)
        print(f"saved {png}")
    return 0


def _print_table(res) -> None:
    s = res.summary()
    att = res.config.model.attention
    n1, nG = ("a1", "aG") if att == "softmax" else ("c1", "cG")
    cols = [
        ("P", "P", "{:>6d}"), (n1, "c1", "{:>8.3f}"), (nG, "cG", "{:>8.3f}"),
        ("cover", "coverage", "{:>7.3f}"), ("train", "train_loss", "{:>8.3f}"),
        ("test", "test_loss", "{:>8.3f}"), ("acc", "copy_accuracy", "{:>6.3f}"),
        ("epochs", "stop_epoch", "{:>7.0f}"), ("|grad|", "grad_norm", "{:>8.2e}"),
        ("|g_span|", "grad_norm_span", "{:>8.2e}"),
        ("ok", "n_finite", "{:>3d}"),
    ]  # fmt: skip
    print(f"# {att} attention, N={res.config.model.width}, seeds={res.config.sweep.n_seeds}")
    print(" ".join(f"{h:>{len(fmt.format(0))}}" for h, _, fmt in cols))
    for i in range(len(res.P)):
        row = []
        for _, k, fmt in cols:
            v = s[k][i]
            row.append(fmt.format(int(v)) if "d}" in fmt else fmt.format(float(v)))
        print(" ".join(row))


def cmd_show(args) -> int:
    from .results import SweepResult

    for f in args.files:
        res = SweepResult.load(f)
        print(f"{f}: {res.meta.get('environment', {}).get('backend', '?')}, "
              f"{res.meta.get('wall_seconds', float('nan')):.1f} s")  # fmt: skip
        _print_table(res)
    return 0


def _kind(path: str) -> str | None:
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["__meta__"])).get("kind")
    except Exception:  # noqa: BLE001 - the loaders below give the precise error
        return None


def cmd_plot(args) -> int:
    from .plots import curves_figure, sweep_figure
    from .results import SweepResult

    out = Path(args.out or Path(args.files[0]).with_suffix(".png"))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"output path {str(out)!r} is not writable: {e}") from None
    if _kind(args.files[0]) == "copyhead_jax.PosteriorResult":
        from .plots import posterior_figure, trace_figure
        from .sample import PosteriorResult

        post = PosteriorResult.load(args.files[0])
        sweep = SweepResult.load(args.files[1]) if len(args.files) > 1 else None
        posterior_figure(post, sweep).savefig(out, dpi=110)
        trace = out.with_name(out.stem + "_traces.png")
        trace_figure(post).savefig(trace, dpi=110)
        print(f"saved {out}\nsaved {trace}")
        return 0
    results = [SweepResult.load(f) for f in args.files]
    sweep_figure(results).savefig(out, dpi=110)
    print(f"saved {out}")
    if args.curves:
        for res in results:
            c = out.with_name(f"{out.stem}_curves_{res.config.model.attention}.png")
            curves_figure(res).savefig(c, dpi=110)
            print(f"saved {c}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="copyhead", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("sweep", help="MAP (Adam) sweep over P and seeds")
    p.add_argument("--preset", default="small", help=f"one of {', '.join(PRESETS)}")
    p.add_argument("--out", default=None, help="output folder (default results/PRESET)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--no-theory", action="store_true", help="plot without the EK theory curves")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_config_flags(p)
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("show", help="print a result file as a table")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("plot", help="order parameters, coverage and loss versus P, to PNG")
    p.add_argument("files", nargs="+", help="sweep files, or one posterior file [+ its sweep]")
    p.add_argument("--out", default=None, help="PNG path (default: next to the first file)")
    p.add_argument("--curves", action="store_true", help="also plot training curves")
    p.set_defaults(func=cmd_plot)

    add_theory_subparser(sub)
    add_sample_subparser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
        return rc if isinstance(rc, int) else 0  # some subcommands return their result
    except ValueError as e:
        print(f"copyhead: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
