"""``copyhead_jax.compare.branches``, ``.seeds`` and ``.laws`` on planted branch runs: the U
crossing only where the branches are distinct, the window's edges, per-seed combination, the
CI table's rows and the fitted exponents of known power laws."""

import types

import numpy as np
import pytest

from copyhead_jax.compare import branches as B
from copyhead_jax.compare import laws, seeds

L = 16


class Planted:
    """Branch runs with given arrays ``[nP, n_seeds]`` (``P``, ``masked``, ``cfg.task.L``)."""

    def __init__(self, P, **arrays):
        self.P = np.asarray(P)
        self.arrays = {k: np.asarray(v, float) for k, v in arrays.items()}
        n_seeds = next(iter(self.arrays.values())).shape[1]
        self.cfg = types.SimpleNamespace(
            task=types.SimpleNamespace(L=L), sweep=types.SimpleNamespace(n_seeds=n_seeds)
        )

    def masked(self, key, P=None):
        idx = slice(None) if P is None else np.searchsorted(self.P, np.atleast_1d(P))
        return self.arrays[key][idx]


def branches(P_lo=100.0, P_hi=300.0, P_cross=200.0):
    """Two starts distinct on [P_lo, P_hi], the pooling start's U above the copy's beyond
    P_cross; two seeds with the same data."""
    P = np.array([50, 80, 120, 160, 240, 280, 400])
    inside = (P >= P_lo) & (P <= P_hi)
    aG_pool = np.where(P > P_hi, 3.0, 0.1)
    aG_copy = np.where(inside | (P > P_hi), 3.0, 0.1)
    U_pool = np.log(P)
    U_copy = U_pool + (P_cross - P) / P  # lower beyond P_cross
    two = lambda x: np.stack([x, x], axis=1)  # noqa: E731
    pool = Planted(P, cG=two(aG_pool), U=two(U_pool))
    copy = Planted(P, cG=two(aG_copy), U=two(U_copy))
    return pool, copy


def test_crossing_is_found_inside_the_window_and_combined_over_seeds():
    pool, copy = branches()
    c = B.u_crossing(pool, copy)
    assert c.bracketed and c.bracket == (160.0, 240.0) and 160 < c.P_star < 240
    assert c.detail["n_bracketed"] == 2
    lo, hi = B.copy_fallback(pool, copy), B.window_top(pool, copy)
    assert lo.bracket == (80.0, 120.0) and hi.bracket == (280.0, 400.0)
    w = B.coexistence(pool, copy)
    assert w["seen"] and w["lower"] == lo.P_star and w["upper"] == hi.P_star
    assert w["distinct_fraction"] == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    j = B.single_jump(pool)
    assert j.bracket == (280.0, 400.0) and j.detail["jump"] == pytest.approx(2.9)


def test_no_distinct_branches_locates_nothing_and_says_why():
    pool, _ = branches()
    c = B.u_crossing(pool, pool)
    assert not c.bracketed and c.P_star is None
    assert B.window_interior(pool, pool).detail["reason"] == "never distinct"


def test_linear_points_and_the_ci_table():
    P = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    r = np.where(P >= 8, 1.0, 0.0)[:, None] * np.ones((1, 3))
    psi = np.clip((np.log(P) - np.log(16)) / np.log(8) + 0.5, 0, 1)[:, None] * np.ones((1, 3))
    lin = Planted(P, r=r, cG=r, psi=psi)
    assert B.onset(lin).bracket == (4.0, 8.0)
    located = seeds.per_seed_points(lin, {}, None)
    per = seeds.per_seed_values(located)
    assert len(per["P_c1"]) == 3 and all(4 <= p <= 8 for p in per["P_c1"])
    # psi is linear in log P and 1/2 at P = 16: log interpolation finds it exactly
    assert per["P_cG_half"] == pytest.approx([16.0] * 3) and per["P_aG"] == [None] * 3
    rows = {r["key"]: r for r in seeds.ci_table(located, None, None, {"P_c1": 6.0})}
    m = rows["P_c1"]["measured"]
    assert m["n"] == 3
    assert rows["P_c1"]["rel_err_ek"] == pytest.approx(m["estimate"] / 6 - 1)
    # three identical seeds: no scatter, but the onset is anywhere in its bracket [4, 8]
    assert (m["seeds_lo"], m["seeds_hi"]) == pytest.approx((m["estimate"],) * 2)
    assert (m["lo"], m["hi"]) == pytest.approx((4.0, 8.0))
    # the exact log-linear crossing: no interpolation error either
    half = rows["P_cG_half"]["measured"]
    assert (half["lo"], half["hi"]) == pytest.approx((16.0, 16.0))
    assert rows["P_aG"]["measured"]["estimate"] is None


