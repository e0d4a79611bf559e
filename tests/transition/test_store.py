"""transition/store.py: the checkpoint key ignores the memory budget and batching, but not the
TI settings."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.transition import TISettings

TINY_CFG = ch.PLAIN.replace(
    task=dict(L=4, V=3),
    model=dict(width=math.inf, attention="softmax", engine="reduced"),
    train=dict(train_embeddings=False),
)
GRID = (8, 11, 16, 23, 32, 45, 64)


def test_checkpoint_key_ignores_the_memory_budget_and_batching_but_not_the_settings():
    # a run resumes on another machine (another memory budget, a CPU after an accelerator);
    # anything that changes the numbers beyond float rounding changes the key
    from copyhead_jax.transition import run_key

    s = TISettings(batched=False)
    key = run_key(TINY_CFG, s, [list(GRID), 0.5, 0])
    other = TINY_CFG.replace(sweep=dict(memory_budget_gb=60.0))
    assert run_key(other, TISettings(batched=True), [list(GRID), 0.5, 0]) == key
    assert run_key(TINY_CFG, TISettings(n_iter=200, batched=False), [list(GRID), 0.5, 0]) != key
    assert run_key(TINY_CFG.replace(task=dict(L=5)), s, [list(GRID), 0.5, 0]) != key
    assert run_key(TINY_CFG, s, [list(GRID), 0.6, 0]) != key


# --- damaged checkpoints: named, set aside, recomputed ------------------------------------------

DAMAGES = {
    "truncated": lambda text: text[: len(text) // 2],  # "Expecting ',' delimiter"
    "emptied": lambda text: "",
    "not an object": lambda text: "[1, 2]",
    "a key missing": lambda text: '{"P": 8, "seed": 0}',  # the old KeyError: 'dF'
}


def _fake_ti(monkeypatch, calls):
    """The TI and SMC of each (seed, P) group replaced by numbers that depend on P alone
    (d(P) = -10 log(P / 20): a root at P = 20), so that a recomputed group equals the first."""
    from copyhead_jax.transition import search

    def free_energies(key, heads, train, mask, a_thr, settings, obj):
        P = float(np.sum(mask))
        calls.append(P)
        br = lambda F: {
            "F": F,
            "mcse": 0.1,
            "quad_corr": 0.01,
            "dU_dP": 0.5,
            "rhat_max": 1.0,
            "ess_min": 400.0,
        }
        return {"copy": br(-10 * math.log(P / 20)), "pool": br(0.0), "_C": None}

    def smc_weight(key, heads, train, mask, a_thr, C64, settings, obj):
        P = float(np.sum(mask))
        return {"w_copy": 1 / (1 + math.exp(-10 * math.log(P / 20))), "collapsed": []}

    monkeypatch.setattr(search, "free_energies", free_energies)
    monkeypatch.setattr(search, "smc_weight", smc_weight)


SMALL = TISettings(
    ts=(0.0, 0.5, 1.0),
    n_chains=2,
    n_iter=50,
    n_adapt=10,
    n_ref=100,
    smc_particles=16,
    batched=False,
)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_group_is_named_set_aside_and_recomputed(damage, tmp_path, monkeypatch):
    """A (seed, P) group file of the TI search that fails to load is named in a warning, kept as
    ``.damaged`` for inspection, and its group recomputed: the rerun's numbers equal the first
    run's (the TI replaced by a stand-in whose numbers depend on P alone)."""
    from copyhead_jax.storage import DamagedCheckpointWarning

    calls = []
    _fake_ti(monkeypatch, calls)
    run = lambda: ch.transition(
        TINY_CFG,
        method="ti",
        n_seeds=1,
        out=tmp_path,
        progress=False,
        settings=SMALL,
        P_grid=(8, 16, 32),
        theory=False,
    )
    first = run()
    assert first["P_star"] is not None  # a located root: its equality below means something
    n_first = len(calls)
    path = sorted(p for p in tmp_path.glob("groups-*/seed0-P*.json") if "smc" not in p.name)[0]
    text = path.read_text()
    path.write_text(DAMAGES[damage](text))
    with pytest.warns(DamagedCheckpointWarning, match=path.name) as w:
        again = run()
    assert len(w) == 1 and len(calls) == n_first + 1  # only the damaged group is recomputed
    assert again["P_star"] == first["P_star"] and again["interval"] == first["interval"]
    assert path.with_name(path.name + ".damaged").read_text() == DAMAGES[damage](text)
    assert json.loads(path.read_text())["dF"] == json.loads(text)["dF"]  # whole again


def test_a_damaged_map_sweep_is_set_aside(tmp_path):
    from copyhead_jax.storage import DamagedCheckpointWarning
    from copyhead_jax.transition.store import kept_sweep

    path = tmp_path / "map_pool.npz"
    path.write_bytes(b"PK\x03\x04 cut short")
    with pytest.warns(DamagedCheckpointWarning, match="map_pool.npz"):
        assert kept_sweep(path, TINY_CFG) is None
    assert not path.exists() and (tmp_path / "map_pool.npz.damaged").exists()


@pytest.mark.filterwarnings("default::copyhead_jax.storage.DamagedCheckpointWarning")
def test_the_command_names_a_damaged_checkpoint_in_one_line(tmp_path, monkeypatch, capsys):
    from copyhead_jax.cli import main

    _fake_ti(monkeypatch, [])
    argv = [
        "transition",
        "--method",
        "ti",
        "--preset",
        "plain",
        "--L",
        "4",
        "--V",
        "3",
        "--width",
        "inf",
        "--n-seeds",
        "1",
        "--P",
        "8,16,32",
        "--rungs",
        "3",
        "--chains",
        "2",
        "--iters",
        "50",
        "--smc-particles",
        "16",
        "--out",
        str(tmp_path),
        "--json",
        "--no-plot",
        "--quiet",
    ]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    bad = sorted(tmp_path.glob("groups-*/seed0-P*-smc.json"))[0]
    bad.write_text("")  # emptied
    (tmp_path / "transition.json").unlink()  # a run stopped after its groups: resumed from them
    assert main(argv) == 0
    out, err = capsys.readouterr()
    err = [x for x in err.strip().splitlines() if not x.startswith("saved ")]
    assert len(err) == 1 and err[0].startswith("copyhead: warning: checkpoint"), err
    assert str(bad) in err[0] and "recomputing" in err[0]
    assert json.loads(out)["P_star"] == first["P_star"]
