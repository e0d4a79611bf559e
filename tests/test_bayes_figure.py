"""``python -m experiments bayes-figure``: the committed comparison is what the committed results
give (every number read from its source, none typed), and its ratios are the series over the
measured point."""

import json
from pathlib import Path

import pytest

from copyhead_jax.storage import jsonable
from experiments import bayes_figure as BF

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "reports" / "results"


@pytest.fixture(scope="module")
def doc():
    return BF.compare(RESULTS)


def test_the_committed_comparison_is_regenerated_from_the_committed_results(doc):
    committed = json.loads((RESULTS / "bayes_compare.json").read_text())
    assert json.loads(json.dumps(jsonable(doc))) == committed


def test_each_ratio_is_its_series_over_the_measured_point(doc):
    for r in doc["softmax"] + doc["linear"]:
        m = r["measured"]
        assert m["lo"] <= m["P_star"] <= m["hi"]
        for k, v in r["ratio"].items():
            assert v == pytest.approx(r["series"][k]["P"] / m["P_star"], rel=1e-12)
    # route B's point and replica interval as the theory file holds them
    theory = json.loads((RESULTS / "bayes_theory_softmax.json").read_text())
    by = {(t["preset"], t["L"], t["V"]): t for t in theory}
    for r in doc["softmax"]:
        t = by[(r["reading"], r["L"], r["V"])]
        b = r["series"]["route_B"]
        assert (b["P"], [b["lo"], b["hi"]]) == (t["P_aG_bayes"], t["replica_interval"])
