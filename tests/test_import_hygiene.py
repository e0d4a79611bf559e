"""``import copyhead_jax`` stays inside the package: no numpyro, no experiments/, no benchmarks/.

Each check runs in a fresh interpreter (``sys.modules`` of the test process already holds
whatever other tests imported).
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import copyhead_jax as ch
before = sorted(sys.modules)
sgld = ch.SGLD  # the lazy NumPyro adapter
print(json.dumps({"before": before, "after": sorted(sys.modules), "sgld": sgld.__module__}))
"""


def _probe() -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _top(names: list[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_import_copyhead_jax_imports_neither_numpyro_nor_experiments_nor_benchmarks():
    mods = _probe()
    top = _top(mods["before"])
    assert "copyhead_jax" in top and "jax" in top  # the probe did import the package
    assert not top & {"numpyro", "experiments", "benchmarks", "blackjax", "arviz"}
    # The NumPyro adapter is still reachable as ch.SGLD, and only then is numpyro imported.
    assert mods["sgld"] == "copyhead_jax.sampling.sgld.numpyro_adapter"
    assert "numpyro" in _top(mods["after"])
