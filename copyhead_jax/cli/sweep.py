"""``copyhead sweep``: fit every (P, seed) run of a configuration, print a table per attention
and the measured P* beside the EK theory's, save the results and a figure; the result paths
(``sweep_paths``) and the per-P table (``print_table``, also used by ``copyhead show``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..compare.overlay import theory_overlay
from ..config import BOTH, Config, preset, run_name, single_start
from ..models import head_class
from ._common import add_parser, cluster_flag, progress_flags, save_figure
from .flags import add_config_flags, add_preset_flags, config_from_args
from .tokens import add_tokens_flag, load_tokens


def add_sweep_subparser(sub) -> argparse.ArgumentParser:
    """Register ``sweep`` (its own flags, the progress and ``--tokens`` flags, and one flag per
    config field) on an argparse subparsers object."""
    p = add_parser(
        sub,
        "sweep",
        help="MAP sweep over P and seeds (Adam, or the exact solver)",
        description="Fit every (P, seed) run of a preset, print a table per attention and the "
        "measured P* beside the EK theory's, save the results and a figure.",
        examples=(
            "copyhead sweep --preset paper-map --attention both --out results/paper-map",
            "copyhead sweep --preset small --attention softmax --width 256 --P 4:128:12log",
            "copyhead sweep --preset small --engine reduced --width 128,10000,inf --keep-params",
        ),
    )
    add_preset_flags(
        p,
        "the sweep: paper-map: the paper's phase diagram by exact MAP (the "
        "README's main job); paper: the paper's Adam protocol, trained embeddings "
        "(a GPU job); small: width 128, Adam (minutes); tiny: seconds",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (sweep_ATT.npz + sweep.png), or FILE.npz for one attention; default "
        "results/NAME, NAME the preset (PRESET-READING, or its shorthand, under another "
        "reading), or results/NAME-HASH when flags change more (HASH: 8 hex digits of the "
        "changed fields), so sweeps with other flags never overwrite each other",
    )
    p.add_argument(
        "--keep-params",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep the fitted weights (needed by 'copyhead sample'); default: "
        "when they take under 2 GB",
    )
    p.add_argument(
        "--branches",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="softmax: run from the pooling branch (zero logits) and from the copy "
        "branch (sweep_softmax_copy.npz) and locate P*_aG where their U cross; "
        "default: on under the exact solver",
    )
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the figure (default on)",
    )
    p.add_argument(
        "--theory",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw the EK theory curves on the figure (default on)",
    )
    progress_flags(p)
    cluster_flag(p, groups="the chunks of runs")
    add_tokens_flag(p)
    add_config_flags(p)
    p.set_defaults(func=cmd_sweep, paths=sweep_outputs)
    return p


def sweep_configs(args) -> tuple[list[Config], Config]:
    """The configs the flags ask for (validated), branch starts included, and the flags' own
    config (it names the default folder)."""
    attentions = BOTH if args.attention == "both" else (args.attention,)
    if args.attention is None:
        attentions = (preset(args.preset, args.reading).model.attention,)
    widths = args.width or (None,)
    configs = [config_from_args(args, a, w) for w in widths for a in attentions]  # validate all
    asked = configs[0]  # the flags' config names the default folder (branch starts do not)
    branches = args.branches if args.branches is not None else asked.solver.kind == "exact"
    if branches:  # softmax from both branches: pooling (zero logits) and copy (docs/theory.md §5)
        configs = [c2 for c in configs for c2 in _branch_configs(c)]
    return configs, asked


def sweep_outputs(args):
    """``(outputs, inputs)`` of ``copyhead sweep``: each result file with its lock and chunk
    folder, the figure; the ``--tokens`` file."""
    from ..results import SWEEP_KIND
    from ._common import figure_outputs

    configs, asked = sweep_configs(args)
    paths, png = sweep_paths(args.out, args.preset, configs, asked=asked)
    outs = [x for f in paths for x in result_outputs("--out", f, SWEEP_KIND)]
    if args.plot:
        outs += figure_outputs("the figure of --out", png)
    return outs, [args.tokens]


def result_outputs(name: str, path: Path, kind: str) -> list:
    """A result file ``path`` of ``kind`` as written: itself, its lock, its chunk folder."""
    from .._checks import Output

    return [
        Output(name, Path(path), suffixes=(".npz",), kind=kind),
        Output(f"the lock of {name}", Path(str(path) + ".lock")),
        Output(
            f"the chunk folder of {name}", Path(str(path) + ".chunks"), folder=True, removed=True
        ),
    ]


def cmd_sweep(args) -> int:
    """Every (P, seed) run of each asked config; tables, P* and the figure."""
    from ..plots.sweeps import sweep_figure
    from ..sweep.run import run_sweep

    configs, asked = sweep_configs(args)
    tokens = load_tokens(args.tokens)
    paths, png = sweep_paths(args.out, args.preset, configs, asked=asked)
    args.kept = [Path(str(p) + ".chunks") for p in paths]  # what a Ctrl-C leaves to resume from
    results = []
    for cfg, path in zip(configs, paths):
        res = run_sweep(
            cfg,
            out=path,
            progress=args.progress,
            keep_params=args.keep_params,
            tokens=tokens,
            cluster=args.cluster,
            estimate=True,  # shown with --no-progress too: what the run will cost, before it starts
        )
        results.append(res)
        print(f"saved {path}  ({res.meta['wall_seconds']:.1f} s)")
        print_table(res)
    _print_pstar(results)
    if args.plot:
        from ..compare import softmax_marks

        pools = [r for r in results if r.config.train.init_attention != "copy"]
        theory = theory_overlay(pools) if args.theory else None
        save_figure(sweep_figure(results, theory, softmax_marks(results)), png)
    return 0


def _branch_configs(cfg: Config) -> list[Config]:
    """A two-branch head (softmax): a pooling-branch start (zero logits) and a copy-branch
    start, each kept on its branch (no continuation in P, which keeps the lower-U minimum);
    linear: as is."""
    if not head_class(cfg.model.attention).two_branches:
        return [cfg]
    return [
        cfg.replace(train=dict(init_attention=a), solver=single_start(cfg.train.solver))
        for a in ("zero", "copy")
    ]


def merge_points(theory: dict, points: dict) -> dict:
    """``theory`` updated with one head's theory ``points``, in place: each head reports every
    key, ``None`` where the point is not its own, so only located values are taken (a later
    head's ``None`` never hides an earlier head's number)."""
    theory.update({k: v for k, v in points.items() if v is not None})
    return theory


def _print_pstar(results) -> None:
    """Measured P* [CI over seeds] beside the EK theory's (and the paper's, under its
    conventions), for each width whose sweeps locate them (docs/theory.md §5)."""
    from ..compare.pstar import format_pstar, linear_points, pstar_rows, softmax_points
    from ..config.presets import PAPER
    from ..sources import is_iid
    from ..theory.beyond import config_points

    for width in dict.fromkeys(r.config.model.width for r in results):
        group = [r for r in results if r.config.model.width == width]
        init = {(r.config.model.attention, r.config.train.init_attention): r for r in group}
        cfg = group[0].config
        paper = (
            (cfg.posterior.likelihood, cfg.model.linear_scale, cfg.task.L, cfg.task.V)
            == (PAPER.posterior.likelihood, PAPER.model.linear_scale, PAPER.task.L, PAPER.task.V)
            and is_iid(cfg.task)
            and not cfg.model.causal
        )  # the paper: i.i.d. tokens, no mask
        rows = []
        for att in dict.fromkeys(r.config.model.attention for r in group):
            first, found = next(r for r in group if r.config.model.attention == att), {}
            if not head_class(att).two_branches:
                found = linear_points(first) if len(first.P) >= 3 else {}
            elif (att, "zero") in init and (att, "copy") in init:
                found = softmax_points(init[att, "zero"], init[att, "copy"])
            if found:  # beside the theory: closed forms, or minimisers for Markov/causal
                theory = merge_points({}, config_points(first.config, att))
                rows += pstar_rows(found, theory, attention=att, compare_paper=paper)
        if not rows:
            continue
        paper = paper and any(r["paper"] is not None for r in rows)
        print(
            f"\n# P* at N = {width}: measured (geometric mean over seeds [95% bootstrap CI "
            "over seeds widened by the grid's error]; seeds located; the grid bracket "
            "holding them) vs the EK theory (N -> inf)" + (" and the paper" if paper else "")
        )
        print(format_pstar(rows))


def sweep_paths(
    out: str | None, preset_name: str, configs: list[Config], *, asked: Config | None = None
):
    """Result files and figure of ``copyhead sweep``: ``--out FILE.npz`` (one attention) is that
    file; ``--out FOLDER`` holds ``sweep_ATT.npz``; the default folder is ``results/NAME``,
    ``NAME`` the preset's name under the reading of ``asked`` (default ``configs[0]``;
    :func:`~copyhead_jax.config.run_name`: ``paper-map-chi-lik``, ``plain``), or
    ``results/NAME-HASH`` when flags change more than the reading (``HASH``: 8 hex digits of
    the fields changed from that preset and reading), so that a sweep with other flags or
    another reading never overwrites another, and one config gets one folder however its
    reading was asked for."""
    br = lambda c: "_copy" if c.train.init_attention == "copy" else ""  # a copy-branch start
    if out is not None and out.lower().endswith(".npz"):
        if len({(c.model.attention, c.model.width) for c in configs}) > 1:
            raise ValueError(
                "--out FILE.npz holds one attention and width; give a folder for --attention "
                "both or several widths"
            )
        f = Path(out)
        return [f.with_name(f.stem + br(c) + f.suffix) for c in configs], f.with_suffix(".png")
    if out is None:
        import hashlib
        import json

        from ..config import reading_of

        asked = asked or configs[0]
        name, reading = run_name(preset_name, asked), reading_of(asked)
        base = preset(preset_name, reading if name != preset_name else None).to_dict()
        new = asked.to_dict()
        diff = {
            s: {
                k: v
                for k, v in new[s].items()  # a field omitted at its default: None
                if v != base[s].get(k) and k != "attention"
            }
            for s in new
        }
        diff = {s: d for s, d in diff.items() if d}
        tag = hashlib.sha256(json.dumps(diff, sort_keys=True).encode()).hexdigest()[:8]
        out = f"results/{name}" + (f"-{tag}" if diff else "")
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
        ("P", "P", "{:>6d}"),
        (n1, n1, "{:>8.3f}"),
        (nG, nG, "{:>8.3f}"),
        ("cover", "coverage", "{:>7.3f}"),
        ("train", "train_loss", "{:>8.3f}"),
        ("test", "test_loss", "{:>8.3f}"),
        ("acc", "copy_accuracy", "{:>6.3f}"),
        ("epochs", "stop_epoch", "{:>7.0f}"),
        ("|grad|", "grad_norm", "{:>8.2e}"),
        ("|g_span|", "grad_norm_span", "{:>8.2e}"),
        ("ok", "n_ok", "{:>3d}"),
        ("div", "n_diverged", "{:>3d}"),
    ]
    print(f"# {att} attention, N={res.config.model.width}, seeds={res.config.sweep.n_seeds}")
    print(" ".join(f"{h:>{len(fmt.format(0))}}" for h, _, fmt in cols))
    for i in range(len(res.P)):
        row = []
        for _, k, fmt in cols:
            v = s[k][i]
            row.append(fmt.format(int(v)) if "d}" in fmt else fmt.format(float(v)))
        print(" ".join(row))
    n_div = int(s["n_diverged"].sum())
    print(
        f"# mean over the 'ok' seeds; {n_div} diverged run(s) ('div': non-finite, or loss or U "
        "blown up past its start and the zero-output loss) excluded from the means"
    )
    capped = res.at_epoch_cap & res.ok
    if capped.any():
        gmax = float(np.max(np.asarray(res.arrays["grad_norm"])[capped]))
        print(
            f"# {int(capped.sum())} of {int(res.ok.sum())} runs stopped at max_epochs="
            f"{res.config.solver.max_epochs} before early stopping (|grad| up to {gmax:.2g}): "
            "not converged; the means describe where Adam stopped (train longer: --max-epochs, "
            "or fit the exact MAP: --preset paper-map)"
        )
    n_unc = int((res.unconverged & ~res.diverged).sum())
    if n_unc:
        print(
            f"# {n_unc} unconverged exact fit(s) (converged=False: stopped at --exact-max-steps) "
            "also excluded from the means"
        )
