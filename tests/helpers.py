"""Helpers shared by several test files: one-line CLI errors, work that must not start, synthetic
results (no training), and a command run in a subprocess that is sent a signal.

Imported as ``from tests.helpers import ...`` (``tests/`` and its folders are packages, so test
files of the same name in two folders do not collide). Fixtures built on these are in
``conftest.py``.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.config import Config
from copyhead_jax.results import REQUIRED, SweepResult

ROOT = Path(__file__).resolve().parents[1]

#: the config of the synthetic results below: three P, two seeds
FAKE_CFG = ch.TINY.replace(sweep=dict(P=(2, 4, 8), n_seeds=2))
#: a short tiny sweep (two P, one seed, at most 20 epochs), and its reduced-engine twin whose
#: exact fits stop after one step
SHORT_TINY = ch.TINY.replace(
    sweep=dict(P=(2, 4), n_seeds=1), solver=dict(max_epochs=20, min_epochs=5)
)
UNCONVERGED = SHORT_TINY.replace(model=dict(engine="reduced"), solver=dict(max_steps=1))


def one_line_error(capsys, rc, pattern):
    """The CLI failed with exit 2 and one line naming the problem, no traceback."""
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert err.startswith("copyhead: error:") and re.search(pattern, err), err


def no_work(*a, **k):
    raise AssertionError("the work started before the input was checked")


def fake_sweep(cfg: Config = FAKE_CFG, *, loss=None, drop=(), diverged=None) -> SweepResult:
    """A synthetic sweep result with every required array (no training)."""
    nP, nS, L = len(cfg.sweep.P), cfg.sweep.n_seeds, cfg.task.L
    rng = np.random.default_rng(0)
    a = {k: rng.uniform(0.1, 1.0, (nP, nS)) for k in REQUIRED}
    a["finite"] = np.ones((nP, nS), bool)
    a["train_loss"] = np.full((nP, nS), 0.5 * L) if loss is None else np.asarray(loss, float)
    a["U"] = np.full((nP, nS), 10.0)
    a["mean_attention"] = np.full((nP, nS, L, L), 1 / L)
    a["positional_logits"] = np.zeros((nP, nS, L, L))
    a["curve_U"] = np.tile(np.linspace(20.0, 10.0, 4), (nP, nS, 1))
    a["curve_loss"] = np.tile(np.linspace(1.0 * L, 0.5 * L, 4), (nP, nS, 1))
    a["curve_epoch"] = np.arange(1, 5) * 5
    if diverged is not None:
        a["diverged"] = np.asarray(diverged, bool)
    for k in drop:
        a.pop(k)
    return SweepResult(config=cfg, arrays=a, meta={"wall_seconds": 1.0})


def fake_posterior(cfg: Config = FAKE_CFG):
    """A synthetic posterior result (2 chains of 5 draws per run; no sampling)."""
    from copyhead_jax.results import DRAW_FIELDS, PosteriorResult

    nP, nS, nC, nD = len(cfg.sweep.P), cfg.sweep.n_seeds, 2, 5
    rng = np.random.default_rng(1)
    arrays = {
        "draws": rng.normal(size=(nP, nS, nC, nD, len(DRAW_FIELDS))),
        "finite": np.ones((nP, nS, nC), bool),
        "draw_step": np.arange(nD) * 10,
        "rhat": np.ones((nP, nS)),
        "ess": np.full((nP, nS), 50.0),
        "accept_mean": np.full((nP, nS), 0.9),
    }
    return PosteriorResult(cfg, ch.SGLDConfig(), arrays, {"wall_seconds": 1.0, "warnings": []})


def interrupt(argv, sig, cwd, wait_s=1.0, module="copyhead_jax.cli", start_s=60.0, answer_s=None):
    """Run the command, send ``sig`` ``wait_s`` after it took its first output lock (the
    work has begun; a slow start-up on a loaded machine does not matter: up to ``start_s``),
    return ``(exit status, stderr)``. With ``answer_s``, assert that the command ended within
    that many seconds of the signal. A command that ended before the signal fails the test with
    that said (its exit status would otherwise read as a wrong answer to the signal): give it
    work that runs far longer than ``wait_s``, so that a test process starved under load still
    signals it while it works."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())", *argv]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.time()
        while not any(cwd.rglob("*.lock")) and proc.poll() is None and time.time() - t0 < start_s:
            time.sleep(0.05)
        time.sleep(wait_s)
        if proc.poll() is not None:  # a race the test lost, not the command's answer to a signal
            _, err = proc.communicate()
            raise AssertionError(
                f"the command ended (exit {proc.returncode}) before the signal was sent, "
                f"{wait_s} s after its first lock: give it longer work\n{err}"
            )
        proc.send_signal(sig)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=120)
    finally:  # a command that ignored the signal must not outlive its test (it ran on for
        proc.kill()  # an hour once, a core busy under the rest of the suite)
        proc.wait()
    if answer_s is not None:
        assert time.monotonic() - t0 < answer_s, err
    return proc.returncode, err


def checked_figure(fig) -> list:
    """The axes of ``fig`` after asserting it passes ``style.figure_problems``; the figure is
    closed."""
    import matplotlib.pyplot as plt

    from copyhead_jax.plots import figure_problems

    problems = figure_problems(fig)
    axes = list(fig.axes)
    plt.close(fig)
    assert not problems, "\n".join(problems)
    return axes


def parser_tree(parser, path=()):
    """(command path, parser) of every (sub)command of an argparse tree, the root first."""
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from parser_tree(sub, (*path, name))


def check_coexistence_window(params, kind: str, n_inside: int, n_below: int, n_above: int) -> dict:
    """The EK theory's first-order window of head ``kind`` at ``params``: ``P_aG`` between the
    spinodals, two minima at ``n_inside`` P inside them (and at ``P_aG``), one at ``n_below`` /
    ``n_above`` P up to a factor 3 outside, the two equally deep at ``P_aG`` (the curve on its
    own grid against the points' root). Returns the points."""
    from copyhead_jax import theory as th

    r = th.transition_points(params, kind)
    assert r["first_order"]
    lo, hi = r["spinodals"]
    Ps = r["P_aG"]
    assert lo < Ps < hi
    inside = np.concatenate([np.geomspace(lo, hi, n_inside + 2)[1:-1], [Ps]])
    outside = np.concatenate(
        [np.geomspace(lo / 3, lo * 0.995, n_below), np.geomspace(hi * 1.005, hi * 3, n_above)]
    )
    cur = th.theory_curve(params, np.sort(np.concatenate([inside, outside])), kind)
    n = dict(zip(cur["P"], cur["n_min"]))
    assert all(n[p] == 2 for p in inside)
    assert all(n[p] == 1 for p in outside)
    i = int(np.argmin(np.abs(cur["P"] - Ps)))
    v = cur["minima_value"][i][cur["minima_valid"][i]]
    assert abs(v[0] - v[1]) < 1e-6 * abs(v[0])
    return r
