"""Route B's early warning: the basin variance is the inverse curvature of the Landau profile,
and the predicted growth is the ratio of the window's two variances."""

import numpy as np
import pytest

from copyhead_jax.theory import TheoryParams, theory_of
from copyhead_jax.theory.bayes.profile import profile
from copyhead_jax.theory.bayes.solve import VariationalSettings, make_draws
from copyhead_jax.theory.bayes.warning import predicted_growth, softmax_variances

L, V, ROWS, P = 8, 3, 2048, 12.0
SETTINGS = VariationalSettings(n_rows=ROWS, seed=0)


@pytest.fixture(scope="module")
def pool():
    p = TheoryParams.preset("plain", L=L, V=V)
    (row,) = softmax_variances(p, (P,), SETTINGS)
    return p, row


def test_basin_variance_is_the_inverse_curvature_of_the_profile(pool):
    # Var(aG) = g^T H^-1 g from the Hessian of F_q at the pooling minimum must equal 1/F''(a*)
    # of the profile F(a) = min{F_q : aG = a} (docs/theory.md §13.9). Five profile points within
    # +-0.6 sd of a*: a quadratic fit's curvature carries a relative error ~ (0.6 sd)^2 F''''/F''
    # (the profile is smooth on the scale of sd ~ 0.04), far below the 3% allowed.
    p, row = pool
    assert row["ok"] and row["var_aG"] > 0
    sd = np.sqrt(row["var_aG"])
    a = row["aG"] + sd * np.linspace(-0.6, 0.6, 5)
    prof = profile(P, a, p, make_draws(p, SETTINGS), SETTINGS)
    curv = 2.0 * np.polyfit(np.asarray(prof["aG"]), np.asarray(prof["F"]), 2)[0]
    assert curv * row["var_aG"] == pytest.approx(1.0, rel=0.03)


def test_predicted_growth_is_the_ratio_of_the_window_variances(pool):
    # the window's ends are 0.5 P* and 0.9 P*; growth = Var(0.9 P*) / Var(0.5 P*) of the same
    # followed basin (a second call at the two ends alone gives the same two variances)
    p, _ = pool
    g = predicted_growth(p, theory_of("softmax"), P / 0.9, "aG", settings=SETTINGS)
    assert g["P"] == pytest.approx([P / 0.9 * 0.5, P])
    ends = softmax_variances(p, g["P"], SETTINGS)
    assert g["var"] == pytest.approx([r["var_aG"] for r in ends], rel=1e-9)
    assert g["growth"] == pytest.approx(g["var"][1] / g["var"][0], rel=1e-12)
    with pytest.raises(ValueError, match="order must be 'aG'"):
        predicted_growth(p, theory_of("softmax"), P, "c1", settings=SETTINGS)
