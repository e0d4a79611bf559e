"""compare/errors.py: relative errors and the disagreement threshold."""

import math

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
