"""``python -m experiments.report.embeddings [--results DIR]``: the tables of
docs/reports/embeddings_protocol.md from their JSON (figures: ``python -m
experiments.report.redraw embeddings_protocol embeddings_posterior``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from copyhead_jax.plots import SHRINK

from .tables import table

PROTOCOL_HEAD = [
    "attention",
    "N",
    "epochs",
    "P",
    "seed",
    "emb.",
    "d_all",
    "d_tok",
    "d_pos",
    "d_cross",
    "pred.",
    "max move (bound)",
    "order (Adam)",
    "order (exact MAP)",
]
POSTERIOR_HEAD = [
    "object",
    "N",
    "P",
    "a1",
    "aG",
    "d = ‖C−Σ‖/‖Σ‖",
    "d, prior rms",
    "‖E C−Σ‖/‖Σ‖",
    "R-hat (aG)",
    "acc.",
    "div.",
    "s",
]


def protocol_table(res: dict) -> str:
    """Per run, the Gram changes, the largest entry move against Adam's bound and the order
    parameters beside the quenched exact MAP of the same seed and P."""
    rows = []
    for r in res["runs"]:
        g, names = r["gram"], [k for k in r["order"] if k != "r"]
        ex = res["exact_map"].get(f"{r['attention']}/{r['width']}", {}).get(f"{r['P']}/{r['seed']}")
        pred = SHRINK * r["lr_sum"] if r["trained"] else 0.0
        rows.append(
            [
                r["attention"],
                f"{r['width']:,}",
                r["epochs"],
                r["P"],
                r["seed"],
                "trained" if r["trained"] else "frozen",
                f"{g['all']:.4f}",
                f"{g['token']:.4f}",
                f"{g['position']:.4f}",
                f"{g['cross']:.5f}",
                f"{pred:.4f}",
                f"{r['max_entry_move']:.4f} ({r['adam_bound']:.3f})",
                ", ".join(f"{k} {r['order'][k]:.3f}" for k in names),
                ", ".join(f"{k} {ex[k]:.3f}" for k in names) if ex else "-",
            ]
        )
    return table(PROTOCOL_HEAD, rows)


def posterior_table(res: dict) -> str:
    """Per (kind, N, P), posterior aG and the Gram's distances with MC errors."""
    order = {"full": 0, "annealed": 1, "quenched": 2}
    rows = []
    for r in sorted(res["runs"].values(), key=lambda r: (r["P"], r["width"], order[r["kind"]])):
        f = lambda k: (
            f"{r[k]['mean']:.4f}"
            + (  # noqa: E731
                f" ± {r[k]['mcse']:.4f}" if np.isfinite(r[k]["mcse"]) else " (fixed)"
            )
        )
        rows.append(
            [
                r["kind"],
                f"{r['width']:,}",
                r["P"],
                f("a1"),
                f("aG"),
                f("gram_dist"),
                f"{r['prior_gram_dist_rms']:.4f}",
                f"{r['mean_gram_shift']:.4f}",
                f"{r['aG']['rhat']:.3f}",
                f"{np.mean(r['acceptance']):.2f}",
                f"{np.mean(r['divergent']):.3f}",
                f"{r['seconds']:.0f}",
            ]
        )
    return table(POSTERIOR_HEAD, rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="docs/reports/results")
    a = ap.parse_args(argv)
    for name, render in (
        ("embeddings_protocol", protocol_table),
        ("embeddings_posterior", posterior_table),
    ):
        f = Path(a.results) / f"{name}.json"
        print(render(json.loads(f.read_text())) if f.exists() else f"{name}: no {f}, skipped")


if __name__ == "__main__":
    main()
