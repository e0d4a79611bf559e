"""``copyhead_jax.compare.crossing``: the early-warning verdict, the branch crossing and the copy
weight on planted curves with known answers."""

import numpy as np
import pytest

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
    c = CX.crossing(Pg, Fa, Fb)
    np.testing.assert_allclose(c["per_seed"], roots, rtol=1e-9)
    ci = c["per_seed_ci"]
    assert ci["lo"] < 21.5 < ci["hi"]
    one = CX.crossing(Pg, Pg * np.log(Pg / 21.5), np.zeros(Pg.size))
    assert abs(one["P_star"] - 21.5) < 1e-9
    # masked points (branches not distinct) are ignored: a wrong value there changes nothing
    Fa2 = Fa.copy()
    Fa2[0] = 1e6
    valid = np.ones_like(Fa, bool)
    valid[0] = False
    np.testing.assert_allclose(CX.crossing(Pg, Fa2, Fb, valid)["per_seed"], roots, rtol=1e-9)


def test_copy_weight_and_window():
    assert CX.copy_weight(3.0, 3.0) == pytest.approx(0.5)
    assert CX.copy_weight(0.0, 800.0) == pytest.approx(1.0)  # no overflow
    Pg = np.geomspace(10, 40, 31)
    w = CX.copy_weight(-4.0 * np.log(Pg / 20.0) * 10, 0.0)  # logistic in log P around 20
    win = CX.weight_window(Pg, w)
    assert abs(win["P_equal"] - 20.0) < 0.3
    assert win["P_w05"] < 20 < win["P_w95"]
