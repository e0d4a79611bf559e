r"""``copyhead llc FILE...``: learning coefficient and WBIC of every run of a reduced sweep
(:func:`copyhead_jax.sampling.llc_runs.llc_runs`; docs/theory.md §9.8): a table, ``--json``, and a
figure of $\hat\lambda$ against P with the $d/2$ line and the MAP $P^*$."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np

from .flags import finite_float, target_flags

#: (key of RunLLC.arrays, label) of the estimators drawn and printed, in that order
SHOWN = (
    ("beta1", r"$\beta = 1$, $\gamma$-localised"),
    ("devinterp", r"devinterp: $\beta = 1/\log n$, $\gamma$-localised"),
    ("posterior", r"posterior draws: $\beta = 1$, $\gamma = 0$, prior kept"),
)


def add_llc_subparser(sub) -> None:
    from ..sampling.llc_runs import LLCSettings
    from ._common import add_parser, cluster_flag, progress_flags

    d = LLCSettings()
    p = add_parser(
        sub,
        "llc",
        help="learning coefficient (beta = 1 and devinterp's beta = 1/log n) and "
        "WBIC of every run of a reduced sweep, at its lowest-U fit",
        examples=(
            "copyhead sweep --preset small --engine reduced --attention softmax --keep-params "
            "--out results/red",
            "copyhead llc results/red/sweep_softmax.npz --out results/red/llc.png",
            "copyhead llc results/red/sweep_softmax_posterior.npz --json",
        ),
    )
    p.add_argument(
        "files",
        nargs="+",
        help="reduced sweep files with kept weights (several "
        "starts of the same runs: the lowest-U fit per run is the centre w*), and "
        "at most one posterior file of those runs",
    )
    p.add_argument(
        "--siblings",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also use FILE_copy.npz next to a softmax FILE.npz, and FILE.npz next to "
        "FILE_posterior.npz (default on)",
    )
    p.add_argument(
        "--gamma",
        type=finite_float,
        default=d.gamma,
        help=f"localisation (default {d.gamma}); 0 leaves directions the data do not "
        "pin free to drift (no prior in these chains): the posterior file's "
        "estimate is the unlocalised one",
    )
    p.add_argument("--steps", type=int, default=d.n_steps, help=f"SGLD steps (default {d.n_steps})")
    p.add_argument("--burn-in", type=int, default=d.burn_in, help=f"default {d.burn_in}")
    p.add_argument("--thin", type=int, default=d.thin, help=f"default {d.thin}")
    p.add_argument(
        "--chains",
        type=int,
        default=d.n_chains,
        help=f"SGLD chains per run (default {d.n_chains}, as every sampler command)",
    )
    p.add_argument(
        "--eta-frac",
        type=finite_float,
        default=d.eta_frac,
        help=f"SGLD step times (gamma + top curvature); default {d.eta_frac}",
    )
    p.add_argument("--seed", type=int, default=d.seed, help=f"chains' seed (default {d.seed})")
    g = p.add_argument_group("stop when enough (the flags of copyhead sample)")
    target_flags(g, "--steps", d.rhat_target, judged="L_n")
    g.add_argument(
        "--round-steps",
        type=int,
        default=None,
        help=f"SGLD steps per round with --ess-target, a multiple of --thin "
        f"(default {d.round_steps})",
    )
    p.add_argument(
        "--json",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="print the result as JSON (no table; default off)",
    )
    p.add_argument("--out", default=None, help="figure path (.png, .pdf or .svg)")
    progress_flags(p)
    cluster_flag(p, groups="the chain sets (one P and one estimator each)")
    p.set_defaults(func=cmd_llc, paths=llc_outputs)


def llc_outputs(args):
    """``(outputs, inputs)`` of ``copyhead llc``: the figure, the chunk folder and its lock; the
    files and their siblings."""
    from .._checks import Output
    from ._common import figure_outputs

    sweeps, posts = _names(args.files, args.siblings)
    outs = []
    if args.out is not None:
        outs += figure_outputs("--out", args.out)
    ckpt = checkpoint_folder(sweeps[0])
    if os.access(ckpt.parent, os.W_OK | os.X_OK):
        outs += [
            Output("the chunk folder", ckpt, folder=True, removed=True),
            Output("the chunk folder's lock", Path(str(ckpt) + ".lock")),
        ]
    return outs, [*sweeps, *posts]


def _names(files: list[str], siblings: bool) -> tuple[list[str], list[str]]:
    """The sweep files (siblings added) and posterior files the command reads (kinds read from
    the files)."""
    from .._checks import stored_kind
    from ..results import POSTERIOR_KIND, SWEEP_KIND

    sweeps, posts = [], []
    for f in files:
        if not Path(f).is_file():
            raise ValueError(f"files: {f!r} is not a file")
        kind = stored_kind(f)
        if kind == POSTERIOR_KIND:
            posts.append(f)
        elif kind == SWEEP_KIND:
            sweeps.append(f)
        else:
            raise ValueError(
                f"files: {f!r} is neither a sweep nor a posterior file (kind {kind!r})"
            )
    if len(posts) > 1:
        raise ValueError(f"files: at most one posterior file, got {len(posts)}")
    if siblings:
        for f in posts:
            p = Path(f)
            s = p.with_name(p.stem.removesuffix("_posterior") + ".npz")
            if p.stem.endswith("_posterior") and s.is_file() and str(s) not in sweeps:
                sweeps.append(str(s))
        for f in list(sweeps):
            c = Path(f).with_name(Path(f).stem + "_copy.npz")
            if c.is_file() and str(c) not in sweeps:
                sweeps.append(str(c))
    if not sweeps:
        raise ValueError(
            "files: no sweep file with kept weights given (the centre w* of every "
            "run is its fit); add the sweep of the posterior's runs"
        )
    return sweeps, posts


def _inputs(files: list[str], siblings: bool):
    """``(sweep names, sweeps, posterior or None)`` from the command's files."""
    from ..results import PosteriorResult, SweepResult

    sweeps, posts = _names(files, siblings)
    loaded = [SweepResult.load(f) for f in sweeps]
    return sweeps, loaded, (PosteriorResult.load(posts[0]) if posts else None)


