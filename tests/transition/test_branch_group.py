"""transition/branch_group.py: the rung schedules mirror each other and crowd where named; rungs
near one integrate an integrand that bends there better."""

from __future__ import annotations

import numpy as np
import pytest

from copyhead_jax.transition import TISettings

# --- the command on a tiny configuration ------------------------------------------------------


def test_rung_schedules_mirror_each_other_and_crowd_where_named():
    from copyhead_jax.transition import rung_ts

    near1, near0 = np.asarray(rung_ts(9)), np.asarray(rung_ts(9, "near-0"))
    assert near1[0] == 0.0 and near1[-1] == 1.0 and np.all(np.diff(near1) > 0)
    np.testing.assert_allclose(near1, 1.0 - near0[::-1], atol=1e-15)
    assert np.diff(near1)[-1] < np.diff(near1)[0] and np.diff(near0)[0] < np.diff(near0)[-1]
    assert TISettings().ts == rung_ts(5)
    with pytest.raises(ValueError, match="schedule must be one of"):
        rung_ts(5, "middle")


def test_rungs_near_one_integrate_an_integrand_that_bends_there_better():
    """The measured E_t[U - U_ref] of Laplace-referenced TI bends most as t -> 1 (the reference
    is exact at the mode). For m(t) = -c t^6 (closed-form integral -c/7), trapezoid plus the
    Euler-Maclaurin term on 9 rungs crowded near 1 errs several times less than on 9 near 0."""
    from copyhead_jax.sampling import ti_quadrature
    from copyhead_jax.transition import rung_ts

    c = 300.0
    err = {}
    for sched in ("near-1", "near-0"):
        t = np.asarray(rung_ts(9, sched))
        got, _ = ti_quadrature(t, -c * t**6, -6 * c * t**5)
        err[sched] = abs(got + c / 7)
    assert err["near-1"] < err["near-0"] / 3, err


# --- bad input --------------------------------------------------------------------------------
