"""runner/eta.py and the estimates of the long commands: one line on stderr before the work, the
counts of each cost model, a warning (saying how to run less) past an hour, and ``--json``
stdout that stays pure JSON with the estimate beside it."""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.cli.console import console
from copyhead_jax.runner.eta import LONG_S, Estimate, LongWorkWarning, announce, duration


def test_the_line_states_the_range_of_work_and_of_time():
    est = Estimate("job", (100, 400), "evaluations", (30.0, 7200.0), "timed here")
    assert est.line() == (
        "estimate: job: 100 to 400 evaluations, 30 s to 2.0 h plus compiling (timed here)"
    )
    one = Estimate("job", (5, 5), "runs", (200.0, 200.0), "b").line()
    assert "5 runs, 3.3 min plus" in one and " to " not in one  # no range where there is none
    assert [duration(s) for s in (0.2, 89, 600, 3 * 3600, 3 * 86400)] == [
        "1 s",
        "89 s",
        "10.0 min",
        "3.0 h",
        "3.0 days",
    ]


def test_long_work_is_also_a_warning_that_says_how_to_run_less(capsys):
    short = Estimate("short", (1, 1), "u", (LONG_S / 2, 10 * LONG_S), "b")
    long = Estimate("long", (1, 1), "u", (2 * LONG_S, 3 * LONG_S), "b")
    with console():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            announce(short, "copyhead_jax.sweep.run")  # its low end is under an hour
            announce(long, "copyhead_jax.transition.x", "run a smaller L")
            announce(long, "copyhead_jax.transition.x", "run a smaller L", warn=False)
            assert announce(lambda: 1 / 0, "copyhead_jax.sweep.run") is None  # work goes on
    *err, failed = capsys.readouterr().err.splitlines()
    assert failed.endswith("no estimate of the work: ZeroDivisionError: division by zero")
    assert [line.split("] ", 1)[1].split(":")[1] for line in err] == [" short", " long", " long"]
    assert err[0].startswith("[sweep ") and err[1].startswith("[transition ")
    (w,) = [x for x in seen if issubclass(x.category, LongWorkWarning)]
    assert "at least 2.0 h" in str(w.message) and "run a smaller L" in str(w.message)


def test_the_counts_of_the_sweep_and_sampler_models():
    """Each estimate counts its solver's or sampler's evaluations per run (module docs) and
    prices each at its run's rows (here a unit cost of 1 ms per row)."""
    from copyhead_jax.sampling.cost import sampler_estimate
    from copyhead_jax.sweep.estimate import EXACT_EVALS, sweep_estimate

    unit = lambda r: 1e-3 * np.asarray(r, float)  # noqa: E731
    cfg = ch.TINY.replace(model=dict(engine="reduced"), sweep=dict(P=(2, 64), n_seeds=2))
    est = sweep_estimate(cfg, unit)  # the exact solver works on blocks of 32 rows
    assert est.units == (4 * EXACT_EVALS[0], 4 * EXACT_EVALS[1])
    assert np.allclose(est.seconds, np.multiply(EXACT_EVALS, 2 * (32 + 64) * 1e-3))
    mc = ch.HMCConfig(n_iter=30, n_warmup=10, n_adapt=5, n_leapfrog=3, n_chains=2)
    s = sampler_estimate(cfg, mc, unit)
    per_chain = 10 + (5 + 30) * 3
    assert s.units[0] == s.units[1] == 4 * 2 * per_chain
    assert np.isclose(s.seconds[0], per_chain * 2 * 2 * (2 + 64) * 1e-3)
    adam = ch.TINY.replace(sweep=dict(P=(2, 64), n_seeds=1))  # early stopping: a range
    a = sweep_estimate(adam, unit).units
    assert a == (2 * adam.solver.min_epochs, 2 * adam.solver.max_epochs)


def test_a_unit_is_timed_once_per_shape_and_scales_with_the_rows():
    from copyhead_jax.sampling import cost

    cfg = ch.TINY.replace(model=dict(engine="reduced", attention="softmax"))
    t = cost.unit_seconds(cfg, [4, 64])
    assert 0 < t(4) == t(32) < t(64) and np.isclose(t(640), 10 * t(64))
    again = cost.unit_seconds(cfg, [8, 64])  # the same shape: timed once, the same seconds
    assert again(64) == t(64)


