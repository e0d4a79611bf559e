"""``experiments.embeddings``: the joint MAP versus width (docs/theory.md §2d).

A tiny end-to-end run, whose science check is that the joint MAP never lies above a quenched
MAP's function viewed as a point of the joint problem at its cheapest scale (the scale gauge
itself: tests/embeddings/test_joint_map.py)."""

import json

import numpy as np
import pytest

from copyhead_jax.plots import embeddings_width_figure
from experiments import embeddings as E
from experiments.common import load_spec
from experiments.configs.embeddings import TINY


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("embeddings")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the cache: results/embeddings/tiny under the working folder
        res = E.main(load_spec("tiny", "paper", "embeddings", root / "cache"), root / "out")
    assert (root / "results" / "embeddings" / "tiny").is_dir()
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
    embeddings_width_figure(data)  # redraws from the JSON alone
