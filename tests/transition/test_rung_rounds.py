"""Branch-TI rungs until enough (``TISettings.ess_target``): the group's rungs are drawn by the
samplers' one round loop (sampling/rounds.py), each rung stopping in the first round whose kept
draws (after ``discard``) meet the target on g and a_G, the others going on, and each rung's
draws are those of the fixed-length run up to its stop. Run on a stand-in rung program (NumPy
AR(1) chains per rung, correlation rising with the rung, continued exactly from their state),
so the test is the plumbing's; the real rungs' continuation is
test_branch_ti.py::test_continued_rungs_equal_one_run_and_a_stopped_rung_keeps_its_state."""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.objective import Objective
from copyhead_jax.transition import branch_group as bg

#: three chain rungs per branch (exact t = 0), rounds of 20 draws, at most 10 rounds
S = bg.TISettings(
    ts=(0.0, 0.3, 0.6, 1.0),
    n_chains=2,
    n_iter=400,
    thin=2,
    round_iter=40,
    ess_target=30.0,
    rhat_target=1.1,
    discard=0.25,
    batched=False,
)
#: lag-one correlation of each rung's chains: ESS per draw ~ (1 - rho) / (1 + rho)
RHO = np.array([[0.0, 0.6, 0.93], [0.3, 0.0, 0.8]])


def _advance(t, x, n, active):
    """``n`` draws per chain of every active rung from its state (steps taken ``t[2, K]``,
    last values ``x[2, K, C, 2]``): draw j of rung (b, k) at step t + j from a generator seeded
    ``(b, k, t + j)``; an inactive rung draws NaN (records and acceptances) and keeps its state."""
    rec = np.full(x.shape[:3] + (n, 3), np.nan)
    acc = np.full(x.shape[:3] + (n,), np.nan)
    t1, x1 = t.copy(), x.copy()
    for (b, k), on in np.ndenumerate(active):
        if not on:
            continue
        r, cur = RHO[b, k], x[b, k].copy()
        for j in range(n):
            e = np.random.default_rng([b, k, int(t[b, k]) + j]).normal(size=cur.shape)
            cur = r * cur + np.sqrt(1 - r**2) * e
            rec[b, k, :, j] = np.concatenate([cur, np.zeros(cur.shape[:-1] + (1,))], -1)
        acc[b, k] = 0.8
        t1[b, k], x1[b, k] = t[b, k] + n, cur
    fin = np.ones(x.shape[:3], bool)
    return (rec, acc, fin, np.full(x.shape[:3], 0.3), np.zeros(2)), (t1, x1)


def _programs(calls):
    def start(*_args):
        calls.append("start")
        t, x = np.zeros((2, 3), np.int64), np.zeros((2, 3, S.n_chains, 2))
        return _advance(t, x, S.round_draws, np.ones((2, 3), bool))

    def more(*args):
        calls.append(np.asarray(args[-1]).copy())
        t, x = args[-3]
        return _advance(t, x, S.round_draws, np.asarray(args[-1]))

    return start, more


def test_each_rung_stops_in_the_first_round_its_own_draws_meet_the_target():
    calls = []
    got = bg.draw_rungs(S, Objective.from_config(ch.TINY), (None,) * 9, _programs(calls))
    per = bg.rung_draws(got["draws"], got["accept"], got["finite"], S, got["n_draws"])
    R, cap = S.round_draws, S.n_rounds
    rounds = np.array([x["n_draws"] for x in per]) // R
    assert len(set(rounds.tolist())) >= 3, rounds  # the rungs stop apart
    assert rounds.max() <= cap and rounds.min() >= 1
    ref = _advance(
        np.zeros((2, 3), np.int64), np.zeros((2, 3, S.n_chains, 2)), cap * R, np.ones((2, 3), bool)
    )[0][0].reshape(6, S.n_chains, cap * R, 3)
    acc = np.full(ref.shape[:3], 0.8)
    fin = np.ones((6, S.n_chains), bool)
    for i, k in enumerate(rounds):
        n = k * R
        np.testing.assert_array_equal(got["draws"][i, :, :n], ref[i, :, :n])  # the same chain
        assert np.isnan(got["draws"][i, :, n:]).all()  # nothing drawn after it stopped
        now = bg.rung_draws(ref[i : i + 1, :, :n], acc[i : i + 1, :, :n], fin[i : i + 1], S)[0]
        assert now["met"] or k == cap
        assert now["ess"] == per[i]["ess"] and now["rhat"] == per[i]["rhat"]
        if k > 1:  # the round before did not meet it
            m = (k - 1) * R
            assert not bg.rung_draws(
                ref[i : i + 1, :, :m], acc[i : i + 1, :, :m], fin[i : i + 1], S
            )[0]["met"]
    # every round after the first drew exactly the rungs still short of the target
    for j, active in enumerate(calls[1:], start=1):
        np.testing.assert_array_equal(active.ravel(), rounds > j)


def test_rung_draws_keep_each_rungs_own_draws_after_the_discard():
    """A rung's statistics use the ``n_draws`` it took (not the NaN rounds after it stopped),
    less the first ``discard`` of them; a non-finite chain never meets the target, NaN never
    does."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 2, 40, 3))
    acc = np.full((2, 2, 40), 0.7)
    x[1, :, 20:], acc[1, :, 20:] = np.nan, np.nan
    fin = np.array([[True, True], [True, False]])
    a, b = bg.rung_draws(x, acc, fin, S, np.array([40, 20]))
    assert (a["n_draws"], b["n_draws"]) == (40, 20)
    np.testing.assert_array_equal(a["draws"], x[0][:, 10:])
    np.testing.assert_array_equal(b["draws"], x[1][:, 5:20])
    assert b["accept"] == pytest.approx(0.7) and not b["met"]
    short = bg.rung_draws(x[:, :, :4], acc[:, :, :4], fin, S)[0]
    assert np.isnan(short["ess"]) and not short["met"]  # 3 kept draws: no statistic
