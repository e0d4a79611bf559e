"""compare/readings.py and reading_sources.py: the claims x readings matrix from a folder of
tiny result JSON, what it reads of each reading, and the report's Bayesian section of a
``copyhead transition`` result."""

import json
import math

from copyhead_jax.compare import EXPONENT_TOL
from copyhead_jax.compare.readings import READINGS, claims_matrix
from experiments.report.claims import render


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


def test_committed_pstars_and_exponents_of_a_reading(tmp_path):
    """``measured_from_main`` reads both widths' P* CIs of ``main_r.json`` (and whether the two
    softmax starts stayed apart: ``window_lo`` located); ``measured_exponents`` the measured
    exponents of ``scaling-{L,V}_r.json`` where there are any (a missing file: none)."""
    from copyhead_jax.compare.reading_sources import measured_exponents, measured_from_main

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
    from copyhead_jax.compare.reading_sources import ek_window

    (w,) = ek_window("plain", (9,))
    assert w["L"] == 9 and w["first_order"]
    assert w["spinodals"][0] < w["P_aG"] < w["spinodals"][1]


def test_the_committed_matrix_has_the_crossover_coverage_row():
    """From the committed results: the row exists for every reading and the cells name the
    crossover's P range of each reading's own grid (the numbers are the results', not here)."""
    from pathlib import Path

    res = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"
    row = next(r for r in claims_matrix(res)["rows"] if "linear crossover" in r["claim"])
    assert set(row["cells"]) == set(READINGS)
    assert all(" over P " in c["value"] for c in row["cells"].values()), row


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
