"""transition/profile/merge.py and ``copyhead transition --only-seeds / --merge``: a run measured
in parts, a few seeds each, joins into exactly the whole run's result. Each seed's measurement is
replaced by its committed verdict (the committed L = 15, V = 7 run, two seeds; measuring it is
the profile's tests' job); the MAP grid by its committed sweeps. What is tested: a part hands each
seed the same inputs as the whole run, and the merge rebuilds the whole result from the parts."""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.compare.profile_verdict import decide, from_record, probe_from_json
from copyhead_jax.config import Config
from copyhead_jax.transition.profile import SearchSettings, profile_transition
from copyhead_jax.transition.profile.merge import measured_seeds, merge_seed_parts
from copyhead_jax.transition.store import json_default
from tests.helpers import one_line_error

RESULT = Path(__file__).resolve().parents[3] / "docs/reports/results/transition_profile_L15_V7.json"
COMMITTED = json.loads(RESULT.read_text())
run = importlib.import_module("copyhead_jax.transition.profile.run")


@pytest.fixture
def calls(monkeypatch):
    """Each seed's task as the run hands it over; its committed verdict in return."""
    seen = []

    def seed_task(task):
        cfg, s, first, ss, seed, ckpt_dir, progress = task
        seen.append((s, cfg, first, ss, seed))
        probes = [probe_from_json(p) for p in COMMITTED["seeds"][s]["probes"]]
        return run.SeedRun(s, {}, {}, decide(probes), {int(p.P): 1.0 for p in probes})

    sweeps = [{k: m[k] for k in ("P", "aG", "U")} for m in COMMITTED["map"]]
    monkeypatch.setattr(run, "seed_task", seed_task)
    monkeypatch.setattr(run, "map_branches", lambda cfg, n, grid: sweeps[:n])
    monkeypatch.setattr(run, "_theory_point", lambda cfg: (COMMITTED["theory_point"], "posterior"))
    return seen


def _cfg() -> Config:
    return ch.preset("plain").replace(
        task=dict(L=15, V=7),
        train=dict(train_embeddings=False),
        model=dict(width=math.inf, attention="softmax", engine="reduced"),
    )


def _plain(res: dict) -> dict:
    out = json.loads(json.dumps(res, default=json_default))
    out.pop("cpu_seconds")
    return out


def test_parts_merge_into_the_whole_run(calls):
    settings = SearchSettings(probes=tuple(COMMITTED["first_probes"]))
    kw = dict(n_seeds=2, settings=settings, progress=False)
    whole = profile_transition(_cfg(), **kw)
    by_whole = {c[0]: c for c in calls}
    calls.clear()
    parts = [
        profile_transition(_cfg(), seeds=[1], **kw),
        profile_transition(_cfg(), seeds=[0], **kw),
    ]
    assert {c[0]: c for c in calls} == by_whole  # each seed's inputs are the whole run's
    assert [p["seeds_measured"] for p in parts] == [[1], [0]]
    assert [m["seed"] for m in parts[0]["map"]] == [1]
    merged = merge_seed_parts(parts)
    assert _plain(merged) == _plain(whole)
    assert merged["cpu_seconds"] == pytest.approx(sum(p["cpu_seconds"] for p in parts))
    # and the committed whole run's answer from its own two seeds, decided by today's rule (the
    # run printed a narrower interval before the barrier bound counted its replicas)
    over = from_record(COMMITTED)[1]
    assert merged["P_star"] == pytest.approx(COMMITTED["P_star"], rel=1e-12)
    assert merged["interval"] == pytest.approx([over["lo"], over["hi"]], rel=1e-12)


