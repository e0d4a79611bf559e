"""Route A's reading of a profile F(beta): basins, their free energies, the mean order parameter
and the first-order root (closed-form profiles, no Hessian)."""

import math

import numpy as np
import pytest

from copyhead_jax.theory.bayes import basin_free_energies, first_order_root

L = 12
BETA = np.linspace(-0.5, 6.5, 141)


def a_of(beta):
    p = 1.0 / (1.0 + np.exp(-(beta - math.log(L - 1.0))))
    return math.sqrt(L) * (L * p - 1.0) / (L - 1.0)


def test_a_narrow_well_has_one_basin_and_its_mean_at_the_well():
    b0 = 2.3
    r = basin_free_energies(BETA, 2000.0 * (BETA - b0) ** 2, L)
    assert r["minima_beta"] == pytest.approx([b0], abs=2e-3)  # the fine grid's step is 3.5e-3
    assert "F_copy" not in r
    # a Gaussian of width 0.016 in beta: the mean of a(beta) moves by O(a'' var) ~ 1e-4
    assert r["mean_aG"] == pytest.approx(a_of(b0), abs=1e-3)


def test_two_equal_wells_split_at_the_barrier_with_the_weight_of_each():
    # F = -log(e^{-k(b-b1)^2} + e^{-k(b-b2)^2 - d}) + log(da/db): e^{-F} da is exactly two
    # Gaussians in beta of weights 1 and e^{-d}, so F_copy - F_pool = d
    k, b1, b2, d = 60.0, 0.5, 4.5, 1.7
    p = 1.0 / (1.0 + np.exp(-(BETA - math.log(L - 1.0))))
    dadb = math.sqrt(L) * L / (L - 1.0) * p * (1.0 - p)
    F = -np.logaddexp(-k * (BETA - b1) ** 2, -k * (BETA - b2) ** 2 - d) + np.log(dadb)
    r = basin_free_energies(BETA, F, L)
    assert r["F_copy"] - r["F_pool"] == pytest.approx(d, abs=1e-3)  # spline and tails: < 1e-4
    w1, w2 = 1.0, math.exp(-d)
    assert r["mean_aG"] == pytest.approx((w1 * a_of(b1) + w2 * a_of(b2)) / (w1 + w2), abs=1e-3)


def test_first_order_root_needs_both_basins_on_both_sides():
    assert first_order_root([10, 20], [2.0, -2.0]) == pytest.approx(math.sqrt(200), rel=1e-12)
    assert first_order_root([10, 20, 40], [2.0, None, -2.0]) is None
    assert first_order_root([10, 20], [-1.0, 2.0]) is None  # copy-favoured first: no such root


def test_a_basin_beyond_the_grids_low_end_counts_and_is_flagged():
    k, d = 20.0, 1.0  # a pooling well centred at beta = -1.5, below the grid's -0.5
    p = 1.0 / (1.0 + np.exp(-(BETA - math.log(L - 1.0))))
    dadb = math.sqrt(L) * L / (L - 1.0) * p * (1.0 - p)
    F = -np.logaddexp(-k * (BETA + 1.5) ** 2, -k * (BETA - 4.0) ** 2 - d) + np.log(dadb)
    r = basin_free_energies(BETA, F, L)
    assert r["edge_low"] and r["minima_beta"][0] == BETA[0]
    # the pooling basin's integral is cut at the end: its free energy is an upper bound
    assert r["F_copy"] - r["F_pool"] < d
    inner = basin_free_energies(BETA, 2000.0 * (BETA - 2.3) ** 2, L)
    assert not inner["edge_low"]
