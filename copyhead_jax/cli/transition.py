"""``copyhead transition``: the Bayesian transition of a configuration, printed with its
verdict, evidence and interval. Softmax by default from the posterior's free-energy profile
(:func:`copyhead_jax.transition.profile.profile_transition`); ``--method ti`` the branch free
energies with the SMC cross-check (:func:`copyhead_jax.transition.search.transition`); linear
attention its posterior crossover psi = 1/2. What the flags ask for lives in
:mod:`.transition_settings`, the output folder in :mod:`.transition_folder`, what the command
prints in :mod:`.transition_text`; ``--merge`` joins a run measured in parts (``--only-seeds``)
in :mod:`.transition_merge`."""

from __future__ import annotations

import argparse
import dataclasses
import math

from ..config import ATTENTIONS, DEFAULT_CHAINS, PROFILE_WINDOW
from ..models import head_class
from ..transition.profile.settings import PLACEMENTS
from .flags import add_preset_flags, finite_float
from .transition_folder import (
    check_out,
    run_fingerprint,
    tidy,
    transition_outputs,
    whole_fingerprint,
)
from .transition_folder import out_folder as out_folder
from .transition_settings import (
    config_from_args,
    parse_map_grid,
    parse_seed_list,
    parse_width,
    profile_settings_from_args,
    settings_from_args,
)
from .transition_text import format_profile as format_profile
from .transition_text import format_result as format_result
from .transition_text import report


