"""``--cluster ADDRESS``: a sweep's chunks and a profile transition's seeds run on a Dask cluster
(an in-process one here) give the same result, bit for bit, as the same command without it, and
a damaged address is refused before any work; a command whose groups cannot fan out refuses the
flag in one line saying why."""

import numpy as np
import pytest

from copyhead_jax.cli import main
from copyhead_jax.results import SweepResult
from tests.helpers import one_line_error

#: a tiny reduced sweep: two chunks of one run each (what fans out), exact fits of a few steps
TINY = (
    "sweep --preset tiny --attention softmax --engine reduced --solver "
    "exact --P 2,4 --n-seeds 1 --chunk-runs 1 --exact-max-steps 20 "
    "--no-exact-continuation --no-branches --no-plot --no-progress"
).split()


@pytest.fixture(scope="module")
def in_process_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


def _chunk(idx):
    """A chunk's arrays as a deterministic function of its run indices (a batched JAX kernel
    and NumPy's BLAS, what would differ between thread pools if anything did)."""
    import jax

    x = jax.random.normal(jax.random.key(int(idx[0])), (len(idx), 5, 5))
    g = np.asarray(x @ x.transpose(0, 2, 1))
    return {"eig": np.linalg.eigvalsh(g), "ld": np.linalg.slogdet(g + np.eye(5))[1]}


def test_chunks_fanned_out_are_the_chunks_computed_here(in_process_cluster, tmp_path):
    """``run_chunked(fan_out=...)``, the path of ``--cluster``: the same arrays as computed in
    this process, the kept chunks loaded and only the others sent."""
    from copyhead_jax.runner import map_groups
    from copyhead_jax.runner.chunks import run_chunked
    from tests.helpers import no_work  # nothing is computed here

    sent = []

    def fan_out(idxs):
        sent.extend(int(i[0]) for i in idxs)
        return map_groups(_chunk, idxs, cluster=in_process_cluster)

    kw = dict(n_runs=5, chunk=2, fingerprint="f")
    here = run_chunked(compute=_chunk, ckpt_dir=None, **kw)
    there = run_chunked(compute=no_work, ckpt_dir=tmp_path, fan_out=fan_out, **kw)
    for k in here:
        assert here[k].tobytes() == there[k].tobytes(), k
    (tmp_path / "chunk_00001.npz").unlink()  # one chunk lost: only it is sent again
    sent.clear()
    again = run_chunked(compute=no_work, ckpt_dir=tmp_path, fan_out=fan_out, **kw)
    assert sent == [2] and all(again[k].tobytes() == here[k].tobytes() for k in here)


def test_sweep_hands_its_cluster_to_the_sweep(monkeypatch, tmp_path, capsys):
    from copyhead_jax.sweep import run as sweep_run

    seen = {}

    def record(cfg, **kw):
        seen.update(kw)
        raise KeyboardInterrupt  # stop there

    monkeypatch.setattr(sweep_run, "run_sweep", record)
    assert main([*TINY, "--out", str(tmp_path / "s.npz"), "--cluster", "local:2"]) == 130
    assert seen["cluster"] == "local:2"


@pytest.mark.slow  # two tiny sweeps, compiled: ~20 s on a loaded 2-core CPU
def test_a_sweep_on_a_cluster_is_bit_identical(in_process_cluster, tmp_path, capsys):
    here, there = tmp_path / "here.npz", tmp_path / "there.npz"
    assert main([*TINY, "--out", str(here)]) == 0
    assert main([*TINY, "--out", str(there), "--cluster", in_process_cluster]) == 0
    a, b = SweepResult.load(here), SweepResult.load(there)
    assert sorted(a.arrays) == sorted(b.arrays) and a.meta["n_chunks"] == 2
    for k in a.arrays:
        x, y = np.asarray(a.arrays[k]), np.asarray(b.arrays[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k
    assert not (tmp_path / "there.npz.chunks").exists()  # checkpointed here, then removed


@pytest.mark.parametrize(
    "argv",
    [
        ["transition", "--L", "4", "--V", "3", "--method", "ti"],
        ["transition", "--L", "4", "--V", "3", "--attention", "linear"],
    ],
)
def test_commands_whose_groups_cannot_fan_out_refuse_it(argv, capsys):
    one_line_error(capsys, main([*argv, "--cluster", "local:2"]), r"--cluster: .*(not|run without)")


#: a tiny profile transition: two seeds (what fans out), two given probes, a few short windows
TR = (
    "transition --preset plain --L 4 --V 3 --width inf --n-seeds 2 --probes "
    "10,20 --max-probes 2 --spacing 0.5 --window-chains 3 "
    "--window-iterations 16 --window-ess-target 0 --no-map --no-progress "
    "--json"
).split()


def test_transition_hands_its_cluster_to_the_profile(monkeypatch, tmp_path):
    from copyhead_jax.transition import profile as profile_run  # the face the command calls

    seen = {}

    def record(cfg, **kw):
        seen.update(kw)
        raise KeyboardInterrupt  # stop there

    monkeypatch.setattr(profile_run, "profile_transition", record)
    assert main([*TR, "--cluster", "local:2"]) == 130
    assert seen["cluster"] == "local:2"


def test_the_seeds_on_a_cluster_are_the_seeds_run_here(in_process_cluster, monkeypatch):
    """``seed_task``, what a worker runs: the same seed from the same inputs (its key from the
    Monte-Carlo seed and its index alone), in the seeds' order."""
    from copyhead_jax.runner import map_groups
    from copyhead_jax.transition.profile import run as R

    def seed_transition(cfg, s, first, ss, key, log, ckpt_dir):  # the seed's inputs, not its work
        import jax

        return R.SeedRun(
            s,
            {},
            {},
            cpu={"first": tuple(first), "ckpt": ckpt_dir, "key": jax.random.key_data(key).tolist()},
        )

    monkeypatch.setattr(R, "seed_transition", seed_transition)
    tasks = [("cfg", s, (10, 20), None, 7, None, False) for s in (0, 1, 2)]
    here = [R.seed_task(t) for t in tasks]
    there = map_groups(R.seed_task, tasks, cluster=in_process_cluster)
    assert there == here and [h.seed for h in here] == [0, 1, 2]
    assert here[0].cpu["key"] != here[1].cpu["key"]  # each seed its own key


@pytest.mark.slow  # two tiny profile transitions of two seeds: ~1 min on a loaded 2-core CPU
def test_a_profile_transition_on_a_cluster_is_bit_identical(in_process_cluster, capsys):
    import json

    assert main(TR) == 0
    here = json.loads(capsys.readouterr().out)
    assert main([*TR, "--cluster", in_process_cluster]) == 0
    there = json.loads(capsys.readouterr().out)
    for res in (here, there):  # the time it took differs, nothing else
        res.pop("cpu_seconds")
        for sd in res["seeds"]:
            sd.pop("cpu")
            for prof in sd["profiles"].values():
                prof.pop("seconds")
    assert there == here and here["n_seeds"] == 2


def test_a_bad_address_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from copyhead_jax.sweep import run as sweep_run
    from copyhead_jax.transition.profile import run as profile_run
    from tests.helpers import no_work

    monkeypatch.setattr(sweep_run, "solver_program", no_work)
    rc = main([*TINY, "--out", str(tmp_path / "s.npz"), "--cluster", "localhost:8786"])
    one_line_error(capsys, rc, r"--cluster must be a scheduler address")
    monkeypatch.setattr(profile_run, "check_profile_memory", no_work)
    one_line_error(
        capsys, main([*TR, "--cluster", "localhost:8786"]), r"--cluster must be a scheduler address"
    )
