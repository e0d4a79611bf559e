"""``copyhead sample RESULT``: posterior of every run of a saved sweep (``--sampler sgld``: SGLD
on every weight, full-engine sweeps; ``--sampler hmc``: the collapsed HMC of reduced sweeps,
:mod:`copyhead_jax.sampling.collapsed_hmc`; the default follows the engine)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from ..config import DEFAULT_CHAINS, STARTS, HMCConfig, SGLDConfig
from .flags import add_preset_flags, finite_float, target_flags

#: CLI flag -> (sampler kind, config field): a flag means one thing for the one sampler it names.
SGLD_FLAGS = {"steps": "n_steps", "burn_in": "burn_in", "round_steps": "round_steps"}
HMC_FLAGS = {
    "iterations": "n_iter",
    "warmup": "n_warmup",
    "adapt": "n_adapt",
    "adapt_mass": "adapt_mass",
    "pooled_adaptation": "pooled_adaptation",
    "leapfrog": "n_leapfrog",
    "target_accept": "target_accept",
    "starts": "starts",
    "branch_threshold": "branch_threshold",
    "keep_weights": "keep_weights",
    "round_iter": "round_iter",
}
SHARED_FLAGS = {
    "thin": "thin",
    "chains": "n_chains",
    "step_size": "step_size",
    "seed": "seed",
    "keep_loglik": "keep_loglik",
    "ess_target": "ess_target",
    "rhat_target": "rhat_target",
}


def add_sample_subparser(sub) -> None:
    from ._common import add_parser, cluster_flag, progress_flags

    p = add_parser(
        sub,
        "sample",
        help="posterior of a sweep (SGLD on full-engine sweeps, collapsed HMC on reduced ones)",
        examples=(
            "copyhead sweep --preset small --engine reduced --attention softmax "
            "--out results/red --keep-params",
            "copyhead sample results/red/sweep_softmax.npz --starts both --keep-loglik "
            "--netcdf post.nc --run 64,0",
            "copyhead sample results/paper/sweep_linear.npz --preset paper --steps 2000",
        ),
    )
    p.add_argument("result", help="a sweep result file (copyhead sweep ... --keep-params)")
    p.add_argument("--out", default=None, help="posterior file (default: RESULT_posterior.npz)")
    p.add_argument(
        "--sampler",
        choices=("hmc", "sgld"),
        default=None,
        help="hmc: collapsed HMC (reduced sweeps: the readout integrated out "
        "exactly, HMC on W^G); sgld: SGLD on every weight (full-engine sweeps); "
        "default: the one the sweep's engine supports",
    )
    add_preset_flags(
        p,
        "the sampler (the posterior itself is the sweep's): paper: the "
        "paper's SGLD, eta = 5e-10 (sigma^2 = chi = 30); any other: the engine's "
        "default sampler; --reading: checked against the sweep's conventions",
    )
    d, h = SGLDConfig(), HMCConfig()
    g = p.add_argument_group("both samplers")
    g.add_argument(
        "--step-size",
        type=finite_float,
        default=None,
        help=f"SGLD: eta on U (default {d.step_size}); HMC: the initial leapfrog "
        f"step in the whitened coordinates of the marginal, then adapted (default "
        f"{h.step_size})",
    )
    g.add_argument(
        "--thin",
        type=int,
        default=None,
        help=f"a draw every THIN steps (SGLD, default {d.thin}) or iterations (HMC, "
        f"default {h.thin})",
    )
    g.add_argument(
        "--chains",
        type=int,
        default=None,
        help=f"chains per run (default {DEFAULT_CHAINS}, as every sampler command)",
    )
    g.add_argument("--seed", type=int, default=None)
    g.add_argument(
        "--keep-loglik",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="record each training sequence's log-likelihood per draw (ArviZ "
        "log_likelihood group, az.loo)",
    )
    target_flags(g, "--iterations / --steps", h.rhat_target)
    g = p.add_argument_group("SGLD only (--sampler sgld)")
    g.add_argument("--steps", type=int, default=None, help=f"SGLD steps (default {d.n_steps})")
    g.add_argument(
        "--burn-in", type=int, default=None, help=f"SGLD steps discarded (default {d.burn_in})"
    )
    g.add_argument(
        "--round-steps",
        type=int,
        default=None,
        help=f"SGLD steps per round with --ess-target, a multiple of --thin "
        f"(default {d.round_steps})",
    )
    g = p.add_argument_group("collapsed HMC only (--sampler hmc)")
    g.add_argument(
        "--iterations",
        type=int,
        default=None,
        help=f"HMC iterations kept after adaptation (default {h.n_iter}; linear attention 3500)",
    )
    g.add_argument(
        "--round-iter",
        type=int,
        default=None,
        help=f"HMC iterations per round with --ess-target, a multiple of --thin "
        f"(default {h.round_iter})",
    )
    g.add_argument(
        "--warmup",
        type=int,
        default=None,
        help=f"unadjusted-Langevin warm-up steps, discarded (default {h.n_warmup})",
    )
    g.add_argument(
        "--adapt",
        type=int,
        default=None,
        help=f"step (and mass) adaptation iterations, discarded (default {h.n_adapt})",
    )
    g.add_argument(
        "--adapt-mass",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="adapt a diagonal mass over the adaptation iterations (Stan's windows; "
        f"default {'on' if h.adapt_mass else 'off'}; off: unit mass in the "
        "whitened coordinates)",
    )
    g.add_argument(
        "--pooled-adaptation",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="one step and mass for the chains of a start group, adapted from all their "
        f"transitions (default {'on' if h.pooled_adaptation else 'off'}; off: each chain "
        "its own)",
    )
    g.add_argument(
        "--leapfrog",
        type=int,
        default=None,
        help=f"leapfrog steps per iteration (default {h.n_leapfrog})",
    )
    g.add_argument(
        "--target-accept",
        type=finite_float,
        default=None,
        help=f"acceptance the adaptation aims at (default {h.target_accept})",
    )
    g.add_argument(
        "--starts",
        choices=STARTS,
        default=None,
        help="where chains start: fit (the sweep's fits), both (half from the "
        "pooling and half from the copy branch start), prior (each from a prior "
        "draw of W^G); default both for softmax near the MAP coexistence window, "
        "else fit",
    )
    g.add_argument(
        "--branch-threshold",
        type=finite_float,
        default=None,
        help=f"a draw is on the copy branch when aG >= this (default {h.branch_threshold})",
    )
    g.add_argument(
        "--keep-weights",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="record W^G and W_O_hat per draw (ArviZ posterior)",
    )
    p.add_argument("--chunk-runs", type=int, default=0, help="runs per compiled chunk (0 = all)")
    p.add_argument(
        "--netcdf",
        default=None,
        metavar="FILE",
        help="also write one run's draws, log-likelihood and observed data as ArviZ "
        "netCDF, on which az.loo / az.bfmi / az.summary work (needs arviz; the run: "
        "--run)",
    )
    p.add_argument(
        "--run",
        default=None,
        metavar="P,SEED",
        type=_run_pair,
        help="the run that --netcdf writes: its training set size P (one of the "
        "sweep's) and seed (in [0, n_seeds - 1]); needed when the sweep has more "
        "than one run",
    )
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the posterior figure next to the output (default on)",
    )
    progress_flags(p)
    cluster_flag(p, groups="the chunks of runs (--chunk-runs)")
    p.set_defaults(func=cmd_sample, paths=sample_outputs)


def _run_pair(text: str) -> tuple[int, int]:
    """``P,SEED`` -> ``(P, SEED)``: two integers."""
    parts = text.split(",")
    try:
        P, seed = (int(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected P,SEED (two integers), got {text!r}") from None
    return P, seed


def netcdf_run(args, sweep) -> dict[str, int]:
    """The run ``--netcdf`` writes (``{'P', 'seed'}``), checked against the sweep before any
    work: ``--run``, or the sweep's only run."""
    Ps, nS = [int(x) for x in sweep.P], sweep.config.sweep.n_seeds
    if args.run is None:
        if len(Ps) * nS > 1:
            raise ValueError(
                f"--netcdf writes one run (az.loo needs one run's sequences): give "
                f"--run P,SEED with P in {Ps} and SEED in [0, {nS - 1}]"
            )
        return {"P": Ps[0], "seed": 0}
    P, seed = args.run
    if P not in Ps:
        raise ValueError(f"--run: P must be one of the sweep's {Ps}, got {P}")
    if not 0 <= seed < nS:
        raise ValueError(f"--run: SEED must be in [0, {nS - 1}], got {seed}")
    return {"P": P, "seed": seed}


