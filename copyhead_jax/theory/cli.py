"""``copyhead theory {points,curve,landscape,scaling}``: a thin CLI over the theory API.

``add_theory_subparser(subparsers)`` registers the ``theory`` command on an argparse
subparsers object; ``python -m copyhead_jax.theory.cli points --json`` runs it stand-alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import check_int, check_output_path


def _range(spec: str) -> list[int]:
    """``'10:60'`` (inclusive), ``'10:60:5'``, ``'10,20,40'`` or ``'25'``."""
    try:
        if ":" in spec:
            parts = [int(x) for x in spec.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi, step = (*parts, 1) if len(parts) == 2 else parts
            vals = list(range(lo, hi + 1, step))
        else:
            vals = [int(x) for x in spec.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'a:b', 'a:b:step', 'a,b,c' or an int, got {spec!r}"
        ) from None
    if not vals:
        raise argparse.ArgumentTypeError(f"empty range {spec!r}")
    return vals


def _common(p: argparse.ArgumentParser, *, ranges: bool = False) -> None:
    p.add_argument("--preset", default="paper", choices=("paper", "plain"))
    if ranges:
        p.add_argument("--L", type=_range, default=None, help="'10:60', '10:60:5', '10,20' or 25")
        p.add_argument("--V", type=_range, default=None, help="'2:12' or 5")
    else:
        p.add_argument("--L", type=int, default=None)
        p.add_argument("--V", type=int, default=None)
    for name in ("sigma2", "chi", "sigma_e", "sigma_p", "sigma_G", "sigma_O"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, default=None)
    p.add_argument("--likelihood", choices=("per_sequence", "per_position"), default=None)
    p.add_argument("--linear-scale", dest="linear_scale", choices=("none", "inv_L"), default=None)
    p.add_argument("--objective", choices=("map", "post"), default="map")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _params(args, **override):
    from .params import TheoryParams

    fields = ("sigma2", "chi", "sigma_e", "sigma_p", "sigma_G", "sigma_O")
    kw = {k: getattr(args, k) for k in (*fields, "likelihood", "linear_scale")}
    kw = {k: v for k, v in kw.items() if v is not None}
    for k in ("L", "V"):
        v = override.get(k, getattr(args, k))
        if v is not None:
            kw[k] = v
    return TheoryParams.preset(args.preset, **kw)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def _save(fig, out: str | None, default: str) -> str:
    path = Path(out or default)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise ValueError(f"cannot write the figure {str(path)!r}: {e.strerror or e}") from None
    return str(path)


def _check_plot_paths(args, kind: str) -> None:
    """The figures' paths, checked before the theory is computed (issue 31)."""
    if args.no_plot:
        return
    for att in _attentions(args.attention):
        path = f"{args.out}_{att}.png" if args.out else f"theory_{kind}_{args.preset}_{att}.png"
        check_output_path("--out", path, suffixes=(".png",))


def _attentions(a: str) -> list[str]:
    return ["linear", "softmax"] if a == "both" else [a]


# ---------------------------------------------------------------------------------------------


def cmd_points(args) -> dict[str, Any]:
    from .points import transition_points

    res = transition_points(_params(args), args.attention, args.objective)
    if args.json:
        print(json.dumps(_jsonable(res), indent=2))
    else:
        for k in ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "first_order"):
            if k in res:
                print(f"{k:>12}: {res[k]}")
        for note in res["notes"]:
            print("note:", note)
    return res


def _default_P(params, attention, objective):
    from .points import transition_points

    pts = transition_points(params, attention, objective)
    ref = [pts.get(k) for k in ("P_c1", "P_cG", "P_aG", "P_aG_crossover")]
    ref = [r for r in ref if r]
    return pts, float(min(ref)) / 30.0, float(max(ref)) * 30.0


def cmd_curve(args) -> dict[str, Any]:
    from .minima import theory_curve
    from .plots import plot_curve

    check_int("--n-P", args.n_P, lo=2, hi=10**6)
    for name in ("P_min", "P_max"):
        if getattr(args, name) is not None and not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if args.P_min is not None and args.P_max is not None and not args.P_min < args.P_max:
        raise ValueError(f"--P-min ({args.P_min:g}) must be below --P-max ({args.P_max:g})")
    params = _params(args)
    _check_plot_paths(args, "curve")
    out: dict[str, Any] = {}
    for att in _attentions(args.attention):
        pts, lo, hi = _default_P(params, att, args.objective)
        lo, hi = args.P_min or lo, args.P_max or hi
        if not lo < hi:
            raise ValueError(f"--P-min ({lo:g}) must be below --P-max ({hi:g})")
        P = np.geomspace(lo, hi, args.n_P)
        curve = theory_curve(params, P, att, args.objective)
        out[att] = curve
        if not args.no_plot:
            _save_attention_plot(args, att, "curve", lambda: plot_curve(curve, pts))
    if args.json:
        print(json.dumps(_jsonable(out)))
    return out