def test_parts_that_do_not_make_one_run_are_refused(calls):
    settings = SearchSettings(probes=tuple(COMMITTED["first_probes"]))
    part = lambda s, **kw: profile_transition(  # noqa: E731
        _cfg(), n_seeds=2, settings=settings, progress=False, seeds=s, **kw
    )
    p0, p1, both = part([0]), part([1]), part([0, 1])
    with pytest.raises(ValueError, match=r"seed\(s\) 1 in none"):
        merge_seed_parts([p0, p0 | {"seeds_measured": []}])
    with pytest.raises(ValueError, match=r"seed\(s\) 0 in more than one part"):
        merge_seed_parts([p0, both])
    with pytest.raises(ValueError, match=r"differ in seed\)"):
        merge_seed_parts([p0, part([1], seed=1)])
    with pytest.raises(ValueError, match="at least two parts"):
        merge_seed_parts([p0])
    with pytest.raises(ValueError, match="not a profile transition measured by seeds"):
        merge_seed_parts([p0, COMMITTED])  # written before parts existed: no seeds_measured
    assert merge_seed_parts([p1, p0])["seeds_measured"] == [0, 1]


def test_a_part_saved_before_a_setting_existed_ran_its_earlier_value(calls):
    """A record written before ``placement`` was recorded ran the fixed placement: it merges
    with a part that records "fixed" (the merged settings say so) and not with one of "basins"."""
    part = lambda s, placement: profile_transition(  # noqa: E731
        _cfg(),
        n_seeds=2,
        settings=SearchSettings(probes=tuple(COMMITTED["first_probes"]), placement=placement),
        progress=False,
        seeds=s,
    )
    old = json.loads(json.dumps(part([1], "fixed"), default=json_default))
    del old["settings"]["placement"]
    merged = merge_seed_parts([part([0], "fixed"), old])
    assert merged["settings"]["placement"] == "fixed" and merged["seeds_measured"] == [0, 1]
    with pytest.raises(ValueError, match=r"differ in settings"):
        merge_seed_parts([part([0], "basins"), old])


@pytest.mark.parametrize("bad", [[], [2], [0, 0], [-1], "0", [True]])
def test_measured_seeds_range_is_one_line(bad):
    with pytest.raises(ValueError, match=r"seeds must be .* \[0, 1\]"):
        measured_seeds(bad, 2)


def test_cli_parts_merge_to_the_whole_commands_folder(calls, tmp_path, capsys):
    """Two ``--only-seeds`` parts merged by ``--merge`` give the folder the whole command
    recognises as its own finished run (no seed measured again)."""
    probes = ",".join(map(str, COMMITTED["first_probes"]))
    base = (
        f"transition --preset plain --L 15 --V 7 --width inf --n-seeds 2 --probes {probes} "
        "--quiet --no-plot"
    ).split()
    a, b, m = (str(tmp_path / x) for x in "abm")
    assert main([*base, "--only-seeds", "0", "--out", a]) == 0
    assert main([*base, "--only-seeds", "1", "--out", b]) == 0
    assert "seed 1 of 2" in capsys.readouterr().out
    assert len(calls) == 2
    assert main(["transition", "--merge", a, b, "--out", m, "--json", "--no-plot"]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert merged["seeds_measured"] == [0, 1]
    assert main([*base, "--out", m, "--json"]) == 0  # the whole command: its run, done
    again = capsys.readouterr()
    assert json.loads(again.out) == merged and "kept" in again.err and len(calls) == 2
    for argv, msg in (
        (["--merge", a, "--out", str(tmp_path / "x")], "at least two parts"),
        (["--merge", a, b], "--merge needs --out"),
        (["--merge", a, b, "--out", m, "--L", "8"], "drop --L"),
        (["--merge", a, b, "--out", m, "--placement", "fixed"], "drop --placement"),
        (["--merge", a, str(tmp_path), "--out", m], "cannot read a result"),
        (["--merge", a, a, "--out", m], "in more than one part"),
    ):
        one_line_error(capsys, main(["transition", *argv]), msg)
    for bad in ("2", "0,0", "1-0", "x", "0-", "", "-1"):
        one_line_error(capsys, main([*base, "--only-seeds", bad]), "--only-seeds must list")
    one_line_error(capsys, main([*base, "--only-seeds", "0", "--method", "ti"]), "--only-seeds")
