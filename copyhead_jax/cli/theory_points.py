"""``copyhead theory points``, ``curve``, ``landscape`` and ``scaling``: where the EK theory puts
every P*, the order parameters and action around them, and how P* scales with L and V."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from .._checks import check_int, check_output_path
from ..config import ATTENTIONS
from .flags import finite_float
from .theory_estimate import announce_landscape, announce_scaling
from .theory_options import (
    attentions,
    check_plot_paths,
    check_theory_memory,
    common_flags,
    jsonable,
    plot_outputs,
    preset_label,
    save_attention_plot,
    save_plot,
    theory_params,
    theory_subcommand,
)

EPILOG_POINTS = """examples:
  copyhead theory points --preset paper
  copyhead theory points --preset paper-chi-lik --objective post --json
  copyhead theory points --L 40 --V 8 --no-chi-in-readout-prior --linear-scale inv_sqrt_L
  copyhead theory points --objective bayes --preset plain --L 15 --V 7 --attention softmax"""
EPILOG_CURVE = """examples:
  copyhead theory curve --preset paper --attention softmax --out figs/curve
  copyhead theory curve --preset plain --P-min 1 --P-max 1e4 --no-plot --json"""
EPILOG_LANDSCAPE = """examples:
  copyhead theory landscape --preset paper --attention softmax
  copyhead theory landscape --attention linear --P 50 100 400 --no-plot --json"""
EPILOG_SCALING = """examples:
  copyhead theory scaling --preset paper --L 10:32 --V 5
  copyhead theory scaling --preset paper-chi-lik --L 25 --V 2:12 --json --no-plot
  copyhead theory scaling --objective bayes --preset plain --attention softmax --L 8,12 --V 3,5"""


def add_points_subparsers(sub) -> None:
    """Register ``points``, ``curve``, ``landscape`` and ``scaling`` under ``copyhead theory``."""
    p = theory_subcommand(
        sub, "points", "every P* and the spinodals (docs/theory.md §5, §12)", EPILOG_POINTS
    )
    p.add_argument("--attention", choices=(*ATTENTIONS, "both"), default="both")
    common_flags(p, objectives=("map", "post", "bayes"))
    from .theory_bayes import add_bayes_flags
    from .theory_beyond import add_source_flags

    add_source_flags(p)
    add_bayes_flags(p)
    p.set_defaults(func=cmd_points, paths=no_files)

    p = theory_subcommand(
        sub, "curve", "order parameters and action versus P (JSON/PNG)", EPILOG_CURVE
    )
    p.add_argument("--attention", choices=(*ATTENTIONS, "both"), default="both")
    common_flags(p)
    p.add_argument("--P-min", dest="P_min", type=finite_float, default=None)
    p.add_argument("--P-max", dest="P_max", type=finite_float, default=None)
    p.add_argument("--n-P", dest="n_P", type=int, default=121)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the figure (default on)",
    )
    p.set_defaults(func=cmd_curve, paths=plot_outputs("curve"))

    p = theory_subcommand(
        sub, "landscape", "V_lin contours / V_soft(beta) wells around P*", EPILOG_LANDSCAPE
    )
    p.add_argument("--attention", choices=(*ATTENTIONS, "both"), default="softmax")
    common_flags(p)
    p.add_argument("--P", type=finite_float, nargs="+", default=None)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the figure (default on)",
    )
    p.set_defaults(func=cmd_landscape, paths=plot_outputs("landscape"))

    p = theory_subcommand(
        sub, "scaling", "P* over grids of L and V, fitted exponents, PNG", EPILOG_SCALING
    )
    p.add_argument("--attention", choices=(*ATTENTIONS, "both"), default="both")
    common_flags(p, ranges=True, objectives=("map", "post", "bayes"))
    add_bayes_flags(p)
    p.add_argument("--out", default=None, help="PNG path")
    p.add_argument(
        "--plot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="save the figure (default on)",
    )
    p.set_defaults(func=cmd_scaling, paths=scaling_outputs)


def no_files(args):
    """A command that writes and reads no file."""
    return [], []


def scaling_outputs(args):
    """``copyhead theory scaling``: its figure, drawn when a scan has several L or V."""
    from ._common import figure_outputs

    if not (args.plot and (len(args.L or []) > 1 or len(args.V or []) > 1)):
        return [], []
    path = args.out or f"theory_scaling_{preset_label(args)}.png"
    return figure_outputs("--out", path, (".png",)), []


def cmd_points(args) -> dict[str, Any]:
    from ..theory.points import transition_points
    from .theory_beyond import cmd_points_beyond, needs_beyond

    if args.objective == "bayes":  # the Bayesian transition, §13
        from .theory_bayes import cmd_points_bayes

        return cmd_points_bayes(args)
    if needs_beyond(args):  # Markov tokens or the causal mask: minimisers, §12
        return cmd_points_beyond(args, theory_params(args), jsonable)
    res = transition_points(theory_params(args), args.attention, args.objective)
    if args.json:
        print(json.dumps(jsonable(res), indent=2))
    else:
        for k in ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "first_order"):
            if k in res:
                print(f"{k:>12}: {res[k]}")
        for note in res["notes"]:
            print("note:", note)
        if res["not_found"]:
            print(f"not found: {len(res['not_found'])} ({', '.join(res['not_found'])})")
    return res


def _default_P(params, attention, objective):
    from ..theory.points import transition_points

    pts = transition_points(params, attention, objective)
    ref = [pts.get(k) for k in ("P_c1", "P_cG", "P_aG", "P_aG_crossover")]
    ref = [r for r in ref if r]
    return pts, float(min(ref)) / 30.0, float(max(ref)) * 30.0


def cmd_curve(args) -> dict[str, Any]:
    from ..plots.theory import plot_curve
    from ..theory.minima import theory_curve

    check_int("--n-P", args.n_P, lo=2, hi=10**6)
    for name in ("P_min", "P_max"):
        if getattr(args, name) is not None and not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if args.P_min is not None and args.P_max is not None and not args.P_min < args.P_max:
        raise ValueError(f"--P-min ({args.P_min:g}) must be below --P-max ({args.P_max:g})")
    from ..theory.minima import curve_bytes

    check_theory_memory(
        max(curve_bytes(args.n_P, a) for a in attentions(args.attention)),
        f"the curve over {args.n_P} P",
        "use a smaller --n-P",
    )
    params = theory_params(args)
    check_plot_paths(args, "curve")
    out: dict[str, Any] = {}
    for att in attentions(args.attention):
        pts, lo, hi = _default_P(params, att, args.objective)
        lo, hi = args.P_min or lo, args.P_max or hi
        if not lo < hi:
            raise ValueError(f"--P-min ({lo:g}) must be below --P-max ({hi:g})")
        P = np.geomspace(lo, hi, args.n_P)
        curve = theory_curve(params, P, att, args.objective)
        out[att] = curve
        if args.plot:
            save_attention_plot(args, att, "curve", lambda: plot_curve(curve, pts))
    if args.json:
        print(json.dumps(jsonable(out)))
    return out


def cmd_landscape(args) -> dict[str, Any]:
    from ..plots.theory import plot_landscape
    from ..theory import theory_of
    from ..theory.minima import landscape, landscape_bytes
    from ..theory.points import transition_points

    n_P = len(args.P) if args.P else 5  # the default: five P around the transition
    check_theory_memory(
        max(landscape_bytes(n_P, a) for a in attentions(args.attention)),
        f"the landscape at {n_P} P",
        "give fewer --P values",
    )
    params = theory_params(args)
    check_plot_paths(args, "landscape")
    P_by: dict[str, list[float]] = {}
    for att in attentions(args.attention):
        if args.P:
            P_by[att] = list(args.P)
            continue
        pts = transition_points(params, att, args.objective)
        if theory_of(att).two_branches:
            Ps = pts["P_aG"] or pts["P_aG_crossover"]
            sp = pts["spinodals"] or [0.8 * Ps, 1.25 * Ps]
            P_by[att] = [0.9 * sp[0], sp[0] * 1.02, Ps, sp[1] * 0.98, 1.1 * sp[1]]
        else:
            P_by[att] = [0.5 * pts["P_c1"], 2.0 * pts["P_c1"], pts["P_cG"], 4.0 * pts["P_cG"]]
    announce_landscape(params, P_by, args.objective)  # what it will cost, before the work
    out: dict[str, Any] = {}
    for att, P in P_by.items():
        data = landscape(params, P, att, args.objective)
        out[att] = data
        if args.plot:
            save_attention_plot(args, att, "landscape", lambda: plot_landscape(data))
    if args.json:
        print(json.dumps(jsonable(out)))
    return out


def cmd_scaling(args) -> dict[str, Any]:
    from ..plots.theory import plot_scaling
    from ..theory.points import points_bytes
    from ..theory.scaling import scaling_fits, scaling_table

    if args.objective == "bayes":  # the law of the Bayesian transition, §13.10
        from .theory_bayes import cmd_scaling_bayes

        return cmd_scaling_bayes(args)
    params = theory_params(args, L=None, V=None)
    Ls = args.L or [params.L]
    Vs = args.V or [params.V]
    for v in Ls:
        check_int("--L entry", v, lo=2, hi=10**6)
    for v in Vs:
        check_int("--V entry", v, lo=2, hi=10**6)
    n = len(Ls) * len(Vs)
    check_theory_memory(
        points_bytes(n, args.attention),
        f"the scaling table over {len(Ls)} L x {len(Vs)} V",
        "give fewer --L or --V values",
    )
    plot = args.plot and (len(Ls) > 1 or len(Vs) > 1)
    default = f"theory_scaling_{preset_label(args)}.png"
    if plot:  # the figure's path, checked before the theory is computed
        check_output_path("--out", args.out or default, suffixes=(".png",))
    announce_scaling(params, Ls, Vs, args.attention, args.objective)  # before the work
    table = scaling_table(
        params, L_values=Ls, V_values=Vs, attention=args.attention, objective=args.objective
    )
    fits = scaling_fits(table)
    res = {"table": table, "fits": fits}
    if args.json:
        print(json.dumps(jsonable(res)))
    else:
        _print_scaling(table, fits)
    if plot:
        path = save_plot(plot_scaling(table, fits), args.out, default)
        print(f"wrote {path}", file=sys.stderr)
    return res


def _print_scaling(table, fits) -> None:
    keys = [k for k in ("P_c1", "P_cG", "P_cG_half", "P_aG") if k in table]
    print(f"{'L':>5} {'V':>4} " + " ".join(f"{k:>12}" for k in keys))
    for i, L in enumerate(table["L"]):
        for j, V in enumerate(table["V"]):
            vals = " ".join(f"{table[k][i, j]:12.5g}" for k in keys)
            print(f"{L:5d} {V:4d} {vals}")
    for k in keys:
        for axis in ("L", "V"):
            for f in fits[k].get(axis, [])[:1]:
                if f["exponent"] is None:
                    continue
                ci = f"[{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]" if f["ci"] else ""
                print(f"{k}: exponent in {axis} = {f['exponent']:.3f} {ci} (R^2 {f['r2']:.4f})")
        law = fits[k].get("law")
        if law and law["r2"] is not None:
            print(f"{k}: paper law {law['law']}: R^2 = {law['r2']:.4f}")
