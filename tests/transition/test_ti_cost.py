"""transition/ti_cost.py: what branch TI will cost, counted from its settings and said on stderr
before any work of ``copyhead transition --method ti``."""

from __future__ import annotations

import math

import numpy as np

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.transition import TISettings, transition_config
from copyhead_jax.transition.ti_cost import ti_estimate

TINY_CFG = ch.PLAIN.replace(
    task=dict(L=4, V=3),
    model=dict(width=math.inf, attention="softmax", engine="reduced"),
    train=dict(train_embeddings=False),
)


def test_the_count_of_groups_reference_draws_and_cross_checks():
    """3 seeds, 3 rungs (2 run by chains, t = 0 by exact draws), 2 chains, 10 + 40 iterations of
    5 leapfrog steps, 100 reference draws per branch, 8 SMC particles with 2 moves: a group is
    2 x 2 x 2 x 50 x 5 = 2000 evaluations plus 200 reference draws (up to 20 rounds: 4000); an
    SMC step 8 x (2 x 5 + 2) = 96. Fewest: seed 0 brackets in 2 groups, seeds 1 and 2 anchored
    in 1 each, SMC at seed 0's two ends in 2 steps; most: 8 groups a seed, every seed's two
    ends in 6 steps. Priced at 1 ms per row at 32 rows."""
    s = TISettings(
        ts=(0.0, 0.5, 1.0),
        n_chains=2,
        n_iter=40,
        n_adapt=10,
        n_ref=100,
        smc_particles=8,
        smc_max_steps=6,
        batched=False,
    )
    cfg = transition_config(TINY_CFG, 3)
    unit = lambda r: 1e-3 * np.asarray(r, float)  # noqa: E731
    est = ti_estimate(cfg, s, n_seeds=3, rows=32, where="given", unit=unit)
    lo, hi = 4 * 2200 + 2 * 2 * 96, 24 * 6000 + 2 * 3 * 6 * 96
    assert est.units == (lo, hi) and np.allclose(est.seconds, (0.032 * lo, 0.032 * hi))
    bracketed = ti_estimate(cfg, s, n_seeds=3, rows=32, where="given", anchored=False, unit=unit)
    assert bracketed.units[0] == 6 * 2200 + 2 * 2 * 96  # every later seed bracketed: 2 groups
    none = ti_estimate(cfg, s, n_seeds=3, rows=32, where="given", cross_check=False, unit=unit)
    assert none.units == (4 * 2200, 24 * 6000)


def test_the_command_says_what_branch_ti_will_cost_before_any_work(monkeypatch, capsys, tmp_path):
    """The estimate line is printed before the first work, the MAP sweeps, which are stopped
    here; its unit is the first probe's padded rows (timing a compiled evaluation is
    ``sampling.cost.unit_seconds``' own test, tests/runner/test_eta.py: here 1 ms a row)."""
    from copyhead_jax.transition import search, ti_cost

    def stop(*a, **k):
        raise KeyboardInterrupt

    rows = []
    monkeypatch.setattr(
        ti_cost, "unit_seconds", lambda cfg, r, **k: rows.extend(r) or (lambda x: 1e-3 * x)
    )
    monkeypatch.setattr(search, "theory_points", lambda cfg: {"map": None, "post": None})
    monkeypatch.setattr(search, "run_sweep", stop)
    argv = [
        *(
            "transition --method ti --preset plain --L 4 --V 3 --width inf "
            "--n-seeds 2 --P 8,16,32 --out"
        ).split(),
        str(tmp_path / "o"),
    ]
    assert main(argv) == 130
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "estimate:" in x]
    assert line.startswith("[transition ") and "branch TI L=4 V=3, 2 seed(s)" in line
    assert "32 padded rows (the MAP grid's middle)" in line and rows == [32]
    assert "one evaluation timed here: 32 ms" in line