def add_transition_subparser(sub) -> None:
    from ..sources import SOURCES
    from ..transition.ti_settings import RUNG_SCHEDULES, TISettings
    from ._common import add_parser, cluster_flag, progress_flags

    # the field defaults, not TISettings(): its batched default asks JAX for the backend,
    # which would initialise it for every command's parser
    d = argparse.Namespace(**{f.name: f.default for f in dataclasses.fields(TISettings)})
    p = add_parser(
        sub,
        "transition",
        help="the Bayesian transition (softmax: first order or crossover and P*_aG from the "
        "posterior's free-energy profile in a_G, or --method ti: branch free energies; "
        "linear: posterior psi = 1/2) with its interval",
        examples=(
            "copyhead transition --preset plain --L 15 --V 7 --width inf --attention softmax "
            "--n-seeds 2",
            "copyhead transition --preset plain --attention softmax --n-seeds 3 --out results/tr",
            "copyhead transition --preset plain --L 10 --V 3 --width inf --json",
            "copyhead transition --preset plain --source markov --rho 0.5 --n-seeds 1",
            "copyhead transition --preset plain --L 8 --V 4 --width inf --causal --n-seeds 1",
            "copyhead transition --preset plain --L 12 --V 6 --width inf --method ti",
            "copyhead transition --preset paper --n-seeds 10 --only-seeds 0-4 --out part_a",
            "copyhead transition --merge part_a part_b --out paper_10_seeds",
        ),
    )
    add_preset_flags(
        p,
        "the configuration (L, V, width, sigma^2, chi; the engine is always the "
        "reduced one, exact MAP, quenched embeddings)",
    )
    p.add_argument("--L", type=int, default=None, help="sequence length (default: preset's)")
    p.add_argument("--V", type=int, default=None, help="vocabulary size (default: preset's)")
    p.add_argument("--width", type=parse_width, default=None, help="d_model N or 'inf'")
    p.add_argument("--sigma2", type=finite_float, default=None, help="noise sigma^2")
    p.add_argument("--chi", type=finite_float, default=None, help="output scale chi")
    p.add_argument("--attention", choices=ATTENTIONS, default="softmax")
    p.add_argument(
        "--method",
        choices=("profile", "ti"),
        default="profile",
        help="softmax: the posterior's free-energy profile in a_G by umbrella "
        "windows (default; decides first order or crossover) or branch TI with an SMC "
        "cross-check (ti: assumes two branches split at a threshold on a_G)",
    )
    p.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="causal mask (keys b <= a; --method profile only; default off)",
    )
    p.add_argument(
        "--source",
        choices=SOURCES,
        default="iid",
        help="tokens: i.i.d. uniform (default) or a stationary Markov chain (docs/theory.md §12)",
    )
    p.add_argument(
        "--rho",
        type=finite_float,
        default=None,
        help="Markov stickiness: stay w.p. rho + (1 - rho)/V",
    )
    p.add_argument(
        "--alpha",
        type=finite_float,
        default=None,
        help="Markov: Dirichlet(alpha) random rows instead of --rho",
    )
    p.add_argument(
        "--chain-seed",
        dest="chain_seed",
        type=int,
        default=None,
        help="seed of the Dirichlet transition matrix",
    )
    p.add_argument("--n-seeds", type=int, default=2, help="seeds (default 2)")
    p.add_argument("--seed", type=int, default=0, help="Monte-Carlo seed (default 0)")
    p.add_argument(
        "--memory-budget-gb",
        type=finite_float,
        default=None,
        help="memory one group may use (default: 70%% of free device memory, else "
        "4 GiB); a group over it is refused before any work",
    )
    p.add_argument(
        "--P",
        default=None,
        metavar="GRID",
        help="MAP grid of --method ti and of linear attention (4,8,16 or "
        "LO:HI:Nlog); default around the theory's point",
    )
    p.add_argument(
        "--probes",
        default=None,
        metavar="P1,P2",
        help="profile: the first probes (default: 1.25x either side of the theory's "
        "posterior point, else of the MAP switch)",
    )
    p.add_argument(
        "--only-seeds",
        default=None,
        metavar="LIST",
        help="profile: measure only these of the --n-seeds seeds (e.g. 0-4 or 3,7), a part "
        "of the whole run; --merge joins the parts (default: every seed)",
    )
    p.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="DIR",
        help="join the --only-seeds parts of one run (their --out folders, or their "
        "transition.json) into the whole run's result in --out, every setting taken from them",
    )
    p.add_argument(
        "--max-probes", type=int, default=7, help="profile: probes per seed at most (default 7)"
    )
    p.add_argument(
        "--edge-guard",
        type=finite_float,
        default=0.25,
        help="profile: each refining probe at least this fraction of the bracket (in log P) "
        "from its ends, in [0, 0.5) (default 0.25; 0: plain regula falsi, as the runs "
        "committed before it)",
    )
    p.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default="basins",
        help="profile: once a probe is bimodal, the later probes refine the basins' log-odds "
        "at the verdict's own dividing surface (basins: its P*), or the weight past the fixed "
        "search surface a_G = mid-range (fixed: as the runs committed before it) (default "
        "basins)",
    )
    p.add_argument(
        "--spacing",
        type=finite_float,
        default=0.15,
        help="profile: window spacing in a_G (default 0.15)",
    )
    p.add_argument(
        "--window-chains",
        type=int,
        default=6,
        help="profile: chains per window = independent replicas (default 6)",
    )
    p.add_argument(
        "--window-iterations",
        dest="window_iters",
        type=int,
        default=None,
        help="profile: recorded HMC iterations per window chain: the cap with "
        "--window-ess-target (default 1000), the fixed length without (default "
        "200)",
    )
    p.add_argument(
        "--window-ess-target",
        type=finite_float,
        default=PROFILE_WINDOW.ess_min,
        metavar="N",
        help="profile: sample the windows in rounds of --window-round-iter until "
        "every window's ESS of a_G and U is >= N and their R-hat <= "
        "--window-rhat-target (--window-iterations the cap; a window that reaches it "
        "first is flagged and widens the errors); 0: a fixed length (default "
        f"{PROFILE_WINDOW.ess_min:g}, the bar below which a window is flagged)",
    )
    p.add_argument(
        "--window-rhat-target",
        type=finite_float,
        default=PROFILE_WINDOW.rhat_max,
        help=f"profile: the R-hat bar of --window-ess-target (default {PROFILE_WINDOW.rhat_max:g})",
    )
    p.add_argument(
        "--window-round-iter",
        type=int,
        default=100,
        help="profile: HMC iterations per round with --window-ess-target (default 100)",
    )
    p.add_argument(
        "--map",
        dest="map_switch",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="profile: the exact MAP's switch beside the verdict (default on)",
    )
    p.add_argument(
        "--a-thr",
        type=finite_float,
        default=None,
        help="ti: branch threshold on aG (default: the mid-value of the MAP aG)",
    )
    p.add_argument("--rungs", type=int, default=len(d.ts), help=f"TI rungs (default {len(d.ts)})")
    p.add_argument(
        "--adapt-mass",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="the rungs' HMC adapts a diagonal mass in its warm-up (default: unit "
        "mass in the whitened coordinates)",
    )
    p.add_argument(
        "--rung-schedule",
        choices=RUNG_SCHEDULES,
        default=RUNG_SCHEDULES[0],
        help="where the rungs crowd: near t = 1 (default; the integrand bends there) "
        "or near t = 0 (the earlier schedule)",
    )
    p.add_argument(
        "--t0",
        choices=("exact", "chains"),
        default="exact",
        help="the t = 0 rung: the reference draws inside the branch (exact, i.i.d.; "
        "default) or HMC chains (the earlier rung)",
    )
    p.add_argument(
        "--seeds-probe",
        choices=("anchored", "bracket"),
        default="anchored",
        help="a later seed: one probe at the earlier seeds' mean root, its root "
        "placed with the slope their brackets measured (default), or two probes "
        "bracketing it",
    )
    p.add_argument(
        "--chains",
        type=int,
        default=DEFAULT_CHAINS,
        help=f"ti: HMC chains per rung and branch (default {DEFAULT_CHAINS}, as "
        "every sampler command)",
    )
    p.add_argument(
        "--iterations",
        dest="iters",
        type=int,
        default=d.n_iter,
        help=f"ti: recorded HMC iterations per chain (default {d.n_iter})",
    )
    # the spellings before the CLI had one name per concept (sample's --iterations), kept so
    # that recorded commands still run; not shown. Default None: the namespace takes the shown
    # flag's default (set first), and get_default (which the run's folder name compares each
    # flag with) skips None and finds the same default
    for old, dest in (("--iters", "iters"), ("--window-iters", "window_iters")):
        p.add_argument(old, dest=dest, type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--rung-ess-target",
        type=finite_float,
        default=d.ess_target,
        metavar="N",
        help="ti: draw the rungs in rounds of --rung-round-iter until each rung's ESS "
        "of g and a_G is >= N and their R-hat <= --rung-rhat-target (each rung "
        "stopping on its own; --iterations the cap); default 0: the fixed --iterations",
    )
    p.add_argument(
        "--rung-rhat-target",
        type=finite_float,
        default=d.rhat_target,
        help=f"ti: the R-hat bar of --rung-ess-target (default {d.rhat_target}, the "
        "bar above which a rung is flagged)",
    )
    p.add_argument(
        "--rung-round-iter",
        type=int,
        default=d.round_iter,
        help=f"ti: HMC iterations per round with --rung-ess-target (default {d.round_iter})",
    )
    p.add_argument(
        "--smc-particles",
        type=int,
        default=d.smc_particles,
        help=f"SMC cross-check particles, 0 = none (default {d.smc_particles})",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="the folder of the result (transition.json), its figure (profile.png, "
        "or transition.png of --method ti and linear attention), the checkpoints a "
        "rerun resumes from and --method ti's MAP sweeps; default "
        "results/transition_ATT_LL_VV_NAME, NAME the preset (as copyhead sweep names "
        "it), -HASH added when other flags change the run (HASH: 8 hex digits of "
        "them). A folder whose transition.json holds another run is refused; the "
        "same run's is printed again without work",
    )
    p.add_argument(
        "--json",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="print the result as JSON (default off)",
    )
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the figure (default on)",
    )
    progress_flags(p)
    cluster_flag(
        p,
        groups="the seeds (softmax, --method profile: each seed's probes and profiles are its own)",
    )
    p.set_defaults(func=cmd_transition, paths=transition_outputs, flag_default=p.get_default)


