"""The ``copyhead`` command: a thin layer over the public API.

copyhead sweep --preset paper-map --attention both --out results/paper-map
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

from ._cli_parts import FIGURE_SUFFIXES, add_parser, progress_flags, save_figure
from .compare.overlay import theory_overlay
from .config import ATTENTIONS, Config
from .llc_cli import add_llc_subparser
from .presets import PRESETS, preset
from .sample_cli import add_sample_subparser
from .sources_cli import add_tokens_flag, load_tokens
from .theory.cli import add_theory_subparser
from .transition_cli import add_transition_subparser

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


class _BoolFlag(argparse.Action):
    """``--flag`` / ``--no-flag``; the older ``--flag true|false`` still parses."""

    def __init__(self, option_strings, dest, **kw):
        neg = ["--no-" + o[2:] for o in option_strings if o.startswith("--")]
        super().__init__([*option_strings, *neg], dest, nargs="?", metavar="BOOL", type=_bool,
                         **kw)  # fmt: skip

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string.startswith("--no-"):
            if values is not None:
                raise argparse.ArgumentError(self, f"{option_string} takes no value")
            setattr(namespace, self.dest, False)
        else:
            setattr(namespace, self.dest, True if values is None else values)

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """One flag per config field (``--width``, ``--sigma2``, ``--P 4:1000:24log``, ...)."""
    base = Config()
    for sec in _SECTIONS:
        g = p.add_argument_group(f"{sec} config")
        for f in dataclasses.fields(getattr(base, sec)):
            flag = "--" + f.name.replace("_", "-")
            if f.name == "attention":
                g.add_argument(flag, choices=(*ATTENTIONS, "both"), default=None,
                               help="both: one sweep each; " + _flag_help(sec, f.name))  # fmt: skip
            elif f.name == "width":
                g.add_argument("--width", type=_widths_arg, default=None, metavar="N[,N...]",
                               help="d_model N; a comma list runs one sweep per width (e.g. "
                               "128,1024,10000,inf); 'inf' needs --engine reduced; "
                               + _flag_help(sec, f.name))  # fmt: skip
            elif f.name == "P":
                g.add_argument("--P", type=_P_arg, default=None, help="training-set sizes: "
                               "4,8,16 or LO:HI:Nlog or LO:HI:Nlin, ints in [1, 10^7]; default "
                               "by preset: " + ", ".join(f"{k} {_grid(c.sweep.P)}"
                                                         for k, c in PRESETS.items()))  # fmt: skip
            elif isinstance(f.default, bool):
                g.add_argument(flag, action=_BoolFlag, default=None,
                               help="on/off; " + _flag_help(sec, f.name))  # fmt: skip
            else:
                # a None default (warmup_frac) marks an optional number
                typ = {int: int, float: float, type(None): float}.get(
                    type(f.default), str
                )
                typ = _matrix_arg if f.name == "transition" else typ
                g.add_argument(flag, type=typ, default=None, metavar=f.name.upper(),
                               help=_flag_help(sec, f.name))  # fmt: skip


def _grid(P) -> str:
    return ",".join(map(str, P)) if len(P) <= 8 else f"{P[0]},...,{P[-1]} ({len(P)} values)"


def _flag_help(sec: str, name: str) -> str:
    """``allowed values; default per preset``, the allowed values read off the validator."""
    base = getattr(preset("small"), sec)
    try:
        dataclasses.replace(base, **{name: "?"})
        allowed = "any"
    except (ValueError, TypeError) as e:
        m = re.search(r"must be (.*?)(?:,|;) got", str(e))
        allowed = m[1] if m else "see the config docs"
    values = {k: getattr(getattr(c, sec), name) for k, c in PRESETS.items()}
    if len(set(map(str, values.values()))) == 1:
        default = f"default {next(iter(values.values()))}"
    else:
        default = "default by preset: " + ", ".join(f"{k} {v}" for k, v in values.items())
    return f"{allowed}; {default}".replace("%", "%%")


def _matrix_arg(text: str) -> tuple:
    """``--transition``: a ``.npy`` file or rows ``"0.9,0.1;0.2,0.8"`` -> tuple of rows."""
    try:
        if text.endswith(".npy"):
            T = np.load(text)
        else:
            T = np.array([[float(x) for x in row.split(",")] for row in text.split(";")])
        return tuple(tuple(float(x) for x in row) for row in np.atleast_2d(T))
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(
            f"--transition must be a .npy file or rows like '0.9,0.1;0.2,0.8'; got {text!r} ({e})"
        ) from None


def _widths_arg(text: str) -> tuple:
    """``"128,1024,inf"`` -> ``(128, 1024, inf)``."""
    out = []
    for w in text.split(","):
        w = w.strip().lower()
        try:
            out.append(float("inf") if w in ("inf", "infinity") else int(w))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--width must be ints >= 1 or 'inf', comma separated; got {text!r}"
            ) from None
    return tuple(out)


def config_from_args(args: argparse.Namespace, attention: str | None = None, width=None) -> Config:
    cfg = preset(args.preset)
    updates: dict[str, dict] = {}
    for sec in _SECTIONS:
        for f in dataclasses.fields(getattr(cfg, sec)):
            v = getattr(args, f.name, None)
            if f.name == "attention":
                v = attention
            if f.name == "width":
                v = width if width is not None else (v[0] if v else None)
            if v is not None:
                updates.setdefault(sec, {})[f.name] = v
    return cfg.replace(**updates)


def cmd_sweep(args) -> int:
    from .plots import sweep_figure
    from .sweep import run_sweep

    attentions = ATTENTIONS if args.attention == "both" else (args.attention,)
    if args.attention is None:
        attentions = (preset(args.preset).model.attention,)
    widths = args.width or (None,)
    configs = [config_from_args(args, a, w) for w in widths for a in attentions]  # validate all
    asked = configs[0]  # the flags' config names the default folder (branch starts do not)
    branches = args.branches if args.branches is not None else asked.solver == "exact"
    if branches:  # softmax from both branches: pooling (zero logits) and copy (docs/theory.md §5)
        configs = [c2 for c in configs for c2 in _branch_configs(c)]
    tokens = load_tokens(args.tokens)
    paths, png = sweep_paths(args.out, args.preset, configs, asked=asked)
    args.kept = [Path(str(p) + ".chunks") for p in paths]  # what a Ctrl-C leaves to resume from
    results = []
    for cfg, path in zip(configs, paths):
        res = run_sweep(cfg, out=path, progress=args.progress, keep_params=args.keep_params,
                        tokens=tokens)  # fmt: skip
        results.append(res)
        print(f"saved {path}  ({res.meta['wall_seconds']:.1f} s)")
        print_table(res)
    _print_pstar(results)
    if args.plot:
        shown = [r for r in results if r.config.train.init_attention != "copy"]
        theory = theory_overlay(shown) if args.theory else None
        save_figure(sweep_figure(shown, theory), png)
    return 0


def _branch_configs(cfg: Config) -> list[Config]:
    """Softmax: a pooling-branch start (zero logits) and a copy-branch start, each kept on its
    branch (no continuation in P, which keeps the lower-U minimum); linear: as is."""
    if cfg.model.attention != "softmax":
        return [cfg]
    return [cfg.replace(train=dict(init_attention=a, exact_continuation=False))
            for a in ("zero", "copy")]  # fmt: skip


def _print_pstar(results) -> None:
    """Measured P* [CI over seeds] beside the EK theory's (and the paper's, under its
    conventions), for each width whose sweeps locate them (docs/theory.md §5)."""
    from .compare.pstar import format_pstar, linear_points, pstar_rows, softmax_points
    from .presets import PAPER
    from .sources import is_iid
    from .theory.beyond import config_points

    for width in dict.fromkeys(r.config.model.width for r in results):
        group = [r for r in results if r.config.model.width == width]
        init = {(r.config.model.attention, r.config.train.init_attention): r for r in group}
        measured = {}
        lin = next((r for r in group if r.config.model.attention == "linear"), None)
        if lin is not None and len(lin.P) >= 3:
            measured.update(linear_points(lin))
        if ("softmax", "zero") in init and ("softmax", "copy") in init:
            measured.update(softmax_points(init["softmax", "zero"], init["softmax", "copy"]))
        if not measured:
            continue
        cfg = group[0].config
        att = "both" if len({r.config.model.attention for r in group}) > 1 else (
            cfg.model.attention)  # fmt: skip
        theory = config_points(cfg, att)  # closed forms, or minimisers for Markov/causal
        paper = (cfg.posterior.likelihood, cfg.model.linear_scale, cfg.task.L, cfg.task.V) == (
            PAPER.posterior.likelihood, PAPER.model.linear_scale, PAPER.task.L, PAPER.task.V
        ) and is_iid(cfg.task) and not cfg.model.causal  # the paper: i.i.d. tokens, no mask
        print(f"\n# P* at N = {width}: measured (geometric mean over seeds [95% bootstrap CI]; "
              "seeds located; the grid bracket holding them) vs the EK theory (N -> inf)"
              + (" and the paper" if paper else ""))  # fmt: skip
        print(format_pstar(pstar_rows(measured, theory, compare_paper=paper)))


def sweep_paths(out: str | None, preset_name: str, configs: list[Config], *,
                asked: Config | None = None):  # fmt: skip
    """Result files and figure of ``copyhead sweep``: ``--out FILE.npz`` (one attention) is that
    file; ``--out FOLDER`` holds ``sweep_ATT.npz``; the default folder is ``results/PRESET``,
    or ``results/PRESET-HASH`` when flags change the preset (``HASH``: 8 hex digits of the
    changed fields of ``asked``, default ``configs[0]``), so that a sweep with other flags never
    overwrites another."""
    br = lambda c: "_copy" if c.train.init_attention == "copy" else ""  # softmax branch start
    if out is not None and out.endswith(".npz"):
        if len({(c.model.attention, c.model.width) for c in configs}) > 1:
            raise ValueError(
                "--out FILE.npz holds one attention and width; give a folder for --attention "
                "both or several widths"
            )
        f = Path(out)
        return [f.with_name(f.stem + br(c) + ".npz") for c in configs], f.with_suffix(".png")
    if out is None:
        import hashlib
        import json

        base, new = preset(preset_name).to_dict(), (asked or configs[0]).to_dict()
        diff = {s: {k: v for k, v in new[s].items() if v != base[s][k] and k != "attention"}
                for s in new}  # fmt: skip
        diff = {s: d for s, d in diff.items() if d}
        tag = hashlib.sha256(json.dumps(diff, sort_keys=True).encode()).hexdigest()[:8]
        out = f"results/{preset_name}" + (f"-{tag}" if diff else "")
    folder = Path(out)
    widths = {c.model.width for c in configs}
    tag = (lambda c: f"_N{c.model.width}") if len(widths) > 1 else (lambda c: "")
    return [folder / f"sweep_{c.model.attention}{br(c)}{tag(c)}.npz" for c in configs], folder / (
        "sweep.png"
    )


def print_table(res) -> None:
    """Print a sweep's per-P summary (order parameters, losses, failures) as a table."""
    s = res.summary()
    att = res.config.model.attention
    n1, nG = res.order_names  # softmax: a1, aG
    cols = [
        ("P", "P", "{:>6d}"), (n1, n1, "{:>8.3f}"), (nG, nG, "{:>8.3f}"),
        ("cover", "coverage", "{:>7.3f}"), ("train", "train_loss", "{:>8.3f}"),
        ("test", "test_loss", "{:>8.3f}"), ("acc", "copy_accuracy", "{:>6.3f}"),
        ("epochs", "stop_epoch", "{:>7.0f}"), ("|grad|", "grad_norm", "{:>8.2e}"),
        ("|g_span|", "grad_norm_span", "{:>8.2e}"),
        ("ok", "n_ok", "{:>3d}"), ("div", "n_diverged", "{:>3d}"),
    ]  # fmt: skip
    print(f"# {att} attention, N={res.config.model.width}, seeds={res.config.sweep.n_seeds}")
    print(" ".join(f"{h:>{len(fmt.format(0))}}" for h, _, fmt in cols))
    for i in range(len(res.P)):
        row = []
        for _, k, fmt in cols:
            v = s[k][i]
            row.append(fmt.format(int(v)) if "d}" in fmt else fmt.format(float(v)))
        print(" ".join(row))
    n_div = int(s["n_diverged"].sum())
    print(f"# mean over the 'ok' seeds; {n_div} diverged run(s) ('div': non-finite, or loss or U "
          "blown up past its start and the zero-output loss) excluded from the means")  # fmt: skip
    n_unc = int((res.unconverged & ~res.diverged).sum())
    if n_unc:
        print(f"# {n_unc} unconverged exact fit(s) (converged=False: stopped at exact_max_steps) "
              "also excluded from the means")  # fmt: skip