def checkpoint_folder(sweep: str) -> Path:
    """Where ``copyhead llc`` keeps its finished chain sets: ``SWEEP_llc.chunks`` beside the
    first sweep file (removed once the command completes)."""
    p = Path(sweep)
    return p.with_name(p.stem + "_llc.chunks")


def llc_settings(args):
    """The :class:`~copyhead_jax.sampling.llc_runs.LLCSettings` of ``copyhead llc``'s flags (a
    target flag left out: the settings' default)."""
    from ..sampling.llc_runs import LLCSettings

    target = {
        f: getattr(args, f)
        for f in ("ess_target", "rhat_target", "round_steps")
        if getattr(args, f) is not None
    }
    return LLCSettings(
        gamma=args.gamma,
        n_chains=args.chains,
        n_steps=args.steps,
        burn_in=args.burn_in,
        thin=args.thin,
        eta_frac=args.eta_frac,
        seed=args.seed,
        **target,
    )


def cmd_llc(args) -> int:
    import sys

    from ..runner import claim
    from ..sampling.llc_runs import llc_runs
    from ._common import save_figure

    st = llc_settings(args)
    names, sweeps, post = _inputs(args.files, args.siblings)  # paths checked by cli.main
    ckpt = checkpoint_folder(names[0])
    if os.access(ckpt.parent, os.W_OK | os.X_OK):  # one writer; a Ctrl-C keeps what finished
        held = claim(None, ckpt=ckpt, lock=ckpt)
        args.kept = [ckpt]
    else:
        print(
            f"copyhead: note: {str(ckpt.parent)!r} is not writable: finished chain sets are "
            "not kept (an interrupted run starts again)",
            file=sys.stderr,
        )
        ckpt, held = None, claim(None)
    if not args.json:
        print(f"# w* per run: the lowest-U fit of {', '.join(names)}")
    r = llc_runs(
        sweeps,
        posterior=post,
        settings=st,
        progress=args.progress,
        ckpt_dir=ckpt,
        cluster=args.cluster,
        estimate=True,  # shown with --no-progress too: what the run will cost, before it starts
    )
    held.finish()
    if args.json:
        print(json.dumps(r.to_dict()))
    else:
        print_llc(r)
    if args.out is not None:
        save_figure(llc_figure(r), Path(args.out))
    return 0


def _seed_stats(a: np.ndarray, i: int) -> tuple[float, float]:
    x = a[i][np.isfinite(a[i])]
    return (float(x.mean()), float(x.std())) if x.size else (math.nan, math.nan)


