"""compare/readings.py: the claims x readings matrix from a folder of tiny result JSON, and the
Bayesian cell of a ``copyhead transition`` result."""

import json
import math

import pytest

from copyhead_jax.compare import EXPONENT_TOL
from copyhead_jax.compare.readings import (
    READINGS,
    claims_matrix,
    g4,
    transition_cell,
    warning_cell,
)
from experiments.report.claims import render


def test_g4():
    assert g4(None) == "-" and g4(1234.5678) == "1,235" and g4(0.012345) == "0.01235"


def _write(d, name, obj):
    (d / name).write_text(json.dumps(obj))


def _ci(x, n=10):
    return {"estimate": x, "lo": 0.98 * x, "hi": 1.02 * x, "n": n, "n_missing": 0}


def test_matrix_from_tiny_json(tmp_path):
    """Two readings measured: one at the paper's numbers, one 4x off; the third absent. The
    matrix says which reproduces each claim and never calls a claim not reproduced where a
    reading tried reproduces it."""

    def main(scale):
        rows = [
            {"key": k, "measured": _ci(v * scale)}
            for k, v in (("P_c1", 23.0), ("P_cG", 322.0), ("P_aG", 300.0))
        ]
        rows.append({"key": "window_lo", "measured": _ci(250.0 * scale)})
        return {"width": "10000", "widths": {"10000": {"ci_table": rows}}}

    _write(tmp_path, "main_paper.json", main(4.0))
    _write(tmp_path, "main_plain.json", main(1.0))
    fits = {
        "P_cG": {"paper_exponent": 1.5, "measured": {"exponent": 1.45, "ci": [1.40, 1.52], "n": 5}}
    }
    _write(tmp_path, "scaling-L_plain.json", {"fits": fits})
    m = claims_matrix(tmp_path)
    assert m["readings"] == list(READINGS)
    by = {r["claim"].split(" ")[0]: r for r in m["rows"]}
    c1 = by["P*_c1"]
    assert c1["cells"]["plain"]["reproduced"] and not c1["cells"]["paper"]["reproduced"]
    assert c1["cells"]["paper-chi-lik"]["verdict"] == "not measured"
    assert c1["overall"] == "reproduced under `plain`"
    assert by["order"]["cells"]["plain"]["value"] == "ordered"  # 23 < 300 < 322
    law = next(r for r in m["rows"] if "L^{3/2}" in r["claim"])
    # L: 1.45 [1.40, 1.52] meets 1.5 +- 0.1; V not measured: the law is not established
    assert "L: 1.45 [1.40, 1.52] vs 1.50: reproduced" in law["cells"]["plain"]["value"]
    assert law["cells"]["plain"]["reproduced"] is None
    text = render(m)
    assert "refuted" not in text
    for row in m["rows"]:
        if row["overall"].startswith("not reproduced"):
            assert not any(c["reproduced"] for c in row["cells"].values())
    assert math.isclose(m["exponent_tol"], EXPONENT_TOL)


def test_transition_cell_judges_the_commands_interval():
    """A ``copyhead transition`` result becomes the Bayesian cell: its interval judged against
    the paper's 300 (band: +-25%), every flagged run counted; an interval across the band's edge
    is not resolved, however close its centre."""
    tr = {
        "summary": {"P_star": 1028.0, "lo": 951.0, "hi": 1111.0, "n": 1},
        "seeds": [{"probes": [{}, {}, {}]}],
        "flagged": ["a", "b"],
        "cross_check": {"P_star": 994.0},
    }
    cell = transition_cell(tr)
    assert cell["reproduced"] is False and "2/6 runs" in cell["value"] and "994" in cell["value"]
    tr["summary"].update(P_star=300.0, lo=290.0, hi=310.0)
    assert transition_cell(tr)["reproduced"] is True
    tr["summary"].update(P_star=300.0, lo=150.0, hi=600.0)  # centred on 300 but too wide to tell
    cell = transition_cell(tr)
    assert cell["reproduced"] is None and cell["outcome"] == "not resolved"


def test_committed_pstars_and_exponents_of_a_reading(tmp_path):
    """``measured_from_main`` reads both widths' P* CIs of ``main_r.json`` (and whether the two
    softmax starts stayed apart: ``window_lo`` located); ``measured_exponents`` the measured
    exponents of ``scaling-{L,V}_r.json`` where there are any (a missing file: none)."""
    from copyhead_jax.compare.readings import measured_exponents, measured_from_main

    def rows(x, window_n):
        return [
            {"key": "P_c1", "measured": _ci(x)},
            {"key": "P_aG_single", "measured": _ci(x)},
            {"key": "window_lo", "measured": _ci(x, n=window_n)},
        ]

    main = {"ci_table": rows(20.0, 0), "widths": {"inf": {"ci_table": rows(30.0, 4)}}}
    _write(tmp_path, "main_plain.json", main)
    m = measured_from_main(tmp_path, "plain")
    assert m["10000"] == {"P_c1": _ci(20.0), "coexistence_seen": False}
    assert m["inf"] == {"P_c1": _ci(30.0), "coexistence_seen": True}
    fits = {"P_cG": {"measured": {"exponent": 1.45, "ci": [1.4, 1.5]}}, "P_c1": {"measured": {}}}
    _write(tmp_path, "scaling-V_plain.json", {"fits": fits})
    assert measured_exponents(tmp_path, "plain") == {
        "P_cG": {"V": {"exponent": 1.45, "ci": [1.4, 1.5]}}
    }