def _save_attention_plot(args, att: str, kind: str, draw) -> None:
    """``draw()``'s figure to ``OUT_ATT.png`` (or the default name of ``kind``), announced."""
    path = _save(
        draw(),
        f"{args.out}_{att}.png" if args.out else None,
        f"theory_{kind}_{args.preset}_{att}.png",
    )
    print(f"wrote {path}", file=sys.stderr)


def cmd_landscape(args) -> dict[str, Any]:
    from .minima import landscape
    from .plots import plot_landscape
    from .points import transition_points

    params = _params(args)
    _check_plot_paths(args, "landscape")
    out: dict[str, Any] = {}
    for att in _attentions(args.attention):
        if args.P:
            P = args.P
        else:
            pts = transition_points(params, att, args.objective)
            if att == "softmax":
                Ps = pts["P_aG"] or pts["P_aG_crossover"]
                sp = pts["spinodals"] or [0.8 * Ps, 1.25 * Ps]
                P = [0.9 * sp[0], sp[0] * 1.02, Ps, sp[1] * 0.98, 1.1 * sp[1]]
            else:
                P = [0.5 * pts["P_c1"], 2.0 * pts["P_c1"], pts["P_cG"], 4.0 * pts["P_cG"]]
        data = landscape(params, P, att, args.objective)
        out[att] = data
        if not args.no_plot:
            _save_attention_plot(args, att, "landscape", lambda: plot_landscape(data))
    if args.json:
        print(json.dumps(_jsonable(out)))
    return out


def cmd_scaling(args) -> dict[str, Any]:
    from .plots import plot_scaling
    from .scaling import scaling_fits, scaling_table

    params = _params(args, L=None, V=None)
    Ls = args.L or [params.L]
    Vs = args.V or [params.V]
    for v in Ls:
        check_int("--L entry", v, lo=2, hi=10**6)
    for v in Vs:
        check_int("--V entry", v, lo=2, hi=10**6)
    table = scaling_table(
        params, L_values=Ls, V_values=Vs, attention=args.attention, objective=args.objective
    )
    fits = scaling_fits(table)
    res = {"table": table, "fits": fits}
    if args.json:
        print(json.dumps(_jsonable(res)))
    else:
        _print_scaling(table, fits)
    if not args.no_plot and (len(Ls) > 1 or len(Vs) > 1):
        path = _save(plot_scaling(table, fits), args.out, f"theory_scaling_{args.preset}.png")
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


# ---------------------------------------------------------------------------------------------


def add_theory_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``theory`` with ``points``, ``curve``, ``landscape``, ``scaling``."""
    theory = subparsers.add_parser("theory", help="EK theory: transition points, curves, scaling")
    sub = theory.add_subparsers(dest="theory_cmd", required=True)

    p = sub.add_parser("points", help="every P* and the spinodals (docs/theory.md §5)")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p)
    p.set_defaults(func=cmd_points)

    p = sub.add_parser("curve", help="order parameters and action versus P (JSON/PNG)")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p)
    p.add_argument("--P-min", dest="P_min", type=float, default=None)
    p.add_argument("--P-max", dest="P_max", type=float, default=None)
    p.add_argument("--n-P", dest="n_P", type=int, default=121)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_curve)

    p = sub.add_parser("landscape", help="V_lin contours / V_soft(beta) wells around P*")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="softmax")
    _common(p)
    p.add_argument("--P", type=float, nargs="+", default=None)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_landscape)

    p = sub.add_parser("scaling", help="P* over grids of L and V, fitted exponents, PNG")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p, ranges=True)
    p.add_argument("--out", default=None, help="PNG path")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_scaling)
    return theory


def main(argv: list[str] | None = None) -> Any:
    """``python -m copyhead_jax.theory.cli points --json`` (the ``theory`` word is optional)."""
    parser = argparse.ArgumentParser(prog="copyhead")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_theory_subparser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "theory":
        argv = ["theory", *argv]
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as e:
        parser.error(str(e))


if __name__ == "__main__":
    main()
