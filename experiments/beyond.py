"""``python -m experiments markov`` / ``... causal``: the copy head beyond the paper's limits
(issue 32 item 4): sticky Markov tokens (stickiness rho) without / with the causal mask.

Per (rho, mask): exact-MAP sweeps of the reduced engine (quenched embeddings, width N) for
linear attention and for softmax from both branches (zero logits, copy logits), measured P*
per seed (:mod:`copyhead_jax.compare.pstar`: geometric mean over seeds, 95% bootstrap CI)
beside the EK theory of docs/theory.md §12 (:func:`copyhead_jax.theory.beyond.beyond_points`:
full L x L minimisers, and the two-parameter ansatz for its coverage). Every sweep and every
theory point is cached under ``OUT/cache`` (``common.cached``: a rerun resumes); ``--publish``
writes ``docs/reports/results/{markov,causal}.json`` and the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare.pstar import linear_points, softmax_points
from copyhead_jax.storage import environment
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.beyond import beyond_points

from . import common as C

COMMANDS = ("markov", "causal")
ROOT = Path(__file__).resolve().parents[1]
RHOS = (0.0, 0.25, 0.5, 0.75, 0.9)
GRID = (32, 64, 100, 160, 256, 400, 560, 700, 1000, 1500, 2250, 3500)
KEYS = ("P_c1", "P_cG", "P_aG")


def parse(argv):
    p = argparse.ArgumentParser(prog=f"python -m experiments {argv[0]}")
    p.add_argument("--preset", default="paper-map", help="paper-map (default) or plain")
    p.add_argument("--rho", type=float, nargs="+", default=list(RHOS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--width", default="10000", help="10000 or inf")
    p.add_argument("--P", type=int, nargs="+", default=list(GRID))
    p.add_argument("--n-P-theory", dest="n_P", type=int, default=41)
    p.add_argument(
        "--networks-rho",
        dest="networks_rho",
        type=float,
        nargs="*",
        default=None,
        help="measure networks only at these rho (default: every --rho)",
    )
    p.add_argument(
        "--spaces",
        nargs="+",
        choices=("full", "ansatz"),
        default=["full", "ansatz"],
        help="theory spaces (ansatz: its own P*, beside the full minimiser's)",
    )
    p.add_argument("--out", default="results/experiments/beyond")
    p.add_argument("--publish", action="store_true", help="write into docs/reports/")
    return p.parse_args(argv[1:])


def config(args, rho: float, causal: bool, attention: str, init: str = "prior"):
    width = math.inf if args.width == "inf" else int(args.width)
    return ch.preset(args.preset).replace(
        task=dict(source="markov", rho=rho),
        model=dict(attention=attention, engine="reduced", width=width, causal=causal),
        train=dict(init_attention=init, exact_continuation=init == "prior"),
        sweep=dict(P=tuple(args.P), n_seeds=args.seeds),
    )


def theory(args, rho, causal) -> dict:
    """The EK theory of every space of ``args.spaces`` at ``(rho, causal)`` (JSON-able)."""
    params = TheoryParams.from_config(config(args, rho, causal, "linear"))
    task = ch.TaskConfig(L=params.L, V=params.V, source="markov", rho=rho)
    out = {}
    for sp in args.spaces:
        r = beyond_points(params, task, causal=causal, space=sp, P_range=(3.0, 3e4), n_P=args.n_P)
        out[sp] = jsonable({k: r.get(k) for k in (*KEYS, "P_cG_half", "spinodals", "first_order",
                            "window_decades", "P_aG_crossover", "coverage_min", "P", "notes",
                            "aG_max_step", "fine_step_decades", "softmax_fine")}
                           | {"linear_up": r["linear"]["up"], "softmax_up": r["softmax"]["up"],
                              "softmax_down": r["softmax"]["down"]})  # fmt: skip
    return out


def jsonable(x):
    """JSON at full precision (NaN and inf become None; ``common.jsonable`` keeps 7 digits)."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray | np.generic):
        return jsonable(x.tolist())
    return None if isinstance(x, float) and not math.isfinite(x) else x


def summary(located: list) -> dict:
    """Geometric mean over the seeds that located the point, with its bootstrap CI."""
    from copyhead_jax.compare.stats import bootstrap_ci

    b = bootstrap_ci([x.value for x in located])
    return {"mean": b["estimate"], "ci": [b["lo"], b["hi"]], "n": b["n"],
            "per_seed": [x.value for x in located]}  # fmt: skip


def measure(args, rho, causal, cache: Path) -> dict:
    starts = (("linear",), ("softmax", "zero"), ("softmax", "copy"))
    lin, pool, copy = (C.cached_sweep(config(args, rho, causal, *a), cache) for a in starts)
    pts = {**linear_points(lin), **softmax_points(pool, copy)}
    curves = {name: {k: np.nanmean(np.where(r.ok, np.asarray(r[k], float), np.nan), 1)
                     for k in ("c1", "cG", "U", "coverage")}
              for name, r in (("linear", lin), ("pool", pool), ("copy", copy))}  # fmt: skip
    ok = {name: int(np.sum(r.ok)) for name, r in (("linear", lin), ("pool", pool), ("copy", copy))}
    return {"P": list(lin.P), "points": {k: summary(v) for k, v in pts.items()},
            "curves": jsonable(curves), "ok_runs": ok}  # fmt: skip


def main(argv: list[str]) -> int:
    args = parse(argv)
    which = argv[0]
    masks = (True,) if which == "causal" else (False,)
    out = Path(args.out)
    cache = out / "cache"
    import jax  # programs compiled once are reused by the next invocation (same numbers)

    jax.config.update("jax_compilation_cache_dir", str(cache / "xla"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    t0 = time.time()
    rows = []
    for rho in args.rho:
        for causal in masks:
            t1 = time.time()
            key = [config(args, rho, causal, "linear").to_dict(), args.spaces, args.n_P]
            th = C.cached(cache, "beyond-theory", key, lambda: theory(args, rho, causal))
            row = {"rho": rho, "causal": causal, "theory": th}
            if args.networks_rho is None or rho in args.networks_rho:
                row["measured"] = measure(args, rho, causal, cache)
            row["wall_s"] = time.time() - t1
            rows.append(row)
            print(format_row(row), flush=True)
    res = {"artefact": which, "preset": args.preset, "width": args.width, "seeds": args.seeds,
           "P_grid": args.P, "theory_n_P": args.n_P, "rows": rows,
           "wall_s": time.time() - t0, "environment": environment()}  # fmt: skip
    dest = ROOT / "docs" / "reports" if args.publish else out
    (dest / "results").mkdir(parents=True, exist_ok=True)
    (dest / "results" / f"{which}.json").write_text(json.dumps(jsonable(res), indent=1))
    from .report.pstar_figures import beyond_figures as figures

    figures(res, dest / "figures", which)
    return 0


def format_row(row) -> str:
    th = row["theory"]["full"]
    s = f"rho={row['rho']:<5g} causal={row['causal']!s:<5}"
    for k in KEYS:
        m = row.get("measured", {}).get("points", {}).get(k, {}).get("mean")
        s += f"  {k}: theory {_g(th.get(k))} measured {_g(m)}"
    return s + f"  first_order={th['first_order']} coverage_min={_g(th['coverage_min'])}"


def _g(v) -> str:
    return "None" if v is None else f"{v:.4g}"


if __name__ == "__main__":  # python -m experiments markov|causal (run_command sets COMMAND)
    import sys

    sys.exit(main([globals().get("COMMAND", "markov"), *sys.argv[1:]]))
