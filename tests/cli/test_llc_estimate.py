"""``copyhead llc`` says what its chain sets will cost before they start, with ``--no-progress``
too (that flag turns off the bar, not the estimate), and ``--json`` stays one JSON document on
stdout. The chains and the unit's timing are stood in for (nothing compiled): the count is what
is tested."""

import importlib
import json

import numpy as np

from copyhead_jax.cli import main
from copyhead_jax.sampling import cost
from tests.cli.test_llc_cluster import keyed_chains


def test_the_estimate_is_shown_without_the_bar(tmp_path, monkeypatch, capsys):
    from tests.cli.test_llc_cluster import tiny_reduced

    llc_chains = importlib.import_module("copyhead_jax.sampling.llc_chains")
    monkeypatch.setattr(llc_chains, "_chains_jit", keyed_chains)
    monkeypatch.setattr(cost, "unit_seconds", lambda *a, **k: lambda r: 1e-3 * np.asarray(r))
    path = tiny_reduced().save(tmp_path / "sweep_softmax.npz")
    argv = ["llc", str(path), "--steps", "40", "--burn-in", "8", "--thin", "2", "--chains", "2"]
    assert main([*argv, "--json", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["P"] == [6]
    (line,) = [x for x in err.splitlines() if "estimate:" in x]
    # 1 P x 2 seeds x 3 chain sets x 2 chains x 40 steps
    assert "llc, 1 P x 2 seeds x 3 chain sets: 480 gradient evaluations" in line
