"""compare/reading_cells.py and reading_warning.py: the matrix's cells one claim at a time (the
Bayesian cell of a ``copyhead transition`` result, the crossover's coverage, a P* below the
grid, the early-warning windows) from tiny result JSON."""

import json
import math

import pytest

from copyhead_jax.compare.profile_verdict import Probe, decide, over_seeds
from copyhead_jax.compare.reading_cells import (
    CROSSOVER_COVERAGE,
    crossover_coverage_cell,
    g4,
    pstar_cell,
    transition_cell,
)
from copyhead_jax.compare.reading_warning import warning_cell
from copyhead_jax.compare.readings import claims_matrix


def _write(d, name, obj):
    (d / name).write_text(json.dumps(obj))


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


def test_g4():
    assert g4(None) == "-" and g4(1234.5678) == "1,235" and g4(0.012345) == "0.01235"


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


def _profile_probe(P, d, bimodal=True):
    return Probe(P, bimodal, 5.0, 0.5, 0.3, 1.0, 2.0, 0.5, 0.05, d, 0.2, 0.0, 1.0, 0.05, 6)


def test_the_plain_bayesian_cell_is_the_profiles_verdict_decided_again(tmp_path):
    """A profile result (``transition_profile_L25_V5.json``) is judged by the package's rule from
    its probes, not by the ``summary`` the run printed (a stale one, far outside the band, here),
    and is preferred over the branch free energies' file of the same reading."""
    seeds = [[(260, 1.0), (300, -1.0)], [(262, 1.0), (302, -1.0)]]
    probes = [[_profile_probe(P, d) for P, d in s] for s in seeds]
    want = over_seeds([decide(ps) for ps in probes])
    assert 225 < want["lo"] < want["hi"] < 375  # inside the paper's band: reproduced
    tr = {
        "width": math.inf,
        "summary": {"P_star": 100.0, "lo": 99.0, "hi": 101.0},
        "seeds": [{"probes": [dict(p.__dict__) for p in ps]} for ps in probes],
        "flagged": ["seed 1 P=302: window 3 (c = 1.2): R-hat 1.3, ESS 20"] * 2,
    }
    _write(tmp_path, "transition_profile_L25_V5.json", tr)
    _write(tmp_path, "posterior_branches.json", {"not": "read"})
    row = next(r for r in claims_matrix(tmp_path)["rows"] if r["claim"].startswith("Bayesian"))
    cell = row["cells"]["plain"]
    assert cell["value"].startswith(
        f"{g4(want['P_star'])} [{g4(want['lo'])}, {g4(want['hi'])}] (first order, 2 seeds, "
        "free-energy profile, width inf); 1 probe(s) flagged (1 window(s) not mixed), "
        "errors widened"
    )
    assert cell["outcome"] == "reproduced" and cell["reproduced"] is True


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


def test_crossover_coverage_meets_the_papers_range_by_the_one_rule(tmp_path):
    """The range over the crossover's P, each end widened by 1.96 sd / sqrt(n) of its seeds,
    against the paper's 82.4-91.0%: inside it reproduces, apart from it is off, across an edge
    (or wider than the paper's range) is not resolved, so a wide spread never reproduces."""
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


def test_a_point_below_every_seeds_grid_is_the_interval_up_to_the_grids_first_P(tmp_path):
    """No seed located P*_c1 because it lies below the grid's first P on every one: the
    measurement is (0, that P], judged by the same rule (off when that P is below the band)."""

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


def test_a_one_seed_profile_cell_says_its_interval_has_no_seed_spread(tmp_path):
    """The paper reading's cell reads its profile file; with one seed the interval holds the
    replicas' and the root's errors only, and the cell says so (width printed in full)."""
    probes = [_profile_probe(P, d) for P, d in ((1200, 1.0), (1300, -1.0))]
    tr = {"width": 10000.0, "seeds": [{"probes": [dict(p.__dict__) for p in probes]}]}
    _write(tmp_path, "transition_profile_paper.json", tr)
    row = next(r for r in claims_matrix(tmp_path)["rows"] if r["claim"].startswith("Bayesian"))
    value = row["cells"]["paper"]["value"]
    assert "(first order, 1 seed: no seed spread in the interval, free-energy profile, " in value
    assert "width 10,000)" in value
