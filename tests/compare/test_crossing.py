"""``copyhead_jax.compare.crossing``: the early-warning verdict, the branch crossing and the copy
weight on planted curves with known answers."""

import math

import numpy as np
import pytest

from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.compare import crossing as CX

P = np.array([4.0, 6.0, 8.0, 10.0, 12.0, 16.0])


def test_growth_verdict_planted():
    """chi = P^2 (variance growing like P) grows by (0.9/0.5)^2 = 3.24, variance ratio 1.8;
    chi = P (constant variance) is flat; chi = 1/P shrinks. Seed noise of 2% on every point."""
    rng = np.random.default_rng(0)
    noise = np.exp(0.02 * rng.standard_normal((P.size, 5)))
    v = CX.growth_verdict(P, P[:, None] ** 2 * noise, 16.0)
    assert v["verdict"] == "grows"
    assert v["ratio_ci"][0] < 3.24 < v["ratio_ci"][1] or abs(v["ratio"] - 3.24) < 0.1
    assert abs(v["var_ratio"] - 1.8) < 0.1
    assert CX.growth_verdict(P, P[:, None] * noise, 16.0)["verdict"] == "flat"
    assert CX.growth_verdict(P, noise / P[:, None], 16.0)["verdict"] == "shrinks"
    # 0.5 P* below the grid: no verdict rather than an extrapolation
    assert CX.growth_verdict(P, P[:, None] * noise, 4.0)["verdict"] == "undetermined"
    assert CX.growth_verdict(P, P[:, None] ** 2, 16.0)["verdict"] == "undetermined"  # sd = 0


def test_crossing_planted_curves():
    """(F_a - F_b)/P = log(P / 21.5) is linear in log P: the crossing is exactly 21.5; per seed
    shifts of the root are recovered, with a t-interval that covers their mean."""
    Pg = np.array([16.0, 20.0, 22.0, 24.0, 28.0])
    roots = np.array([20.5, 21.5, 22.5])
    Fb = np.zeros((Pg.size, 3))
    Fa = Pg[:, None] * np.log(Pg[:, None] / roots[None, :])
    c = CX.branch_crossing(Pg, Fa, Fb)
    np.testing.assert_allclose(c["per_seed"], roots, rtol=1e-9)
    ci = c["per_seed_ci"]
    assert ci["lo"] < 21.5 < ci["hi"]
    one = CX.branch_crossing(Pg, Pg * np.log(Pg / 21.5), np.zeros(Pg.size))
    assert abs(one["P_star"] - 21.5) < 1e-9
    # masked points (branches not distinct) are ignored: a wrong value there changes nothing
    Fa2 = Fa.copy()
    Fa2[0] = 1e6
    valid = np.ones_like(Fa, bool)
    valid[0] = False
    np.testing.assert_allclose(CX.branch_crossing(Pg, Fa2, Fb, valid)["per_seed"], roots, rtol=1e-9)


def test_copy_weight_and_window():
    assert CX.copy_weight(3.0, 3.0) == pytest.approx(0.5)
    assert CX.copy_weight(0.0, 800.0) == pytest.approx(1.0)  # no overflow
    Pg = np.geomspace(10, 40, 31)
    w = CX.copy_weight(-4.0 * np.log(Pg / 20.0) * 10, 0.0)  # logistic in log P around 20
    win = CX.weight_window(Pg, w)
    assert abs(win["P_equal"] - 20.0) < 0.3
    assert win["P_w05"] < 20 < win["P_w95"]