def test_the_ek_window_of_a_reading_follows_its_preset():
    """The plain reading's EK softmax transition: first order at L = 9 with its spinodals
    around P*_aG (docs/reports/conventions.md), at the preset's V."""
    from copyhead_jax.compare.readings import ek_window

    (w,) = ek_window("plain", (9,))
    assert w["L"] == 9 and w["first_order"]
    assert w["spinodals"][0] < w["P_aG"] < w["spinodals"][1]


def test_warning_cell_places_the_bayesian_window_at_a_transition_result(tmp_path):
    """A reading whose Bayesian P*_aG comes from ``copyhead transition`` (no branch file) gets
    its Bayesian window there: undetermined (with no pool draws in it), or the growth ratio of
    the pool start's Var(aG) = chi / P over [0.5, 0.9] P*_Bayes where the grid covers it."""
    r = "paper-chi-lik"
    tr = {
        "summary": {"P_star": 1000.0, "lo": 950.0, "hi": 1050.0, "n": 1},
        "seeds": [],
        "flagged": [],
    }
    _write(tmp_path, f"transition_{r}.json", tr)

    def post(P, chi):  # chi[P, seed]: the pool start's susceptibility of aG
        return {
            "softmax": {
                "pool": {"P": P, "susceptibility": {"cG": {"value": chi}}},
                "early_warning": {"theory_map_P_aG": {"cG": {"P_star": 220.0}}},
            }
        }

    # chi flat over the MAP window 110-198 on three seeds: Var = chi / P falls like 1/P (x0.556),
    # a basin that only sharpens: no signal there
    flat = [[1.0, 1.0, 1.0], [0.99, 1.0, 1.01]]
    _write(tmp_path, f"posterior_{r}.json", post([110, 198], flat))
    value = warning_cell(tmp_path, r)["value"]
    assert "P_aG (MAP window): x0.556 [0.542, 0.57] no signal" in value
    assert "P_aG (Bayesian window): undetermined" in value
    # route B's prediction for the same window is printed beside it; one placed at another P*
    # (a stale file) is not
    pred = {r: {"P_aG (MAP window)": {"P_star": 220.0, "growth": 0.5 / 0.9}}}
    _write(tmp_path, "early_warning_theory.json", pred)
    assert "no signal (route B x0.556: as predicted)" in warning_cell(tmp_path, r)["value"]
    pred[r]["P_aG (MAP window)"]["P_star"] = 230.0
    _write(tmp_path, "early_warning_theory.json", pred)
    assert "route B" not in warning_cell(tmp_path, r)["value"]
    # Var quadruples from 0.5 to 0.9 P*_Bayes (500 -> 900): a signal where none is claimed
    flat = [[110 * (1 + 0.01 * s) for s in range(3)], [198 * (1 + 0.01 * s) for s in range(3)]]
    grows = flat + [
        [500 * (1 + 0.01 * s) for s in range(3)],
        [4 * 900 * (1 + 0.01 * s) for s in range(3)],
    ]
    _write(tmp_path, f"posterior_{r}.json", post([110, 198, 500, 900], grows))
    cell = warning_cell(tmp_path, r)
    assert "P_aG (Bayesian window): x4 [4, 4] signal" in cell["value"]
    assert cell["reproduced"] is False


def test_bayes_section_names_every_flagged_run_of_a_transition_result(tmp_path):
    from experiments.report import bayes_section

    tr = {
        "summary": {
            "P_star": 944.2,
            "lo": 488.8,
            "hi": 1823.8,
            "n": 2,
            "seed_sd_log": 0.085,
            "mc_log": 0.073,
            "sys_log": 0.281,
        },
        "per_seed": [921.5, 1037.9],
        "cross_check": {"P_star": 990.3},
        "flagged": ["seed 0 P=309 copy: R-hat 5.391, ESS 2", "seed 1 P=958 pool: R-hat 3.2, ESS 2"],
        "seeds": [{"probes": [{}, {}]}, {"probes": [{}, {}, {}]}],
    }
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "transition_paper-chi-lik.json").write_text(json.dumps(tr))
    text = bayes_section(tmp_path)
    row = next(x for x in text.splitlines() if x.startswith("- **paper-chi-lik**"))
    assert "944 [489, 1,824]" in row and "quadrature 0.281" in row and "cross-check 990" in row
    assert "2/10 runs" in row  # two branch runs per probe, five probes
    assert all(f in row for f in tr["flagged"])


