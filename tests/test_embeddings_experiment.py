"""``experiments.embeddings``: the joint MAP versus width (docs/theory.md §2d).

Fast: the scale-gauge start keeps the function and minimises the prior energy. Heavy: a tiny
end-to-end run, whose science check is that the joint MAP never lies above a quenched MAP's
function viewed as a point of the joint problem at its cheapest scale."""

import json

import numpy as np
import pytest

from copyhead_jax.posterior import Objective
from experiments import embeddings as E
from experiments.configs.embeddings import TINY


def _prior(w, obj, width):
    D = w["W_G"].shape[0]
    emb = (
        (np.sum(w["W_E"] ** 2) / obj.sigma_e**2 + np.sum(w["b"] ** 2) / obj.sigma_p**2) * width / D
    )
    return 0.5 * (
        emb + np.sum(w["W_G"] ** 2) / obj.sigma_G**2 + np.sum(w["W_O_hat"] ** 2) / obj.sigma_O**2
    )


def test_rebalance_keeps_the_function_and_minimises_the_prior_energy():
    rng = np.random.default_rng(0)
    D, V, L, width = 9, 3, 6, 1000.0
    w = dict(W_E=rng.normal(size=(D, V)), b=rng.normal(size=(D, L)),
             W_G=rng.normal(size=(D, D)), W_O_hat=rng.normal(size=(V, D)))  # fmt: skip
    obj = Objective(likelihood_weight=1.0, sigma_e=1.0, sigma_p=0.7, sigma_G=1.3, sigma_O=0.5)
    r = E.rebalance(w, obj, width)
    U0 = np.concatenate([w["W_E"].T, w["b"].T])
    U1 = np.concatenate([r["W_E"].T, r["b"].T])
    # logits U A U^T and readout B U^T are unchanged (float64 rounding)
    np.testing.assert_allclose(U1 @ r["W_G"] @ U1.T, U0 @ w["W_G"] @ U0.T, rtol=1e-12)
    np.testing.assert_allclose(r["W_O_hat"] @ U1.T, w["W_O_hat"] @ U0.T, rtol=1e-12)
    # the chosen scale is the minimum along the gauge: moving it by 1% either way costs more
    e = _prior(r, obj, width)
    assert e <= _prior(w, obj, width)
    for f in (0.99, 1.01):
        moved = dict(W_E=r["W_E"] * f, b=r["b"] * f, W_G=r["W_G"] / f**2, W_O_hat=r["W_O_hat"] / f)
        assert e < _prior(moved, obj, width)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("embeddings")
    res = E.main(["--tiny", "--cache", str(root / "cache"), "--out", str(root / "out")])
    return root, res


@pytest.mark.heavy  # a dozen tiny sweeps: ~2 CPU-minutes, mostly compilation
def test_joint_map_is_never_above_the_quenched_point(run):
    root, res = run
    for w, per in res["widths"].items():
        for att, d in per.items():
            j = d["joint"]
            # each quenched fit's function at its cheapest scale is a point of the joint
            # problem; the joint fit started there only descends, so the kept (lowest) joint U
            # is at or below every such point (up to the solver's relative tolerance)
            for start in d["quenched_function_U"].values():
                assert np.all(np.asarray(j["U"]) <= np.asarray(start) * (1 + 1e-9)), (w, att)
            assert np.all(np.asarray(j["converged"]) > 0)
    data = json.loads((root / "out" / "results" / "embeddings.json").read_text())
    assert set(data["widths"]) == {str(w) for w in TINY["widths"]}
    assert (root / "out" / "figures" / "embeddings.png").stat().st_size > 0
    E.figure(data)  # the figure redraws from the JSON alone (experiments.figures)
