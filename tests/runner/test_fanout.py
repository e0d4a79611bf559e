"""runner/fanout.py: ``map_groups`` on serial, local processes and a local 2-worker Dask cluster
gives the same results, bit for bit and in order, a failing item reported and the others kept;
``run_dependent`` runs jobs after their dependencies."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.runner import GroupFailure, failures, map_groups, run_dependent


def group(seed: int) -> np.ndarray:
    """A deterministic function of its seed with a batched LAPACK kernel in it (the kind that
    differs between thread pools if anything does): eigenvalues of a random Gram matrix."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    x = jax.random.normal(jax.random.key(seed), (3, 6, 6))
    g = x @ jnp.swapaxes(x, 1, 2) / 6.0
    # and NumPy's BLAS (threaded; Dask's workers cap it at one thread unless told otherwise)
    big = np.asarray(jax.random.normal(jax.random.key(seed + 1), (400, 400)), np.float64)
    ld = np.linalg.slogdet(big @ big.T + np.eye(400))[1]
    return np.asarray(jnp.concatenate([jnp.linalg.eigvalsh(g).ravel(), x.sum((1, 2))])), ld


SEEDS = [5, 0, 3, 1]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.tobytes() == y.tobytes() and lx.hex() == ly.hex()
        for (x, lx), (y, ly) in zip(a, b)
    )


def test_serial_is_the_list_comprehension_and_keeps_order():
    ticks = []
    out = map_groups(group, SEEDS, progress=lambda d, t: ticks.append((d, t)))
    assert _same(out, [group(s) for s in SEEDS])
    assert not _same(out, out[::-1])  # the items differ: order is visible
    assert ticks == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_a_failing_item_is_a_record_and_the_others_are_kept():
    out = map_groups(group, [2, -1, 4])
    (f,) = failures(out)
    assert isinstance(out[1], GroupFailure) and f.index == 1 and f.error == "ValueError"
    assert "seed must be >= 0" in f.message and "group" in f.traceback
    assert _same([out[0], out[2]], [group(2), group(4)])


def test_local_processes_match_serial_and_keep_order_and_failures():
    out = map_groups(group, [3, -1, 0], jobs=2)  # spawned processes: JAX imported afresh
    assert _same([out[0], out[2]], [group(3), group(0)])
    assert [f.index for f in failures(out)] == [1]


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(jobs=0), "jobs must be an int >= 1"),
        (dict(jobs=1.5), "jobs must be an int >= 1"),
        (dict(cluster="local:0"), "N >= 1"),
        (dict(cluster="local:two"), "cluster must be"),
        (dict(cluster="127.0.0.1:8786"), "cluster must be"),
        (dict(cluster="tcp://host"), "cluster must be"),
        (dict(cluster=8786), "cluster must be"),
        (dict(cluster="local:2", jobs=2), "jobs must be 1 when cluster"),
    ],
)
@pytest.mark.bad_input
def test_bad_arguments_raise_one_line_errors(kw, match):
    with pytest.raises(ValueError, match=match) as e:
        map_groups(group, SEEDS, **kw)
    assert "\n" not in str(e.value)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError, match=r'pip install "copyhead_jax\[cluster\]"'):
        map_groups(group, SEEDS, cluster="local:1")


def test_local_dask_cluster_is_bit_identical_to_serial_and_reports_failures():
    pytest.importorskip("distributed")
    serial = map_groups(group, SEEDS)
    ticks = []
    # one local cluster (two one-thread worker processes) for both checks: its start-up,
    # JAX's import in each worker included, is most of this test's time
    out = map_groups(group, [*SEEDS, -1], cluster="local:2", progress=lambda d, t: ticks.append(d))
    assert _same(out[:-1], serial)
    (f,) = failures(out)
    assert f.index == 4 and f.error == "ValueError" and "seed must be >= 0" in f.message
    assert ticks == [1, 2, 3, 4, 5]


@pytest.mark.heavy  # minutes on a loaded 2-core CPU: the tiny MAP sweeps, then HMC compiles twice
def test_one_tiny_posterior_group_on_a_local_cluster_equals_the_local_run(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    from experiments import posterior_branches as PB
    from experiments import posterior_runs as PR

    monkeypatch.chdir(tmp_path)  # the sweeps' cache is results/ under the working folder
    c = PR.config(PR.settings("tiny"), "plain")
    bl = PB.seed_blocks(c)[1]  # the smallest group: P = 8, one seed, both branches
    sweeps = PR.load_sweeps(c, tmp_path / "results" / "posterior" / "tiny", bl)
    task = (c, sweeps, bl["groups"][0], PB.group_index(1, 0), bl["seeds"], bl["n_seeds_total"])
    (local,) = map_groups(PB.compute_group, [task])
    (remote,) = map_groups(PB.compute_group, [task], cluster="local:2")
    assert not isinstance(remote, GroupFailure), str(remote)
    assert len(local["runs"]) == 2
    assert repr(local["runs"]) == repr(remote["runs"])  # every float (repr is exact), NaN too


def test_posterior_branches_takes_a_cluster_and_checks_it_before_any_work(tmp_path, capsys):
    from experiments import posterior_branches as PB
    from experiments.__main__ import main
    from experiments.common import load_spec

    spec = load_spec("tiny", "plain", "posterior-branches", tmp_path / "cache")
    with pytest.raises(ValueError, match="cluster must be a scheduler address"):
        PB.main(spec, tmp_path, cluster="localhost:8786")
    assert not any(tmp_path.iterdir())  # nothing fitted or written
    assert main(["main", "--tiny", "--out", str(tmp_path), "--cluster", "local:2"]) == 2
    with pytest.raises(SystemExit) as e:
        main(["posterior-branches", "--help"])  # python -m experiments posterior-branches
    assert e.value.code == 0 and "--cluster ADDRESS" in capsys.readouterr().out


# run_dependent: jobs that wait for other jobs, in spawned worker processes, the costliest
# ready job first (its waiting jobs' costs included); an error stops the run


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
