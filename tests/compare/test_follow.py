"""copyhead_jax.compare.follow: branch following up and down in P (hysteresis)."""

from __future__ import annotations

import numpy as np
import pytest

from copyhead_jax.compare import follow as BF


def _fake(P, lower, upper, nS=2):
    """A toy landscape per P: the pool branch (a_G = 0) exists for P < upper, the copy branch
    (a_G = 3) for P > lower; a solve keeps the start's branch while it exists, else jumps.
    ``W_G`` carries the branch (its a_G), ``W_O_hat`` the seed."""

    def run(i, aG):
        p = P[i]
        aG = np.where((aG == 0) & (p >= upper), 3.0, np.where((aG == 3) & (p <= lower), 0.0, aG))
        U = np.where(aG == 0, 0.0, 1.0 - (p - 550) / 100)  # copy lower above P = 650
        return {
            "params/W_G": aG.copy(),
            "params/W_O_hat": np.arange(nS, dtype=float),
            "U": U,
            "aG": aG,
            "a1": aG / 3,
            "psi": aG / 3,
            "r": np.ones(nS),
            "converged": np.ones(nS, bool),
            "finite": np.ones(nS, bool),
        }

    calls = []

    def solve(i, w):
        calls.append(i)
        return run(i, np.asarray(w[0]))

    return run, solve, calls


@pytest.mark.parametrize(
    "lower, upper, n_distinct", [(550, 750, [0, 0, 2, 2, 0]), (650, 650, [0] * 5)]
)
def test_passes_follow_each_branch_until_it_ends(lower, upper, n_distinct):
    """A window (lower, upper): the up pass stays on the pool branch to its end, the down pass
    on the copy branch to its end, distinct in between; no window: the passes agree."""
    P = [400, 500, 600, 700, 800]
    run, solve, calls = _fake(P, lower, upper)
    br = BF.passes(P, run(0, np.zeros(2)), run(4, np.full(2, 3.0)), solve)
    assert calls == [1, 2, 3, 4, 3, 2, 1, 0]  # up from P[0], then down from P[-1]
    assert br["up"]["aG"].shape == (5, 2)
    c = BF.coexistence(br, P)
    assert c["n_distinct"] == n_distinct and c["n_ok"] == [2] * 5
    if upper > lower:
        assert br["up"]["aG"][:, 0].tolist() == [0, 0, 0, 0, 3]
        assert br["down"]["aG"][:, 0].tolist() == [0, 0, 3, 3, 3]
        assert c["window"] == [[600.0, 700.0]] * 2
        assert all(600 < c < 700 for c in c["crossing"])  # U_up - U_down: -0.5, then +0.5
        assert c["up_step"][0] == [3.0, 700.0, 800.0] and c["down_step"][0] == [3.0, 500.0, 600.0]
    else:
        assert c["window"] == [None, None] and c["crossing"] == [None, None]
        assert c["up_step"][0] == [3.0, 600.0, 700.0] == c["down_step"][0]


def test_coexistence_ignores_runs_that_did_not_converge():
    P = [400, 500, 600, 700, 800]
    run, solve, _ = _fake(P, 550, 750)
    br = BF.passes(P, run(0, np.zeros(2)), run(4, np.full(2, 3.0)), solve)
    br["down"]["converged"][2, 1] = False
    c = BF.coexistence(br, P)
    assert c["n_distinct"][2] == 1 and c["n_ok"][2] == 1
