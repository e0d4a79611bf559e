"""compare/paper.py: the paper's numbers and laws, written once."""

import numpy as np

from copyhead_jax import compare


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