def cmd_show(args) -> int:
    from .results import SweepResult

    for f in args.files:
        if _kind(f) == "copyhead_jax.PosteriorResult":
            from .results import PosteriorResult
            from .sample_cli import print_posterior

            print(f"{f}: posterior")
            print_posterior(PosteriorResult.load(f), None)
            continue
        res = SweepResult.load(f)
        print(f"{f}: {res.meta.get('environment', {}).get('backend', '?')}, "
              f"{res.meta.get('wall_seconds', float('nan')):.1f} s")  # fmt: skip
        print_table(res)
        if "polish/U" in res.arrays:
            from .polish import polish_table

            print(polish_table(res))
    return 0


def cmd_polish(args) -> int:
    from .polish import polish, polish_table
    from .results import SweepResult

    res = SweepResult.load(args.result)
    out = Path(args.out or Path(args.result).with_name(Path(args.result).stem + "_polished.npz"))
    res = polish(res, out=out)
    print(f"saved {out}")
    print(polish_table(res))
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
    if args.format:  # vector output on request: the format names the suffix
        out = out.with_suffix(f".{args.format}")
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"--out {str(out)!r} must end in one of {FIGURE_SUFFIXES}")
    if _kind(args.files[0]) == "copyhead_jax.PosteriorResult":
        from .plots import posterior_figure, trace_figure
        from .results import PosteriorResult

        post = PosteriorResult.load(args.files[0])
        sweep = SweepResult.load(args.files[1]) if len(args.files) > 1 else None
        save_figure(posterior_figure(post, sweep), out)
        save_figure(trace_figure(post), out.with_name(out.stem + "_traces" + out.suffix))
        return 0
    results = [SweepResult.load(f) for f in args.files]
    theory = theory_overlay(results) if args.theory else None
    save_figure(sweep_figure(results, theory), out)
    if args.curves:
        atts = [res.config.model.attention for res in results]
        for i, (res, att) in enumerate(zip(results, atts)):
            tag = att if atts.count(att) == 1 else f"{att}_{i + 1}"  # one file per result
            save_figure(curves_figure(res), out.with_name(f"{out.stem}_curves_{tag}{out.suffix}"))
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse that reads ``--lr -1e-3`` like ``--lr=-1e-3`` (its own test for negative
    numbers misses exponents and so takes ``-1e-3`` for an option); subparsers inherit it."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="copyhead", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"copyhead_jax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = add_parser(
        sub, "sweep", help="MAP sweep over P and seeds (Adam, or the exact solver)",
        description="Fit every (P, seed) run of a preset, print a table per attention and the "
        "measured P* beside the EK theory's, save the results and a figure.",
        examples=(
            "copyhead sweep --preset paper-map --attention both --out results/paper-map",
            "copyhead sweep --preset small --attention softmax --width 256 --P 4:128:12log",
            "copyhead sweep --preset small --engine reduced --width 128,10000,inf --keep-params",
        ),
    )  # fmt: skip
    p.add_argument("--preset", default="small", metavar="{" + ",".join(PRESETS) + "}",
                   help="paper-map: the paper's phase diagram by exact MAP (the README's main "
                   "job); small: width 128, Adam (minutes); default small")  # fmt: skip
    p.add_argument(
        "--out", default=None,
        help="output folder (sweep_ATT.npz + sweep.png), or FILE.npz for one attention; default "
        "results/PRESET, or results/PRESET-HASH when flags change the preset (HASH: 8 hex digits "
        "of the changed fields), so sweeps with other flags never overwrite each other",
    )  # fmt: skip
    p.add_argument("--keep-params", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the fitted weights (needed by 'copyhead sample'); default: "
                   "when they take under 2 GB")  # fmt: skip
    p.add_argument("--branches", action=argparse.BooleanOptionalAction, default=None,
                   help="softmax: run from the pooling branch (zero logits) and from the copy "
                   "branch (sweep_softmax_copy.npz) and locate P*_aG where their U cross; "
                   "default: on under the exact solver")  # fmt: skip
    p.add_argument("--plot", action=argparse.BooleanOptionalAction, default=True,
                   help="save the figure (default on)")  # fmt: skip
    p.add_argument("--theory", action=argparse.BooleanOptionalAction, default=True,
                   help="draw the EK theory curves on the figure (default on)")  # fmt: skip
    progress_flags(p)
    add_tokens_flag(p)
    _add_config_flags(p)
    p.set_defaults(func=cmd_sweep)

    p = add_parser(
        sub, "polish",
        help="exact MAP (float64 L-BFGS on the width-(V+L) image) from every Adam fit of a "
        "quenched sweep: how far was each fit from its own minimum",
        examples=("copyhead polish results/small/sweep_linear.npz",),
    )  # fmt: skip
    p.add_argument("result", help="a sweep file with kept weights (copyhead sweep --keep-params)")
    p.add_argument("--out", default=None, help="default: RESULT_polished.npz")
    p.set_defaults(func=cmd_polish)

    p = add_parser(
        sub, "show", help="print a result file as a table",
        examples=("copyhead show results/small/sweep_softmax.npz",
                  "copyhead show results/small/sweep_softmax_posterior.npz"),
    )  # fmt: skip
    p.add_argument("files", nargs="+", help="sweep or posterior result files (.npz)")
    p.set_defaults(func=cmd_show)

    p = add_parser(
        sub, "plot", help="order parameters, coverage and loss versus P (PNG, PDF or SVG)",
        examples=(
            "copyhead plot results/small/sweep_linear.npz results/small/sweep_softmax.npz",
            "copyhead plot results/small/sweep_linear.npz --curves --out fig.pdf",
            "copyhead plot results/small/sweep_softmax_posterior.npz "
            "results/small/sweep_softmax.npz",
        ),
    )  # fmt: skip
    p.add_argument("files", nargs="+", help="sweep files, or one posterior file [+ its sweep]")
    p.add_argument("--out", default=None, help="figure path, .png, .pdf or .svg (default: PNG "
                   "next to the first file)")  # fmt: skip
    p.add_argument(
        "--format",
        choices=("png", "pdf", "svg"),
        default=None,
        help="figure format (sets the suffix of --out; default: from --out, else png)",
    )
    p.add_argument("--curves", action=argparse.BooleanOptionalAction, default=False,
                   help="also plot training curves (Adam sweeps)")  # fmt: skip
    p.add_argument("--theory", action=argparse.BooleanOptionalAction, default=False,
                   help="overlay the EK theory curves")  # fmt: skip
    p.set_defaults(func=cmd_plot)

    add_theory_subparser(sub)
    add_sample_subparser(sub)
    add_llc_subparser(sub)
    add_transition_subparser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # the console command, not a call from Python
    argv = sys.argv[1:] if argv is None else list(argv)
    from ._runtime import catch_sigterm, exit_now, interrupt_status

    parser = build_parser()
    args = parser.parse_args(argv)
    if process:  # SIGTERM ends like Ctrl-C (exit 143), both answered within seconds
        catch_sigterm(lambda: farewell(args))
    try:
        rc = args.func(args)
        return rc if isinstance(rc, int) else 0  # some subcommands return their result
    except (ValueError, OSError) as e:
        print(f"copyhead: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(f"\n{farewell(args)}", file=sys.stderr)
        if process:
            exit_now(interrupt_status(e))  # no teardown under XLA's running threads
        return interrupt_status(e)


def farewell(args: argparse.Namespace) -> str:
    """The line an interrupted command ends with: what it kept and how to resume."""
    kept = [str(p) for p in getattr(args, "kept", []) if Path(p).exists()]
    said = (f"finished work is kept in {', '.join(kept)}; rerun the same command to resume"
            if kept else "nothing was kept")  # fmt: skip
    return f"copyhead: interrupted; {said}"


if __name__ == "__main__":
    sys.exit(main())
