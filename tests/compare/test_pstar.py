"""``compare.pstar`` (the P* table ``copyhead sweep`` prints) finds planted transitions per seed."""

from types import SimpleNamespace

import numpy as np
import pytest

from copyhead_jax.compare.pstar import format_pstar, linear_points, pstar_rows, softmax_points


class _Sweep:
    """The few attributes of a SweepResult the locators read: ``P``, ``ok``, ``res[key]``."""

    def __init__(self, P, **arrays):
        self.P = np.asarray(P)
        self.arrays = arrays
        self.ok = np.ones(next(iter(arrays.values())).shape, bool)
        self.config = SimpleNamespace(task=SimpleNamespace(L=25))

    def __getitem__(self, k):
        return self.arrays[k]


P = np.unique(np.round(np.geomspace(10, 10_000, 40)).astype(int))


def test_softmax_crossing_is_exact_where_the_U_difference_is_linear_in_log_P():
    # (U_pool - U_copy) / P = 0.1 log(P / P0): the locator interpolates linearly in log P, so it
    # returns P0 itself (to rounding) for each seed; the table's estimate is their geometric mean
    P0 = np.array([500.0, 720.0])
    U_copy = np.outer(P, np.ones(2)).astype(float)
    U_pool = U_copy + 0.1 * P[:, None] * np.log(P[:, None] / P0)
    aG_pool, aG_copy = np.zeros_like(U_copy), np.full_like(U_copy, 3.0)
    pool = _Sweep(P, U=U_pool, cG=aG_pool)
    copy = _Sweep(P, U=U_copy, cG=aG_copy)
    per = softmax_points(pool, copy)["P_aG"]
    assert [x.P_star for x in per] == pytest.approx(P0, rel=1e-9)
    (row,) = pstar_rows({"P_aG": per}, {"P_aG": 612.6}, attention="softmax", compare_paper=True)
    assert row["measured"] == pytest.approx(np.sqrt(500 * 720), rel=1e-9)
    assert row["n"] == 2 and row["lo"] <= row["measured"] <= row["hi"]
    assert row["bracket"][0] < 500 and row["bracket"][1] > 720
    assert row["paper"] == 300.0  # compare.paper.PAPER_MEASURED
    assert "softmax copy transition" in format_pstar([row])


def test_branches_that_never_separate_locate_nothing():
    # both starts on the same branch everywhere: no distinct point, so no crossing is claimed
    U = P[:, None] * np.ones((1, 2))
    same = _Sweep(P, U=U, cG=np.zeros_like(U))
    per = softmax_points(same, same)["P_aG"]
    assert all(not x.bracketed for x in per)
    (row,) = pstar_rows({"P_aG": per}, {}, attention="softmax", compare_paper=False)
    assert row["measured"] is None and "not on the grid" in format_pstar([row])


def test_linear_onset_and_crossover_are_bracketed_around_the_planted_points():
    # r leaves zero at P = 100 (second order); psi = sigmoid(4 log(P / 2000)) is steepest in
    # log P at 2000: each located P* lies in a bracket of neighbouring grid points around them
    r = np.clip(1 - 100 / P, 0, None)[:, None] * np.ones((1, 2))
    psi = (1 / (1 + (2000 / P) ** 4))[:, None] * np.ones((1, 2))
    lin = _Sweep(P, r=r, psi=psi, cG=psi)
    pts = linear_points(lin)
    for key, planted in (("P_c1", 100.0), ("P_cG", 2000.0)):
        for x in pts[key]:
            assert x.bracketed and x.bracket[0] <= planted <= x.bracket[1], (key, x)


def test_diverged_runs_locate_nothing():
    # every run non-finite (flagged, not ok): each P* is "not on the grid", nothing raises
    nan = np.full((P.size, 2), np.nan)
    bad = _Sweep(P, r=nan, psi=nan, cG=nan, U=nan)
    bad.ok[:] = False
    rows = pstar_rows(linear_points(bad), {}, attention="linear", compare_paper=False)
    rows += pstar_rows(softmax_points(bad, bad), {}, attention="softmax", compare_paper=False)
    assert [r["n"] for r in rows] == [0, 0, 0, 0]


def test_one_minimum_that_jumps_is_located_by_its_step():
    # both starts reach the same minimum at every P (no coexistence on the grid) and aG steps
    # from 0.1 to 0.9 between neighbouring P around a planted P0 per seed: no U crossing is
    # claimed, and the step's bracket holds P0
    P0 = np.array([300.0, 1_000.0])
    aG = np.where(P[:, None] > P0, 0.9, 0.1)
    same = _Sweep(P, U=P[:, None] * np.ones((1, 2)), cG=aG)
    pts = softmax_points(same, same)
    assert all(not x.bracketed for x in pts["P_aG"])
    for x, p0 in zip(pts["P_aG_jump"], P0):
        assert x.bracketed and x.bracket[0] <= p0 < x.bracket[1], x  # aG = 0.9 above P0
    rows = pstar_rows(pts, {}, attention="softmax", compare_paper=False)
    assert "softmax jump, one minimum per P" in format_pstar(rows)
    # another two-branch head's rows carry its own name, and no paper number (not the paper's)
    rows = pstar_rows(pts, {}, attention="sigmoid", compare_paper=True)
    assert [r["label"].split()[0] for r in rows] == ["sigmoid", "sigmoid"]
    assert all(r["paper"] is None for r in rows)


