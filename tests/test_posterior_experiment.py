"""The plumbing of the posterior experiments (``experiments/posterior*.py``): configs, cache keys,
seed blocks, merges and assembly on planted summaries; seconds-sized, no sampling. Their statistics
are tested in tests/compare/test_crossing.py and tests/transition/test_laplace_sgld.py."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import copyhead_jax as ch

P = np.array([4.0, 6.0, 8.0, 10.0, 12.0, 16.0])


# ---------------------------------------------------------------------------------------------
# experiments/posterior.py plumbing (no sampling)


def test_branch_config_presets():
    """plain = ch.SMALL's conventions (the cache keys of the earlier run's sweeps are unchanged);
    paper = ch.PAPER's switches; both at the configured engine and width."""
    from experiments import posterior_runs as E
    from experiments.configs.posterior import CONFIGS

    mc = CONFIGS["quick"]
    plain = E.branch_config(mc, "plain", "softmax", [8, 16], "zero", 3)
    old = ch.SMALL.replace(**mc["engine"]).replace(
        model=dict(attention="softmax"), sweep=dict(P=(8, 16), n_seeds=3)
    )
    assert plain.to_dict() == old.replace(train=dict(init_attention="zero")).to_dict()
    paper = E.branch_config(mc, "paper", "linear", [51])
    assert paper.posterior.likelihood == ch.PAPER.posterior.likelihood == "per_position"
    assert paper.model.linear_scale == ch.PAPER.model.linear_scale == "inv_L"
    assert (paper.model.engine, paper.model.width) == ("reduced", 10_000)
    assert paper.sweep.n_seeds == mc["presets"]["paper"]["n_seeds"]
    sg = E.sampler_settings(mc)
    assert sg.step_size == ch.sampling.REDUCED_HMC.step_size  # the collapsed-HMC default step


def test_posterior_column_reads_verdicts_and_points():
    """The main table's posterior column: the verdict of the row's order parameter with its CI,
    the posterior's own P* where measured, nothing for a preset without a posterior."""
    from experiments.report import posterior_column as PCOL

    v = {"var_ratio": 0.78, "var_ratio_ci": [0.74, 0.82], "n_seeds": 10, "verdict": "shrinks"}
    post = {
        "linear": {
            "early_warning": {"theory_map_P_cG": {"cG": v}},
            "transitions": {"post": {"P_cG_half": {"P_star": 93.7, "bracket": [64, 128]}}},
        },
        "softmax": {"early_warning": {"theory_map_P_aG": {"cG": dict(v, verdict="flat")}}},
        "branches": {
            "crossing_F": {"located": {"P_star": 49.5, "bracket": [48, 64]}},
            "n_seeds": 3,
        },
        "smc": {"weight_window": {"P_equal": 49.7}, "n_seeds": 10},
    }
    lin = PCOL.cell(post, "P_cG")
    assert "x0.78 [0.74, 0.82]" in lin and "shrinks" in lin and "93.7 [64, 128]" in lin
    soft = PCOL.cell(post, "P_aG")
    assert "Var(aG)" in soft and "flat" in soft and "49.5 [48, 64]" in soft
    assert "SMC" in soft and "49.7 (10 seeds)" in soft
    assert PCOL.verdict(post, "P_cG")["verdict"] == "shrinks"
    assert PCOL.cell(None, "P_cG") is None and PCOL.cell(post, "P_c1") is None


def test_report_sets_the_bayesian_point_beside_the_others_and_lists_lambda_hat():
    """The report's posterior bullets: the Bayesian P*_aG with its ratio to each other P*_aG
    (those off by more than the reporting threshold also go to the disagreements; the paper
    only on the paper preset), and lambda-hat's seed mean per P, skipping missing seeds."""
    from experiments.report import posterior_column as PCOL

    branches = {
        "crossing_F": {"located": {"P_star": 1250.0, "bracket": [1200, 1300]}},
        "n_seeds": 10,
        "map_U_crossing_main_P_star": 625.0,
        "paper_P_aG": 300.0,
        "theory": {"map": {"P_aG": 625.0}, "post": {"P_aG": 1100.0}},
        "weight_window": {"P_w05": 1205.0, "P_equal": 1249.0, "P_w95": 1295.0},
    }
    post = {
        "preset": "paper",
        "branches": branches,
        "linear": {"P": [32, 64], "llc": {"value": [[1.0, 3.0], [None, 5.0]]}},
    }
    dis = []
    line = PCOL.bayes_line(post, dis)
    assert "1,250 (F_copy = F_pool, 10 seeds)" in line and "w_copy = 1/2 at 1,249" in line
    assert "MAP (no Occam term) 625 (2.00x)" in line and "the paper 300 (4.17x)" in line
    # 1250 / 1100 - 1 = 14%, inside the 25% threshold: listed beside, not as a disagreement
    assert "with the Occam term) 1,100 (1.14x)" in line
    assert len(dis) == 3 and not any("with the Occam" in d for d in dis)
    assert "the paper" not in PCOL.bayes_line(dict(post, preset="plain"))
    assert PCOL.llc_line(post).endswith("linear 2 (32), 5 (64)")
    assert PCOL.bayes_line({"preset": "plain"}) is None and PCOL.llc_line({}) is None


