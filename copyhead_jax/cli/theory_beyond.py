"""``copyhead theory points --source markov --rho 0.5 --causal``: the flags of the token source
and the mask, and the P* of :mod:`.beyond` printed with the method that gave them (§12)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..sources import SOURCES
from .flags import finite_float


def add_source_flags(p: argparse.ArgumentParser) -> None:
    """``--source``, ``--rho``, ``--alpha``, ``--chain-seed``, ``--causal``, ``--space``,
    ``--P-range``, ``--n-P`` (only the first five change what the theory describes)."""
    g = p.add_argument_group("token source and mask (docs/theory.md §12)")
    g.add_argument(
        "--source",
        choices=SOURCES,
        default="iid",
        help="i.i.d. uniform tokens (default) or a stationary Markov chain",
    )
    g.add_argument(
        "--rho",
        type=finite_float,
        default=0.0,
        help="Markov stickiness: stay w.p. rho + (1 - rho)/V (default 0)",
    )
    g.add_argument(
        "--alpha",
        type=finite_float,
        default=None,
        help="Markov: Dirichlet(alpha) random rows instead of --rho",
    )
    g.add_argument(
        "--chain-seed",
        dest="chain_seed",
        type=int,
        default=0,
        help="seed of the Dirichlet transition matrix (default 0)",
    )
    g.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="causal mask (b <= a) and the non-periodic target (position 0 dropped); default off",
    )
    g.add_argument(
        "--space",
        choices=("full", "ansatz", "both"),
        default=None,
        help="minimise over the full L x L matrix, the two-parameter ansatz, or both "
        "(default: both where the ansatz is not exact, i.e. Markov or causal; "
        "closed forms otherwise)",
    )
    g.add_argument(
        "--P-range",
        dest="P_range",
        type=finite_float,
        nargs=2,
        default=(3.0, 3e4),
        metavar=("LO", "HI"),
        help="P scanned by continuation (default 3 30000)",
    )
    g.add_argument(
        "--n-P",
        dest="n_P_scan",
        type=int,
        default=41,
        help="log-spaced points of that scan (default 41)",
    )


def needs_beyond(args) -> bool:
    """Whether ``args`` ask for the minimiser path (a non-i.i.d. source, the mask, a space)."""
    chain = args.rho != 0.0 or args.alpha is not None  # refused by task_of without markov
    return bool(args.source != "iid" or args.causal or args.space is not None or chain)


def task_of(args, params):
    """The ``TaskConfig`` of the source flags at the theory's ``L, V`` (validated there)."""
    from ..config.sections import TaskConfig

    kw: dict[str, Any] = dict(L=params.L, V=params.V, source=args.source)
    if args.source == "markov":
        kw.update(rho=args.rho, alpha=args.alpha, chain_seed=args.chain_seed)
    elif args.rho != 0.0 or args.alpha is not None:
        raise ValueError("--rho and --alpha need --source markov")
    return TaskConfig(**kw)


KEYS = (
    "P_c1",
    "P_cG",
    "P_cG_half",
    "P_aG",
    "spinodals",
    "window_decades",
    "first_order",
    "P_aG_crossover",
    "coverage_min",
)


def cmd_points_beyond(args, params, jsonable) -> dict[str, Any]:
    """P* by continuation of minimisers, per space, printed side by side (or as JSON)."""
    from ..theory.beyond import beyond_points

    task = task_of(args, params)
    spaces = ["full", "ansatz"] if args.space in (None, "both") else [args.space]
    check_beyond_memory(params, spaces, args.n_P_scan)
    res = {
        sp: beyond_points(
            params,
            task,
            causal=args.causal,
            attention=args.attention,
            space=sp,
            P_range=tuple(args.P_range),
            n_P=args.n_P_scan,
        )
        for sp in spaces
    }
    if args.json:
        print(
            json.dumps(
                jsonable(
                    {
                        sp: {k: r.get(k) for k in (*KEYS, "notes", "not_found", "inputs")}
                        | {"n_not_found": len(r["not_found"])}
                        for sp, r in res.items()
                    }
                ),
                indent=2,
            )
        )
        return res
    src = (
        "i.i.d."
        if args.source == "iid"
        else (f"Markov alpha={args.alpha}" if args.alpha is not None else f"Markov rho={args.rho}")
    )
    print(
        f"# EK theory, {src} tokens, {'causal mask' if args.causal else 'no mask'}: P* from "
        f"minimisers followed in P over {args.n_P_scan} points in {list(args.P_range)}"
    )
    print(
        "#   full: over the whole L x L matrix (exact for this source and mask); "
        "ansatz: restricted to span{J/L, G*} (exact only for i.i.d. tokens without mask)"
    )
    print(f"{'':>15}" + "".join(f"{sp:>24}" for sp in spaces))
    for k in KEYS:
        vals = [res[sp].get(k) for sp in spaces]
        if all(v is None for v in vals):
            continue
        print(f"{k:>15}" + "".join(f"{_fmt(v):>24}" for v in vals))
    for sp in spaces:
        for note in res[sp]["notes"]:
            print(f"note ({sp}):", note)
        if res[sp]["not_found"]:
            print(
                f"not found ({sp}): {len(res[sp]['not_found'])} "
                f"({', '.join(res[sp]['not_found'])}): outside the scan, not its edge"
            )
    return res


def check_beyond_memory(params, spaces, n_P: int) -> None:
    """Refuse, before any work, a Markov/causal theory whose arrays cannot fit
    (:func:`~copyhead_jax.theory.beyond.beyond_bytes`, the largest space)."""
    from ..runner.memory import available_bytes, refuse_if_over
    from ..theory.beyond import beyond_bytes

    need = max(beyond_bytes(params.L, params.V, n_P, sp) for sp in spaces)
    refuse_if_over(
        need,
        available_bytes(),
        f"the theory at L = {params.L}, V = {params.V} over {n_P} P ({' and '.join(spaces)} space)",
        "use a smaller --L or --n-P, or --space ansatz",
    )


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(f"{x:.4g}" for x in v) + "]"
    return f"{v:.4g}"
