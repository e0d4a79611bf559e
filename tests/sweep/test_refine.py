"""``copyhead_jax.sweep.refine``: runs merged by P, only new P swept, grouping by the cost model,
and adaptive refinement that measures inside the located bracket (planted sweeps, no training)."""

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import locate as loc
from copyhead_jax.sweep.refine import Feature, Runs, adaptive, group_P, measure, reach_cap

CFG = ch.TINY.replace(sweep=dict(n_seeds=2))


def planted_sweep(calls):
    """A sweep callable whose runs have ``cG = log P`` (seed s adds s) and record each call."""

    def sweep(cfg):
        calls.append(tuple(cfg.sweep.P))
        P = np.asarray(cfg.sweep.P, float)[:, None]
        cG = np.log(P) + np.arange(cfg.sweep.n_seeds)[None, :]
        arrays = {"cG": cG, "finite": np.ones_like(cG, bool), "curve_epoch": np.arange(3)}
        return ch.SweepResult(config=cfg, arrays=arrays)

    return sweep


def test_group_P_partitions_and_beats_single_groups():
    P = [1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 1024]
    cost = dict(compile_s=10.0, seq_epoch_us=8.0)
    g = group_P(P, n_seeds=2, epochs=4000, L=25, cost=cost)
    assert [p for grp in g for p in grp] == P

    def total(groups):
        return sum(10.0 + 8e-6 * 4000 * 2 * len(x) * max(x) for x in groups)

    assert total(g) <= total([P]) + 1e-9
    assert total(g) <= total([[p] for p in P]) + 1e-9
    assert group_P([], n_seeds=1, epochs=1, L=25, cost=cost) == []


def test_runs_merge_sweeps_by_P_and_sweep_only_new_P_within_reach():
    calls = []
    sweep = planted_sweep(calls)
    runs = Runs(CFG, "lin", P_cap=50)
    cost = dict(compile_s=1e9)  # one compiled group per call
    assert measure(runs, [8, 2, 32], sweep=sweep, cost=cost) == [2, 8, 32]
    assert measure(runs, [4, 8, 64, 100], sweep=sweep, cost=cost) == [4]  # 8 known, 64 > cap
    assert calls == [(2, 8, 32), (4,)]
    assert runs.P.tolist() == [2, 4, 8, 32] and 4 in runs and 64 not in runs
    np.testing.assert_allclose(runs.get("cG")[:, 0], np.log([2, 4, 8, 32]))
    assert runs.masked("cG", [4, 32]).shape == (2, 2)
    st = runs.seed_stats(("cG", "absent"))  # seeds 0 and 1: log P and log P + 1
    np.testing.assert_allclose(st["cG"], np.log([2, 4, 8, 32]) + 0.5)
    np.testing.assert_allclose(st["cG_sd"], 0.5) and "absent" not in st
    # the cap from the cost model grows as the per-run budget does
    assert reach_cap(CFG, 10.0, {}) < reach_cap(CFG, 100.0, {})


def test_adaptive_measures_inside_the_bracket_of_a_located_level():
    calls = []
    runs = Runs(CFG, "lin")
    mP = lambda r, P: measure(r, P, sweep=planted_sweep(calls), cost=dict(compile_s=1e9))  # noqa: E731
    mP(runs, [1, 10, 100, 1000])
    level = np.log(40.0)  # seed 0 crosses it at P = 40
    feat = Feature("P40", lambda: loc.locate_level(runs.P, runs.get("cG")[:, 0], level), [runs])
    found = adaptive([feat], mP, rounds=2, n_new=3)
    lo, hi = found["P40"].bracket
    assert lo <= 40 <= hi and hi - lo < 100 - 10  # narrower than the first bracket [10, 100]
    assert len(runs.P) > 4 and all(10 < p < 100 for p in set(runs.P.tolist()) - {1, 10, 100, 1000})
