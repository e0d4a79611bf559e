"""transition/store.py: the checkpoint key ignores the memory budget and batching, but not the
TI settings."""

from __future__ import annotations

import json
import math

import pytest

import copyhead_jax as ch
from copyhead_jax.transition import TISettings

TINY_CFG = ch.PLAIN.replace(task=dict(L=4, V=3), model=dict(width=math.inf, attention="softmax",
                                                               engine="reduced"),
                            train=dict(train_embeddings=False))  # fmt: skip
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


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_group_is_named_set_aside_and_recomputed(damage, tmp_path, monkeypatch):
    """A (seed, P) group file of the TI search that fails to load is named in a warning, kept as
    ``.damaged`` for inspection, and its group recomputed (here by a stand-in for the TI whose
    numbers depend only on (seed, P), so the recomputed group equals the first one)."""
    from copyhead_jax.storage import DamagedCheckpointWarning
    from copyhead_jax.transition import search

    calls = []

    def fake_fe(key, heads, train, mask, a_thr, settings, obj):
        calls.append(1)
        br = lambda F: {"F": F, "mcse": 0.1, "quad_corr": 0.01, "dU_dP": 0.5,
                        "rhat_max": 1.0, "ess_min": 400.0}  # fmt: skip
        return {"copy": br(1.25), "pool": br(0.5), "_C": None}

    monkeypatch.setattr(search, "_heads", lambda *a: ("heads", [8, 8]))
    monkeypatch.setattr(search, "_data", lambda *a: (None, None))
    monkeypatch.setattr(search, "free_energies", fake_fe)
    group = lambda: search._group(TINY_CFG, None, None, 0, 8, 8, 0.5, TISettings(batched=False),
                                  None, 0, tmp_path, False, {})  # fmt: skip
    first = group()
    path = tmp_path / "seed0-P8.json"
    text = path.read_text()
    assert group() == first and len(calls) == 1  # a whole file is reused
    path.write_text(DAMAGES[damage](text))
    with pytest.warns(DamagedCheckpointWarning, match="seed0-P8.json") as w:
        again = group()
    assert len(calls) == 2 and len(w) == 1
    assert {k: v for k, v in again.items() if k != "seconds"} == \
        {k: v for k, v in first.items() if k != "seconds"}  # fmt: skip
    assert (tmp_path / "seed0-P8.json.damaged").read_text() == DAMAGES[damage](text)
    assert json.loads(path.read_text())["dF"] == first["dF"]  # whole again


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
    from copyhead_jax.cli import transition as cli_transition
    from copyhead_jax.transition.store import read_checkpoint

    bad = tmp_path / "seed0-P8.json"
    bad.write_text('{"P": 8, "dF": ')
    monkeypatch.setattr(cli_transition, "_cmd_ti",
                        lambda args: 0 if read_checkpoint(bad, ("dF",)) is None else 1)
    assert main(["transition", "--method", "ti", "--attention", "linear", "--quiet"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("copyhead: warning: checkpoint"), err
    assert str(bad) in err[0] and "recomputing" in err[0]
