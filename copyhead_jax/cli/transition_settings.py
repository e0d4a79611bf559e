"""What ``copyhead transition``'s flags ask for: the configuration (:func:`config_from_args`),
branch TI's Monte-Carlo settings (:func:`settings_from_args`), the profile's search and window
settings (:func:`profile_settings_from_args`), and the values of the flags that are lists or
``inf`` (:func:`parse_width`, :func:`parse_map_grid`, :func:`parse_probes`,
:func:`parse_seed_list`), each refused in
one line naming its flag."""

from __future__ import annotations

import argparse
import math


def parse_width(text: str):
    """``--width``: an int, or ``inf`` (``infinity``) for the infinite-width limit."""
    w = text.strip().lower()
    try:
        return float("inf") if w in ("inf", "infinity") else int(w)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--width must be an int >= 1 or 'inf', got {text!r}"
        ) from None


def parse_map_grid(text: str) -> tuple[int, ...]:
    """``4,8,16`` or ``LO:HI:Nlog`` (as ``copyhead sweep --P``; not imported from ``cli``,
    which imports this module) -> at least 2 sorted distinct ints >= 1."""
    import re

    import numpy as np

    m = re.fullmatch(r"(\d+):(\d+):(\d+)log", text.strip())
    try:
        vals = (
            np.geomspace(int(m[1]), int(m[2]), int(m[3]))
            if m
            else [int(p) for p in text.split(",") if p.strip()]
        )
        grid = tuple(sorted({int(round(float(p))) for p in vals}))
    except (ValueError, ZeroDivisionError):
        grid = ()
    if len(grid) < 2 or grid[0] < 1 or grid[-1] > P_MAX:
        raise ValueError(
            f"--P must hold at least 2 values in [1, {P_MAX}] (4,8,16 or LO:HI:Nlog), got {text!r}"
        )
    return grid


#: the largest P of a MAP grid (as the sweep's)
P_MAX = 10**7


def settings_from_args(args):
    from .._checks import check_int
    from ..transition.ti_settings import TISettings, rung_ts

    K = check_int("--rungs", args.rungs, lo=2, hi=64)
    return TISettings(
        ts=rung_ts(K, args.rung_schedule),
        adapt_mass=args.adapt_mass,
        exact_t0=args.t0 == "exact",
        n_chains=args.chains,
        n_iter=args.iters,
        smc_particles=args.smc_particles,
        ess_target=args.rung_ess_target,
        rhat_target=args.rung_rhat_target,
        round_iter=args.rung_round_iter,
    )


def config_from_args(args):
    from .._checks import check_int
    from ..config.presets import preset

    cfg = preset(args.preset, args.reading)
    task = {
        k: check_int(f"--{k}", getattr(args, k), lo=2, hi=10**4)
        for k in ("L", "V")
        if getattr(args, k) is not None
    }
    chain = {
        k: getattr(args, k) for k in ("rho", "alpha", "chain_seed") if getattr(args, k) is not None
    }
    if args.source != "markov" and chain:
        raise ValueError("--rho, --alpha and --chain-seed need --source markov")
    task.update(source=args.source, **chain)
    model = {"attention": args.attention, "engine": "reduced", "causal": args.causal}
    if args.width is not None:
        model["width"] = args.width
    post = {k: getattr(args, k) for k in ("sigma2", "chi") if getattr(args, k) is not None}
    sweep = {} if args.memory_budget_gb is None else {"memory_budget_gb": args.memory_budget_gb}
    return cfg.replace(
        task=task, model=model, posterior=post, sweep=sweep, train=dict(train_embeddings=False)
    )


def parse_probes(text: str) -> tuple[int, ...]:
    """``48`` or ``40,48,56`` -> sorted distinct ints >= 2."""
    try:
        vals = tuple(sorted({int(p) for p in text.split(",") if p.strip()}))
    except ValueError:
        vals = ()
    if not vals or vals[0] < 2:
        raise ValueError(f"--probes must hold ints >= 2 (e.g. 40,56), got {text!r}")
    return vals


def parse_seed_list(text: str, n_seeds: int) -> tuple[int, ...]:
    """``3``, ``0,2`` or ``0-4,7`` -> sorted distinct sweep seeds in ``[0, n_seeds)``."""
    bad = ValueError(
        f"--only-seeds must list distinct seeds in [0, {n_seeds - 1}] (e.g. 0-4 or 3,7), "
        f"got {text!r}"
    )
    got: list[int] = []
    for item in text.split(","):
        lo, dash, hi = item.strip().partition("-")
        try:
            a, b = int(lo), int(hi if dash else lo)
        except ValueError:
            raise bad from None
        if not 0 <= a <= b < n_seeds:
            raise bad
        got += range(a, b + 1)
    if len(set(got)) < len(got):
        raise bad
    return tuple(sorted(got))


def profile_settings_from_args(args):
    from .._checks import check_float, check_int
    from ..transition.profile import (
        FIXED_WINDOW_ITERS,
        PROFILE_UMBRELLA,
        SearchSettings,
        UmbrellaSettings,
        default_profile_settings,
    )

    probes = None if args.probes is None else parse_probes(args.probes)
    if not (math.isfinite(args.spacing) and 0.01 <= args.spacing <= 1.0):
        raise ValueError(f"--spacing must lie in [0.01, 1], got {args.spacing!r}")
    if not (math.isfinite(args.edge_guard) and 0 <= args.edge_guard < 0.5):
        raise ValueError(f"--edge-guard must lie in [0, 0.5), got {args.edge_guard!r}")
    iters = args.window_iters
    if iters is None:
        iters = PROFILE_UMBRELLA.n_iter if args.window_ess_target else FIXED_WINDOW_ITERS
    um = UmbrellaSettings(
        n_chains=check_int("--window-chains", args.window_chains, lo=2, hi=64),
        n_iter=check_int("--window-iterations", iters, lo=16, hi=10**5),
        ess_target=check_float(
            "--window-ess-target", args.window_ess_target, lo=0.0, lo_open=False
        ),
        rhat_target=check_float("--window-rhat-target", args.window_rhat_target, lo=1.0),
        round_iter=check_int("--window-round-iter", args.window_round_iter, lo=1, hi=10**5),
    )
    prof = default_profile_settings(args.L_eff, spacing=args.spacing, umbrella=um)
    return SearchSettings(
        probes=probes,
        max_probes=check_int("--max-probes", args.max_probes, lo=2, hi=64),
        edge_guard=args.edge_guard,
        placement=args.placement,
        profile=prof,
        map_switch=args.map_switch,
    )