def test_grid_entries_accept_one_entry_or_a_list_of_sweeps():
    from experiments.posterior_runs import grid_entries

    one, two = dict(P=[16, 32], n_seeds=5), [dict(P=[1062]), dict(P=[1913])]
    assert grid_entries(None) == [] and grid_entries([]) == []
    assert grid_entries([1, 2]) == [[1, 2]] and grid_entries(one) == [one]
    assert grid_entries(two) == two


def test_cache_key_is_the_whole_config():
    """The cache key hashes every config field: equal configs share a key, and a field set
    away from its default (``ExactConfig.continuation``) changes it (no old-key shims)."""
    from experiments import posterior_runs as E

    cfg = ch.TINY.replace(model=dict(engine="reduced"))
    same = ch.TINY.replace(model=dict(engine="reduced"))
    assert E.cache_key(cfg.to_dict()) == E.cache_key(same.to_dict())
    on = cfg.replace(solver=dict(continuation=True))
    assert E.cache_key(on.to_dict()) != E.cache_key(cfg.to_dict())


def test_seed_blocks_split_the_extra_seeds():
    """The seeds beyond an entry's first block: one block by default (sweep and sampler seed
    offset by n_seeds), or the entry's ``blocks``; sizes must add up."""
    from experiments import posterior as E
    from experiments.configs.posterior import TINY

    one = E.seed_blocks(TINY, "plain", "linear", dict(P=[2], n_seeds=2, n_seeds_total=5))
    assert [(c.sweep.seed, c.sweep.n_seeds) for _, c in one] == [(0, 2), (2, 3)]
    split = E.seed_blocks(
        TINY, "plain", "linear", dict(P=[2], n_seeds=2, n_seeds_total=5, blocks=[1, 2])
    )
    assert [(c.sweep.seed, c.sweep.n_seeds) for _, c in split] == [(0, 2), (2, 1), (3, 2)]
    seeds = [o.get("sampler", {}).get("seed") for o, _ in split]
    assert seeds[1] != seeds[2]  # fresh chain noise per block
    assert E.seed_blocks(TINY, "plain", "linear", [2]) and not E.seed_blocks(
        TINY, "plain", "linear", []
    )
    with pytest.raises(ValueError, match="blocks"):
        E.seed_blocks(
            TINY, "plain", "linear", dict(P=[2], n_seeds=2, n_seeds_total=5, blocks=[1, 1])
        )


def test_branch_presets_and_paper_companion(tmp_path):
    """posterior_branches' paper config samples the paper preset's posterior (per-position
    likelihood) while the plain configs name no preset (their cache keys predate the switch);
    the report attaches the paper preset's branch free energies to its posterior result."""
    from experiments import posterior_branches as PB
    from experiments import posterior_runs as PR
    from experiments.common import load_spec
    from experiments.report import posterior_column as PCOL

    plain, paper = (PR.config(PR.settings("paper", p), p) for p in ("plain", "paper"))
    assert "preset" not in plain and "preset" not in PR.config(PR.settings("tiny"), "plain")
    assert PR.preset(plain) == "plain" and PR.preset(paper) == "paper"
    cfg = PR.branch_config(paper["mc"], PR.preset(paper), "softmax", [1200], "copy", 2)
    assert cfg.posterior.likelihood == "per_position"
    # a mode without settings for the preset writes nothing
    assert PB.main(load_spec("tiny", "paper", "posterior-branches", tmp_path), tmp_path) == {}
    assert not any(tmp_path.iterdir())
    # groups 0, 1, the second block's 100, 101 and so on; anything else is refused before any
    # work
    with pytest.raises(
        ValueError, match=r"only must be one of the group indices \[0, 1, 100, 101, 200, 201, "
    ):
        PB.main(load_spec("paper", "paper", "posterior-branches", tmp_path), tmp_path, only=2)
    res = tmp_path / "results"
    res.mkdir()
    (res / "posterior_paper.json").write_text(json.dumps({"softmax": {}}))
    assert "branches" not in PCOL.load(tmp_path, "paper")
    crossing = {"located": {"P_star": 1234.0, "bracket": [1200, 1300]}}
    (res / "posterior_branches_paper.json").write_text(
        json.dumps({"crossing_F": crossing, "n_seeds": 2})
    )
    (res / "posterior_smc.json").write_text(json.dumps({"weight_window": {"P_equal": 1.0}}))
    post = PCOL.load(tmp_path, "paper")
    assert "smc" not in post  # SMC was run on the plain preset only
    assert "1,234 [1,200, 1,300] (2 seeds)" in PCOL.cell(post, "P_aG")


