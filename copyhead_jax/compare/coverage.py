"""The coverage ablation's table: how much of the measured attention the two-parameter ansatz
``span{B1, B2}`` captures (docs/theory.md §6) per regime of the EK copy fraction, beside the
paper's claims and the theory boundary's error, and where approximation A1 (token-independent
logits) fails; from the main artefact's result dict (its ``curves`` and P* ``table``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .paper import PAPER_CLAIMS

__all__ = ["A1_SAMPLE_COVERAGE", "a1_failures", "coverage_rows", "coverage_stats", "regimes"]

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


def coverage_stats(x) -> dict[str, float | None]:
    """Min, mean and max of the finite entries of ``x`` and their number."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"min": None, "mean": None, "max": None, "n": 0}
    return {"min": float(x.min()), "mean": float(x.mean()), "max": float(x.max()), "n": int(x.size)}


def coverage_rows(res_main: dict, ek_lin: dict) -> list[dict[str, Any]]:
    """The ablation's rows from the main artefact's result: coverage of the softmax pooling
    start over its whole grid, and of the linear head per regime of :func:`regimes` (``ek_lin``:
    the EK MAP curve on the linear grid), each with the error of its theory boundary and the
    paper's claim."""
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
            "adam_mean_A": coverage_stats(np.asarray(cur["coverage"])[idx]),
            "adam_per_sample": coverage_stats(np.asarray(cur["sample_coverage"])[idx]),
            "sgld": coverage_stats(sgld[idx]),
            "boundary": key,
            "boundary_err_ek": t["rel_err_ek"],
            "boundary_err_finite": t["rel_err_finite"],
            "paper": paper,
        }

    P = np.asarray(pool["P"])
    every = np.ones(len(P), bool)
    rows.append(
        row(
            "softmax", "whole grid", P, pool, every, sgld_at(ps, P), "P_aG", PAPER_CLAIMS["softmax"]
        )
    )
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
