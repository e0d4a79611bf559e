"""``copyhead sample RESULT``: posterior of every run of a saved sweep (SGLD; reduced sweeps:
the collapsed HMC of :mod:`copyhead_jax.sample_reduced`)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from .config import SGLDConfig


def add_sample_subparser(sub) -> None:
    from ._cli_parts import add_parser, progress_flags
    from .presets import PRESETS

    p = add_parser(
        sub, "sample", help="posterior of a sweep, warm-started from its fits (SGLD; reduced "
        "sweeps: collapsed HMC)",
        examples=(
            "copyhead sweep --preset small --engine reduced --attention softmax "
            "--out results/red --keep-params",
            "copyhead sample results/red/sweep_softmax.npz --chains 4 --netcdf post.nc",
            "copyhead sample results/paper/sweep_linear.npz --preset paper --steps 2000",
        ),
    )  # fmt: skip
    p.add_argument("result", help="a sweep result file (copyhead sweep ... --keep-params)")
    p.add_argument("--out", default=None, help="posterior file (default: RESULT_posterior.npz)")
    p.add_argument("--preset", choices=("default", *PRESETS), default="default",
                   help="the sampler of a sweep preset (the names of 'copyhead sweep'): paper: "
                   "the paper's SGLD, eta = 5e-10 (sigma^2 = chi = 30); any other: the "
                   "engine's default sampler (reduced sweeps: collapsed HMC)")  # fmt: skip
    from .sample import REDUCED_SGLD as r
    from .sample import REDUCED_SGLD_LINEAR as r_lin

    d = SGLDConfig()
    both = lambda k: f"default {getattr(d, k)} (reduced sweeps: {getattr(r, k)})"
    p.add_argument("--steps", type=int, default=None,
                   help=f"default {d.n_steps} (reduced sweeps: {r.n_steps}, linear attention "
                   f"{r_lin.n_steps}); reduced: warm-up steps + HMC iterations")  # fmt: skip
    p.add_argument("--burn-in", type=int, default=None,
                   help=both("burn_in") + "; reduced: Langevin warm-up steps")  # fmt: skip
    p.add_argument("--thin", type=int, default=None, help=both("thin"))
    p.add_argument("--chains", type=int, default=None, help=both("n_chains"))
    p.add_argument("--step-size", type=float, default=None,
                   help="eta on U; reduced sweeps (the readout integrated out exactly, HMC on "
                   "W^G): the leapfrog step in the whitened coordinates of the marginal; "
                   + both("step_size"))  # fmt: skip
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--chunk-runs", type=int, default=0, help="runs per compiled chunk (0 = all)")
    p.add_argument("--netcdf", default=None, metavar="FILE",
                   help="also write the draws as ArviZ netCDF (needs arviz)")  # fmt: skip
    p.add_argument("--plot", action=argparse.BooleanOptionalAction, default=True,
                   help="save the posterior figure next to the output (default on)")  # fmt: skip
    progress_flags(p)
    p.set_defaults(func=cmd_sample)


def cmd_sample(args) -> int:
    from ._checks import check_output_path
    from .arviz_io import NETCDF_SUFFIXES
    from .plots import posterior_figure
    from .results import POSTERIOR_KIND, SweepResult
    from .sample import PAPER_SGLD, default_sgld, run_sampler

    sweep = SweepResult.load(args.result)
    base = PAPER_SGLD if args.preset == "paper" else default_sgld(sweep)
    over = dict(n_steps=args.steps, burn_in=args.burn_in, thin=args.thin, n_chains=args.chains,
                step_size=args.step_size, seed=args.seed)  # fmt: skip
    sgld = dataclasses.replace(base, **{k: v for k, v in over.items() if v is not None})
    if not sweep.has_params:
        raise ValueError(
            f"{args.result!r} has no fitted weights to warm-start from; rerun its sweep with "
            "'copyhead sweep ... --keep-params' (Python: run_sweep(..., keep_params=True))"
        )
    out = Path(args.out or Path(args.result).with_name(Path(args.result).stem + "_posterior.npz"))
    check_output_path("--out", out, inputs=[args.result], kind=POSTERIOR_KIND)  # before work
    if args.netcdf:
        check_output_path("--netcdf", args.netcdf, suffixes=NETCDF_SUFFIXES,
                          inputs=[args.result, out])  # fmt: skip
    args.kept = [Path(str(out) + ".chunks")]  # what a Ctrl-C leaves to resume from
    post = run_sampler(sweep, sgld, out=out, progress=args.progress, chunk_runs=args.chunk_runs)
    print(
        f"saved {out}  ({post.meta['wall_seconds']:.1f} s, {len(post.meta['warnings'])} warnings)"
    )
    if args.netcdf:
        from .arviz_io import save_netcdf

        print(f"saved {save_netcdf(post, args.netcdf)}")
    print_posterior(post, sweep)
    if args.plot:
        from ._cli_parts import save_figure

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
    print(f"# {att}: posterior mean (MAP) over seeds; var = susceptibility")
    print(f"{'P':>6} {n1 + ' post':>9} {n1 + ' MAP':>8} {nG + ' post':>9} {nG + ' MAP':>8} "
          f"{'var ' + nG:>9} {'loss':>8} {'R-hat':>6} {'ESS':>6} {'accept':>6}")  # fmt: skip
    for i, P in enumerate(post.P):
        map1, mapG = (f"{np.nanmean(sweep[k][i]):>8.3f}" if sweep is not None else f"{'-':>8}"
                      for k in ("c1", "cG"))  # fmt: skip
        print(f"{P:>6d} {np.nanmean(m1[i]):>9.3f} {map1} {np.nanmean(mG[i]):>9.3f} {mapG} "
              f"{np.nanmean(vG[i]):>9.2e} {np.nanmean(mL[i]):>8.3f} "
              f"{np.nanmax(post['rhat'][i]):>6.2f} {np.nanmin(post['ess'][i]):>6.0f} "
              f"{np.nanmean(post['accept_mean'][i]):>6.3f}")  # fmt: skip
    if "flagged" in post.arrays and post["flagged"].any():
        print(f"# {int(post['flagged'].sum())} run(s) flagged (a non-finite chain, or R-hat/ESS "
              "NaN or past the thresholds): do not trust their means")  # fmt: skip
