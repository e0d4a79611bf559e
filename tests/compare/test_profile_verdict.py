"""Verdicts on synthetic probes: first order, crossover, widened and left-out probes, seeds."""

import dataclasses
import math

from copyhead_jax.compare.profile_verdict import Probe, decide, over_seeds
from copyhead_jax.transition.profile.map_switch import map_switch


def probe(P, d, *, bimodal, mean_a, flagged=(), short=(), d_se=0.1):
    return Probe(
        P,
        bimodal,
        1.0 if bimodal else -0.5,
        0.1,
        0.2,
        1.0,
        1.8,
        1 / (1 + math.exp(d)),
        0.01,
        d,
        d_se,
        0.0,
        mean_a,
        0.01,
        6,
        tuple(flagged),
        tuple(short),
    )


def test_first_order_root_of_d_in_log_P():
    # d linear in log P with its root at P = 50
    ps = [
        probe(P, -20 * math.log(P / 50), bimodal=40 <= P <= 60, mean_a=0.2 + (P > 50))
        for P in (30, 40, 45, 55, 60, 80)
    ]
    v = decide(ps)
    assert v.kind == "first order"
    assert abs(v.P_star - 50) < 1e-6 * 50
    assert v.coexistence == (40, 60) and v.coexistence_outer == (30, 80)


def test_crossover_midpoint():
    # mean a = tanh(log(P / 50)): midway between the end values at P = 50 for symmetric ends
    ps = [
        probe(P, 0.0, bimodal=False, mean_a=math.tanh(math.log(P / 50))) for P in (25, 40, 63, 100)
    ]
    v = decide(ps)
    assert v.kind == "crossover"
    assert abs(math.log(v.P_star / 50)) < 0.05  # tanh against its linear interpolation


def test_short_range_is_left_out_and_can_undecide():
    ps = [
        probe(40, 2.0, bimodal=True, mean_a=0.2),
        probe(60, -2.0, bimodal=True, mean_a=1.8, short=("range: low end 2 nats",)),
    ]
    v = decide(ps)
    assert v.kind == "undecided" and v.P_star is None
    assert any("left out" in e for e in v.evidence)


def test_unmixed_probe_stays_with_its_widened_error_named():
    # the flagged probe's d_se is what the windows module widened; it enters the root's budget
    ok = [probe(P, -20 * math.log(P / 50), bimodal=True, mean_a=0) for P in (40, 45, 55)]
    wide = [
        probe(
            P,
            -20 * math.log(P / 50),
            bimodal=True,
            mean_a=0,
            flagged=(("window 3: R-hat 1.3",) if P == 55 else ()),
            d_se=1.0 if P == 55 else 0.1,
        )
        for P in (40, 45, 55)
    ]
    a, b = decide(ok), decide(wide)
    assert b.kind == "first order" and any("not mixed" in e for e in b.evidence)
    assert b.crossing.err_mc > 3 * a.crossing.err_mc  # never narrower


def test_over_seeds_combines_roots():
    a = decide([probe(P, -20 * math.log(P / 50), bimodal=True, mean_a=0) for P in (40, 45, 55)])
    b = decide([probe(P, -20 * math.log(P / 52), bimodal=True, mean_a=0) for P in (40, 45, 55)])
    o = over_seeds([a, b])
    assert o["n"] == 2 and o["lo"] < 50 < 52 < o["hi"] and o["kind"] == "first order"
    assert abs(math.log(o["P_star"]) - 0.5 * (math.log(50) + math.log(52))) < 1e-9


def test_map_single_minimum_and_coexistence():
    br = {
        "P": [10, 20, 40],
        "aG": {"pool": [0.1, 1.0, 2.0], "copy": [0.1, 1.0, 2.0]},
        "U": {"pool": [1, 2, 3], "copy": [1, 2, 3]},
    }
    r = map_switch(br)
    assert not r["coexistence"]
    # MAP a_G: 0.1, 1.0, 2.0; midpoint 1.05 between P = 20 and 40, 0.05 of 1.0 in log P
    assert math.isclose(r["P_switch"], math.exp(math.log(20) + 0.05 * math.log(2)), rel_tol=1e-12)
    br = {
        "P": [10, 20, 40],
        "aG": {"pool": [0.1, 0.2, 0.3], "copy": [1.5, 1.6, 1.8]},
        "U": {"pool": [1, 2, 3], "copy": [2, 2.5, 2]},
    }
    r = map_switch(br)
    assert r["coexistence"] and r["coexistence_P"] == [10, 20, 40]
    assert r["bracket"] == [20.0, 40.0]  # the lower-U branch switches between 20 and 40


