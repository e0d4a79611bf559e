"""``fanout.run_dependent``: jobs that wait for other jobs, in spawned worker processes, the
costliest ready job first (its waiting jobs' costs included); an error stops the run."""

import pytest

from copyhead_jax.fanout import run_dependent


def test_dependencies_and_priority_set_the_order_and_results_are_fn_of_each_job():
    # -1 is cheap but unlocks -5 (cost 1 + 5 = 6 > 3): with one worker it goes first, then the
    # job it unlocked (5 > 3), then 3
    jobs = [(3, [], 3.0), (-1, [], 1.0), (-5, [-1], 5.0)]
    seen = []
    out = run_dependent(abs, jobs, workers=1, on_done=lambda j, r: seen.append(j))
    assert out == [(-1, 1), (-5, 5), (3, 3)]
    assert seen == [-1, -5, 3]


def test_two_workers_run_every_job_after_its_dependencies():
    jobs = [("a", [], 1.0), ("bb", ["a"], 1.0), ("ccc", ["a", "bb"], 1.0), ("d", [], 1.0)]
    out = run_dependent(len, jobs, workers=2)
    order = [j for j, _ in out]
    assert dict(out) == {"a": 1, "bb": 2, "ccc": 3, "d": 1}
    assert order.index("a") < order.index("bb") < order.index("ccc")


def test_a_failed_job_stops_the_run_and_a_missing_dependency_is_refused():
    with pytest.raises(ValueError, match="invalid literal"):
        run_dependent(int, [("x", [], 1.0)], workers=1)
    with pytest.raises(ValueError, match="not given"):
        run_dependent(abs, [(1, [2], 1.0)], workers=1)
