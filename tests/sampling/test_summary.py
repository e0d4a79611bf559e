"""``copyhead_jax.sampling.summary``: lambda-hat from the draws is the mean data energy above
the fit; seed blocks and P grids merge with NaN padding; psi at the origin reads 0."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import summary as E


class _Sweep:
    def __init__(self, cfg, train_loss):
        self.config, self._tl = cfg, train_loss

    @property
    def P(self):
        return np.asarray(self.config.sweep.P)

    def __getitem__(self, k):
        assert k == "train_loss"
        return self._tl


def test_llc_summary_is_mean_data_energy_above_the_fit():
    """lambda-hat at n beta = n, gamma = 0 is E[D] - D(w*), D = w P train_loss; the finite
    chains only; MCSE scales the same way."""
    from copyhead_jax.results import DRAW_FIELDS, PosteriorResult

    cfg = ch.TINY.replace(sweep=dict(P=(4, 8), n_seeds=2))
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((2, 2, 3, 200, len(DRAW_FIELDS)))
    finite = np.ones((2, 2, 3), bool)
    finite[1, 0, 2] = False
    draws[1, 0, 2] = 1e6  # a diverged chain: ignored
    post = PosteriorResult(cfg, ch.SGLDConfig(), {"draws": draws, "finite": finite})
    tl_star = np.array([[0.1, 0.2], [0.3, 0.4]])
    out = E.llc_summary(_Sweep(cfg, tl_star), post)
    w = Objective.from_config(cfg).likelihood_weight
    tl = draws[..., DRAW_FIELDS.index("train_loss")]
    expect = np.array([[tl[i, j][finite[i, j]].mean() for j in range(2)] for i in range(2)])
    expect = w * np.array([4.0, 8.0])[:, None] * (expect - tl_star)
    np.testing.assert_allclose(out["value"], expect, rtol=1e-12)
    assert np.all(out["mcse"] > 0)


def _block(P, nS, v):
    """A branch summary with every per-run array filled with ``v`` (shape [len(P), nS])."""
    a = np.full((len(P), nS), v)
    h = {k: a.copy() for k in ("rhat", "rhat_c1", "rhat_cG")}
    h.update(
        {k: 1000 * a for k in ("ess", "ess_c1", "ess_cG")}, accept_mean=a, finite_chains=2 + 0 * a
    )
    sus = {k: {"value": a, "mcse": a, "ess_sq": a} for k in E.OBSERVABLES}
    return {
        "P": P,
        "n_seeds": nS,
        "map": {"cG": a},
        "post_mean": {"cG": a},
        "post_mcse": {"cG": a},
        "susceptibility": sus,
        "llc": {"value": a},
        "health": h,
    }


def test_merge_blocks_pads_seeds():
    block = _block
    m = E.merge_blocks(block([1, 2], 4, 1.0), block([8], 2, 1.01))
    assert m["P"] == [1, 2, 8] and m["n_seeds"] == 4 and m["n_seeds_per_P"] == [4, 4, 2]
    assert m["map"]["cG"].shape == (3, 4)
    assert np.isnan(m["map"]["cG"][2, 2:]).all() and np.isfinite(m["map"]["cG"][2, :2]).all()
    hs = m["health_summary"]
    assert hs["n_runs"] == 10 and hs["rhat_max"] == pytest.approx(1.01)
    assert hs["n_rhat_gt_1.01"] == 0 and hs["n_ess_lt_400"] == 0
    # a second merge (two high-P sweeps) keeps each block's own seed count per P
    m3 = E.merge_blocks(m, block([16], 3, 1.0))
    assert m3["n_seeds_per_P"] == [4, 4, 2, 3] and m3["map"]["cG"].shape == (4, 4)


def test_merge_seeds_concatenates_seed_blocks():
    """Seeds 0-4 and 5-9 of one grid merge into one 10-seed block, in seed order."""
    m = E.merge_seeds(_block([1, 2], 5, 1.0), _block([1, 2], 5, 1.02))
    assert m["P"] == [1, 2] and m["n_seeds"] == 10
    assert m["map"]["cG"].shape == (2, 10)
    np.testing.assert_array_equal(m["susceptibility"]["U"]["value"][:, 5:], 1.02)
    np.testing.assert_array_equal(m["llc"]["value"][:, :5], 1.0)
    assert m["health_summary"]["n_runs"] == 20
    assert m["health_summary"]["rhat_max"] == pytest.approx(1.02)
    with pytest.raises(ValueError, match="one P grid"):
        E.merge_seeds(_block([1, 2], 5, 1.0), _block([1, 4], 5, 1.0))


def test_map_psi_is_zero_at_the_origin_and_unchanged_elsewhere():
    b = {
        "map": {
            "r": np.array([[1e-10, 0.5]]),
            "cG": np.array([[1e-12, 0.2]]),
            "psi": np.array([[0.94, 0.3]]),
        }
    }
    assert E.map_psi(b).tolist() == [[0.0, 0.3]]  # the 1e-10 residues' ratio is not a psi


def test_merge_blocks_keeps_a_part_only_one_block_has():
    """devinterp's LLC below ``max_P`` only: the block without it reads NaN there, the other
    block's values and scalars are kept (it was dropped before)."""
    low = _block([32, 64], 3, 1.0)
    low["llc_dv"] = {"gamma=100": {"value": np.full((2, 3), 0.05), "seconds": 27.0}}
    m = E.merge_blocks(low, _block([1062], 2, 1.0))
    v = m["llc_dv"]["gamma=100"]["value"]
    assert v.shape == (3, 3) and np.all(v[:2] == 0.05) and np.isnan(v[2]).all()
    assert m["llc_dv"]["gamma=100"]["seconds"] == 27.0
    m2 = E.merge_blocks(_block([1062], 2, 1.0), low)  # either order
    assert np.isnan(m2["llc_dv"]["gamma=100"]["value"][0]).all()
    assert "llc_dv" not in E.merge_blocks(_block([1], 2, 1.0), _block([2], 2, 1.0))


