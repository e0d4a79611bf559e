"""``copyhead_jax.compare.text``: the number formats of the markdown tables."""

import math

from copyhead_jax.compare import text as T


def test_number_formats():
    assert T.fmt(None) == T.fmt(math.nan) == T.fmt(math.inf) == "-"
    assert T.fmt(1234.5) == "1.23e+03" and T.fmt(0.012345, 2) == "0.012"
    assert T.fmt_P(None) == "-" and T.fmt_P(1250.4) == "1,250" and T.fmt_P(49.54) == "49.5"
    assert T.mean_sd([1.0, 3.0, math.nan]) == "2 ± 1.4"  # sd with ddof = 1: sqrt(2)
    assert T.mean_sd([5.0, math.nan]) == "5" and T.mean_sd([math.nan]) == "-"


def test_located_and_per_seed_interval():
    assert T.located({"P_star": 1500.0, "bracket": [1000, 2000]}) == "1,500 [1,000, 2,000]"
    assert T.located({"P_star": 12.0}) == "12"
    assert T.located({"P_star": None, "side": "above"}) == "outside grid (above)"
    assert T.located(None) == "outside grid (None)"
    ci = {"per_seed_ci": {"mean": 49.5, "lo": 48.25, "hi": 50.75, "n": 3}}
    assert T.per_seed_ci(ci) == "(per seed 49.5 [48.2, 50.8], n = 3)"