def test_array_points_locates_planted_features_and_marks_absent_ones_above_the_grid():
    """Order-parameter arrays (e.g. the lowest of several starts): a planted onset and crossover
    in seed 0 are bracketed; seed 1 sits at G = 0 with float64 residue only, so its P* lie
    above the grid, not at a spurious onset; a softmax seed without a jump likewise."""
    from copyhead_jax.compare.pstar import array_points

    one = np.ones(P.size)
    r = np.stack([np.clip(1 - 100 / P, 0, None), 1e-9 * one], 1)
    psi = np.stack([1 / (1 + (2000 / P) ** 4), 1e-9 * one], 1)
    d = dict(
        U=np.ones((P.size, 2)),
        converged=np.ones((P.size, 2)),
        r=r,
        psi=psi,
        cG=np.stack([psi[:, 0], 1e-9 * one], 1),
    )
    pts = array_points("linear", P, d, min_jump=0.5)
    for key, planted in (("P_c1", 100.0), ("P_cG", 2000.0)):
        s = pts[key]
        assert s["n"] == 1 and s["n_seeds"] == 2 and s["unlocated"] == ["above"]
        assert s["bracket"][0] <= planted <= s["bracket"][1] and s["per_seed"][1] is None
    aG = np.stack([np.where(P < 600, 0.1, 2.0), 0.1 * one], 1)
    soft = array_points("softmax", P, dict(d, cG=aG), min_jump=0.5)["P_aG"]
    assert soft["n"] == 1 and soft["bracket"][0] < 600 <= soft["bracket"][1]
    assert soft["unlocated"] == ["above"]


def _runs(P_, n_seeds, **arrays):
    """An ``Arrays`` with a sweep config (``seed_groups`` reads ``config.sweep.n_seeds``)."""
    from copyhead_jax.compare.pstar import Arrays

    cfg = SimpleNamespace(task=SimpleNamespace(L=25), sweep=SimpleNamespace(n_seeds=n_seeds))
    return Arrays(P_, arrays, np.ones((len(P_), n_seeds), bool), cfg)


def test_seed_groups_extend_the_first_seeds_and_keep_the_main_runs():
    """Extra grids (the markov artefact's): the first k seeds on the union of P (the main sweep's
    runs where both have a P), the other seeds on the main grid; the overlap's U difference."""
    from copyhead_jax.compare.pstar import GROUP_ARRAYS, seed_groups

    class Res(dict):
        def __init__(self, P, n, U0):
            P = np.asarray(P)
            grid = np.add.outer(P, np.arange(n)).astype(float)  # P + seed
            super().__init__(dict.fromkeys(GROUP_ARRAYS, grid) | {"U": grid + U0})
            self.P, self.ok = P, np.ones((P.size, n), bool)
            self.config = SimpleNamespace(sweep=SimpleNamespace(n_seeds=n))

    main, ext = Res([10, 20, 40], 3, 0.0), Res([40, 80], 1, 1e-9)
    assert seed_groups(main, []) == ([(3, main)], {})
    ((k, grid), (rest, tail)), checks = seed_groups(main, [ext])
    assert (k, rest) == (1, 2) and list(grid.P) == [10, 20, 40, 80] and list(tail.P) == [10, 20, 40]
    assert grid["U"][2, 0] == 40.0 and grid["U"][3, 0] == 80.0 + 1e-9  # main's run at 40
    assert tail["U"][:, 0].tolist() == [11.0, 21.0, 41.0]  # seed 1 of the main sweep
    assert checks == {"seeds_extended": 1, "overlap_max_dU": pytest.approx(1e-9)}


def test_group_means_average_every_seed_on_the_widest_grid():
    """An extra sweep at two more P on the first 2 of 3 seeds: the seed mean on the union of the
    grids, the third seed counting only at the main grid's P (where the grids overlap, the main
    sweep's runs)."""
    from copyhead_jax.compare.pstar import GROUP_ARRAYS, group_means, seed_groups

    def runs(P_, n, add):  # every array: P + add, on each seed
        return _runs(P_, n, **{k: np.outer(P_, np.ones(n)) + add for k in GROUP_ARRAYS})

    main, extra = runs(np.array([10, 100, 1000]), 3, 0.0), runs(np.array([30, 100, 300]), 2, 0.5)
    groups, _ = seed_groups(main, [extra])
    assert group_means(groups, ("U",))["U"].tolist() == [10, 30.5, 100, 300.5, 1000]