def test_linear_transitions_planted_psi_and_r():
    """psi = 0, 0.2, 0.8, 1 on P = 1, 2, 4, 8: it passes 1/2 at 2 * 2^(1/2) (log-linear), the
    fastest turn lies in (2, 4); r passes 0.05 between P = 1 and 2."""
    from copyhead_jax.compare.locate import locate_level

    P, psi, r = [1, 2, 4, 8], np.array([0.0, 0.2, 0.8, 1.0]), np.array([0.0, 0.1, 0.2, 0.3])
    t = E.linear_transitions(P, psi, psi * 0.5, r)
    assert t["map"]["P_cG_half"]["P_star"] == pytest.approx(2 * 2**0.5)
    assert 2 <= t["map"]["P_cG"]["P_star"] <= 4
    assert t["post"]["P_cG_half"] == locate_level(np.asarray(P, float), psi * 0.5, 0.5).to_dict()
    assert 1 < t["map_P_c1_r005"]["P_star"] < 2


def test_seed_mean_transitions_and_posterior_level_of_merged_parts():
    """Two parts (4 and 2 seeds) merged along P: the transitions are linear_transitions of the
    seed means, each part's MAP over its own seeds; the posterior level is locate_level of the
    concatenated seed means."""
    from copyhead_jax.compare.locate import locate_level

    low, high = _block([1, 2], 4, 0.0), _block([4, 8], 2, 0.0)
    for b, psi in ((low, [0.0, 0.2]), (high, [0.8, 1.0])):
        x = np.repeat(np.asarray(psi)[:, None], b["n_seeds"], 1)
        b["map"] = {"cG": x + 1, "r": x / 2, "psi": x}
        b["post_mean"] = {"cG": 2 * x, "psi": x / 2}
    m = E.merge_blocks(low, high)
    psi = np.array([0.0, 0.2, 0.8, 1.0])
    assert E.seed_mean_transitions(m, [low, high]) == E.linear_transitions(
        [1, 2, 4, 8], psi, psi / 2, psi / 2
    )
    got = E.posterior_level([low, high])
    assert got == locate_level(np.array([1.0, 2, 4, 8]), 2 * psi, 1.0).to_dict()
    assert 2 < got["P_star"] < 4


def test_linear_summary_merges_the_parts_and_judges_at_each_reference():
    """The parts merged along P, their seed-mean transitions, and a verdict at each EK and
    posterior P* (None where that P* is absent)."""
    low, high = _block([1, 2], 4, 0.0), _block([4, 8], 2, 0.0)
    for b, psi in ((low, [0.0, 0.2]), (high, [0.8, 1.0])):
        x = np.repeat(np.asarray(psi)[:, None], b["n_seeds"], 1)
        b["map"] = {"cG": x + 1, "r": x / 2, "psi": x}
        b["post_mean"] = {"cG": 2 * x, "psi": x / 2}
    lin = E.linear_summary([low, high], {"map": {"P_c1": 2.0, "P_cG": None}})
    assert lin["P"] == [1, 2, 4, 8] and lin["transitions"]["note"].startswith("psi = seed mean")
    assert lin["transitions"]["map"] == E.seed_mean_transitions(lin, [low, high])["map"]
    ew = lin["early_warning"]
    assert set(ew["theory_map_P_c1"]) == set(E.OBSERVABLES) and ew["theory_map_P_cG"] is None
    assert list(ew) == [
        "theory_map_P_c1",
        "theory_map_P_cG",
        "posterior_P_cG",
        "posterior_P_cG_half",
    ]