def _crossover_files(d, reading, cov, sd, n_seeds=10):
    """``coverage_r.json`` and ``main_r.json`` holding one linear grid: P 1-4 pooling, 8-32
    crossover (``cov`` and ``sd`` there), 64 copying."""
    P = [1, 2, 4, 8, 16, 32, 64]
    regime = (
        ["pooling (psi < 0.1)"] * 3
        + ["crossover (0.1 <= psi <= 0.9)"] * 3
        + ["copying (psi > 0.9)"]
    )
    _write(
        d, f"coverage_{reading}.json", {"table": [], "linear_regimes": {"P": P, "regime": regime}}
    )
    lin = {
        "P": P,
        "coverage": [0.3, 0.99, 0.99, *cov, 0.999],
        "coverage_sd": [0.1, 0.0, 0.0, *sd, 0.0],
    }
    _write(
        d,
        f"main_{reading}.json",
        {
            "curves": {"linear": lin},
            "ci_table": [],
            "header": {"settings": {}, "engine": {"sweep": {"n_seeds": n_seeds}}},
        },
    )


def test_crossover_coverage_meets_the_papers_range_by_the_one_rule(tmp_path):
    """The range over the crossover's P, each end widened by 1.96 sd / sqrt(n) of its seeds,
    against the paper's 82.4-91.0%: inside it reproduces, apart from it is off, across an edge
    (or wider than the paper's range) is not resolved, so a wide spread never reproduces."""
    from copyhead_jax.compare.readings import CROSSOVER_COVERAGE, crossover_coverage_cell

    assert CROSSOVER_COVERAGE == pytest.approx((0.824, 0.91), abs=1e-12)
    _crossover_files(tmp_path, "plain", [0.85, 0.86, 0.88], [0.01, 0.0, 0.02])
    cell = crossover_coverage_cell(tmp_path, "plain")
    lo, hi = 0.85 - 1.96 * 0.01 / math.sqrt(10), 0.88 + 1.96 * 0.02 / math.sqrt(10)
    assert cell["outcome"] == "reproduced", cell
    assert cell["value"].startswith(f"{lo:.2%}-{hi:.2%} over P 8-32 (mean 86.3%, 10 seeds")
    _crossover_files(tmp_path, "paper", [0.998, 0.999, 0.999], [0.0, 0.0, 0.0])
    assert crossover_coverage_cell(tmp_path, "paper")["outcome"] == "off"
    _crossover_files(tmp_path, "paper-chi-lik", [0.86, 0.90, 0.905], [0.0, 0.0, 0.03])
    assert crossover_coverage_cell(tmp_path, "paper-chi-lik")["outcome"] == "not resolved"
    _crossover_files(tmp_path, "plain", [0.80, 0.86, 0.93], [0.0, 0.0, 0.0])  # wider
    assert crossover_coverage_cell(tmp_path, "plain")["outcome"] == "not resolved"
    row = next(r for r in claims_matrix(tmp_path)["rows"] if "linear crossover" in r["claim"])
    assert row["overall"] == "not resolved under `plain`, `paper-chi-lik`"


def test_the_committed_matrix_has_the_crossover_coverage_row():
    """From the committed results: the row exists for every reading and the cells name the
    crossover's P range of each reading's own grid (the numbers are the results', not here)."""
    from pathlib import Path

    res = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"
    row = next(r for r in claims_matrix(res)["rows"] if "linear crossover" in r["claim"])
    assert set(row["cells"]) == set(READINGS)
    assert all(" over P " in c["value"] for c in row["cells"].values()), row


def test_a_point_below_every_seeds_grid_is_the_interval_up_to_the_grids_first_P(tmp_path):
    """No seed located P*_c1 because it lies below the grid's first P on every one: the
    measurement is (0, that P], judged by the same rule (off when that P is below the band)."""
    from copyhead_jax.compare.readings import pstar_cell

    def main(edge):
        below = {
            "n": 0,
            "n_missing": 10,
            "estimate": None,
            "lo": None,
            "hi": None,
            "side": "below",
            "edge": edge,
        }
        return {
            "width": "10000",
            "widths": {"10000": {"ci_table": [{"key": "P_c1", "measured": below}]}},
        }

    _write(tmp_path, "main_plain.json", main(1.0))
    cell = pstar_cell(tmp_path, "plain", "P_c1")
    assert cell["outcome"] == "off" and cell["value"].startswith("< 1 ")
    _write(tmp_path, "main_plain.json", main(20.0))  # (0, 20] crosses the band 17.25-28.75
    assert pstar_cell(tmp_path, "plain", "P_c1")["outcome"] == "not resolved"
