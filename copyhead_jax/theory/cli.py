"""``copyhead theory {points,curve,landscape,scaling,sensitivity,fit}``: a thin CLI over the
theory API.

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
from ..config import ATTENTIONS, LIKELIHOODS, LINEAR_SCALES
from ..presets import PRESETS


def parse_range(spec: str) -> list[int]:
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


_SCALES = ("sigma2", "chi", "sigma_e", "sigma_p", "sigma_G", "sigma_O")
_SWITCHES = ("likelihood", "linear_scale", "chi_in_readout_prior", "chi_in_noise")


def _common(p: argparse.ArgumentParser, *, ranges: bool = False, objectives=("map", "post"),
            objective="map") -> None:  # fmt: skip
    """The parameters of the theory (a preset, then overrides) and the output options."""
    p.add_argument("--preset", default="paper", choices=tuple(PRESETS),
                   help="the reading (default paper); the flags below override it")  # fmt: skip
    if ranges:
        p.add_argument("--L", type=parse_range, default=None,
                       help="'10:60', '10:60:5', '10,20' or 25")  # fmt: skip
        p.add_argument("--V", type=parse_range, default=None, help="'2:12' or 5")
    else:
        p.add_argument("--L", type=int, default=None, help="sequence length")
        p.add_argument("--V", type=int, default=None, help="vocabulary size")
    for name in _SCALES:
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=float, default=None,
                       help=f"{name} (docs/theory.md §2)")  # fmt: skip
    p.add_argument("--likelihood", choices=LIKELIHOODS, default=None,
                   help="noise per sequence entry or L times it (per_position), §2b")  # fmt: skip
    p.add_argument("--linear-scale", dest="linear_scale", choices=LINEAR_SCALES, default=None,
                   help="linear attention A = s, s/sqrt(L) or s/L (§2b)")  # fmt: skip
    p.add_argument("--chi-in-readout-prior", dest="chi_in_readout_prior", default=None,
                   action=argparse.BooleanOptionalAction,
                   help="readout prior sigma_O^2/(chi N); --no-...: sigma_O^2/N (§2b)")  # fmt: skip
    p.add_argument("--chi-in-noise", dest="chi_in_noise", default=None,
                   action=argparse.BooleanOptionalAction,
                   help="noise sigma^2/chi; --no-...: sigma^2 (§2b)")  # fmt: skip
    p.add_argument("--objective", choices=objectives, default=objective,
                   help=f"MAP or posterior (adds D) objective (default {objective})")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _params(args, **override):
    from .params import TheoryParams

    kw = {k: getattr(args, k) for k in (*_SCALES, *_SWITCHES)}
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
    return list(ATTENTIONS) if a == "both" else [a]


# ---------------------------------------------------------------------------------------------


def cmd_points(args) -> dict[str, Any]:
    from .beyond_cli import cmd_points_beyond, needs_beyond
    from .points import transition_points

    if needs_beyond(args):  # Markov tokens or the causal mask: minimisers, §12
        return cmd_points_beyond(args, _params(args), _jsonable)
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


def cmd_sensitivity(args) -> dict[str, Any]:
    from .sensitivity import sensitivity

    objectives = ("map", "post") if args.objective == "both" else (args.objective,)
    res = sensitivity(_params(args), objectives=objectives, h=args.step)
    if args.json:
        print(json.dumps(_jsonable(res), indent=2))
        return res
    for obj in objectives:
        r = res[obj]
        P = "  ".join(f"{k} {v:.4g}" for k, v in r["P"].items())
        kind = "first order" if r["first_order"] else "crossover: no first-order jump"
        print(f"[{obj}] {P}  (P_aG: {kind})")
        print(f"{'d log P*/d log x':>28} " + " ".join(f"{k:>9}" for k in r["P"]))
        for name, row in r["slopes"].items():
            print(f"{name:>28} " + " ".join(f"{v:9.4f}" for v in row.values()))
        print(f"{'factor P*(switch)/P*':>28}")
        for name, row in r["factors"].items():
            print(f"{name:>28} " + " ".join(f"{v:9.4g}" for v in row.values()))
    return res


def cmd_fit(args) -> dict[str, Any]:
    from .sensitivity import fit

    res = fit(_params(args), args.target, args.free, objective=args.objective, tol=args.tol,
              max_iter=args.max_iter)  # fmt: skip
    if args.json:
        print(json.dumps(_jsonable(res), indent=2))
        return res
    fitted = ", ".join(f"{k} = {v:.6g}" for k, v in res["fitted"].items())
    print(f"[{args.objective}] fitted {fitted}")
    print(f"{'':>6} {'target':>10} {'model':>10} {'log(P*/target)':>15}")
    for k, t in res["targets"].items():
        print(f"{k:>6} {t:10.4g} {res['model'][k]:10.4g} {res['residuals_log'][k]:15.4f}")
    inv = res["invariants"]
    print(f"Jacobian rank {inv['rank']} for {inv['n_targets']} targets")
    for v in inv["ratios"]:
        print(f"invariant: {v['ratio']} = {v['model']:.4g} whatever {', '.join(res['free'])} "
              f"(target {v['target']:.4g})")  # fmt: skip
    for v in inv["combinations"]:
        print(f"fixed to first order: {v['monomial']} = {v['model']:.4g} "
              f"(target {v['target']:.4g})")  # fmt: skip
    print(res["verdict"])
    return res


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


_EPILOGS = {
    "points": """examples:
  copyhead theory points --preset paper
  copyhead theory points --preset paper-chi-lik --objective post --json
  copyhead theory points --L 40 --V 8 --no-chi-in-readout-prior --linear-scale inv_sqrt_L""",
    "curve": """examples:
  copyhead theory curve --preset paper --attention softmax --out figs/curve
  copyhead theory curve --preset plain --P-min 1 --P-max 1e4 --no-plot --json""",
    "landscape": """examples:
  copyhead theory landscape --preset paper --attention softmax
  copyhead theory landscape --attention linear --P 50 100 400 --no-plot --json""",
    "scaling": """examples:
  copyhead theory scaling --preset paper --L 10:32 --V 5
  copyhead theory scaling --preset paper-chi-lik --L 25 --V 2:12 --json --no-plot""",
    "sensitivity": """examples:
  copyhead theory sensitivity --preset paper
  copyhead theory sensitivity --preset paper-chi-lik --objective map --json
  copyhead theory sensitivity --L 40 --sigma2 10 --no-chi-in-noise