def sampler_config(args, sweep):
    """The sampler config of ``copyhead sample``'s flags; a flag of the other sampler is a
    ValueError naming it."""
    from ..config import preset
    from ..models import head_class
    from ..sampling.run import PAPER_SGLD, default_sampler

    kind = args.sampler or ("hmc" if sweep.config.model.engine == "reduced" else "sgld")
    other = HMC_FLAGS if kind == "sgld" else SGLD_FLAGS
    for flag in other:
        if getattr(args, flag, None) is not None:
            name = "--" + flag.replace("_", "-")
            hint = (
                "collapsed HMC counts --iterations and --warmup"
                if kind == "hmc"
                else "SGLD counts --steps and --burn-in"
            )
            raise ValueError(
                f"{name} is a flag of --sampler {'hmc' if kind == 'sgld' else 'sgld'}"
                f"; this run uses --sampler {kind} ({hint})"
            )
    check_reading(args, sweep.config)
    preset(args.preset)  # a known name, whichever sampler it names
    if args.preset == "paper" and kind != "sgld":
        raise ValueError("--preset paper is the paper's SGLD; use it with --sampler sgld")
    own = {**SHARED_FLAGS, **(HMC_FLAGS if kind == "hmc" else SGLD_FLAGS)}
    over = {f: getattr(args, a) for a, f in own.items() if getattr(args, a, None) is not None}
    if args.preset == "paper":
        return dataclasses.replace(PAPER_SGLD, **over)
    cfg = sweep.config
    if (
        kind == "hmc"
        and cfg.model.engine == "reduced"
        and head_class(cfg.model.attention).two_branches
    ):
        # the values first: the default's starts are placed by the theory (seconds), and it is
        # HMCConfig() with those starts
        dataclasses.replace(HMCConfig(), **over)
    base = default_sampler(sweep)
    if base.kind != kind:
        base = SGLDConfig() if kind == "sgld" else HMCConfig()
    return dataclasses.replace(base, **over)