def test_a_left_out_bimodal_probe_leaves_a_crossover_undecided():
    """No usable probe bimodal but one left out (its range missed a tail) is: first order is
    not ruled out, so the verdict is undecided, with the crossover's P* as its reading; a
    left-out probe with one basin changes nothing."""
    ends = [
        probe(40, 0.0, bimodal=False, mean_a=0.1),
        probe(45, 0.0, bimodal=False, mean_a=1.3),  # inside the step: a resolved crossover
        probe(62, 0.0, bimodal=False, mean_a=2.9),
    ]
    short = ("range: the profile's low end lies 3.0 nats above its minimum",)
    crossover = decide(ends)
    v = decide([*ends, probe(50, -0.6, bimodal=True, mean_a=1.6, short=short)])
    assert crossover.kind == "crossover" and v.kind == "undecided"
    assert v.P_star == crossover.P_star
    assert any("P=50: bimodal" in e and "not ruled out" in e for e in v.evidence)
    one_basin = decide([*ends, probe(50, 0.0, bimodal=False, mean_a=1.6, short=short)])
    assert one_basin.kind == "crossover" and one_basin.P_star == crossover.P_star


def test_a_positive_barrier_of_unknown_error_leaves_a_crossover_undecided():
    """A usable probe whose positive barrier no two replicas define (se NaN) is neither one
    basin nor two: the crossover becomes undecided; a negative barrier of unknown error is one
    basin and changes nothing."""
    ends = [probe(40, 0.0, bimodal=False, mean_a=0.1), probe(62, 0.0, bimodal=False, mean_a=2.9)]
    mid = probe(50, 0.0, bimodal=False, mean_a=1.6)
    crossover = decide([*ends, mid])
    v = decide([*ends, dataclasses.replace(mid, barrier=1.2, barrier_se=math.nan)])
    assert crossover.kind == "crossover" and v.kind == "undecided"
    assert v.P_star == crossover.P_star
    assert any("P=50: barrier 1.20 nats with no error" in e for e in v.evidence)
    one_basin = decide([*ends, dataclasses.replace(mid, barrier=-0.3, barrier_se=math.nan)])
    assert one_basin.kind == "crossover"


def test_flag_lines_count_each_window_once_and_keep_other_flags_apart():
    """A window that missed both the mixing bar and its round target has two lines; an overlap
    line names a probe but no window not mixed."""
    from copyhead_jax.compare.profile_verdict import flagged_probes, flagged_windows, other_flags

    lines = [
        "seed 0 P=50: window 8 (c = 1.01): R-hat 1.112, ESS 42",
        "seed 0 P=50: window 8 (c = 1.01): target ESS >= 50, R-hat <= 1.1 not met (ESS 42)",
        "seed 0 P=65: windows 2-3: overlap 0.016",
        "seed 1 P=65: window 2 (c = 0.11): R-hat 2.316, ESS 4",
    ]
    assert flagged_windows(lines) == ("seed 0 P=50: window 8", "seed 1 P=65: window 2")
    assert other_flags(lines) == ("seed 0 P=65: windows 2-3: overlap 0.016",)
    assert flagged_probes(lines) == ("seed 0 P=50", "seed 0 P=65", "seed 1 P=65")


def test_window_count_is_every_probes_windows_over_seeds():
    """One window per centre at every probe of every seed (the committed two-seed L = 12, V = 6
    run; each window's restrained minimum is recorded beside its centre)."""
    import json
    from pathlib import Path

    from copyhead_jax.compare.profile_verdict import window_count

    res = json.loads(
        (
            Path(__file__).parents[2] / "docs/reports/results/transition_profile_L12_V6.json"
        ).read_text()
    )
    probes = [p for s in res["seeds"] for p in s["profiles"].values()]
    assert len(res["seeds"]) == 2 and len(probes) > 2
    assert window_count(res) == sum(len(p["windows"]["a_min"]) for p in probes)
    assert window_count({"seeds": []}) == 0


def test_a_crossover_whose_step_no_probe_resolves_is_undecided():
    """No probe bimodal, but the posterior mean goes from pooling to copying between two probes
    with none inside the step (seen on a paper-chi-lik seed: 0.075 at P = 864, 1.87 at 1,144):
    a jump there is not ruled out. With a probe halfway up the step it is a crossover."""
    ends = [probe(864, 0.0, bimodal=False, mean_a=0.075)]
    top = [probe(P, 0.0, bimodal=False, mean_a=m) for P, m in ((1144, 1.87), (1350, 2.13))]
    v = decide([*ends, *top])
    assert v.kind == "undecided" and v.P_star is not None
    assert any("no probe inside the step" in e and "P=864" in e for e in v.evidence)
    inside = decide([*ends, probe(1000, 0.0, bimodal=False, mean_a=1.1), *top])
    assert inside.kind == "crossover"
