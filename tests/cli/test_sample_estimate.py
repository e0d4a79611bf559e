"""``copyhead sample`` says what its chains will cost before they start, with ``--no-progress``
too (that flag turns off the bars, not the estimate): one ``estimate:`` line on stderr. The
sampler and the unit's timing are stood in for (nothing compiled): the count is what is tested."""

import numpy as np

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.sampling import cost
from copyhead_jax.sampling import run as sample_mod
from tests.cli.test_sample_cluster import KeyedDraws


def test_the_estimate_is_shown_without_the_bars(full, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sample_mod.SAMPLERS, ch.SGLDConfig, KeyedDraws)
    monkeypatch.setattr(cost, "unit_seconds", lambda *a, **k: lambda r: 1e-3 * np.asarray(r))
    argv = ["sample", str(full), "--steps", "6", "--burn-in", "0", "--thin", "2", "--chains", "2"]
    assert main([*argv, "--no-plot", "--no-progress", "--out", str(tmp_path / "p.npz")]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "estimate:" in x]
    # 2 runs x 2 chains x 6 steps
    assert "SGLD, 2 runs x 2 chains: 24 gradient evaluations" in line
