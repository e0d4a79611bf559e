"""transition/plan.py: a later seed's first probes bracket the earlier seeds' mean root; the
padded group sizes form a ladder above P."""

from __future__ import annotations

import math


def test_first_probes_bracket_the_earlier_seeds_mean_root():
    from copyhead_jax.transition.plan import SEED_SPAN, first_probes

    assert first_probes([], 661.2) == [661]
    assert first_probes([None], 29.9) == [30]  # an unbracketed seed gives no root
    lo, hi = first_probes([math.log(1240.0), None, math.log(1256.0)], 661.0)
    c = math.sqrt(1240.0 * 1256.0)
    assert lo < c < hi and lo == round(c / SEED_SPAN) and hi == round(c * SEED_SPAN)
    assert first_probes([math.log(2.0)], 5.0) == [2]  # never below P = 2
    assert first_probes([math.log(1240.0), math.log(1256.0)], 661.0, anchored=True) == [1248]


def test_pad_of_is_a_ladder_above_P_and_one_shape_for_small_configurations():
    from copyhead_jax.transition.plan import PAD_STEPS, pad_of

    step = 2 ** (1 / PAD_STEPS)
    for P in (2, 100, 616, 1000, 1248, 1652, 1653, 5000):
        pad = pad_of(P, 1652, 25)
        assert P <= pad < step * P + 1  # the next rung up: never a whole rung of padding
        k = round(PAD_STEPS * math.log2(pad / 1652))
        rungs = [1652 * 2 ** (j / PAD_STEPS) for j in (k - 1, k, k + 1)]
        assert any(0 <= pad - r < 1 for r in rungs)  # a rung of the ladder, rounded up
    assert {pad_of(P, 75, 15) for P in (12, 30, 53, 75)} == {75}  # compile once
    assert pad_of(90, 75, 15) >= 90


# --- the command on a tiny configuration ------------------------------------------------------

# --- bad input --------------------------------------------------------------------------------
