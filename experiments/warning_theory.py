"""``python -m experiments warning-theory [--results DIR]``: route B's predicted early warning
(docs/theory.md §13.9) for every early-warning check of the claims matrix.

For each reading and each window the matrix judges (``compare.readings.warning_checks``: the
same ``P*`` the measurement was placed at), route B's posterior variance of the order parameter
at 0.5 P* and 0.9 P* (``theory.bayes.predicted_growth``: softmax, the pooling basin's
``Var(aG)`` from the curvature of its free energy; linear, ``Var(c1)``, ``Var(cG)`` of the mean
attention under ``q``) and their ratio, into ``DIR/early_warning_theory.json`` (default
docs/reports/results), which the matrix prints beside each measured growth. Re-render the
matrix afterwards (``python -m experiments.conventions --render`` and ``python -m experiments
report --publish``). ~2-4 CPU-min on 2 cores (one route B minimisation and Hessian per end).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import copyhead_jax as ch
from copyhead_jax.compare import readings
from copyhead_jax.storage import write_json
from copyhead_jax.theory import TheoryParams, bayes, theory_of

ROOT = Path(__file__).resolve().parents[1]


def predictions(results: Path) -> dict:
    """``{reading: {check name: route B's growth and its two variances}}``."""
    out: dict = {}
    for r in readings.READINGS:
        params = TheoryParams.from_config(ch.preset(r))
        rows = {}
        for c in readings.warning_checks(results, r):
            if c["P_star"] is None:
                continue
            t = time.perf_counter()
            g = bayes.predicted_growth(params, theory_of(c["attention"]), c["P_star"], c["order"])
            g.pop("rows")
            rows[c["name"]] = {
                **g,
                "attention": c["attention"],
                "seconds": round(time.perf_counter() - t, 1),
            }
            print(f"{r}: {c['name']}: route B x{g['growth']} ({rows[c['name']]['seconds']} s)")
        out[r] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments warning-theory", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=ROOT / "docs" / "reports" / "results",
        help="folder of the posterior_<reading>.json files; the output goes there",
    )
    args = ap.parse_args(argv)
    res = predictions(args.results)
    doc = {
        "kind": "early_warning_theory",
        "route": "B (docs/theory.md §13.9)",
        "window": [0.5, 0.9],
        "readings": list(readings.READINGS),
        **res,
    }
    write_json(args.results / readings.WARNING_THEORY, doc)
    print(f"wrote {args.results / readings.WARNING_THEORY}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