def test_fit_laws_recovers_the_exponent_of_a_planted_power_law():
    values = [2, 3, 5, 8, 12]
    rows = [
        {
            "theory_ek": {"P_c1": 4.0 * v**2},
            "measured": {"P_c1": {"P_star": 5.0 * v**2, "bracketed": True}},
            "theory_finite": {},
        }
        for v in values
    ]
    out = laws.fit_laws(values, rows, "V", {"L": 25, "V": 5})["P_c1"]
    assert out["theory_ek"]["exponent"] == pytest.approx(2.0)
    assert out["measured"]["exponent"] == pytest.approx(2.0) and out["measured_points"] == 5
    assert out["paper_exponent"] == pytest.approx(2.0)  # the paper's P_c1 ~ V^2


def test_branch_gap_is_the_seed_mean_U_gap_per_sequence_and_the_distinct_fraction():
    pool, copy = branches()
    g = B.branch_gap(pool, copy)
    assert g["P"].tolist() == pool.P.tolist()
    assert g["dU_per_seq"] == pytest.approx((pool.P - 200.0) / pool.P**2)  # (P - P_cross) / P^2
    assert g["distinct"].tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]


def test_grids_around_the_theory_points():
    """Linear: the union of integer grids over [P*/3, 3 P*] of each measured P*; softmax over
    the spinodals widened by 1.5 (the crossover where the transition is not first order)."""
    th = {"P_c1": 20.0, "P_cG": 300.0, "spinodal_lo": 200.0, "spinodal_hi": 260.0, "P_aG": 230.0}
    lin, soft = laws.grids_around(th, ("P_c1", "P_cG", "P_aG"), 5)
    assert lin.min() == 7 and lin.max() == 900 and np.all(np.diff(lin) > 0)
    assert soft.min() == 133 and soft.max() == 390
    lin, soft = laws.grids_around({"P_aG_crossover": 100.0}, ("P_c1", "P_aG"), 3, {"P_aG": 2})
    assert lin.size == 0 and soft.tolist() == [50, 100, 200]


def test_phase_panel_spans_the_theory_points_with_their_boundaries(monkeypatch):
    """Every integer value between the ends, P from a quarter of the lowest P*_c1 / P*_aG to
    four times the highest P*_cG / upper spinodal, each theory's P* per value as boundaries
    (the theory itself stubbed: ``phase_diagram`` and ``scaling_table`` have their own tests)."""
    seen = {}

    def diagram(params, P, *, attention, L_values):
        seen[attention] = (np.asarray(P), L_values)
        return {"P": P, "values": L_values, "psi": 1, "aG": 2, "n_min": 3}

    def table(params, *, L_values):
        return {"P_c1": np.array([[10.0 * v] for v in L_values]), "L": L_values}

    monkeypatch.setattr(laws, "phase_diagram", diagram)
    monkeypatch.setattr(laws, "scaling_table", table)
    rows = [{"P_c1": 40.0, "P_aG": 80.0, "P_cG": 300.0}, {"P_c1": 60.0, "spinodal_hi": 500.0}]
    pan = laws.phase_panel(None, "L", [4, 6], rows, n_P=8)
    assert pan["linear"] == {"P": seen["linear"][0], "values": [4, 5, 6], "psi": 1}
    assert pan["softmax"]["aG"] == 2 and seen["softmax"][1] == [4, 5, 6]
    assert seen["linear"][0][[0, -1]] == pytest.approx([10.0, 2000.0])
    assert pan["boundary_values"] == [4, 5, 6]
    assert pan["boundaries"]["P_c1"] == [40.0, 50.0, 60.0]
    assert pan["boundaries"]["P_aG"] == [None] * 3
