"""``copyhead theory sensitivity`` and ``fit``: how each P* moves with each parameter and
switch, and the parameters that put the P* on given targets (or the invariant that forbids it)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .flags import finite_float
from .theory_options import common_flags, jsonable, theory_params, theory_subcommand

EPILOG_SENSITIVITY = """examples:
  copyhead theory sensitivity --preset paper
  copyhead theory sensitivity --preset paper-chi-lik --objective map --json
  copyhead theory sensitivity --L 40 --sigma2 10 --no-chi-in-noise

slopes are central differences in log x (step --step); L and V: x +- 1. A factor is
P*(switched)/P* for every other value of a switch. P_aG is the crossover of the global
minimiser where the softmax transition is not first order (the header says which)."""
EPILOG_FIT = """examples:
  copyhead theory fit --preset paper --target P_c1=23,P_cG=322,P_aG=300 --free sigma2,chi
  copyhead theory fit --preset paper-chi-lik --target P_aG=300 --free sigma2 --json
  copyhead theory fit --target P_c1=23,P_cG=322 --free sigma_e,sigma_p --tol 0.01

Levenberg-Marquardt in log parameters on log P*. Invariants: ratios of targets that no free
parameter moves (equal slopes), and the left null space of the Jacobian; the verdict says when
no fit within --tol exists and which invariant forbids it."""


def add_fit_subparsers(sub) -> None:
    """Register ``sensitivity`` and ``fit`` under ``copyhead theory``."""
    p = theory_subcommand(
        sub,
        "sensitivity",
        "log-log slope of every P* in every parameter, factor of every "
        "switch (docs/theory.md §2b, §5)",
        EPILOG_SENSITIVITY,
    )
    common_flags(p, objectives=("map", "post", "both"), objective="both")
    p.add_argument("--step", type=finite_float, default=1e-2, help="log step of the differences")
    p.set_defaults(func=cmd_sensitivity, paths=lambda args: ([], []))

    p = theory_subcommand(
        sub, "fit", "least-squares fit of log P* to targets over the free parameters", EPILOG_FIT
    )
    common_flags(p)
    p.add_argument(
        "--target", type=_targets, required=True, help="target P*, e.g. 'P_c1=23,P_cG=322,P_aG=300'"
    )
    p.add_argument(
        "--free",
        type=_free,
        required=True,
        help="parameters to adjust: 'sigma2,chi' (sigma2, chi, sigma_O, sigma_G, sigma_e, sigma_p)",
    )
    p.add_argument(
        "--tol",
        type=finite_float,
        default=0.05,
        help="relative error that counts as a fit (default 0.05)",
    )
    p.add_argument(
        "--max-iter",
        dest="max_iter",
        type=int,
        default=40,
        help="Levenberg-Marquardt iterations at most",
    )
    p.set_defaults(func=cmd_fit, paths=lambda args: ([], []))


def cmd_sensitivity(args) -> dict[str, Any]:
    from ..theory.sensitivity import sensitivity

    objectives = ("map", "post") if args.objective == "both" else (args.objective,)
    res = sensitivity(theory_params(args), objectives=objectives, h=args.step)
    if args.json:
        print(json.dumps(jsonable(res), indent=2))
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
    from ..theory.sensitivity import fit

    res = fit(
        theory_params(args),
        args.target,
        args.free,
        objective=args.objective,
        tol=args.tol,
        max_iter=args.max_iter,
    )
    if args.json:
        print(json.dumps(jsonable(res), indent=2))
        return res
    fitted = ", ".join(f"{k} = {v:.6g}" for k, v in res["fitted"].items())
    print(f"[{args.objective}] fitted {fitted}")
    print(f"{'':>6} {'target':>10} {'model':>10} {'log(P*/target)':>15}")
    for k, t in res["targets"].items():
        print(f"{k:>6} {t:10.4g} {res['model'][k]:10.4g} {res['residuals_log'][k]:15.4f}")
    inv = res["invariants"]
    print(f"Jacobian rank {inv['rank']} for {inv['n_targets']} targets")
    for v in inv["ratios"]:
        print(
            f"invariant: {v['ratio']} = {v['model']:.4g} whatever {', '.join(res['free'])} "
            f"(target {v['target']:.4g})"
        )
    for v in inv["combinations"]:
        print(
            f"fixed to first order: {v['monomial']} = {v['model']:.4g} (target {v['target']:.4g})"
        )
    print(res["verdict"])
    return res


def _free(spec: str) -> list[str]:
    from ..theory.sensitivity import parse_free

    try:
        return parse_free(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _targets(spec: str) -> dict[str, float]:
    from ..theory.sensitivity import parse_targets

    try:
        return parse_targets(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