def check_reading(args, cfg) -> None:
    """``--reading`` of a command that reads its config from a file: the file's conventions
    must be that reading's (the posterior and the fits are the file's; refit to change it)."""
    from .._checks import check_choice
    from ..config import READINGS, reading_of

    if getattr(args, "reading", None) is None:
        return
    want, have = check_choice("reading", args.reading, READINGS), reading_of(cfg)
    if want != have:
        raise ValueError(
            f"--reading {want}: the sweep was fitted under "
            f"{'the reading ' + have if have else 'no named reading'}; its "
            f"posterior is that reading's (refit it with --reading {want})"
        )


def _out(args) -> Path:
    return Path(args.out or Path(args.result).with_name(Path(args.result).stem + "_posterior.npz"))


def sample_outputs(args):
    """``(outputs, inputs)`` of ``copyhead sample``: the posterior file with its lock and chunk
    folder, the netCDF, the figure; the sweep file."""
    from .._checks import Output
    from ..results import POSTERIOR_KIND
    from ..sampling.arviz import NETCDF_SUFFIXES
    from ._common import figure_outputs
    from .sweep import result_outputs

    out = _out(args)
    outs = result_outputs("--out", out, POSTERIOR_KIND)
    if args.netcdf:
        outs += [
            Output("--netcdf", Path(args.netcdf), suffixes=NETCDF_SUFFIXES),
            Output("the lock of --netcdf", Path(str(args.netcdf) + ".lock")),
        ]
    if args.plot:
        outs += figure_outputs("the figure of --out", out.with_suffix(".png"))
    return outs, [args.result]


def cmd_sample(args) -> int:
    from ..plots.sweeps import posterior_figure
    from ..results import SweepResult
    from ..sampling.run import run_sampler

    sweep = SweepResult.load(args.result)
    sampler = sampler_config(args, sweep)
    if not sweep.has_params:
        raise ValueError(
            f"{args.result!r} has no fitted weights to warm-start from; rerun its sweep with "
            "'copyhead sweep ... --keep-params' (Python: run_sweep(..., keep_params=True))"
        )
    out = _out(args)  # its paths are checked with the others before any work (cli.main)
    if args.run is not None and not args.netcdf:
        raise ValueError("--run selects the run that --netcdf writes; give --netcdf FILE too")
    nc_claim = None
    if args.netcdf:
        from ..runner import claim

        run = netcdf_run(args, sweep)
        nc_claim = claim(Path(args.netcdf))  # a second writer of the file is refused now
    args.kept = [Path(str(out) + ".chunks")]  # what a Ctrl-C leaves to resume from
    post = run_sampler(
        sweep,
        sampler,
        out=out,
        progress=args.progress,
        chunk_runs=args.chunk_runs,
        cluster=args.cluster,
        estimate=True,  # shown with --no-progress too: what the run will cost, before it starts
    )
    print(
        f"saved {out}  ({post.meta['wall_seconds']:.1f} s, {len(post.meta['warnings'])} warnings)"
    )
    if args.netcdf:
        from ..sampling.arviz import save_netcdf

        nc_claim.finish(
            lambda: print(
                f"saved {save_netcdf(post, args.netcdf, **run)} (P = "
                f"{run['P']}, seed {run['seed']})"
            )
        )
    print_posterior(post, sweep)
    if args.plot:
        from ._common import save_figure

        save_figure(posterior_figure(post, sweep), out.with_suffix(".png"))
    return 0


