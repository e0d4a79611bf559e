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

from copyhead_jax.compare.paper import PAPER_CLAIMS
from copyhead_jax.plots_branches import coverage_figure

from . import common as C
from .analysis import load_or_run

A1_SAMPLE_COVERAGE = 0.9  # per-sample cosine below this: the attention is token-dependent (A1 off)


def regimes(psi_ek, r_ek) -> list[str]:
    """Linear regime of each ``P`` from the EK global minimiser."""
    out = []
    for psi, r in zip(psi_ek, r_ek):
        if abs(r) < 1e-9 and psi == 0:
            out.append("no attention (P < P_c1)")
        elif psi < 0.1:
            out.append("pooling (psi < 0.1)")
        elif psi <= 0.9:
            out.append("crossover (0.1 <= psi <= 0.9)")
        else:
            out.append("copying (psi > 0.9)")
    return out


def _stats(x) -> dict[str, float | None]:
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"min": None, "mean": None, "max": None, "n": 0}
    return {"min": float(x.min()), "mean": float(x.mean()), "max": float(x.max()), "n": int(x.size)}


def table_rows(res_main: dict, ek_lin: dict) -> list[dict[str, Any]]:
    cur = res_main["curves"]
    lin, pool = cur["linear"], cur["pool"]
    pl, ps = cur.get("sgld_linear"), cur.get("sgld_softmax")
    table = {r["key"]: r for r in res_main["table"]}
    rows = []

    def sgld_at(post, P):
        if not post:
            return np.full(len(P), np.nan)
        Pp = np.asarray(post["P"])
        cm = np.asarray(post["coverage_mean"], float).reshape(len(Pp), -1).mean(1)
        return np.array([cm[Pp == p][0] if (Pp == p).any() else np.nan for p in P])

    def row(att, regime, P, cur, idx, sgld, key, paper):
        t = table[key]
        return {
            "attention": att,
            "regime": regime,
            "P_range": [int(P[idx].min()), int(P[idx].max())],
            "adam_mean_A": _stats(np.asarray(cur["coverage"])[idx]),
            "adam_per_sample": _stats(np.asarray(cur["sample_coverage"])[idx]),
            "sgld": _stats(sgld[idx]),
            "boundary": key,
            "boundary_err_ek": t["rel_err_ek"],
            "boundary_err_finite": t["rel_err_finite"],
            "paper": paper,
        }

    P = np.asarray(pool["P"])
    every = np.ones(len(P), bool)
    rows.append(row("softmax", "whole grid", P, pool, every, sgld_at(ps, P), "P_aG",
                    PAPER_CLAIMS["softmax"]))  # fmt: skip
    P = np.asarray(lin["P"])
    reg = np.asarray(regimes(ek_lin["psi"], ek_lin["r"]))
    sg = sgld_at(pl, P)
    for name in dict.fromkeys(reg):
        key = "P_c1" if name.startswith(("no attention", "pooling")) else "P_cG"
        paper = (
            PAPER_CLAIMS["linear, crossover (SGLD)"]
            if name.startswith("crossover")
            else PAPER_CLAIMS["linear, outside the crossover"]
        )
        rows.append(row("linear", name, P, lin, reg == name, sg, key, paper))
    return rows


def a1_failures(res_main: dict) -> list[dict[str, Any]]:
    """Every measured ``P`` whose per-sample coverage is below ``A1_SAMPLE_COVERAGE``."""
    out = []
    for att, key in (("linear", "linear"), ("softmax", "pool")):
        c = res_main["curves"][key]
        for p, sc, mc in zip(c["P"], c["sample_coverage"], c["coverage"]):
            if sc is not None and np.isfinite(sc) and sc < A1_SAMPLE_COVERAGE:
                out.append(
                    {"attention": att, "P": int(p), "per_sample": float(sc), "mean_A": float(mc)}
                )
    return out


def main(spec: C.Spec, out_dir: str | Path, main_spec: C.Spec | None = None) -> dict[str, Any]:
    """The ablation on the main artefact's runs (``main_spec``: by default the preset's)."""
    t0 = time.time()
    out_dir = Path(out_dir)
    ms = main_spec or C.load_spec(spec.mode, spec.preset, "main", spec.cache_dir)
    res_main = load_or_run(ms, out_dir)
    th = spec.theory_params()
    P_lin = np.asarray(res_main["curves"]["linear"]["P"], float)
    ek_lin = C.ek_curves(th, P_lin, "linear", ("map",), spec.cache_dir)["map"]
    res = {
        "table": table_rows(res_main, ek_lin),
        "a1_failures": a1_failures(res_main),
        "a1_threshold": A1_SAMPLE_COVERAGE,
        "linear_regimes": {"P": P_lin, "regime": regimes(ek_lin["psi"], ek_lin["r"])},
    }
    return C.save_artefact(spec, res, lambda r: coverage_figure(r, res_main), out_dir, t0)