@pytest.fixture(scope="module")
def reduced_file(tmp_path_factory):
    """A reduced softmax sweep file with prior-drawn weights (no fitting: the command's
    surface is tested, not its numbers)."""
    from tests.helpers import fake_sweep

    cfg = ch.TINY.replace(
        model=dict(engine="reduced", attention="softmax"), sweep=dict(P=(4, 8), n_seeds=1)
    )
    res = fake_sweep(cfg)
    D, L, V = cfg.task.V + cfg.task.L, cfg.task.L, cfg.task.V
    rng = np.random.default_rng(0)
    for k, shape in dict(W_E=(D, V), b=(D, L), W_G=(D, D), W_O_hat=(V, D)).items():
        res.arrays[f"params/{k}"] = rng.normal(size=(2, 1, *shape)).astype(np.float32)
    return res.save(tmp_path_factory.mktemp("eta") / "sweep_softmax.npz")


def test_llc_json_stays_pure_with_its_estimate_on_stderr(reduced_file, capsys, monkeypatch):
    import importlib

    llc_runs = importlib.import_module("copyhead_jax.sampling.llc_runs")
    llc_chains = importlib.import_module("copyhead_jax.sampling.llc_chains")

    def chains(keys, ws, tok, m, W_E, b, *a, cfg, st, n_steps, burn_in):  # drawn, not sampled
        nS, T = len(keys), (n_steps - burn_in) // st.thin
        draws = np.random.default_rng(0).normal(1.0, 0.1, (nS, st.n_chains, T, 3))
        ones = np.ones(nS)
        return (draws, ones, 1e-3 * ones, ones, np.ones((nS, st.n_chains))), None

    def inputs(cfg, lr_mult):  # the runs' rows, drawn by NumPy (nothing compiled)
        n, P = len(cfg.sweep.P) * cfg.sweep.n_seeds, cfg.sweep.P_max
        train = np.random.default_rng(1).integers(0, cfg.task.V, (n, P, cfg.task.L))
        return argparse.Namespace(train=train, mask=np.ones((n, P), np.float32))

    monkeypatch.setattr(llc_chains, "_chains_jit", chains)
    monkeypatch.setattr(llc_runs, "sweep_inputs", inputs)
    argv = [
        "llc",
        str(reduced_file),
        "--steps",
        "40",
        "--burn-in",
        "8",
        "--thin",
        "2",
        "--chains",
        "2",
        "--json",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["P"] == [4, 8]  # the whole of stdout is one JSON document
    (line,) = [x for x in err.splitlines() if "estimate:" in x]
    # 2 P x 1 seed x 3 chain sets x 2 chains x 40 steps, before the bar
    assert "llc, 2 P x 1 seeds x 3 chain sets: 480 gradient evaluations" in line
    assert err.index("estimate:") < err.index("llc softmax")


def test_route_b_scaling_says_what_the_rest_costs_after_its_first_configuration(
    monkeypatch, capsys
):
    """The unit measured at start is one configuration's solves: after the first, an estimate
    of the rest at its cost; after each later one, the time left."""
    import importlib

    from copyhead_jax.cli.theory_bayes import scaling_notes
    from copyhead_jax.theory import TheoryParams

    law = importlib.import_module("copyhead_jax.theory.bayes.law")
    monkeypatch.setattr(law, "ek_points", lambda p: {"map": 1.0, "post": 2.0})
    monkeypatch.setattr(law, "transition", lambda p, st, ek: {"first_order": True, "P": p.L})
    monkeypatch.setattr(law, "point", lambda r: float(r["P"]))
    with console():
        rows = law.scaling_table(
            TheoryParams(L=8, V=3), [8, 10, 12], [3], replicas=2, on_row=scaling_notes(2)
        )
    assert [r["P_bayes"] for r in rows] == [[8.0, 8.0], [10.0, 10.0], [12.0, 12.0]]
    notes = capsys.readouterr().err.splitlines()
    assert (
        len(notes) == 2
        and "estimate: route B's P*_aG on 3 configurations x 2 replicas: 6 solves" in notes[0]
        and "(L = 8, V = 3)" in notes[0]
    )
    assert "configuration 2/3 (L = 10, V = 3) done in" in notes[1] and "left" in notes[1]


def test_sweep_shows_its_estimate_without_the_bars(tmp_path, monkeypatch, capsys):
    """``--no-progress`` turns off the bars, not the estimate (as sample and llc)."""
    import importlib

    from copyhead_jax.sweep.estimate import sweep_estimate

    run_mod = importlib.import_module("copyhead_jax.sweep.run")
    unit = lambda r: 1e-3 * np.asarray(r, float)  # noqa: E731 - nothing timed
    monkeypatch.setattr(run_mod, "sweep_estimate", lambda cfg: sweep_estimate(cfg, unit))
    argv = ["sweep", "--preset", "tiny", "--attention", "linear", "--P", "2", "--n-seeds", "1"]
    argv += ["--max-epochs", "10", "--min-epochs", "2", "--no-plot", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "s")]) == 0
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "estimate:" in x]
    # 1 run from min_epochs (early stopping) to max_epochs, before the table
    assert "sweep linear N=16, 1 runs: 2 to 10 evaluations" in line, line