def test_smc_tables_weights_crossing_and_ti_comparison():
    """``smc_tables`` on planted populations: seed-mean weights, the per-seed sign
    change of the log-odds (log-linear interpolation of log-odds / P, ``compare.crossing``'s rule),
    the clip at the populations' resolution, and the TI comparison (zero where the TI's two
    branch free energies are the SMC's own)."""
    from scipy.special import expit, logit

    odds = {(48, 0): -1.0, (50, 0): 2.0, (48, 1): -3.0, (50, 1): 30.0}  # 30: beyond the clip
    runs, ti = [], {}
    for (P, s), o in odds.items():
        w = float(expit(o))
        runs.append(
            dict(P=P, seed=s, log_Z=[100.0 + P, 101.0 + P], w_copy=[w, w], log_Z_pilot=100.0 + P)
        )
        lz = 100.5 + P  # F_b = -(log Z + log w_b): the TI agrees with the SMC exactly
        ti[(P, s, "copy")] = {"F": -(lz + math.log(w))}
        ti[(P, s, "pool")] = {"F": -(lz + math.log1p(-w))}
    res = BT.smc_tables(runs, [48, 50], 2, 8, 2, ti)
    eps = 1 / 32
    assert res["log_odds_clip"] == pytest.approx(math.log((1 - eps) / eps))
    assert res["log_odds_copy"][1, 1] == pytest.approx(logit(1 - eps))  # clipped
    np.testing.assert_allclose(
        res["w_copy_mean"], [np.mean(expit([-1, -3])), np.mean(expit([2, 30]))]
    )
    np.testing.assert_allclose(res["dlog_Z_smc_minus_ti"], 0, atol=1e-9)
    assert res["pilot_log_Z_bias"]["mean"] == pytest.approx(-0.5)  # pilot vs the reps' mean
    assert res["population_log_Z_sd"] == pytest.approx(0.0)  # every pair differs by 1 nat
    np.testing.assert_allclose(res["w_copy_ti"], res["w_copy"], rtol=1e-9)
    for s, (a, b) in enumerate([(-1.0, 2.0), (-3.0, float(logit(1 - eps)))]):
        fa, fb = a / 48, b / 50  # the crossing of odds / P, linear in log P
        expect = math.exp(math.log(48) + fa / (fa - fb) * math.log(50 / 48))
        assert res["crossing_log_odds"]["per_seed"][s] == pytest.approx(expect, rel=1e-6)
    # its markdown row (no ± where the two populations agree) and the pairing with the TI's
    assert (
        BT.smc_markdown(dict(res, P=[48, 50]))
        .splitlines()[2]
        .startswith("| 48 | 0.27, 0.047 | 0.16 | 0.27, 0.047 |")
    )
    ti_res = {
        "P": [30, 40, 48, 50, 56],
        "dF": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 0.0]],
        "crossing_F": {"per_seed": [49.0, 49.5, 60.0]},
    }
    both = BT.smc_against_ti(dict(res, P=[48, 50], n_seeds=2), ti_res)
    assert both["ti_log_odds"]["P"] == [40, 48, 50]  # within [48 - 9, 50 + 5]
    np.testing.assert_array_equal(both["ti_log_odds"]["values"], [[-3, -4], [-5, -6], [-7, -8]])
    d = np.asarray(res["crossing_log_odds"]["per_seed"]) - [49.0, 49.5]
    assert both["crossing_minus_ti_per_seed"]["mean"] == pytest.approx(d.mean())
    assert both["crossing_minus_ti_per_seed"]["sd"] == pytest.approx(d.std(ddof=1))


def test_start_crossing_counts_only_distinct_starts():
    """The MAP U crossing of two starts on their common P, per seed only where their cG differ
    by more than 1/2: seed 1's starts coincide at every P, so it has no crossing."""
    pool = {
        "cG": np.array([[0.0, 0.0], [0.1, 0.0], [0.2, 0.0]]),
        "U": np.array([[1.0, 1.0], [2.0, 2.0], [5.0, 3.0]]),
    }
    copy = {
        "cG": np.array([[2.0, 0.0], [2.0, 0.3], [9.0, 9.0]]),
        "U": np.array([[3.0, 1.0], [1.0, 2.0], [0.0, 0.0]]),
    }
    P, distinct, c = CX.start_crossing([10, 20, 40], pool, np.array([10, 20, 99]), copy)
    assert P == [10, 20] and distinct.tolist() == [[True, False], [True, False]]
    want = CX.branch_crossing([10.0, 20.0], pool["U"][:2], copy["U"][:2], distinct)
    assert c["per_seed"][0] == want["per_seed"][0] and math.isnan(c["per_seed"][1])
    assert 10 < c["P_star"] < 20


