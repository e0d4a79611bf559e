"""``copyhead theory points|scaling --objective bayes``: the theory's Bayesian transition
(docs/theory.md §13, route B) beside the EK MAP and EK posterior points."""

from __future__ import annotations

import json
import sys
from typing import Any

from .._checks import check_int
from ..theory.heads import SoftmaxTheory, theory_of
from ..theory.points import kinds
from .theory_options import check_theory_memory, jsonable, theory_params


def add_bayes_flags(p) -> None:
    """Monte-Carlo flags of route B (used with ``--objective bayes`` only)."""
    p.add_argument(
        "--replicas",
        type=int,
        default=2,
        help="bayes: independent Monte-Carlo replicas (default 2)",
    )
    p.add_argument(
        "--n-rows",
        dest="n_rows",
        type=int,
        default=None,
        help="bayes: rows of common random numbers (default 2^14)",
    )
    p.add_argument("--seed", type=int, default=0, help="bayes: seed of the first replica")


def _bayes_kw(args) -> dict[str, Any]:
    from ..theory.bayes.solve import DEFAULT_ROWS

    check_int("--replicas", args.replicas, lo=1, hi=100)
    n_rows = DEFAULT_ROWS if args.n_rows is None else args.n_rows
    check_int("--n-rows", n_rows, lo=256, hi=1 << 22)
    return {"replicas": args.replicas, "n_rows": n_rows, "seed": args.seed}


def _check_rows_memory(L: int, V: int, n_rows: int) -> None:
    """Refuse, before any work, route B's rows (two-branch kinds) at the largest ``L`` and ``V``
    (:func:`~copyhead_jax.theory.bayes.solve.rows_bytes`, rising in both)."""
    from ..theory.bayes.solve import rows_bytes

    check_theory_memory(
        rows_bytes(L, V, n_rows),
        f"route B's {n_rows} rows at L = {L}, V = {V}",
        "use a smaller --n-rows, --L or --V",
    )


def _refuse_beyond(args) -> None:
    from .theory_beyond import needs_beyond

    if needs_beyond(args):
        raise ValueError(
            "--objective bayes covers i.i.d. uniform tokens without the causal mask "
            "(docs/theory.md §13.5): drop the source/mask flags"
        )


def _print_softmax(res: dict) -> None:
    inp = res["inputs"]
    kind = "first order" if res["first_order"] else "crossover"
    ci = res["replica_interval"]
    ci_s = f", replica interval [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else ""
    reps = ", ".join(f"{v:.4g}" if v else "none" for v in res["replicas"])
    print(
        f"softmax L={inp['L']} V={inp['V']}: Bayesian P*_aG (route B) = "
        f"{res['P_aG_bayes']:.4g} ({kind}; replicas {reps}{ci_s})"
    )
    seen = res["coexistence_seen"]
    seen_s = f"[{seen[0]:.4g}, {seen[1]:.4g}]" if seen else "none"
    print(
        f"  coexistence seen {seen_s}; EK MAP {res['ek_map']:.4g}, "
        f"EK post {res['ek_post']:.4g}; {res['seconds']:.1f} s"
    )


def _g(x) -> str:
    return "none" if x is None else f"{x:.4g}"


def _print_linear(res: dict) -> None:
    inp = res["inputs"]
    print(
        f"linear L={inp['L']} V={inp['V']}: posterior E[psi] = 1/2 (route B) at "
        f"P = {_g(res['P_cG_half_bayes'])}; psi of the posterior mean at "
        f"{_g(res['P_cG_half_of_mean'])}; EK post P_cG_half {_g(res['ek_post']['P_cG_half'])}, "
        f"EK MAP {_g(res['ek_map']['P_cG_half'])}; {res['seconds']:.1f} s"
    )


