"""copyhead_jax.compare: relative errors, the disagreement threshold, the paper's numbers."""

import math

import numpy as np
import pytest

from copyhead_jax import compare
from copyhead_jax.compare import disagrees, rel_err


def test_rel_err_is_signed_relative_to_the_theory():
    assert rel_err(150.0, 100.0) == pytest.approx(0.5)
    assert rel_err(50, 100) == pytest.approx(-0.5)
    # undefined: a missing or non-finite value, or a zero theory
    for m, t in ((None, 1.0), (1.0, None), (math.nan, 1.0), (1.0, math.inf), (1.0, 0.0)):
        assert rel_err(m, t) is None


def test_disagreement_is_strictly_beyond_the_threshold():
    tol = compare.REL_TOL
    assert disagrees(rel_err(100 * (1 + 2 * tol), 100))
    assert disagrees(-1.01 * tol) and not disagrees(0.99 * tol) and not disagrees(tol)
    assert not disagrees(None)
    assert disagrees(0.1, tol=0.05) and not disagrees(0.1, tol=0.2)
    with pytest.raises(ValueError, match="tol must be a float >= 0"):
        disagrees(0.1, tol=-1.0)


def test_paper_numbers_and_laws():
    p = compare.paper
    # the paper's order of the transitions: pooling onset < softmax jump < linear copy crossover
    m = p.PAPER_MEASURED
    assert m["P_c1"] < m["P_aG"] < m["P_cG"]
    L, V = np.array([10.0, 20.0]), np.array([5.0, 5.0])
    name, law = p.PAPER_LAWS["P_cG"]
    assert name == "L^{3/2} V^{1/2}"
    np.testing.assert_allclose(law(L, V), L**1.5 * np.sqrt(V))
    assert set(p.PAPER_CLAIMS) == {
        "softmax",
        "linear, outside the crossover",
        "linear, crossover (SGLD)",
    }