def test_branch_tables_planted_runs():
    """F_copy - F_pool = 30 - P (+ seed): the weights, the F crossing, the health tables, and a
    threshold shift that moves no draw leaves F as it was."""
    runs = [
        dict(
            P=P,
            seed=s,
            branch=b,
            F=(30.0 - P + s) if b == "copy" else 0.0,
            mcse=0.1,
            rhat_g=[1.0, 1.01],
            ess_g=[300.0, 200.0],
            quad_corr=0.0,
            p_ref=1.0,
            ref_P=P,
            aG_t1=[0.0] if b == "pool" else [5.0],
        )
        for P in (20, 40)
        for s in (0, 1)
        for b in ("pool", "copy")
    ]
    t = BT.branch_tables(runs, [20, 40], 2, 1.0, (0.5,))
    np.testing.assert_allclose(t["dF"], [[10.0, 11.0], [-10.0, -9.0]])
    np.testing.assert_allclose(t["dF_mcse"], math.hypot(0.1, 0.1))
    np.testing.assert_allclose(t["w_copy"], CX.copy_weight(t["F_copy"], t["F_pool"]))
    assert runs[0]["rhat_max"] == 1.01 and runs[0]["ess_min"] == 200.0
    assert t["health"]["copy"]["ref_P"].tolist() == [[20, 20], [40, 40]]
    want = CX.branch_crossing([20.0, 40.0], [[0.0], [0.0]], [[10.0], [-10.0]])["P_star"]
    assert 20 < want < 40 and t["crossing_F"]["per_seed"][0] == pytest.approx(want)
    alt = t["threshold_sensitivity"]["0.5"]
    np.testing.assert_allclose(alt["dF"], t["dF"])
    assert np.all(alt["moved_fraction"] == 0)
    md = BT.branch_markdown(dict(t, P=[20, 40])).splitlines()
    assert md[2] == (
        "| 20 | 10.00 ± 0.14, 11.00 ± 0.14 | 10.50 ± 0.71 | 4.5e-05, 1.7e-05 |"
        " 3.1e-05 | 1.01 / 1.01 | 200 / 200 | 1 / 1 | 0 |"
    )
    assert md[-1].startswith("Bayesian P*_aG (docs/theory.md §9.11): ")


def test_ti_crossings_keep_the_runs_that_stayed_on_distinct_branches():
    """F_pool - F_copy = P - 30 on every run; seed 1 at P = 40 fell to the other branch at t = 1
    (its aG equal to the pool chains'): its weight is NaN and its crossing has one point left."""
    P = np.array([20.0, 40.0])
    F = np.stack([np.broadcast_to((P - 30.0)[:, None], (2, 2)), np.zeros((2, 2))])
    aG = np.stack([np.zeros((2, 2)), np.array([[2.0, 2.0], [2.0, 0.1]])])
    fe = {"P": [20, 40], "F": F, "wbic": F, "U_star": F, "half_logdet_H": 0 * F, "aG_t1": aG}
    c = CX.ti_crossings(fe, np.ones((2, 2), bool))
    assert fe["stayed_distinct_t1"].tolist() == [[True, True], [True, False]]
    assert math.isnan(fe["w_copy"][1, 1])
    assert fe["w_copy"][1, 0] == pytest.approx(CX.copy_weight(0, 10))
    want = CX.branch_crossing(P, F[0][:, :1], F[1][:, :1])["P_star"]
    for k in ("free_energy", "wbic", "laplace", "map_U_same_runs"):
        assert c[k]["per_seed"][0] == pytest.approx(want)
        assert math.isnan(c[k]["per_seed"][1])
    # the table: pool minus copy per P, mean ± sd over seeds (-log Z1/Z0: minus the difference)
    fe.update(F_mcse=np.full_like(F, 0.3), log_Z_ratio=F, aG_wbic=aG)
    row = CX.ti_markdown(fe)[3]
    assert row == (
        "| 40 | 10 ± 0 | 0.42 | 10 ± 0 | 0 ± 0 | -10 ± 0 | 10 ± 0 | 1 |"
        " 0 ± 0 / 1.1 ± 1.3 | 0 ± 0 / 1.1 ± 1.3 |"
    )  # w_copy: seed 1 has none