slopes are central differences in log x (step --step); L and V: x +- 1. A factor is
P*(switched)/P* for every other value of a switch. P_aG is the crossover of the global
minimiser where the softmax transition is not first order (the header says which).""",
    "fit": """examples:
  copyhead theory fit --preset paper --target P_c1=23,P_cG=322,P_aG=300 --free sigma2,chi
  copyhead theory fit --preset paper-chi-lik --target P_aG=300 --free sigma2 --json
  copyhead theory fit --target P_c1=23,P_cG=322 --free sigma_e,sigma_p --tol 0.01

Levenberg-Marquardt in log parameters on log P*. Invariants: ratios of targets that no free
parameter moves (equal slopes), and the left null space of the Jacobian; the verdict says when
no fit within --tol exists and which invariant forbids it.""",
}


def _sub(sub, name: str, help: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=help, epilog=_EPILOGS[name],
                          formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip


def _free(spec: str) -> list[str]:
    from .sensitivity import parse_free

    try:
        return parse_free(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _targets(spec: str) -> dict[str, float]:
    from .sensitivity import parse_targets

    try:
        return parse_targets(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_theory_subparser(subparsers) -> argparse.ArgumentParser:
    """Register ``theory`` with ``points``, ``curve``, ``landscape``, ``scaling``,
    ``sensitivity``, ``fit``."""
    theory = subparsers.add_parser(
        "theory", help="EK theory: transition points, curves, scaling, sensitivity, fits"
    )
    sub = theory.add_subparsers(dest="theory_cmd", required=True)

    p = _sub(sub, "points", "every P* and the spinodals (docs/theory.md §5, §12)")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p)
    from .beyond_cli import add_source_flags

    add_source_flags(p)
    p.set_defaults(func=cmd_points)

    p = _sub(sub, "curve", "order parameters and action versus P (JSON/PNG)")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p)
    p.add_argument("--P-min", dest="P_min", type=float, default=None)
    p.add_argument("--P-max", dest="P_max", type=float, default=None)
    p.add_argument("--n-P", dest="n_P", type=int, default=121)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_curve)

    p = _sub(sub, "landscape", "V_lin contours / V_soft(beta) wells around P*")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="softmax")
    _common(p)
    p.add_argument("--P", type=float, nargs="+", default=None)
    p.add_argument("--out", default=None, help="PNG path stem")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_landscape)

    p = _sub(sub, "scaling", "P* over grids of L and V, fitted exponents, PNG")
    p.add_argument("--attention", choices=("linear", "softmax", "both"), default="both")
    _common(p, ranges=True)
    p.add_argument("--out", default=None, help="PNG path")
    p.add_argument("--no-plot", action="store_true")
    p.set_defaults(func=cmd_scaling)

    p = _sub(sub, "sensitivity", "log-log slope of every P* in every parameter, factor of every "
             "switch (docs/theory.md §2b, §5)")  # fmt: skip
    _common(p, objectives=("map", "post", "both"), objective="both")
    p.add_argument("--step", type=float, default=1e-2, help="log step of the differences")
    p.set_defaults(func=cmd_sensitivity)

    p = _sub(sub, "fit", "least-squares fit of log P* to targets over the free parameters")
    _common(p)
    p.add_argument("--target", type=_targets, required=True,
                   help="target P*, e.g. 'P_c1=23,P_cG=322,P_aG=300'")  # fmt: skip
    p.add_argument("--free", type=_free, required=True,
                   help="parameters to adjust: 'sigma2,chi' (sigma2, chi, sigma_O, sigma_G, "
                   "sigma_e, sigma_p)")  # fmt: skip
    p.add_argument("--tol", type=float, default=0.05,
                   help="relative error that counts as a fit (default 0.05)")  # fmt: skip
    p.add_argument("--max-iter", dest="max_iter", type=int, default=40,
                   help="Levenberg-Marquardt iterations at most")  # fmt: skip
    p.set_defaults(func=cmd_fit)
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
