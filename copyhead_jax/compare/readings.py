"""The claims x readings matrix: every claim of the paper against every reading of its
conventions tried (docs/theory.md §2b), from a folder of artefact result JSON.

Each cell is the measured value with its 95% CI and the verdict of the one rule of
:mod:`.claims` (:mod:`.reading_cells`, :mod:`.reading_warning`); :func:`.claims.across_readings`
says which readings reproduce a claim. What each reading measured is read by
:mod:`.reading_sources` (a missing file leaves its cells "not measured"). This module is the
face the reports read (``from copyhead_jax.compare import readings``): it also names the
readings, their files and the cells' number format.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from .claims import EXPONENT_TOL, P_TOL, across_readings
from .paper import PAPER_LAWS
from .reading_cells import (
    COVERAGE,
    CROSSOVER_COVERAGE,
    bayes_cell,
    coverage_cell,
    crossover_coverage_cell,
    first_order_cell,
    g4,
    law_cell,
    order_cell,
    pstar_cell,
    transition_cell,
)
from .reading_sources import BRANCHES, KEYS, PROFILES, READINGS, SWEPT, TRANSITIONS
from .reading_warning import WARNING_THEORY, warning_cell, warning_checks

__all__ = [
    "BRANCHES",
    "COVERAGE",
    "CROSSOVER_COVERAGE",
    "KEYS",
    "NAMES",
    "PROFILES",
    "READINGS",
    "SWEPT",
    "TRANSITIONS",
    "WARNING_THEORY",
    "claims_matrix",
    "g4",
    "transition_cell",
    "warning_checks",
]

NAMES = {
    "P_c1": "P*_c1 ~ 23 (linear pooling onset)",
    "P_cG": "P*_cG ~ 322 (linear copy crossover)",
    "P_aG": "P*_aG ~ 300 (softmax copy transition, MAP)",
}


def claims_matrix(results_dir: str | Path) -> dict[str, Any]:
    """Every claim x every reading (cells: value, verdict, reproduced) from ``results_dir``."""
    d = Path(results_dir)
    rows = [
        *(
            (f"{NAMES[k]}; +-{P_TOL:.0%}", partial(pstar_cell, k=k))
            for k in ("P_c1", "P_cG", "P_aG")
        ),
        (
            f"Bayesian P*_aG ~ 300 (F_copy = F_pool; interval: seeds, MC, quadrature, grid); "
            f"+-{P_TOL:.0%}",
            bayes_cell,
        ),
        *(
            (
                f"law P*_{k[2:]} ~ {name} (exponents over L in [10, 32], V in [2, 12]; "
                f"+-{EXPONENT_TOL})",
                partial(law_cell, k=k),
            )
            for k, (name, _) in PAPER_LAWS.items()
        ),
        ("order P*_c1 < P*_aG < P*_cG (CIs disjoint)", order_cell),
        ("softmax transition first order (coexisting branches)", first_order_cell),
        ("coverage of span{B1, B2} (MAP mean attention)", coverage_cell),
        (
            f"coverage in the linear crossover {CROSSOVER_COVERAGE[0]:.1%}-"
            f"{CROSSOVER_COVERAGE[1]:.1%} (paper: SGLD; here MAP "
            f"mean attention, psi in [0.1, 0.9]; "
            "band: the paper's range)",
            crossover_coverage_cell,
        ),
        (
            "early warning: Var grows before P*_c1, P*_cG, not before P*_aG (0.5-0.9 P*, signal: "
            "CI above x1, §13.9)",
            warning_cell,
        ),
    ]
    rows = [{"claim": claim, "cells": {r: cell(d, r) for r in READINGS}} for claim, cell in rows]
    for row in rows:
        row["overall"] = across_readings(
            {r: c["reproduced"] for r, c in row["cells"].items()},
            {r: c["outcome"] for r, c in row["cells"].items()},
        )
    return {"readings": list(READINGS), "rows": rows, "exponent_tol": EXPONENT_TOL, "p_tol": P_TOL}
