"""The README's lead figure, the main job's ``copyhead sweep --preset paper-map --attention
both`` (docs/guide/img/paper-map.png), kept as the per-run scalars of its three sweeps (linear,
softmax from the pooling start and from the copy start) in ``results/paper-map.json``: the
sweeps' ``.npz`` hold ~2 MB of weights each, which the figure does not read.

``python -m experiments.report.lead results/paper-map`` writes the JSON from the sweep folder;
``python -m experiments.report.redraw paper-map`` draws the figure from it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from copyhead_jax.config import Config
from copyhead_jax.results import SweepResult
from copyhead_jax.storage import nulls_in_lists_to_nan

FILES = ("sweep_linear.npz", "sweep_softmax.npz", "sweep_softmax_copy.npz")


def slim(results: list[SweepResult]) -> dict:
    """The sweeps' configs, per-run scalars ``[P][seed]`` (``None``: not finite; the figure
    and the P* locators read nothing else) and wall times, JSON-ready."""

    def lists(a):
        a = np.asarray(a, float)
        return np.where(np.isfinite(a), a, None).tolist()

    return {
        "command": "copyhead sweep --preset paper-map --attention both --out results/paper-map",
        "sweeps": [
            {
                "config": r.config.to_dict(),
                "wall_seconds": r.meta.get("wall_seconds"),
                "arrays": {k: lists(v) for k, v in r.arrays.items() if np.ndim(v) == 2},
            }
            for r in results
        ],
    }


def load(path: str | Path) -> list[SweepResult]:
    """The sweeps of a :func:`slim` JSON, with the scalars only."""
    d = nulls_in_lists_to_nan(json.loads(Path(path).read_text()))
    out = []
    for s in d["sweeps"]:
        arrays = {k: np.asarray(v, float) for k, v in s["arrays"].items()}
        for k in ("finite", "diverged", "converged"):
            if k in arrays:
                arrays[k] = arrays[k] > 0
        meta = {"wall_seconds": s["wall_seconds"]}
        out.append(SweepResult(config=Config.from_dict(s["config"]), arrays=arrays, meta=meta))
    return out


def figure(path: str | Path):
    """The sweep figure of the JSON at ``path``: both softmax starts, the EK overlay, the
    measured P*_aG and the EK spinodals."""
    from copyhead_jax.compare import softmax_marks, theory_overlay
    from copyhead_jax.plots import sweep_figure

    results = load(path)
    pools = [r for r in results if r.config.train.init_attention != "copy"]
    return sweep_figure(results, theory_overlay(pools), softmax_marks(results))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.report.lead", description=__doc__)
    p.add_argument("folder", help="the sweep folder (sweep_linear.npz, sweep_softmax{,_copy}.npz)")
    p.add_argument("--out", default="docs/reports/results/paper-map.json")
    a = p.parse_args(argv)
    results = [SweepResult.load(Path(a.folder) / f) for f in FILES]
    Path(a.out).write_text(json.dumps(slim(results)) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
