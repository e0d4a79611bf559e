"""The beyond-the-paper artefacts with the causal mask and Markov tokens (experiments/beyond.py):
the markov artefact keeps its rho rows and adds alpha rows, the variants run only where a mode
sets them, the follow and transition variants write what they promise."""

import numpy as np
import pytest


@pytest.mark.heavy  # theory continuation and three tiny exact sweeps: ~1 min on a loaded CPU
def test_markov_artefact_keeps_rho_rows_and_adds_alpha_rows(tmp_path):
    """``python -m experiments markov`` (a spec artefact): a rho row as before (networks
    measured), a Dirichlet row keyed by ``alpha`` and ``chain_seed`` (theory only here), and the
    figures drawn from the rho rows."""
    import dataclasses
    import json

    from experiments import beyond
    from experiments import common as C

    spec = C.load_spec("tiny", "plain", "markov", tmp_path / "cache")
    # 2 seeds; an extra grid on seed 0 for each attention; width inf beside (tiny: already inf)
    extra = [
        dict(attention="linear", P=[64, 256], seeds=1, rho=[0.5]),
        dict(attention="softmax", P=[16], seeds=1, rho=[0.5]),
    ]
    settings = {
        **spec.settings,
        "rho": [0.5],
        "alpha": [1.0],
        "networks_alpha": [],
        "seeds": 2,
        "extra": extra,
        "width_inf": dict(rho=[0.5], seeds=1),
    }
    res = beyond.main(dataclasses.replace(spec, settings=settings), tmp_path)
    rho, alpha = res["rows"]
    assert list(rho) == ["rho", "causal", "theory", "measured", "measured_inf", "wall_s"]
    assert not rho["causal"]
    m = rho["measured"]
    assert m["P_of"]["linear"] == [8, 32, 64, 128, 256] and m["P_of"]["pool"] == [8, 16, 32, 128]
    assert m["extended"]["linear"]["seeds_extended"] == 1
    assert all(len(p["per_seed"]) == 2 for p in m["points"].values())
    assert len(rho["measured_inf"]["points"]["P_c1"]["per_seed"]) == 1
    assert list(alpha) == ["alpha", "chain_seed", "causal", "theory", "wall_s"]
    assert alpha["theory"]["full"]["P_c1"] != rho["theory"]["full"]["P_c1"]
    saved = json.loads((tmp_path / "results" / "markov_plain.json").read_text())
    assert saved["preset"] == "plain" and saved["rows"][1]["alpha"] == 1.0
    assert (tmp_path / "figures" / "markov_plain_pstar.png").stat().st_size > 0


@pytest.mark.parametrize(
    "artefact",
    [
        "markov-dirichlet",
        "markov-follow",
        "markov-cg",
        "causal-inf",
        "causal-follow",
        "markov-transition",
        "markov-finite",
    ],
)
def test_beyond_variants_run_only_where_a_mode_sets_them(artefact, tmp_path):
    """The markov / causal variants (rows in their own JSON) are not part of ``all``; a mode
    without their settings (``--quick``) runs and writes nothing; the tiny mode has them."""
    from experiments import common as C
    from experiments.__main__ import ALL, run_artefact

    assert artefact in C.SPEC_ARTEFACTS and artefact not in ALL
    out = tmp_path / "out"
    assert run_artefact(artefact, mode="quick", preset="paper", out=out, cache=tmp_path) == {}
    assert not out.exists()
    assert C.load_spec("tiny", "paper", artefact, tmp_path).settings


@pytest.mark.heavy  # two tiny softmax fits and two followed passes: ~20 s on a loaded CPU
def test_markov_follow_variant_writes_the_followed_branches(tmp_path):
    """``markov-follow`` (tiny): no theory, no main networks; per followed chain both passes on
    the fine grid, their coexistence summary, the JSON under the artefact's name and a figure."""
    import json

    from experiments.__main__ import run_artefact

    res = run_artefact(
        "markov-follow", mode="tiny", preset="paper", out=tmp_path, cache=tmp_path / "cache"
    )
    (row,) = res["rows"]
    assert row["theory"] == {} and "measured" not in row and not row["causal"]
    (f,) = row["followed"]
    assert f["P"] == [16, 24, 32] and np.asarray(f["up"]["aG"]).shape == (3, 1)
    assert f["coexistence"]["n_ok"] == [1, 1, 1]
    saved = json.loads((tmp_path / "results" / "markov-follow.json").read_text())
    assert saved["rows"][0]["followed"][0]["P"] == [16, 24, 32]
    assert (tmp_path / "figures" / "markov-follow.png").stat().st_size > 0


@pytest.mark.heavy  # two tiny transitions (MAP grids, TI chains, SMC): ~80 s on a loaded CPU
def test_markov_transition_variant_writes_the_bayesian_point_per_rho(tmp_path):
    """``markov-transition`` (tiny): per rho one row with the command's P*_aG, its interval,
    per-seed values, the SMC cross-check and the MAP U crossing, in the JSON under the
    artefact's name; a rerun reads the command's checkpoints (the same numbers)."""
    import json

    from experiments.__main__ import run_artefact

    def run():
        return run_artefact(
            "markov-transition", mode="tiny", preset="plain", out=tmp_path, cache=tmp_path / "cache"
        )

    res = run()
    assert [(r["rho"], r["width"]) for r in res["rows"]] == [(0.0, "inf"), (0.5, "inf")]
    for r in res["rows"]:
        assert r["map_grid"] == [8, 16, 32, 64] and len(r["per_seed"]) == 1
        assert len(r["interval"]) == 2 and set(r["cross_check"]) >= {"method", "P_star"}
        assert len(r["map_U_crossing"]["per_seed"]) == 1 and r["probes"][0]
    saved = json.loads((tmp_path / "results" / "markov-transition_plain.json").read_text())
    assert [r["rho"] for r in saved["rows"]] == [0.0, 0.5]
    again = [r["per_seed"] for r in run()["rows"]]
    np.testing.assert_array_equal(again, [r["per_seed"] for r in res["rows"]])
