"""The paper-chi-lik reading of the default mode's artefacts (experiments/reading.py) and the
coexistence table of the conventions page: specs and rendering only (nothing is swept)."""

import json

import copyhead_jax as ch
from copyhead_jax.theory import TheoryParams
from experiments import reading
from experiments.report import conventions


def test_reading_spec_is_the_paper_spec_with_chi_in_the_likelihood_only(tmp_path):
    """Same engine as the paper spec but the readout prior, so the theory of the spec is the
    preset's (identity of TheoryParams, no tolerance)."""
    for artefact in ("scaling-L", "scaling-V", "main", "coverage"):
        spec = reading.reading_spec(artefact, tmp_path)
        assert spec.preset == "paper-chi-lik"
        assert spec.engine.posterior.chi_in_readout_prior is False
        want = TheoryParams.from_config(ch.preset("paper-chi-lik"))
        assert spec.theory_params() == want
    assert reading.reading_spec("scaling-L", tmp_path).settings["n_seeds"] >= 3
    assert reading.reading_spec("main", tmp_path).settings["extra_widths"] == []


def test_coexistence_table_reads_the_scaling_rows(tmp_path):
    row = {
        "value": 10,
        "n_seeds": 3,
        "theory_ek": {
            "first_order": True,
            "spinodal_lo": 100.0,
            "spinodal_hi": 120.0,
            "P_aG": 110.0,
        },
        "measured": {"P_aG": {"P_star": 111.0}, "P_aG_single": {"P_star": 119.0}},
        "coexistence": {
            "P": [100, 110, 120],
            "distinct_fraction": [0.0, 2 / 3, 0.0],
            "max_gap": 2.5,
            "seen": True,
            "lower": 105.0,
            "upper": 115.0,
        },
    }
    old = {
        "value": 25,
        "theory_ek": {"first_order": False, "P_aG_crossover": 50.0},
        "measured": {"P_aG": None},
    }
    (tmp_path / "scaling-L_paper-chi-lik.json").write_text(json.dumps({"rows": [row, old]}))
    text = conventions.coexistence_table(tmp_path)
    lines = text.splitlines()
    assert len(lines) == 4  # header, rule, two rows
    assert "| `paper-chi-lik` | 10 | yes | [100, 120] | 110 | 67% of 3 | 105 .. 115 | 2.5 |" in text
    assert "| `paper-chi-lik` | 25 | no | - | 50 | not recorded |" in lines[3]
