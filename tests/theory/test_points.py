"""Transition points (docs/theory.md §5) and identities 9-11 of §7."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import theory as th
from tests.helpers import check_coexistence_window

# Compiled at the suite's -O0 (conftest), not marked ``xla_optimized``: XLA's optimisations took
# longer to compile than they saved in these theory batches (this module in one process, two
# interleaved pairs: 33 s optimised against 26-31 s at -O0).


@pytest.fixture(autouse=True)
def _strict():
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


N_CURVE = 24  # <= 32 points: shares the compiled curve program with test_theory_minima
PLAIN = th.TheoryParams.preset("plain")
PAPER = th.TheoryParams.preset("paper")


def test_identity9_hessian_criterion_equals_numeric_root():
    rng = np.random.default_rng(0)
    cases = [PLAIN, PAPER]
    for pre in ("paper", "plain"):
        s = np.exp(rng.normal(0, 0.5, size=6))
        cases.append(
            th.TheoryParams.preset(
                pre,
                L=int(rng.integers(4, 60)),
                V=int(rng.integers(2, 12)),
                sigma_e=s[0],
                sigma_p=s[1],
                sigma_G=s[2],
                sigma_O=s[3],
                sigma2=10 * s[4],
                chi=10 * s[5],
            )
        )
    for p in cases:
        r = th.transition_points(p, "linear")
        # bisection to ~1e-11 in log P; the closed form is exact to rounding
        assert abs(r["P_c1_numeric"] / r["P_c1_closed_form"] - 1) < 1e-8


def test_identity9_order_parameter_grows_like_a_square_root_above_P_c1():
    r = th.transition_points(PLAIN, "linear")
    eps = np.geomspace(1e-7, 1e-4, N_CURVE)
    cur = th.theory_curve(PLAIN, r["P_c1"] * (1 + eps), "linear")
    amp = np.hypot(cur["c1"], cur["cG"])
    slope = np.polyfit(np.log(eps), np.log(amp), 1)[0]
    # Landau pitchfork: |c| ~ (P - P*)^{1/2}; corrections O(eps) over this range
    assert abs(slope - 0.5) < 1e-3
    below = th.theory_curve(PLAIN, r["P_c1"] * (1 - eps), "linear")
    assert np.all(below["c1"] == 0) and np.all(below["cG"] == 0)


def test_identity10_two_minima_inside_the_window_one_outside():
    r = check_coexistence_window(
        PLAIN, "softmax", n_inside=N_CURVE // 2, n_below=N_CURVE // 4, n_above=5
    )
    # at P_aG the two wells are equally deep (above), and beta jumps by O(log L)
    jump = r["beta_strong"] - r["beta_weak"]
    assert 0.5 * np.log(PLAIN.L) < jump < 2.0 * np.log(PLAIN.L)


def test_spinodals_bound_the_window_sharply():
    """The strong well is born at P_s- and the weak one dies at P_s+ (folds, Newton-polished)."""
    lo, hi = th.transition_points(PLAIN, "softmax")["spinodals"]
    f = np.array([1 - 1e-5, 1 + 1e-5, 1.01])
    P = np.concatenate([lo * f, hi / f[::-1]])
    cur = th.theory_curve(PLAIN, P, "softmax")  # continuation follows each well to its fold
    assert list(cur["n_min"]) == [1, 2, 2, 2, 2, 1]


def test_points_without_spinodals_are_the_same_points():
    """Leaving the spinodals out (the Bayesian command's EK points beside) changes no other
    number: P_aG and the rest come from the same scan before the spinodals' search."""
    full = th.transition_points(PLAIN, "softmax", "post")
    lean = th.transition_points(PLAIN, "softmax", "post", spinodals=False)
    assert lean["spinodals"] is None and full["spinodals"] is not None
    for k in ("P_aG", "first_order", "P_aG_crossover", "beta_weak", "beta_strong"):
        assert lean[k] == full[k], k


def test_empty_window_gives_a_clear_result():
    r = th.transition_points(PLAIN.replace(L=6), "softmax")
    assert r["first_order"] is False
    assert r["P_aG"] is None and r["spinodals"] is None
    assert any("no first-order transition" in n for n in r["notes"])
    assert r["P_aG_crossover"] is not None


def test_identity11_per_position_multiplies_every_P_star_by_exactly_L():
    a = th.transition_points(PLAIN, "both")
    b = th.transition_points(PLAIN.replace(likelihood="per_position"), "both")
    L = PLAIN.L
    for k in ("P_c1", "P_c1_numeric", "P_cG", "P_cG_half", "P_aG"):
        # searches run in log P, so the factor L is exact up to their tolerance (~1e-9)
        assert abs(b[k] / (L * a[k]) - 1) < 1e-7, k
    for x, y in zip(a["spinodals"], b["spinodals"]):
        assert abs(y / (L * x) - 1) < 1e-7


def test_inv_L_multiplies_linear_map_P_star_by_exactly_L():
    a = th.transition_points(PLAIN, "linear")
    b = th.transition_points(PLAIN.replace(linear_scale="inv_L"), "linear")
    for k in ("P_c1", "P_cG", "P_cG_half"):
        assert abs(b[k] / (PLAIN.L * a[k]) - 1) < 1e-7, k


def test_identity11_asymptotic_laws():
    # P_c1 sqrt(chi L lam1^3 / V) -> sigma^2/(sigma_O sigma_G): mean sector dominates at L >> V
    errs = []
    for L in (10, 100, 1000, 10000):
        with jax.enable_x64(True):
            p = th.TheoryParams(L=L, V=5, likelihood="per_sequence", linear_scale="none")
            P = float(th.p_c1_closed_form(p))
            lam1 = 1.0 + L / 5
        errs.append(abs(P * np.sqrt(30.0 * L * lam1**3 / 5) / 30.0 - 1))
    assert all(b < a for a, b in zip(errs, errs[1:])) and errs[-1] < 1e-3
    # P_aG / ln^2 L stays bounded as L grows (here it even decreases)
    ratio = []
    for L in (10, 20, 40, 80, 160):
        r = th.transition_points(PLAIN.replace(L=L), "softmax")
        assert r["first_order"]
        ratio.append(r["P_aG"] / np.log(L) ** 2)
    assert max(ratio) < 2 * ratio[0]


def test_posterior_occam_term_moves_onsets_up():
    m = th.transition_points(PLAIN, "both")
    p = th.transition_points(PLAIN, "both", objective="post")
    assert p["P_c1"] > m["P_c1"] and p["P_aG"] > m["P_aG"]
    assert p["P_c1"] == p["P_c1_numeric"]


def test_x64_scope_leaves_the_callers_precision_alone():
    before = jax.config.jax_enable_x64
    r = th.transition_points(PLAIN, "softmax")
    assert jax.config.jax_enable_x64 == before is False
    assert jnp.ones(2).dtype == jnp.float32
    assert isinstance(r["P_aG"], float)


def test_a_point_outside_its_scan_is_not_found(monkeypatch):
    """The softmax scan centred five decades below its point (it spans -3 to +4 decades of the
    estimate) and the linear psi scan shortened to a fifth of a decade above P_c1 (P_cG lies
    about a decade above): every P* they search is None, named in ``not_found`` with a note,
    never the scan's edge; the closed-form P_c1 stays."""
    from copyhead_jax.theory import points as pts
    from copyhead_jax.theory.heads import SoftmaxTheory

    est = SoftmaxTheory.estimate.__func__
    monkeypatch.setattr(SoftmaxTheory, "estimate", classmethod(lambda c, p: est(c, p) * 1e-5))
    monkeypatch.setattr(pts, "LIN_SCAN_DECADES", 0.2)
    soft = th.transition_points(PLAIN, "softmax")
    assert soft["P_aG"] is None and soft["P_aG_crossover"] is None and soft["spinodals"] is None
    assert "P_aG_crossover" in soft["not_found"] and soft["n_not_found"] >= 1
    lin = th.transition_points(PLAIN, "linear")
    assert lin["P_cG"] is None and lin["P_cG_half"] is None and lin["P_c1"] is not None
    assert {"P_cG", "P_cG_half"} <= set(lin["not_found"]) and lin["n_not_found"] == 2
    assert sum("not found" in n for n in soft["notes"] + lin["notes"]) >= 3


def test_P_cG_is_the_root_of_the_slope_derivative():
    """``P_cG`` is the maximum of the psi slope S(t), t = log P: S'(t) = 0 there. S' from central
    differences at steps d and d/2 combined by Richardson (the d^2 term of the third derivative
    cancels; d = 1e-3 leaves ~d^4 plus the slope's rounding ~1e-14 / d), over the curvature
    S'' < 0, gives the offset from the maximum: below 1e-10 in log P (the k-section argmax
    alone: ~1e-8)."""
    from copyhead_jax.theory.points import psi_slope

    r = th.transition_points(PAPER, "linear")
    t, d = np.log(r["P_cG"]), 1e-3
    with jax.numpy_dtype_promotion("standard"):
        s = psi_slope(PAPER, t + np.array([-d, -d / 2, 0.0, d / 2, d]))[1]
    slope1 = (4 * (s[3] - s[1]) / d - (s[4] - s[0]) / (2 * d)) / 3
    k = (s[1] + s[3] - 2 * s[2]) / (d / 2) ** 2
    assert k < 0 and abs(slope1 / k) < 1e-10
