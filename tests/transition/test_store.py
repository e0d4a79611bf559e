"""transition/store.py and the branch-TI search's groups on the run harness: the groups' key
ignores the memory budget and batching, but not the TI settings; a run killed after a group
resumes to the same JSON; a damaged group is named, set aside and recomputed, one of another run
recomputed."""

from __future__ import annotations

import json
import math
import shutil

import jax
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.transition import TISettings
from copyhead_jax.transition.store import json_default

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


# --- the groups on the run harness: kept while the run goes, resumed, damaged ones recomputed ---


def _fake_ti(mp, calls, stop_at: int | None = None):
    """The TI and SMC of each (seed, P) group replaced by numbers that depend on P (d(P) =
    -10 log(P / 20): a root at P = 20) and on the group's key (a few hundredths of a nat), so
    that a recomputed or resumed group equals the first only if it is the same group under the
    same key. ``stop_at``: the TI call (0-based) that is interrupted instead (a Ctrl-C)."""
    from copyhead_jax.transition import search

    def free_energies(key, heads, train, mask, a_thr, settings, obj):
        if stop_at is not None and len(calls) == stop_at:
            raise KeyboardInterrupt
        P = float(np.sum(mask))
        calls.append(P)
        noise = 0.03 * float(jax.random.normal(key))
        br = lambda F: {  # noqa: E731
            "F": F,
            "mcse": 0.1,
            "quad_corr": 0.01,
            "dU_dP": 0.5,
            "rhat_max": 1.0,
            "ess_min": 400.0,
        }
        return {"copy": br(-10 * math.log(P / 20) + noise), "pool": br(0.0), "_C": 0.0}

    def smc_weight(key, heads, train, mask, a_thr, C64, settings, obj):
        P = float(np.sum(mask))
        d = -10 * math.log(P / 20) + 0.03 * float(jax.random.normal(key))
        return {"w_copy": 1 / (1 + math.exp(d)), "collapsed": []}

    mp.setattr(search, "free_energies", free_energies)
    mp.setattr(search, "smc_weight", smc_weight)


SMALL = TISettings(
    ts=(0.0, 0.5, 1.0),
    n_chains=2,
    n_iter=50,
    n_adapt=10,
    n_ref=100,
    smc_particles=16,
    batched=False,
)


def _run(out):
    return ch.transition(
        TINY_CFG,
        method="ti",
        n_seeds=2,
        out=out,
        progress=False,
        settings=SMALL,
        P_grid=(8, 16, 32),
        theory=False,
    )


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """A run from start to end (the TI replaced, :func:`_fake_ti`): its folder (the MAP sweeps,
    which the tests copy so that they fit nothing), its result and its TI calls."""
    out, calls = tmp_path_factory.mktemp("whole"), []
    with pytest.MonkeyPatch.context() as mp:
        _fake_ti(mp, calls)
        res = _run(out)
    assert res["P_star"] is not None  # a located root: equality below means something
    assert not (out / "groups").exists()  # the groups' records go once the result is saved
    return out, res, len(calls)


def _with_maps(whole_out, out):
    out.mkdir()
    for b in ("pool", "copy"):
        shutil.copy(whole_out / f"map_{b}.npz", out / f"map_{b}.npz")
    return out


def _numbers(res: dict) -> str:
    """The result as JSON less the seconds it took (a resumed run's own)."""
    res = json.loads(json.dumps(res, default=json_default))
    res.pop("wall_seconds"), res.pop("group_seconds")
    for sd in res["seeds"]:
        for g in sd["probes"] + (sd["smc"]["points"] if sd["smc"] else []):
            g.pop("seconds", None)
    return json.dumps(res)


def test_a_run_killed_after_its_first_group_resumes_to_the_same_json(whole, tmp_path, monkeypatch):
    whole_out, first, n_groups = whole
    out, calls = _with_maps(whole_out, tmp_path / "killed"), []
    _fake_ti(monkeypatch, calls, stop_at=1)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    kept = sorted((out / "groups").iterdir())
    assert len(calls) == 1 and [p.name for p in kept] == [f"seed0-P{int(calls[0])}.json"]
    assert not (out / "transition.json").exists()
    calls.clear()
    _fake_ti(monkeypatch, calls)
    again = _run(out)
    assert len(calls) == n_groups - 1  # the kept group is read back, not recomputed
    assert _numbers(again) == _numbers(first)
    assert json.loads((out / "transition.json").read_text())["P_star"] == first["P_star"]
    assert not (out / "groups").exists() and not list(out.glob("*.lock"))


def _kill_at_the_end(monkeypatch):
    """Interrupt the run once, after every group and cross-check was kept."""
    from copyhead_jax.transition import search

    real, done = search.assemble, []

    def assemble(*a, **k):
        if not done:
            done.append(1)
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(search, "assemble", assemble)


