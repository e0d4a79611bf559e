"""Artefact 2 (coverage ablation): how much of the measured attention matrices the two-parameter
ansatz ``span{B1, B2}`` captures (docs/theory.md §6 subspace cosine), for Adam (mean attention over
the training set, and per sample) and SGLD, in the paper's P ranges: softmax over the whole grid,
linear below, inside and above the copy crossover (regimes from the EK copy fraction psi); next
to it, the theory-boundary agreement error; and where approximation A1 (token-independent
logits) fails, with numbers.

Reuses the main artefact's runs and posterior (same cache). Output:
``results/coverage_{preset}.json``, ``figures/coverage_{preset}.png``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from copyhead_jax.compare import A1_SAMPLE_COVERAGE, a1_failures, coverage_rows
from copyhead_jax.compare import coverage as CV
from copyhead_jax.plots import coverage_figure

from . import common as C
from .analysis import load_or_run


def main(spec: C.Spec, out_dir: str | Path, main_spec: C.Spec | None = None) -> dict[str, Any]:
    """The ablation on the main artefact's runs (``main_spec``: by default the preset's)."""
    t0 = time.time()
    out_dir = Path(out_dir)
    ms = main_spec or C.sibling_spec(spec, "main")
    res_main = load_or_run(ms, out_dir)
    th = spec.theory_params()
    P_lin = np.asarray(res_main["curves"]["linear"]["P"], float)
    ek_lin = C.ek_curves(th, P_lin, "linear", ("map",), spec.cache_dir)["map"]
    res = {
        "table": coverage_rows(res_main, ek_lin),
        "a1_failures": a1_failures(res_main),
        "a1_threshold": A1_SAMPLE_COVERAGE,
        "linear_regimes": {"P": P_lin, "regime": CV.regimes(ek_lin["psi"], ek_lin["r"])},
    }
    return C.save_artefact(spec, res, lambda r: coverage_figure(r, res_main), out_dir, t0)