def print_posterior(post, sweep=None) -> None:
    """The posterior as a table; MAP columns from ``sweep`` if given, else ``-``."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: R-hat of short chains
        _print_rows(post, sweep)


def _print_rows(post, sweep) -> None:
    import numpy as np

    m1, v1 = post.moments("c1")
    mG, vG = post.moments("cG")
    mL, _ = post.moments("train_loss")
    att = post.config.model.attention
    n1, nG = post.order_names  # softmax: a1, aG
    print(f"# {att}, {post.sampler_name}: posterior mean (MAP) over seeds; var = susceptibility")
    target = "target_met" in post.arrays
    if target:
        t = post.meta.get("target") or {}
        print(
            f"# stop when enough: ESS >= {t.get('ess')} and R-hat <= {t.get('rhat')} on U, {n1}, "
            f"{nG}, in rounds of {t.get('round_draws')} draws per chain, at most "
            f"{t.get('cap_draws')}; R-hat, ESS: the worst of the three; draws: per chain (the "
            "fewest-most over the seeds: each run stops on its own); met: runs that met it"
        )
    rk, ek = ("rhat_reached", "ess_reached") if target else ("rhat", "ess")
    print(
        f"{'P':>6} {n1 + ' post':>9} {n1 + ' MAP':>8} {nG + ' post':>9} {nG + ' MAP':>8} "
        f"{'var ' + nG:>9} {'loss':>8} {'R-hat':>6} {'ESS':>6} {'accept':>6}"
        + (f" {'draws':>9} {'met':>5}" if target else "")
    )
    for i, P in enumerate(post.P):
        map1, mapG = (
            f"{np.nanmean(sweep[k][i]):>8.3f}" if sweep is not None else f"{'-':>8}"
            for k in ("c1", "cG")
        )
        print(
            f"{P:>6d} {np.nanmean(m1[i]):>9.3f} {map1} {np.nanmean(mG[i]):>9.3f} {mapG} "
            f"{np.nanmean(vG[i]):>9.2e} {np.nanmean(mL[i]):>8.3f} "
            f"{np.nanmax(post[rk][i]):>6.2f} {np.nanmin(post[ek][i]):>6.0f} "
            f"{np.nanmean(post['accept_mean'][i]):>6.3f}"
            + (
                f" {_span(post['n_draws'][i]):>9} "
                f"{int(post['target_met'][i].sum()):>2d}/{post['target_met'].shape[1]:<2d}"
                if target
                else ""
            )
        )
    if "branch_weight" in post.arrays:
        _print_branches(post)
    if "flagged" in post.arrays and post["flagged"].any():
        print(
            f"# {int(post['flagged'].sum())} run(s) flagged (a non-finite chain, or R-hat/ESS "
            "NaN or past the thresholds): do not trust their means"
        )


def _print_branches(post) -> None:
    """Per run: the copy-branch weight with its MCSE, per start, and the between-start R-hat."""
    import numpy as np

    a, mc = post.arrays, post.sampler
    nG = post.order_names[1]
    print(
        f"# branch weight: fraction of draws with {nG} >= {mc.branch_threshold} (copy "
        f"branch) +- MCSE; chains started from: {mc.starts}"
    )
    print(f"{'P':>6} {'seed':>4} {'weight':>7} {'MCSE':>6} {'per start':>17} {'R-hat btw':>9}")
    for (i, s), w in np.ndenumerate(a["branch_weight"]):
        by = " ".join(f"{b:.2f}" for b in a["branch_weight_by_start"][i, s][:4])
        print(
            f"{post.P[i]:>6d} {s:>4d} {w:>7.3f} {a['branch_weight_mcse'][i, s]:>6.3f} "
            f"{by:>17} {a['rhat_between'][i, s]:>9.3f}"
        )


def _span(n) -> str:
    """``"375"`` or ``"375-1625"``: the fewest and most draws per chain of a P's runs."""
    lo, hi = int(n.min()), int(n.max())
    return f"{lo}" if lo == hi else f"{lo}-{hi}"