def cmd_points_bayes(args) -> dict[str, Any]:
    from ..theory.bayes import bayes_points

    _refuse_beyond(args)
    params = theory_params(args)
    kw = _bayes_kw(args)
    if any(k.two_branches for k in kinds(args.attention)):  # the linear head's is closed form
        _check_rows_memory(params.L, params.V, kw["n_rows"])
    res = bayes_points(params, args.attention, **kw)
    both = args.attention == "both"
    if args.json:
        print(json.dumps(jsonable(res)))
        return res
    for kind in kinds(args.attention):  # the head's class says which table it gets
        (_print_softmax if kind.two_branches else _print_linear)(res[kind.name] if both else res)
    return res


def scaling_notes(replicas: int):
    """Progress notes of route B's scaling: after the first configuration, an estimate of the
    rest at its measured seconds (the unit measured at start; a warning past an hour); after
    each later one, the time left at the mean so far."""
    import logging

    from ..runner.eta import Estimate, announce, duration

    log, spent = "copyhead_jax.theory.bayes", []

    def on_row(k: int, n: int, row: dict, seconds: float) -> None:
        spent.append(seconds)
        left = n - k - 1
        if k == 0 and left:
            announce(
                Estimate(
                    f"route B's P*_aG on {n} configurations x {replicas} replicas",
                    (n * replicas,) * 2,
                    "solves",
                    (left * seconds,) * 2,
                    f"the rest at the first one's {seconds:.0f} s (L = {row['L']}, "
                    f"V = {row['V']}) each; a larger L costs more",
                ),
                log,
            )
        elif left:
            logging.getLogger(log).info(
                f"configuration {k + 1}/{n} (L = {row['L']}, V = {row['V']}) done in "
                f"{seconds:.0f} s; ~{duration(left * sum(spent) / len(spent))} left at the "
                "mean so far"
            )

    return on_row


def cmd_scaling_bayes(args) -> dict[str, Any]:
    from ..theory.bayes import fit_law_table, scaling_table

    if args.attention == "both" or theory_of(args.attention) is not SoftmaxTheory:
        raise ValueError(
            "theory scaling --objective bayes: give --attention softmax (the law "
            "of its first-order transition, docs/theory.md §13.10)"
        )
    params = theory_params(args, L=None, V=None)
    Ls = args.L or [params.L]
    Vs = args.V or [params.V]
    for v in (*Ls, *Vs):
        check_int("--L/--V entry", v, lo=3, hi=10**4)
    kw = _bayes_kw(args)
    _check_rows_memory(max(Ls), max(Vs), kw["n_rows"])
    rows = scaling_table(
        params,
        Ls,
        Vs,
        n_rows=kw["n_rows"],
        replicas=kw["replicas"],
        on_row=scaling_notes(kw["replicas"]),
    )
    fits = fit_law_table(rows, params.likelihood) if len(rows) > 3 else None
    res = {"inputs": {**params.to_dict(), **kw, "L": Ls, "V": Vs}, "rows": rows, "fits": fits}
    if args.json:
        print(json.dumps(jsonable(res)))
        return res
    print(f"{'L':>4} {'V':>3} {'P*_bayes (replicas)':>28} {'EK MAP':>9} {'EK post':>9}")
    for r in rows:
        reps = ", ".join(f"{v:.4g}" if v else "none" for v in r["P_bayes"])
        print(f"{r['L']:4d} {r['V']:3d} {reps:>28} {r['ek_map']:9.4g} {r['ek_post']:9.4g}")
    if fits:
        for name, f in fits.items():
            j = f["joint"]
            ci = f" CI {j['k_L_ci'][0]:.2f}..{j['k_L_ci'][1]:.2f}" if "k_L_ci" in j else ""
            civ = f" CI {j['k_V_ci'][0]:.2f}..{j['k_V_ci'][1]:.2f}" if "k_V_ci" in j else ""
            law = f["paper_law"]
            print(
                f"{name}: P* ~ L^{j['k_L']:.2f}{ci} V^{j['k_V']:.2f}{civ}; paper {law['law']}:"
                f" R^2 {law['r2']}"
            )
    else:
        print("(fits need more than 3 configurations)", file=sys.stderr)
    return res
