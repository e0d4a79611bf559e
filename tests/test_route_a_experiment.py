"""``python -m experiments route-a``: its P grid widens towards the root of F_copy - F_pool, its
records replace those of the same configuration and seed only and keep the P computed before
(route A itself stubbed: a difference of free energies with a known root, so the test runs in
milliseconds)."""

import json
import math

import pytest

from copyhead_jax.theory import TheoryParams
from experiments import route_a as RA


def _stub(root: float):
    """``one_loop_transition`` with ``F_copy - F_pool = 10 log(root / P)`` (positive below the
    root: pooling wins) and its linear-in-log-P root, as the real one interpolates."""

    def f(params, P, betas, tokens, shift_closed=True):
        dF = [10 * math.log(root / p) for p in P]
        star = None
        for i in range(len(P) - 1):
            if dF[i] > 0 > dF[i + 1]:
                t0, t1 = math.log(P[i]), math.log(P[i + 1])
                star = math.exp(t0 + (t1 - t0) * dF[i] / (dF[i] - dF[i + 1]))
                break
        basins = [{"mean_aG": 0.0} for _ in P]
        return {"P": [float(p) for p in P], "dF": dF, "basins": basins, "P_star": star}

    return f


@pytest.mark.parametrize(("root", "side"), [(47.3, "above"), (31.7, "below")])
def test_the_grid_widens_towards_the_root(monkeypatch, root, side):
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _stub(root))
    r = RA.one_seed(TheoryParams.preset("plain", L=4, V=3), 0, [36, 38, 40])
    assert r["P_star"] == pytest.approx(root, rel=1e-9)  # exact: the stub is linear in log P
    assert (max(r["P"]) > 40) == (side == "above") and (min(r["P"]) < 36) == (side == "below")
    assert len(r["P"]) - 3 <= RA.MAX_WIDEN


def test_no_root_within_the_widening_is_reported_not_invented(monkeypatch):
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _stub(500.0))
    r = RA.one_seed(TheoryParams.preset("plain", L=4, V=3), 0, [36, 38, 40])
    assert r["P_star"] is None and len(r["P"]) == 3 + RA.MAX_WIDEN


def test_records_replace_only_their_own_configuration_and_seed(monkeypatch, tmp_path):
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _stub(40.0))
    other = {"preset": "plain", "L": 12, "V": 6, "seed": 0, "P_star": 49.5}
    (tmp_path / RA.FILE).write_text(json.dumps([other]))
    args = ["--L", "4", "--V", "3", "--P", "36,44", "--results", str(tmp_path)]
    assert RA.main(args + ["--seeds", "0,1"]) == 0
    assert RA.main(args + ["--seeds", "1"]) == 0
    recs = json.loads((tmp_path / RA.FILE).read_text())
    keys = sorted((r["L"], r["V"], r["seed"]) for r in recs)
    assert keys == [(4, 3, 0), (4, 3, 1), (12, 6, 0)]
    assert [r["P_star"] for r in recs if r["L"] == 12] == [49.5]


def test_a_rerun_computes_only_the_new_P_and_saves_as_it_goes(monkeypatch, tmp_path):
    asked = []
    stub = _stub(40.0)

    def counting(params, P, betas, tokens, shift_closed=True):
        asked.append(list(P))
        return stub(params, P, betas, tokens)

    monkeypatch.setattr(RA.bayes, "one_loop_transition", counting)
    args = ["--L", "4", "--V", "3", "--seeds", "0", "--results", str(tmp_path)]
    assert RA.main(args + ["--P", "36,44"]) == 0
    assert RA.main(args + ["--P", "30,36,44,50"]) == 0
    assert asked == [[36, 44], [30, 50]]  # 36 and 44 read from the first run's record
    (rec,) = json.loads((tmp_path / RA.FILE).read_text())
    assert rec["P"] == [30, 36, 44, 50] and rec["P_star"] == pytest.approx(40.0, rel=1e-9)


def _one_basin(mid: float, above: float | None = None):
    """One basin at every P (no dF) with mean a_G rising linearly in log P through ``mid``;
    with ``above``: two basins (dF > 0, pooling wins) below that P."""

    def f(params, P, betas, tokens, shift_closed=True):
        dF = [5.0 if above is not None and p < above else None for p in P]
        basins = [{"mean_aG": math.log(p / mid)} for p in P]
        return {"P": [float(p) for p in P], "dF": dF, "basins": basins, "P_star": None}

    return f


def test_one_basin_everywhere_gives_the_midway_crossover(monkeypatch):
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _one_basin(30.0))
    r = RA.one_seed(TheoryParams.preset("plain", L=4, V=3), 0, [10, 90])
    assert r["P_star"] is None and r["P_mid"] == pytest.approx(30.0, rel=1e-9)  # log-linear


def test_no_widening_past_the_end_where_a_basin_is_gone(monkeypatch):
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _one_basin(30.0, above=40.0))
    r = RA.one_seed(TheoryParams.preset("plain", L=4, V=3), 0, [20, 30, 50])
    assert r["P"] == [20, 30, 50] and r["P_star"] is None and r["P_mid"] is None


def test_markov_records_are_kept_apart_from_the_iid_ones(monkeypatch, tmp_path):
    """A Markov record (``--rho``) of the same (preset, L, V, seed) neither replaces nor is
    replaced by the i.i.d. one, and names its source; ``--rho`` without ``--P`` is refused."""
    monkeypatch.setattr(RA.bayes, "one_loop_transition", _stub(37.0))
    for extra in ([], ["--rho", "0.5"]):
        RA.main(
            [
                "--L",
                "4",
                "--V",
                "3",
                "--seeds",
                "0",
                "--P",
                "36,38",
                "--results",
                str(tmp_path),
                *extra,
            ]
        )
    recs = json.loads((tmp_path / RA.FILE).read_text())
    assert sorted(str(r.get("rho")) for r in recs) == ["0.5", "None"]
    assert [r.get("source") for r in recs if r.get("rho") == 0.5] == ["markov"]
    with pytest.raises(SystemExit):
        RA.main(["--L", "4", "--V", "3", "--rho", "0.5", "--results", str(tmp_path)])
