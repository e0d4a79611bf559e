"""A tiny end-to-end run of ``experiments.embeddings`` (trained vs quenched embeddings).

The science it checks: the quenched Adam sweep leaves the embeddings bit-identical to the
seed's prior draw (the one the trained sweep starts from, and the one the exact MAP's realised
Gram is built from), the trained sweep moves them, and the quenched exact MAP's U is at most the
quenched Adam U on the same data and embeddings (it is the minimum Adam is looking for).
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from experiments import common as C
from experiments import embeddings as E
from experiments.configs.embeddings import TINY

# the tiny end-to-end run compiles three sweeps and the theory curves (~40 s on an idle 2-core
# CPU): `python -m pytest -m heavy` runs it; CI keeps the suite under its 10-min budget
HEAVY = pytest.mark.heavy


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    spec = copy.deepcopy(TINY)
    # linear only, one compiled program per sweep: the checks below need no softmax sweep
    spec.update(P_linear=[2, 4], softmax_inits=[], P_softmax=[2, 4])
    spec["engine"]["sweep"] = dict(padding="max")
    root = tmp_path_factory.mktemp("embeddings")
    res = E.main(spec, out_dir=root / "out", cache_dir=root / "cache")
    return spec, root, res


@HEAVY
def test_quenched_embeddings_stay_at_the_prior_draw_and_trained_ones_move(run):
    spec, root, _ = run
    sweeps = {p: C.cached_sweep(E.sweep_config(spec, "linear", p), root / "cache")
              for p in ("trained", "quenched")}  # fmt: skip
    for s in range(spec["n_seeds"]):
        W0, b0 = E.initial_embeddings(sweeps["quenched"].config, s)
        for i in range(len(spec["P_linear"])):
            q = {k: np.asarray(sweeps["quenched"][f"params/{k}"][i, s]) for k in ("W_E", "b")}
            t = {k: np.asarray(sweeps["trained"][f"params/{k}"][i, s]) for k in ("W_E", "b")}
            np.testing.assert_array_equal(q["W_E"], W0)
            np.testing.assert_array_equal(q["b"], b0)
            moved = np.abs(t["W_E"] - W0).max() + np.abs(t["b"] - b0).max()
            assert moved > 1e-3, (i, s, moved)


@HEAVY
def test_exact_map_is_below_quenched_adam_on_the_same_data(run):
    _, _, res = run
    b = res["blocks"]["linear/prior"]
    U_exact, U_adam = np.asarray(b["exact"]["U"]), np.asarray(b["quenched"]["U"])
    assert np.all(np.isfinite(U_exact)) and np.all(b["exact"]["converged"])
    assert np.all(U_exact <= U_adam + 1e-4 * np.abs(U_adam)), (U_exact, U_adam)
    # the trained sweep is summarised with how far its embeddings moved (quenched: not at all)
    assert np.all(np.asarray(b["trained"]["embeddings"]["gram_rel_change"]) > 0)
    assert np.all(b["quenched"]["embeddings"]["unchanged"])


@HEAVY
def test_artefacts_hold_every_protocols_order_parameters_per_P_and_seed(run):
    spec, root, _ = run
    data = json.loads((root / "out" / "results" / "embeddings.json").read_text())
    assert (root / "out" / "figures" / "embeddings.png").stat().st_size > 0
    shape = (len(spec["P_linear"]), spec["n_seeds"])
    for p in E.PROTOCOLS:
        for k in ("c1", "cG", "r", "U"):
            assert np.asarray(data["blocks"]["linear/prior"][p][k], float).shape == shape
    assert set(data["transitions"]["linear"]) == set(E.PROTOCOLS)


def test_shift_interval_spans_the_two_brackets():
    a = {"P_star": 100.0, "bracket": [64.0, 128.0], "per_seed": [{"P_star": 90.0}]}
    b = {"P_star": 4.0, "bracket": [3.0, 6.0], "per_seed": [{"P_star": None}]}
    s = E.shift(a, b)
    assert s["shift"] == 96.0 and s["interval"] == [58.0, 125.0]
    assert s["ratio_interval"] == [64.0 / 6.0, 128.0 / 3.0]
    assert s["per_seed"] == [None]
    above = {"P_star": None, "side": "above", "detail": {"edge": 256.0}}
    assert E.shift(above, b)["bound"].startswith("> 250")