def test_group_points_and_point_summary_over_seed_groups():
    """Planted U crossings per seed, the seeds in two groups: every seed's P*_aG in order, and
    the summary's mean, hull, and the side of a seed not located (None where not looked for)."""
    from copyhead_jax.compare.pstar import group_points, point_summary

    P0 = [(500.0,), (720.0,)]
    groups = {}
    for name in ("pool", "copy"):
        groups[name] = []
        for p0 in P0:
            U = np.outer(P, np.ones(1)).astype(float)
            if name == "pool":
                U = U + 0.1 * P[:, None] * np.log(P[:, None] / np.array(p0))
            cG = np.full_like(U, 3.0 if name == "copy" else 0.0)
            groups[name].append((1, _runs(P, 1, U=U, cG=cG)))
    r = np.clip(1 - 100 / P, 0, None)[:, None]
    psi = (1 / (1 + (2000 / P) ** 4))[:, None]
    lin = [(1, _runs(P, 1, r=r, psi=psi, cG=psi, U=0 * r))] * 2
    pts = group_points(lin, groups["pool"], groups["copy"])
    assert sorted(pts) == ["P_aG", "P_c1", "P_cG"] and len(pts["P_aG"]) == 2
    s = point_summary(pts["P_aG"])
    assert s["mean"] == pytest.approx(np.sqrt(500 * 720), rel=1e-9) and s["n"] == 2
    assert s["bracket_hull"][0] < 500 and s["bracket_hull"][1] > 720
    off = pts["P_aG"][0].to_dict() | {"bracketed": False, "side": "above"}
    s = point_summary([off, None, pts["P_aG"][1]])
    assert s["per_seed"][:2] == [None, None] and s["side"][:2] == ["above", None]
    assert s["n"] == 1 and s["n_missing"] == 2


# --- the seeds' interval widened by the grid's error (seeds_summary) -------------------------


@pytest.mark.parametrize("n_seeds", [1, 3, 10])
def test_a_step_on_a_shared_grid_gives_its_bracket_whatever_the_number_of_seeds(n_seeds):
    # every seed jumps between the same two grid points: no scatter over seeds, and the grid
    # cannot say where in [40, 80] the step lies, so the interval is [40, 80] for any n
    from copyhead_jax.compare import locate as loc
    from copyhead_jax.compare.pstar import seeds_summary

    grid = np.array([10.0, 20, 40, 80, 160])
    y = np.where(grid > 50, 1.0, 0.0)
    s = seeds_summary([loc.locate_jump(grid, y) for _ in range(n_seeds)])
    assert s["P_star"] == pytest.approx(np.sqrt(40 * 80))
    assert (s["seeds_lo"], s["seeds_hi"]) == pytest.approx((s["P_star"],) * 2)  # no scatter
    assert (s["grid_lo"], s["grid_hi"]) == pytest.approx((40.0, 80.0))
    assert (s["lo"], s["hi"]) == pytest.approx((40.0, 80.0))
    (row,) = pstar_rows(
        {"P_aG_jump": [loc.locate_jump(grid, y)] * n_seeds},
        {},
        attention="softmax",
        compare_paper=False,
    )
    assert (row["lo"], row["hi"]) == pytest.approx((40.0, 80.0))
    assert "56.6 [40.0, 80.0]" in format_pstar([row])


def test_scattered_seeds_add_their_grid_error_in_log_P():
    # seeds at 50, 60, 70 with brackets (40, 80): the interval is the bootstrap CI of the
    # geometric mean times (geometric mean of the grid ends) / estimate, at both ends
    from copyhead_jax.compare import locate as loc
    from copyhead_jax.compare.pstar import point_summary, seeds_summary
    from copyhead_jax.compare.stats import bootstrap_ci

    vals = [50.0, 60.0, 70.0]
    grids = [(45.0, 55.0), (40.0, 80.0), (65.0, 75.0)]
    per = [loc.Located("level", v, (40.0, 80.0), True, grid=g) for v, g in zip(vals, grids)]
    s, b = seeds_summary(per + [None]), bootstrap_ci(vals)
    g_lo = (45.0 * 40 * 65) ** (1 / 3)
    g_hi = (55.0 * 80 * 75) ** (1 / 3)
    assert (s["grid_lo"], s["grid_hi"]) == pytest.approx((g_lo, g_hi))
    assert s["lo"] == pytest.approx(b["lo"] * g_lo / b["estimate"])
    assert s["hi"] == pytest.approx(b["hi"] * g_hi / b["estimate"])
    assert (s["seeds_lo"], s["seeds_hi"]) == (b["lo"], b["hi"])
    assert s["n"] == 3 and s["n_seeds"] == 4 and s["n_missing"] == 1
    # a located seed with no grid error of its own (an older result) counts its whole bracket
    old = [x.to_dict() | {"grid": None} for x in per]
    assert seeds_summary(old)["grid_lo"] == pytest.approx(40.0)
    p = point_summary(per)
    assert p["ci"] == pytest.approx([s["lo"], s["hi"]])
    assert p["grid"] == [s["grid_lo"], s["grid_hi"]]