#: why ``--cluster`` is refused by the TI method (and linear attention, which runs it)
TI_NOT_INDEPENDENT = (
    "--cluster: the seeds of --method ti (and of linear attention) are not "
    "independent: a later seed's probe is placed from the earlier seeds' roots; "
    "run it without --cluster (softmax --method profile fans out its seeds)"
)


def cmd_transition(args) -> int:
    if args.merge is not None:
        from .transition_merge import cmd_merge

        return cmd_merge(args)
    if args.P is not None:
        parse_map_grid(args.P)  # its range, before the theory places anything
    cfg = config_from_args(args)
    if args.method == "profile" and head_class(cfg.model.attention).two_branches:
        if args.P is not None:
            raise ValueError(
                "--P is the MAP grid of --method ti (and of linear attention); "
                "the profile places its own probes (--probes)"
            )
        return _cmd_profile(args, cfg)
    if args.only_seeds is not None:
        raise ValueError(
            "--only-seeds needs --method profile and softmax attention (the seeds of "
            "--method ti are not independent)"
        )
    if args.cluster is not None:
        raise ValueError(TI_NOT_INDEPENDENT)
    if cfg.model.causal:
        raise ValueError("--causal needs --method profile and softmax attention")
    return _cmd_ti(args)


def _cmd_profile(args, cfg) -> int:
    from .._checks import check_int
    from ..plots.profile import profile_figure
    from ..runner import claim
    from ..transition.profile import profile_transition
    from ..transition.store import write_checkpoint

    args.L_eff = cfg.task.L
    settings = profile_settings_from_args(args)
    n = check_int("--n-seeds", args.n_seeds, lo=1, hi=1000)
    seeds = None if args.only_seeds is None else parse_seed_list(args.only_seeds, n)
    fp = run_fingerprint(args, cfg)
    out, kept = check_out(args, fp)
    if kept is not None:
        report(args, kept, out, format_profile, profile_figure, "profile.png", kept=True)
        return 0
    rounds = out / "windows"  # each window set's rounds, resumed
    args.kept = [rounds]  # what a Ctrl-C leaves to resume from
    new = not out.exists()
    # one writer per folder; the rounds removed and the lock released once the result is saved
    held = claim(out / "transition.json", ckpt=rounds)
    try:
        res = profile_transition(
            cfg,
            n_seeds=n,
            settings=settings,
            seed=args.seed,
            progress=args.progress,
            ckpt_dir=rounds,
            cluster=args.cluster,
            seeds=seeds,
        )
    except BaseException:
        tidy(out, new, held)
        raise
    res["fingerprint"] = fp
    res["whole_fingerprint"] = whole_fingerprint(args, cfg)  # what its parts share
    held.finish(lambda: write_checkpoint(out / "transition.json", res))
    report(args, res, out, format_profile, profile_figure, "profile.png", kept=False)
    return 0


