"""``copyhead sample --cluster ADDRESS``: the chunks of runs built on a Dask cluster's workers from
the configs, the fitted weights and the chain keys alone (an in-process cluster of two worker
threads here) give the posterior, bit for bit, of the same command without it, checkpointed and
written here; a bad address is refused before any work. The fast test runs the plumbing on a
stand-in program (draws keyed on each chain's key, nothing compiled), the slow one the real SGLD
chains."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.results import DRAW_FIELDS, PosteriorResult, SweepResult
from copyhead_jax.sampling import DrawStats, FullSGLD
from copyhead_jax.sampling import run as sample_mod
from tests.helpers import no_work, one_line_error

#: SGLD on the two runs of the full-engine ``full`` file, one run per chunk (what fans out)
ARGS = (
    "--steps 6 --burn-in 0 --thin 2 --chains 2 --step-size 1e-4 "
    "--chunk-runs 1 --no-plot --no-progress"
).split()
SGLD = ch.SGLDConfig(step_size=1e-4, n_steps=6, burn_in=0, thin=2, n_chains=2)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as c:
        yield c


class KeyedDraws(FullSGLD):
    """A stand-in for the SGLD program: each chain's draws are normals from a generator seeded
    with its key (NumPy, nothing compiled), so a chunk's arrays are a function of its inputs."""

    def sample(self, keys, head, train, mask, prepared, idx) -> DrawStats:
        kd = np.asarray(jax_key_data(keys))  # [runs, C, 2]
        runs, C, S = kd.shape[0], kd.shape[1], self.mc.n_draws
        draws = np.stack(
            [
                [
                    np.random.default_rng(kd[r, c].tolist()).normal(size=(S, len(DRAW_FIELDS)))
                    for c in range(C)
                ]
                for r in range(runs)
            ]
        )
        ones = np.ones((runs, C))
        return DrawStats(
            draws,
            np.ones((runs, C, S)),
            np.ones((runs, C, S)),
            ones,
            ones.astype(bool),
            1e-4 * ones,
        )


def jax_key_data(keys):
    import jax

    return jax.random.key_data(keys)


def test_chunks_on_a_cluster_are_the_chunks_run_here(full, cluster, monkeypatch, tmp_path):
    """``run_sampler(cluster=...)``: the chunks sent (built there from their task alone) are the
    chunks computed here, and the posterior the same, bit for bit."""
    monkeypatch.setitem(sample_mod.SAMPLERS, ch.SGLDConfig, KeyedDraws)
    sweep = SweepResult.load(full)
    here = sample_mod.run_sampler(sweep, SGLD, progress=False, chunk_runs=1)
    out = tmp_path / "there.npz"
    there = sample_mod.run_sampler(
        sweep, SGLD, out=out, progress=False, chunk_runs=1, cluster=cluster.scheduler_address
    )
    assert "remote_chunk" in cluster.scheduler.task_prefixes  # the chunks ran on the workers
    assert sorted(here.arrays) == sorted(there.arrays) and here["draws"].shape[:2] == (2, 1)
    for k, v in here.arrays.items():
        assert np.asarray(v).tobytes() == np.asarray(there.arrays[k]).tobytes(), k
    assert not (here["draws"][0] == here["draws"][1]).any()  # each run its own keys
    assert out.is_file() and not (tmp_path / "there.npz.chunks").exists()


@pytest.mark.slow  # two compiled SGLD posteriors: ~12 s on a loaded 2-core CPU
def test_a_posterior_on_a_cluster_is_bit_identical(full, cluster, tmp_path, capsys):
    here, there = tmp_path / "here.npz", tmp_path / "there.npz"
    assert main(["sample", str(full), *ARGS, "--out", str(here)]) == 0
    argv = ["sample", str(full), *ARGS, "--out", str(there), "--cluster", cluster.scheduler_address]
    assert main(argv) == 0
    a, b = PosteriorResult.load(here), PosteriorResult.load(there)
    assert sorted(a.arrays) == sorted(b.arrays) and a["draws"].shape[:2] == (2, 1)
    for k in a.arrays:
        x, y = np.asarray(a.arrays[k]), np.asarray(b.arrays[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k
    assert np.isfinite(a["draws"]).all()  # real draws were compared
    assert not (tmp_path / "there.npz.chunks").exists()  # checkpointed here, then removed


def test_a_bad_address_is_refused_before_any_work(full, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sample_mod, "sweep_inputs", no_work)
    rc = main(
        [
            "sample",
            str(full),
            *ARGS,
            "--out",
            str(tmp_path / "p.npz"),
            "--cluster",
            "localhost:8786",
        ]
    )
    one_line_error(capsys, rc, r"--cluster must be a scheduler address")
    assert not list(tmp_path.iterdir())
