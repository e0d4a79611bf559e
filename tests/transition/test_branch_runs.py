"""``copyhead_jax.transition.branch_runs``: the reference MAP of a branch is the run's own fit when
it lies in the branch's region, else the same seed's fit at the nearest P in log P that does."""

import numpy as np

from copyhead_jax.transition.branch_runs import pick_reference


class _Sweep:
    """The part of a ``SweepResult`` that ``pick_reference`` reads: ``P`` and ``cG[P, seed]``."""

    def __init__(self, P, cG):
        self.P, self._cG = np.asarray(P), np.asarray(cG, float)

    def __getitem__(self, k):
        assert k == "cG"
        return self._cG


def test_pick_reference_prefers_the_run_then_the_nearest_P_in_its_region():
    # seed 0 copies (aG >= 1) from P = 24 on, seed 1 never does
    sw = _Sweep([8, 16, 24, 48], [[0.1, 0.1], [0.2, 0.1], [2.0, 0.3], [2.5, 0.2]])
    res, i, ref_P = pick_reference([sw], "copy", 24, 0, 1.0)
    assert res is sw and (i, ref_P) == (2, 24)
    # P = 16 pools for seed 0: the nearest copying fit in log P is 24, not 48
    assert pick_reference([sw], "copy", 16, 0, 1.0)[1:] == (2, 24)
    # the pool branch at P = 48, seed 0: its nearest pooling fit is P = 16
    assert pick_reference([sw], "pool", 48, 0, 1.0)[1:] == (1, 16)
    assert pick_reference([sw], "copy", 16, 1, 1.0) is None  # no copying fit at all
    # two sweeps: the candidates of both are compared
    near = _Sweep([20], [[1.5, 0.0]])
    assert pick_reference([sw, near], "copy", 16, 0, 1.0)[0] is near