def _cmd_ti(args) -> int:
    from .._checks import check_int
    from ..plots.transition import transition_figure
    from ..transition.search import transition, transition_config

    cfg = transition_config(
        config_from_args(args), check_int("--n-seeds", args.n_seeds, lo=1, hi=1000)
    )
    settings = settings_from_args(args)
    grid = None
    if args.P is not None:
        grid = parse_map_grid(args.P)
    if args.a_thr is not None and not (math.isfinite(args.a_thr) and args.a_thr > 0):
        raise ValueError(f"--a-thr must be a finite number > 0, got {args.a_thr!r}")
    fp = run_fingerprint(args, cfg)
    out, kept = check_out(args, fp)
    if kept is not None:
        report(args, kept, out, format_result, transition_figure, "transition.png", kept=True)
        return 0
    args.kept = [out]  # what a Ctrl-C leaves to resume from
    new = not out.exists()
    try:
        res = transition(
            cfg,
            out=out,
            progress=args.progress,
            settings=settings,
            a_thr=args.a_thr,
            P_grid=grid,
            seed=args.seed,
            anchored=args.seeds_probe == "anchored",
            record={"fingerprint": fp},
        )
    except BaseException:
        tidy(out, new, None)
        raise
    report(args, res, out, format_result, transition_figure, "transition.png", kept=False)
    return 0