DAMAGES = {
    "truncated": lambda text: text[: len(text) // 2],  # "Expecting ',' delimiter"
    "emptied": lambda text: "",
    "not an object": lambda text: "[1, 2]",
    "a key missing": lambda text: json.dumps({**json.loads(text), "record": {"P": 8, "seed": 0}}),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_group_is_named_set_aside_and_recomputed(damage, whole, tmp_path, monkeypatch):
    """A (seed, P) group file of the TI search that fails to load is named in a warning, set
    aside as ``.damaged`` beside the other records (removed with them once the result is saved),
    and its group recomputed: the resumed run's numbers equal those of a run never interrupted
    (the TI replaced by a stand-in)."""
    from copyhead_jax.storage import DamagedCheckpointWarning

    whole_out, first, n_groups = whole
    out, calls = _with_maps(whole_out, tmp_path / "run"), []
    _fake_ti(monkeypatch, calls)
    _kill_at_the_end(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    path = sorted(p for p in (out / "groups").glob("seed0-P*.json") if "smc" not in p.name)[0]
    text = path.read_text()
    path.write_text(DAMAGES[damage](text))
    calls.clear()
    _kill_at_the_end(monkeypatch)  # stopped again to look into the folder before it goes
    with (
        pytest.warns(DamagedCheckpointWarning, match=path.name) as w,
        pytest.raises(KeyboardInterrupt),
    ):
        _run(out)
    assert len(w) == 1 and len(calls) == 1  # only the damaged group is recomputed
    assert path.with_name(path.name + ".damaged").read_text() == DAMAGES[damage](text)
    assert json.loads(path.read_text())["record"]["dF"] == json.loads(text)["record"]["dF"]
    assert _numbers(_run(out)) == _numbers(first) and len(calls) == 1


def test_a_group_of_another_run_is_recomputed(whole, tmp_path, monkeypatch):
    """A record whose fingerprint is not this run's key (other settings, grid or seed) is not
    read back: its group is computed again and the result is this run's."""
    whole_out, first, n_groups = whole
    out, calls = _with_maps(whole_out, tmp_path / "run"), []
    _fake_ti(monkeypatch, calls)
    _kill_at_the_end(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        _run(out)
    path = sorted(p for p in (out / "groups").glob("seed0-P*.json") if "smc" not in p.name)[0]
    rec = json.loads(path.read_text())
    rec["fingerprint"], rec["record"]["dF"] = "another-run", 99.0
    path.write_text(json.dumps(rec))
    calls.clear()
    again = _run(out)
    assert len(calls) == 1 and _numbers(again) == _numbers(first)


def test_a_damaged_map_sweep_is_set_aside(tmp_path):
    from copyhead_jax.storage import DamagedCheckpointWarning
    from copyhead_jax.transition.store import kept_sweep

    path = tmp_path / "map_pool.npz"
    path.write_bytes(b"PK\x03\x04 cut short")
    with pytest.warns(DamagedCheckpointWarning, match="map_pool.npz"):
        assert kept_sweep(path, TINY_CFG) is None
    assert not path.exists() and (tmp_path / "map_pool.npz.damaged").exists()


@pytest.mark.filterwarnings("default::copyhead_jax.storage.DamagedCheckpointWarning")
def test_the_command_names_a_damaged_checkpoint_in_one_line(whole, tmp_path, monkeypatch, capsys):
    from copyhead_jax.cli import main
    from copyhead_jax.transition import search

    out = _with_maps(whole[0], tmp_path / "run")  # the command's MAP sweeps are the API's
    _fake_ti(monkeypatch, [])
    monkeypatch.setattr(search, "theory_points", lambda cfg: {"map": None, "post": None})
    _kill_at_the_end(monkeypatch)
    argv = [
        *(
            "transition --method ti --preset plain --L 4 --V 3 --width inf "
            "--n-seeds 2 --P 8,16,32 --rungs 3 --chains 2 --iterations 50 "
            "--smc-particles 16 --out"
        ).split(),
        str(out),
        "--json",
        "--no-plot",
        "--quiet",
    ]
    assert main(argv) == 130  # interrupted once every group was kept
    assert "rerun the same command to resume" in capsys.readouterr().err
    bad = sorted((out / "groups").glob("seed0-P*-smc.json"))[0]
    bad.write_text("")  # emptied
    assert main(argv) == 0
    res, err = capsys.readouterr()
    err = [x for x in err.strip().splitlines() if not x.startswith("saved ")]
    assert len(err) == 1 and err[0].startswith("copyhead: warning: checkpoint"), err
    assert str(bad) in err[0] and "recomputing" in err[0]
    assert math.isfinite(json.loads(res)["P_star"])
