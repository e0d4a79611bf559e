"""``copyhead llc --cluster ADDRESS``: each chain set (one P, one estimator) built on a Dask
cluster's worker from its inputs alone (an in-process cluster of two worker threads here) gives
the numbers, bit for bit, of the same run without it, kept here as it returns; the command hands
its address through, and a bad one is refused before any work. The fast test runs the plumbing
on a stand-in chain program (draws keyed on each seed's key, nothing compiled), the slow one the
real SGLD chains."""

import importlib

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.sampling.llc_runs import LLCSettings, llc_runs
from tests.helpers import no_work, one_line_error

#: short chains: a few draws per chain set (what is compared is where they run, not what they
#: estimate); the three chain sets of the one P share one compiled program
ST = LLCSettings(n_steps=40, burn_in=8, thin=2, n_chains=2)


@pytest.fixture(scope="module")
def sweep():
    return tiny_reduced()


def tiny_reduced():
    """A reduced softmax sweep with prior-drawn weights (no fitting: the centres' values do not
    matter here, only that both runs start from the same ones)."""
    from tests.helpers import fake_sweep

    cfg = ch.TINY.replace(
        model=dict(engine="reduced", attention="softmax"), sweep=dict(P=(6,), n_seeds=2)
    )
    res = fake_sweep(cfg)
    D, L, V = cfg.task.V + cfg.task.L, cfg.task.L, cfg.task.V
    rng = np.random.default_rng(0)
    for k, shape in dict(W_E=(D, V), b=(D, L), W_G=(D, D), W_O_hat=(V, D)).items():
        res.arrays[f"params/{k}"] = rng.normal(size=(1, 2, *shape)).astype(np.float32)
    return res


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as c:
        yield c


def keyed_chains(keys, ws, tok, m, W_E, b, *a, cfg, st, n_steps, burn_in):
    """A stand-in for the chains' program: each seed's draws are normals from a generator
    seeded with its key (NumPy, nothing compiled)."""
    import jax

    kd = np.asarray(jax.random.key_data(keys))
    T = (n_steps - burn_in) // st.thin
    draws = np.stack(
        [np.random.default_rng(k.tolist()).normal(1.0, 0.1, (st.n_chains, T, 3)) for k in kd]
    )
    ones = np.ones(len(kd))
    return (draws, ones, 1e-3 * ones, ones, np.ones((len(kd), st.n_chains))), None


def test_chain_sets_on_a_cluster_are_the_chain_sets_run_here(sweep, cluster, tmp_path, monkeypatch):
    llc_chains = importlib.import_module("copyhead_jax.sampling.llc_chains")
    monkeypatch.setattr(llc_chains, "_chains_jit", keyed_chains)
    _same_here_and_there(sweep, cluster, tmp_path)


@pytest.mark.slow  # compiled SGLD chain sets: ~10 s on a loaded 2-core CPU
def test_chain_sets_on_a_cluster_are_bit_identical(sweep, cluster, tmp_path):
    _same_here_and_there(sweep, cluster, tmp_path)


def _same_here_and_there(sweep, cluster, tmp_path):
    here = llc_runs(sweep, settings=ST)
    ckpt = tmp_path / "ck"
    there = llc_runs(sweep, settings=ST, ckpt_dir=ckpt, cluster=cluster.scheduler_address)
    assert "remote_row" in cluster.scheduler.task_prefixes  # the chain sets ran on the workers
    assert sorted(here.arrays) == sorted(there.arrays)
    for k, v in here.arrays.items():
        assert v.tobytes() == there.arrays[k].tobytes(), k
    assert np.isfinite(here.arrays["beta1_n_draws"]).all()  # real chains were compared
    assert len(list(ckpt.glob("chunk_*.npz"))) == 3  # kept here, one per chain set
    again = llc_runs(sweep, settings=ST, ckpt_dir=ckpt, cluster="tcp://127.0.0.1:1")
    for k, v in here.arrays.items():  # all kept: nothing is sent (no scheduler listens there)
        assert v.tobytes() == again.arrays[k].tobytes(), k


def test_llc_hands_its_cluster_to_the_chain_sets(sweep, tmp_path, monkeypatch):
    llc_mod = importlib.import_module("copyhead_jax.sampling.llc_runs")

    seen = {}

    def record(sweeps, **kw):
        seen.update(kw)
        raise KeyboardInterrupt  # stop there

    monkeypatch.setattr(llc_mod, "llc_runs", record)
    path = sweep.save(tmp_path / "sweep_softmax.npz")
    assert main(["llc", str(path), "--cluster", "local:2", "--no-progress"]) == 130
    assert seen["cluster"] == "local:2"


def test_a_bad_address_is_refused_before_any_work(sweep, tmp_path, monkeypatch, capsys):
    llc_mod = importlib.import_module("copyhead_jax.sampling.llc_runs")

    monkeypatch.setattr(llc_mod, "sweep_inputs", no_work)
    path = sweep.save(tmp_path / "sweep_softmax.npz")
    rc = main(["llc", str(path), "--cluster", "localhost:8786", "--no-progress"])
    one_line_error(capsys, rc, r"--cluster must be a scheduler address")