def test_branch_records_keep_nan_and_rebuilt_fractions_give_the_same_shift(tmp_path):
    """A group's JSON record reads back with its NaNs, and a record rebuilt from an assembled
    result (t = 1 fractions at the alternative thresholds instead of the draws) moves the
    threshold exactly as the draws do."""
    from copyhead_jax.compare import branch_tables as BT
    from experiments.common import group_record

    rng = np.random.default_rng(0)
    # t = 1 draws of aG: the copy branch's straddle 1.5, the pool branch's 0.5 (x.25 ends: no
    # draw within 7 significant digits of a threshold, so the record's rounding moves none)
    draws = {
        "pool": rng.uniform(0.0, 0.75, 270).round(2) + 0.0025,
        "copy": rng.uniform(1.0, 3.0, 270).round(2) + 0.0025,
    }
    runs = [
        dict(P=1200, seed=0, branch=b, F=F, rhat_g=[1.0, math.nan], aG_t1=draws[b].tolist())
        for b, F in (("pool", -300.0), ("copy", -302.5))
    ]
    g = group_record(tmp_path / "group.json", lambda: {"runs": runs, "cpu_s": 1.0}, group=3)
    assert g["group"] == 3 and g["runs"][0]["rhat_g"][0] == 1.0
    assert math.isnan(g["runs"][0]["rhat_g"][1])
    # a second call reads the record: the computation is not called again
    assert group_record(tmp_path / "group.json", lambda: 1 / 0) == g
    rebuilt = []
    for r in g["runs"]:
        a = 1.5 if r["branch"] == "copy" else 0.5
        below, n = BT.t1_below(r, a)
        assert n == 270 and below == np.mean(draws[r["branch"]] < a)
        rebuilt.append(
            {k: v for k, v in r.items() if k != "aG_t1"} | {"t1_below": {str(a): below}, "n_t1": n}
        )
    for a in (0.5, 1.5):
        from_draws = BT.threshold_shift(g["runs"], [1200], 1, 1.0, a)
        from_fractions = BT.threshold_shift(rebuilt, [1200], 1, 1.0, a)
        for x, y in zip(from_draws, from_fractions, strict=True):
            np.testing.assert_array_equal(x, y)
        assert 0 < from_draws[2][0, 0] < 1  # some draws, not all, change region
    with pytest.raises(ValueError, match="a_alt = 2.0"):
        BT.t1_below(rebuilt[1], 2.0)


@pytest.mark.parametrize(
    "artefact, name",
    [
        ("posterior", "posterior_plain"),
        ("posterior-branches", "posterior_branches"),
        ("posterior-smc", "posterior_smc"),
        ("embeddings", "embeddings"),
        ("multistart", "multistart_linear"),
    ],
)
def test_the_study_tables_render_from_the_committed_results(artefact, name, capsys):
    """``python -m experiments.report.studies ARTEFACT JSON``: each study's markdown tables
    from its committed result (the posterior with its branch and SMC companions attached)."""
    from experiments.common import ARTEFACTS
    from experiments.report import studies

    assert set(studies.TABLES) <= set(ARTEFACTS)
    root = Path(__file__).resolve().parents[1]
    studies.main([artefact, str(root / "docs" / "reports" / "results" / f"{name}.json")])
    text = capsys.readouterr().out
    assert "|---|" in text
    if artefact == "posterior":  # the companions' rows
        assert "branch TI, `posterior_branches`" in text and "tempered SMC" in text