def test_softmax_summary_crosses_the_two_starts_and_reads_the_theory():
    """The pooling start's U rises above the copy start's between P = 4 and 8 where the two
    sit on distinct minima: the MAP U crossing lies there; the posterior copies (aG passes 1)
    from the copy start; without a copy start, from the pooling start and no crossing."""
    P = [2, 4, 8, 16]
    pool, copy = _block(P, 2, 0.0), _block(P, 2, 0.0)
    Pa = np.asarray(P, float)[:, None] * np.ones((1, 2))
    pool["map"] = {"cG": 0 * Pa, "U": Pa * np.log(Pa / 6)}  # (U_pool - U_copy) / P = log(P / 6)
    copy["map"] = {"cG": 3 + 0 * Pa, "U": 0 * Pa}
    copy["post_mean"] = {"cG": Pa / 4}  # passes 1 at P = 4
    pts = {o: {"P_aG": 5.0, "spinodals": [3.0, 9.0]} for o in ("map", "post")}
    soft = E.softmax_summary(pool, copy, None, pts)
    cr = soft["crossings"]
    assert cr["map_U"]["P_star"] == pytest.approx(6.0) and cr["theory_map_spinodals"] == [3, 9]
    assert cr["paper"] == 300.0 and soft["common_P"] == P and "copy_high" not in soft
    assert soft["posterior_copies"]["start"] == "copy"
    assert soft["posterior_copies"]["P_star"] == pytest.approx(4.0)
    alone = E.softmax_summary(pool, None, None, pts)
    assert "map_U" not in alone["crossings"] and alone["posterior_copies"]["start"] == "zero logits"


def test_markdown_tables_of_a_planted_summary():
    """Per P: seed mean ± sd (ddof 1), the largest MCSE in brackets, health extremes; one
    health row per block; one verdict row per observable."""
    two = lambda a, b: np.array([[a, b], [a + 1, b + 1]], float)  # noqa: E731  [P, seed]
    ones = np.ones((2, 2))
    b = {
        "P": [4, 8],
        "map": {"cG": two(1, 3), "r": two(0, 0)},
        "post_mean": {"cG": two(2, 2), "r": two(0.5, 0.5)},
        "susceptibility": {k: {"value": two(1, 3), "mcse": two(0.1, 0.2)} for k in E.OBSERVABLES},
        "llc": {"value": two(5, 7), "mcse": two(0.5, 0.25)},
        "health": {
            "finite_chains": 2 * ones,
            "rhat": two(1.0, 1.02),
            "rhat_c1": ones,
            "rhat_cG": ones,
            "ess": two(300, 500),
            "ess_c1": 1e3 * ones,
            "ess_cG": 1e3 * ones,
        },
        "health_summary": {
            "n_runs": 4,
            "rhat_max": 1.02,
            "n_rhat_gt_1.01": 1,
            "n_rhat_gt_1.05": 0,
            "ess_min": 300.0,
            "n_ess_lt_400": 1,
            "accept_range": [0.6, 0.8],
        },
        "wall_seconds": 120.0,
    }
    rows = E.per_P_markdown("linear", b)
    assert rows[4] == (
        "| 4 | 2 | 2 ± 1.4 | 2 ± 0 | 0 ± 0 | 0.5 ± 0 | 2 (0.2) | 2 (0.2) |"
        " 2 (0.2) | 2 (0.2) | 6 ± 1.4 (0.5) | 4 | 1.02, 1, 1 | 300, 1e+03, 1e+03 |"
    )
    assert E.health_markdown([("linear", b), ("none", None)])[2:] == [
        "| linear | 4 | 1.02 | 1 / 0 | 300 | 1 | 0.6-0.8 | 2 |"
    ]
    v = {
        "P_star": 8.0,
        "n_seeds": 2,
        "ratio": 2.0,
        "ratio_ci": [1.5, 2.5],
        "var_ratio": 1.5,
        "var_ratio_ci": None,
        "verdict": "grows",
    }
    rows = E.verdicts_markdown([("linear", {"theory_map_P_cG": {"cG": v}, "other": None})])
    assert rows[2:] == [
        "| linear | theory_map_P_cG = 8 | cG | 2 | 2 [1.5, 2.5] | 1.5 [-, -] | grows |"
    ]
