"""The P* table of branch runs (``copyhead_jax.compare.table``): rows per mechanism with the EK,
finite-width and measured P*, relative errors, the measured order and the loss across it."""

import numpy as np
import pytest

from copyhead_jax.compare.locate import Located
from copyhead_jax.compare.table import ROWS, loss_patterns, measured_orders, pstar_table


def _at(P, lo, hi, **detail):
    return Located("t", P, (lo, hi), True, None, detail)


OUTSIDE = Located("t", None, None, False, "above", {"edge": 64.0})


def test_rows_carry_theories_measurement_and_errors():
    found = {"P_c1": _at(2.0, 1, 3), "P_cG": _at(5.0, 4, 6), "P_aG": OUTSIDE}
    finite = {"linear": {"summary": {"P_c1": {"mean": 2.5}}}, "softmax": None}
    ek = {"P_c1": 4.0, "P_cG": 5.0, "P_aG_crossover": 30.0}  # no first-order P_aG: crossover
    rows = pstar_table(ek, finite, found, {"P_c1": "w"}, {"P_cG": "loss"}, {"P_aG": "jump"})
    assert [r["key"] for r in rows] == [k for _, _, k, _, _ in ROWS]
    c1, cG, aG = rows
    assert c1["rel_err_ek"] == pytest.approx(-0.5) and c1["rel_err_finite"] == pytest.approx(-0.2)
    assert c1["measured_text"] == "2 [1, 3]" and c1["early_warning"] == "w"
    assert cG["theory_finite"] is None and cG["loss_pattern"] == "loss"
    assert aG["theory_ek"] == 30.0 and aG["measured"] is None and not aG["bracketed"]
    assert aG["measured_text"].startswith("> 64") and aG["order_measured"] == "jump"


def test_loss_patterns_name_the_linear_losses_and_the_single_start_jump():
    P = np.array([1, 2, 4, 8, 16, 32])
    lin = {"P": P, "test_loss": np.linspace(5.0, 0.0, 6)}
    pool = {
        "P": P,
        "train_loss": np.array([9, 9, 9, 1, 1, 1.0]),
        "test_loss": np.array([8, 8, 8, 2, 2, 2.0]),
    }
    text = loss_patterns(lin, pool, {"P_aG_single": _at(6.0, 4, 8)}, L=6, V=3)
    assert text["P_c1"] == text["P_cG"]
    assert text["P_c1"].startswith("test loss 5.0 (P=1) -> ")
    assert "(1-1/V)(L-1) = 3.3" in text["P_c1"]
    assert text["P_aG"].startswith("jump: train 9.0 -> 1.0, test 8.0 -> 2.0 per sequence")
    assert "P_aG" not in loss_patterns(lin, pool, {"P_aG_single": OUTSIDE}, L=6, V=3)


def test_measured_orders_need_a_bracket_except_the_first_order_one():
    found = {
        "P_c1": _at(2.0, 1, 3),
        "P_cG": OUTSIDE,
        "P_aG_single": _at(20.0, 16, 24, jump=1.234, sharpness=0.5),
    }
    o = measured_orders(found, {"lower": _at(18.0, 16, 20), "upper": OUTSIDE})
    assert o["P_c1"] == "continuous onset of r" and o["P_cG"] is None
    assert o["P_aG"].startswith("jump of aG by 1.23 (sharpness 0.50); coexistence window 18 [16")