def print_llc(r) -> None:
    """One row per P: seed mean of each estimator with the largest MCSE over seeds."""
    a = r.arrays
    shown = [(k, k if k != "devinterp" else "devint") for k, _ in SHOWN if k in a]
    print(
        f"# {r.attention}: lambda-hat (seed mean, max MCSE over seeds); d/2 = {r.d / 2:g}; "
        f"gamma = {r.settings.gamma:g}; WBIC = E[n L_n] at beta = 1/log n, likelihood "
        "normalisation omitted; w* alt: seeds whose centre is a later file's fit"
    )
    from ..models import head_class

    st = r.settings
    ran = [k for k in ("beta1", "devinterp", "wbic") if np.isfinite(a[f"{k}_n_draws"]).any()]
    n1, nG = head_class(r.attention).order_names
    print(
        f"# R-hat, ESS: the worst of L_n, {n1}, {nG} over the chain sets and seeds"
        + (
            f"; stop when enough: ESS >= {st.ess_target:g} and R-hat <= {st.rhat_target:g}, in "
            f"rounds of {st.round_draws} draws per chain, at most {st.n_rounds * st.round_draws}"
            "; draws: per chain; met: chain sets whose every seed met it"
            if st.ess_target
            else ""
        )
    )
    head = f"{'P':>6} " + " ".join(f"{n:>16}" for _, n in shown)
    print(
        head
        + f" {'WBIC':>16} {'R-hat':>6} {'ESS':>6} {'w* alt':>7}"
        + (f" {'draws':>6} {'met':>5}" if st.ess_target else "")
    )
    for i, P in enumerate(r.P):
        cells = []
        for k, _ in [*shown, ("wbic", "")]:
            m, _sd = _seed_stats(a[k], i)
            se = np.nanmax(a[f"{k}_mcse"][i]) if np.isfinite(a[f"{k}_mcse"][i]).any() else math.nan
            cells.append(f"{m:>9.3g} ({se:>4.2g})")
        rh = [a[f"{k}_rhat_reached"][i] for k in ran]
        es = [a[f"{k}_ess_reached"][i] for k in ran]
        rmax = np.nanmax(rh) if np.isfinite(rh).any() else math.nan
        emin = np.nanmin(es) if np.isfinite(es).any() else math.nan
        n_alt = int(np.sum(a["source"][i] >= 1))  # seeds centred at a later file's fit
        line = f"{P:>6d} " + " ".join(cells) + f" {rmax:>6.2f} {emin:>6.0f} {n_alt:>7d}"
        if st.ess_target:
            n_draws = [a[f"{k}_n_draws"][i] for k in ran]
            n_met = sum(bool(np.all(a[f"{k}_target_met"][i] == 1)) for k in ran)
            top = np.nanmax(n_draws) if np.isfinite(n_draws).any() else math.nan
            line += f" {top:>6.0f} {n_met:>2d}/{len(ran):<2d}"
        print(line)
    if r.pstar:
        print("# MAP P*: " + ", ".join(f"{k} = {v:.4g}" for k, v in r.pstar.items()))


def llc_figure(r):
    r"""$\hat\lambda$ against P (seed mean +- sd) for each estimator, the $d/2$ line and the
    MAP $P^*$ markers (result in, Figure out)."""
    import matplotlib
    import matplotlib.pyplot as plt

    from ..plots.style import (
        BLACK,
        BLUE,
        GREEN,
        GREY,
        KEY_COLORS,
        ORANGE,
        P_LABEL,
        RC,
        legend,
        log_P_axis,
        num,
    )

    colors = {"beta1": BLUE, "devinterp": ORANGE, "posterior": GREEN}
    with matplotlib.rc_context(RC):
        fig, ax = plt.subplots(figsize=(6.4, 4.8), layout="constrained")
        P = np.asarray(r.P, float)
        for k, label in SHOWN:
            if k not in r.arrays:
                continue
            ms = np.array([_seed_stats(r.arrays[k], i) for i in range(len(P))])
            ok = np.isfinite(ms[:, 0])
            if ok.any():
                ax.errorbar(
                    P[ok],
                    ms[ok, 0],
                    yerr=ms[ok, 1],
                    color=colors[k],
                    marker="o",
                    ms=4,
                    capsize=2,
                    label=label,
                )
        ax.axhline(r.d / 2, color=GREY, ls=":", lw=1.2, label=f"$d/2$ = {num(r.d / 2)} (regular)")
        for k, v in r.pstar.items():
            ax.axvline(
                v,
                color=KEY_COLORS.get(k, BLACK),
                ls="--",
                lw=0.8,
                label=f"MAP $P^*_{{{k[2:]}}}$ = {num(v)}",
            )
        log_P_axis(ax, P)
        ax.set_yscale("symlog", linthresh=1.0)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, max(hi, 2.0 * r.d))  # the d/2 line inside the axes, not on its edge
        ax.set(
            xlabel=P_LABEL,
            ylabel=r"$\hat\lambda$ (symmetric log scale)",
            title=f"learning coefficient, {r.attention} head "
            f"($\\gamma$ = {r.settings.gamma:g}); error bars: sd over seeds",
        )
        legend(ax)
    return fig
