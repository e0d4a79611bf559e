"""``python -m experiments conventions``: the paper's claims against three readings of its
conventions (docs/theory.md §2b), each measured by exact float64 MAP on the reduced engine,
quenched embeddings, 10 seeds, widths 10,000 and infinity: ``paper`` and ``plain`` from the
committed ``main_*.json`` and ``scaling-{L,V}_*.json`` of ``python -m experiments all``,
``paper-chi-lik`` (chi in the likelihood only) swept here on one grid that holds its EK ``P*``
and the paper's values (cached in ``OUT/sweeps``). The page is ``experiments.report.conventions``'
(the rule: ``copyhead_jax.compare.claims``); ``--render`` rewrites it from the committed
``conventions.json`` without sweeping, its ``paper`` and ``plain`` P* and every measured
exponent first read again from the committed artefacts. ``--out DIR`` (default
``results/experiments/conventions``); ``--publish`` writes ``docs/reports/conventions.md`` and
``docs/reports/results/conventions.json``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import (
    ek_window,
    linear_points,
    measured_exponents,
    measured_from_main,
    reading_theory,
    seeds_summary,
    softmax_points,
)
from copyhead_jax.compare import readings as RD

from .report.conventions import render

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "docs" / "reports"
#: the swept reading's grid: its EK P* are 19.0 / 388 / 230 (spinodals [221, 247]); 2 apart
#: around the softmax jump, where the two branches were seen to meet
GRID = (
    4,
    8,
    12,
    16,
    18,
    20,
    22,
    24,
    28,
    32,
    48,
    64,
    96,
    128,
    160,
    192,
    210,
    220,
    226,
    230,
    234,
    236,
    238,
    240,
    242,
    246,
    250,
    270,
    300,
    340,
    370,
    390,
    410,
    450,
    500,
    600,
    800,
)
WIDTHS = (10_000, math.inf)


def reading_config(name: str, width: float, attention: str, init: str | None = None):
    """The main job's engine (``paper-map``) under ``name``'s conventions at ``width``."""
    conv = ch.preset(name)
    cfg = ch.preset("paper-map").replace(
        posterior=dict(
            likelihood=conv.posterior.likelihood,
            chi_in_readout_prior=conv.posterior.chi_in_readout_prior,
            chi_in_noise=conv.posterior.chi_in_noise,
        ),
        model=dict(linear_scale=conv.model.linear_scale, width=width, attention=attention),
        sweep=dict(P=GRID, n_seeds=10),
    )
    if init is not None:  # softmax: kept on its branch (no continuation in P)
        cfg = cfg.replace(train=dict(init_attention=init), solver=dict(continuation=False))
    return cfg


def swept(cfg, path: Path):
    """The sweep of ``cfg`` at ``path``: loaded when a finished one with this config is there."""
    if path.exists():
        res = ch.SweepResult.load(path)
        if res.config == cfg:
            return res
    return ch.run_sweep(cfg, out=path)


def measure_swept(name: str, out: Path) -> dict:
    """Per width: every P* per seed with :func:`seeds_summary` (``P_aG`` by the U crossing, or,
    where the two starts never stay apart, by the one minimum's step ``P_aG_jump``)."""
    result = {}
    for width in WIDTHS:
        tag = "inf" if math.isinf(width) else str(int(width))
        d = out / "sweeps" / f"{name}_N{tag}"
        lin = swept(reading_config(name, width, "linear"), d / "sweep_linear.npz")
        pool = swept(reading_config(name, width, "softmax", "zero"), d / "sweep_softmax.npz")
        copy = swept(reading_config(name, width, "softmax", "copy"), d / "sweep_softmax_copy.npz")
        per = {**linear_points(lin), **softmax_points(pool, copy)}
        cell = {}
        for k, located in per.items():  # the seeds' interval widened by the grid's error
            cell[k] = {
                **seeds_summary(located),
                "brackets": [x.bracket for x in located],
                "grids": [x.grid_interval for x in located],
            }
        gap = np.asarray(copy["cG"]) - np.asarray(pool["cG"])
        cell["coexistence_seen"] = bool(np.nanmax(gap) > 0.1 * math.sqrt(pool.config.task.L))
        result[tag] = cell
    return result


def refresh_from_artefacts(data: dict, results: Path) -> bool:
    """Bring ``conventions.json``'s ``data`` up to the committed artefacts in ``results``
    without sweeping: each unswept reading's P* CIs from its ``main_r.json`` and every reading's
    measured exponents from its ``scaling-{L,V}_r.json`` (what ``--publish`` reads there), so a
    rerun artefact reaches the page through ``--render``. True where anything changed."""
    changed = False
    for r in RD.READINGS:
        fresh = {"exponents_measured": measured_exponents(results, r)}
        if r not in RD.SWEPT and (Path(results) / f"main_{r}.json").exists():
            fresh["measured"] = measured_from_main(results, r)
        changed |= any(data[r].get(k) != v for k, v in fresh.items())
        data[r].update(fresh)
    return changed


#: the L at which each reading's EK softmax transition is traced (paper, plain: first order
#: from L = 9; paper-chi-lik: from L = 16, its window 0.2% wide there, measured at L = 13..25)
EK_L = {"paper": (8, 9), "plain": (8, 9), "paper-chi-lik": (12, 14, 15, 16, 20, 25, 32)}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments conventions", description=__doc__)
    p.add_argument("--out", default="results/experiments/conventions", help="output folder")
    p.add_argument("--publish", action="store_true", help="write into docs/reports/")
    p.add_argument(
        "--render",
        action="store_true",
        help="rewrite the page from docs/reports/results/conventions.json (no sweep)",
    )
    a = p.parse_args(argv)
    out = REPORTS if a.publish or a.render else Path(a.out)
    jpath = (REPORTS / "results" if out == REPORTS else out) / "conventions.json"
    if a.render:
        data = json.loads(jpath.read_text())
        changed = refresh_from_artefacts(data, REPORTS / "results")
        missing = [r for r in RD.READINGS if "ek_window" not in data[r]]
    else:
        ch.check_output_folder("--out", out)
        res = REPORTS / "results"
        measured = lambda r: (
            measure_swept(r, out)
            if r in RD.SWEPT  # noqa: E731
            else measured_from_main(res, r)
        )
        data = {
            r: {
                "measured": measured(r),
                "exponents_measured": measured_exponents(res, r),
                "theory": reading_theory(r),
            }
            for r in RD.READINGS
        }
        changed, missing = True, list(RD.READINGS)
    for r in missing:  # theory only: ~1 s per L
        data[r]["ek_window"] = ek_window(r, EK_L[r])
    if changed or missing:
        jpath.parent.mkdir(parents=True, exist_ok=True)
        jpath.write_text(json.dumps(data, indent=1, default=float) + "\n")
        print(f"wrote {jpath}")
    (out / "conventions.md").write_text(render(data, REPORTS / "results"))
    print(f"wrote {out / 'conventions.md'}")


if __name__ == "__main__":
    main()
