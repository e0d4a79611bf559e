"""``copyhead_jax.compare.coverage``: the coverage ablation's rows from a planted main result,
the linear regimes of an EK curve, and where approximation A1 fails."""

import numpy as np

from copyhead_jax.compare.coverage import (
    A1_SAMPLE_COVERAGE,
    a1_failures,
    coverage_rows,
    coverage_stats,
    regimes,
)
from copyhead_jax.compare.paper import PAPER_CLAIMS


def test_regimes_follow_the_ek_copy_fraction():
    assert regimes([0.0, 0.05, 0.5, 0.95], [0.0, 0.3, 0.3, 0.3]) == [
        "no attention (P < P_c1)",
        "pooling (psi < 0.1)",
        "crossover (0.1 <= psi <= 0.9)",
        "copying (psi > 0.9)",
    ]


def test_coverage_stats_over_the_finite_entries():
    assert coverage_stats([0.5, np.nan, 1.0]) == {"min": 0.5, "mean": 0.75, "max": 1.0, "n": 2}
    assert coverage_stats([np.nan])["n"] == 0 and coverage_stats([])["min"] is None


def _main():
    """A main result: linear on P = 1..4 (pooling, crossover, copying), softmax on P = 10, 20;
    SGLD coverage at one linear P only; per-sample coverage below A1's threshold at P = 20."""
    lin = {
        "P": [1, 2, 3, 4],
        "coverage": [0.99, 0.98, 0.9, 1.0],
        "sample_coverage": [0.95, 0.95, 0.95, 0.95],
    }
    pool = {"P": [10, 20], "coverage": [1.0, 0.999], "sample_coverage": [0.97, 0.5]}
    sgld = {"P": [3], "coverage_mean": [[0.8, 0.6]]}
    table = [
        {"key": k, "rel_err_ek": e, "rel_err_finite": -e}
        for k, e in (("P_c1", 0.1), ("P_cG", 0.2), ("P_aG", 0.3))
    ]
    return {"curves": {"linear": lin, "pool": pool, "sgld_linear": sgld}, "table": table}


def test_rows_per_regime_with_their_boundary_and_claim():
    ek = {"psi": [0.05, 0.05, 0.5, 0.95], "r": [0.1, 0.1, 0.2, 0.3]}
    rows = coverage_rows(_main(), ek)
    assert [(r["attention"], r["regime"][:5]) for r in rows] == [
        ("softmax", "whole"),
        ("linear", "pooli"),
        ("linear", "cross"),
        ("linear", "copyi"),
    ]
    soft, pool, cross, _ = rows
    assert soft["P_range"] == [10, 20] and soft["boundary_err_ek"] == 0.3
    assert soft["paper"] == PAPER_CLAIMS["softmax"] and soft["sgld"]["n"] == 0
    assert pool["P_range"] == [1, 2] and pool["adam_mean_A"]["min"] == 0.98
    assert pool["boundary"] == "P_c1" and cross["boundary"] == "P_cG"
    assert cross["sgld"] == {"min": 0.7, "mean": 0.7, "max": 0.7, "n": 1}  # the chains' mean
    assert cross["paper"] == PAPER_CLAIMS["linear, crossover (SGLD)"]


def test_a1_fails_where_the_per_sample_coverage_is_low():
    (f,) = a1_failures(_main())
    assert f == {"attention": "softmax", "P": 20, "per_sample": 0.5, "mean_A": 0.999}
    assert 0.5 < A1_SAMPLE_COVERAGE < 0.95
