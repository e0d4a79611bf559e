"""Tests that pin the science: the exact MAP of a quenched head against the finite-width theory.

With the exact width reduction and the exact solver, a network at width 10,000 and the
finite-width, finite-P theory (docs/theory.md §2b, action (i)) see the same tokens and the same
embedding Gram; the only approximation left between them is A1 (token-dependent logit
components set to zero). Its effect on a copy coefficient is bounded by how far the measured
mean attention leaves the ansatz span: the sine of the angle between them,
``sqrt(1 - coverage^2)``, measured on the run itself (no tuned constant).
"""

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.sweep import sweep_inputs
from copyhead_jax.theory import TheoryParams, finite_theory_minimum


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_exact_map_lands_on_the_finite_width_theory(attention):
    cfg = ch.PLAIN.replace(
        task=dict(L=10, V=3, n_test=64),
        model=dict(attention=attention, engine="reduced", width=10_000),
        train=dict(train_embeddings=False, init_attention="copy" if attention == "softmax"
                   else "prior"),
        sweep=dict(P=(64,), n_seeds=1),
    )  # fmt: skip
    res = ch.run_sweep(cfg, progress=False, keep_params=True)
    assert bool(res["converged"][0, 0]) and float(res["min_eig"][0, 0]) > 0
    tokens = np.asarray(sweep_inputs(cfg, None).train[0])[:64]
    ft = finite_theory_minimum(
        tokens=tokens, gram=res["gram"][0, 0], params=TheoryParams.from_config(cfg),
        attention=attention,
    )  # fmt: skip
    measured = float(res["cG"][0, 0])
    theory = ft["aG" if attention == "softmax" else "cG"]
    cov = float(res["coverage"][0, 0])
    bound = np.sqrt(1 - cov**2)  # off-span fraction of the mean attention
    assert cov > 0.99  # the copy regime, where A1 is meant to hold
    assert abs(measured / theory - 1) <= bound, (measured, theory, bound)


@pytest.mark.slow
def test_small_default_softmax_adam_ends_at_its_own_minimum():
    """Issue 10: Adam runs of the small default end stationary. The exact solver started from
    the Adam fit (polish) measures how far the run was from its own local minimum; an Adam run
    that stopped early would move there by a visible amount. Bound: order parameters move by
    under 1e-3 relative (the three digits the docs' tables print) and U by under 1e-4 relative
    (at P = 32 the measured moves were 7e-5 and 1e-7 in docs/reports/results/reduction.json).

    Linear attention is left out on purpose: its small-default Adam fits are *not* stationary
    (|grad U|_span up to 4 at P = 128, polish dU = -0.7; reduction.json), a recorded finding,
    which is why the reduced engine defaults to the exact solver."""
    from copyhead_jax.polish import polish

    cfg = ch.SMALL.replace(model=dict(attention="softmax"), sweep=dict(P=(32,), n_seeds=1))
    res = polish(ch.run_sweep(cfg, progress=False, keep_params=True))
    assert bool(res["polish/converged"][0, 0])
    for k in ("c1", "cG"):
        adam, exact = float(res[k][0, 0]), float(res[f"polish/{k}"][0, 0])
        assert abs(adam - exact) <= 1e-3 * max(abs(exact), 1e-2), (k, adam, exact)
    U = float(res["polish/U"][0, 0])
    assert abs(float(res["polish/dU"][0, 0])) <= 1e-4 * abs(U)
