"""runner/memory.py and the commands' memory models: a chunk of runs fits the memory budget, a
budget is capped at the machine's memory, every long command refuses a size that cannot fit
before any work, and an estimate lies within 2x of a measured peak."""

import pytest

import copyhead_jax as ch
from copyhead_jax.runner import chunk_size, per_run_bytes


def test_chunk_size_respects_memory_budget():
    cfg = ch.PAPER.replace(sweep=dict(memory_budget_gb=10.0))
    per_run = per_run_bytes(cfg)
    # at width 10,000: W^G is 4e8 bytes; weights + gradient + 2 Adam moments + temporaries
    assert 4 * 4e8 < per_run < 8 * 4e8
    c = chunk_size(cfg, 160)
    assert c * per_run <= 10 * 2**30 < (c + 1) * per_run
    assert chunk_size(cfg, 160, n_devices=4) % 4 == 0
    assert chunk_size(cfg.replace(sweep=dict(chunk_runs=3)), 160) == 3


def test_a_refusal_never_reads_zero_and_never_reads_equal():
    """Sizes below 0.1 GiB in MiB (not "needs about 0.0 GiB, but 0.0 GiB"); two sizes that round
    alike in bytes, so the line always shows the need above what is available."""
    import re

    import pytest

    from copyhead_jax.runner import refuse_if_over

    cases = [
        (3 * 2**20, 2**20),
        (5 * 2**30, 2**30),
        (2**30 + 10, 2**30),
        (2**29, 2**24),
        (4 * 2**20, 1073),
    ]  # a budget of 1e-6 GB
    for need, have in cases:
        with pytest.raises(ValueError) as e:
            refuse_if_over(need, have, "x", "y")
        got = re.search(r"needs about ([\d.,]+) (\w+) of memory, but ([\d.,]+) (\w+)", str(e.value))
        assert got, str(e.value)
        scale = {"GiB": 2**30, "MiB": 2**20, "bytes": 1}
        n, h = (float(got[i].replace(",", "")) * scale[got[i + 1]] for i in (1, 3))
        assert n > h > 0 and "0.0 " not in str(e.value), str(e.value)
        assert abs(n - need) <= 0.05 * scale[got[2]] and abs(h - have) <= 0.05 * scale[got[4]]
    refuse_if_over(1, 1, "x", "y")  # not over: no refusal


def test_a_budget_above_the_machine_is_capped_at_it():
    from copyhead_jax.runner.memory import available_bytes, machine_bytes

    real = machine_bytes()
    assert 2**28 < real < 2**62  # this machine's memory, read
    huge = ch.TINY.replace(sweep=dict(memory_budget_gb=1e9))
    assert available_bytes(huge) == real
    small = ch.TINY.replace(sweep=dict(memory_budget_gb=0.5))
    assert available_bytes(small) == min(2**29, real)


def _refused(capsys, argv, flag):
    """The command refused in one line naming ``flag`` and the sizes, before any work."""
    from copyhead_jax.cli import main
    from tests.helpers import one_line_error

    one_line_error(capsys, main(argv), rf"needs about [\d.,]+ \w+ of memory, but .*{flag}")


def test_markov_theory_refuses_a_size_that_cannot_fit(capsys, monkeypatch):
    from copyhead_jax.theory import beyond
    from tests.helpers import no_work

    monkeypatch.setattr(beyond, "beyond_points", no_work)
    _refused(
        capsys,
        "theory points --source markov --L 300 --V 5 --attention linear".split(),
        "--L",
    )


def test_profile_transition_refuses_a_size_that_cannot_fit(capsys, monkeypatch):
    from copyhead_jax.transition.profile import run
    from tests.helpers import no_work

    monkeypatch.setattr(run, "map_branches", no_work)  # the first check precedes the theory
    _refused(capsys, ["transition", "--L", "2000", "--V", "3", "--width", "inf"], "--spacing")
    _refused(
        capsys,
        "transition --L 10 --V 3 --width inf --probes 1000000000,2000000000".split(),
        "--window-chains",
    )


def test_sweep_refuses_kept_weights_that_cannot_fit(monkeypatch):
    import pytest

    from copyhead_jax.sweep import run
    from tests.helpers import no_work

    monkeypatch.setattr(run, "check_memory", no_work)
    cfg = ch.TINY.replace(model=dict(width=60_000), sweep=dict(P=(4, 8), n_seeds=100))
    with pytest.raises(ValueError, match="keeping the weights of 200 runs.*--keep-params"):
        ch.run_sweep(cfg, keep_params=True, progress=False)


def test_polish_refuses_a_sweep_that_cannot_fit(monkeypatch):
    import importlib

    import pytest

    from tests.helpers import fake_sweep, no_work

    polish = importlib.import_module("copyhead_jax.fit.polish")

    monkeypatch.setattr(polish, "sweep_inputs", no_work)
    sw = fake_sweep(
        ch.TINY.replace(
            sweep=dict(P=(2, 4, 8), n_seeds=2, memory_budget_gb=1e-5),
            train=dict(train_embeddings=False),
        )
    )
    sw = sw.replace(arrays={**sw.arrays, **_params(sw.config)})
    with pytest.raises(ValueError, match="polishing 6 runs at P <= 8 needs about"):
        polish.polish(sw)


def _params(cfg):
    import numpy as np

    nP, nS, L, V, N = len(cfg.sweep.P), cfg.sweep.n_seeds, cfg.task.L, cfg.task.V, cfg.model.width
    shapes = dict(W_E=(N, V), b=(N, L), W_G=(N, N), W_O_hat=(V, N))
    return {f"params/{k}": np.zeros((nP, nS, *s), np.float32) for k, s in shapes.items()}


@pytest.mark.slow  # a sweep or a compile; the refusals above are the fast siblings
def test_kept_weights_estimate_is_within_2x_of_the_kept_arrays(reduced):
    """The estimate counts every trained block in float64 (D^2 + D(2V + L) per run, D = V + L);
    the kept arrays are measured as stored. A factor 2 covers float32 storage (exactly 2x) and
    the blocks a head does not train (fewer bytes), never more than counted."""
    import numpy as np

    from copyhead_jax.results import SweepResult
    from copyhead_jax.runner.memory import kept_params_bytes

    res = SweepResult.load(reduced)
    kept = sum(np.asarray(v).nbytes for k, v in res.arrays.items() if k.startswith("params/"))
    est = kept_params_bytes(res.config)
    assert kept > 0 and 0.5 <= est / kept <= 2.0, (est, kept)


@pytest.mark.slow  # a sweep or a compile; the refusals above are the fast siblings
def test_markov_theory_estimate_is_within_2x_of_the_compiled_peak():
    """The peak program of the Markov theory is Newton's step (a Hessian by forward-over-reverse
    and its least-squares solve); XLA's buffer assignment of it, compiled at L = 10, V = 4
    (full space), is the measured peak. The estimate adds the host-side statistics and kept
    minimisers (~35% of it at this size), so it lies above the program by less than 2x."""
    import jax
    import numpy as np

    from copyhead_jax import TaskConfig
    from copyhead_jax import theory as th
    from copyhead_jax.theory import beyond

    L, V = 10, 4
    p = th.TheoryParams.preset("paper", L=L, V=V)
    with jax.enable_x64(True):
        S4, S2 = beyond.source_stats(TaskConfig(L=L, V=V, source="markov", rho=0.3))
        low = beyond.newton_minimiser.lower(
            np.zeros(L * L), 3.0, S4, S2, params=p, attention="softmax", space="full", causal=False
        )
        m = low.compile().memory_analysis()
    peak = m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes
    est = beyond.beyond_bytes(L, V, 41, "full")
    assert 1.0 <= est / peak <= 2.0, (est, peak)


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["curve", "--n-P", "1000000"], "--n-P"),
        (["landscape", "--attention", "linear", "--P", *map(str, range(1, 20_001))], "--P"),
        (["scaling", "--L", "2:3000", "--V", "2:300"], "--V"),
        (
            "points --objective bayes --attention softmax --L 2000 --V 2000".split(),
            "--n-rows",
        ),
        (
            "scaling --objective bayes --attention softmax --L 3000 --V 3000".split(),
            "--n-rows",
        ),
    ],
    ids=["curve", "landscape", "scaling", "bayes-points", "bayes-scaling"],
)
def test_theory_grids_refuse_a_size_that_cannot_fit(capsys, monkeypatch, argv, flag):
    """curve, landscape, scaling and route B's rows: a grid their memory model puts above the
    budget (4 GiB on a CPU without one) is refused in one line naming the flag, before the
    theory computes anything (every entry point of the work replaced by one that fails)."""
    from copyhead_jax.theory import bayes, minima, points, scaling
    from tests.helpers import no_work

    for mod, name in (
        (minima, "theory_curve"),
        (minima, "landscape"),
        (points, "transition_points"),
        (scaling, "scaling_table"),
        (bayes, "bayes_points"),
        (bayes, "scaling_table"),
    ):
        monkeypatch.setattr(mod, name, no_work)
    plot = [] if argv[0] == "points" else ["--no-plot"]
    _refused(capsys, ["theory", *argv, *plot], flag)


def test_theory_memory_models_scale_with_their_grids():
    """The models' closed forms: the curve's bytes follow its padded bucket (32, 64, ...), the
    scaling table's grow linearly in its parameter sets, route B's rows linearly in the rows,
    the landscape's with the grid at many P."""
    from copyhead_jax.theory.bayes.solve import rows_bytes
    from copyhead_jax.theory.minima import curve_bytes, landscape_bytes
    from copyhead_jax.theory.points import points_bytes

    assert curve_bytes(1, "linear") == curve_bytes(32, "linear") == curve_bytes(20, "linear")
    one = curve_bytes(32, "softmax")
    assert curve_bytes(33, "softmax") == curve_bytes(64, "softmax") == 2 * one
    assert points_bytes(6, "both") == 3 * points_bytes(2, "both") >= points_bytes(6, "linear")
    assert rows_bytes(8, 5, 2**16) == 4 * rows_bytes(8, 5, 2**14)
    assert landscape_bytes(10**4, "linear") > 8 * 10**4 * 161**2 > landscape_bytes(5, "linear")


@pytest.mark.slow  # three compiles; the refusals and closed forms above are the fast siblings
def test_theory_grid_estimates_are_within_1_5x_of_the_compiled_peak():
    """XLA's buffer assignment of each grid's compiled program at a tiny size (arguments,
    outputs and temporaries) is the measured peak: the curve's minima at 32 P, the scaling
    table's softmax kernel at 2 parameter sets, route B's value and gradient over 4,096 rows at
    (L, V) = (6, 4) (plus its draws, which live beside it). Each estimate lies above the program
    by less than 1.5x (the models round the per-point bytes up by ~20%)."""
    import jax
    import jax.numpy as jnp

    from copyhead_jax import theory as th
    from copyhead_jax.theory import minima, points
    from copyhead_jax.theory.bayes import solve
    from copyhead_jax.theory.heads import SoftmaxTheory, theory_of

    def peak(low):
        m = low.compile().memory_analysis()
        return m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes

    p = th.TheoryParams.preset("plain", L=6, V=4)
    with jax.enable_x64(True):
        low = minima.curve_minima.lower(
            jnp.ones(32),
            p.arrays(),
            kind=theory_of("linear"),
            objective="map",
            pushforward=False,
            n_keep=4,
        )
        assert 1.0 <= minima.curve_bytes(32, "linear") / peak(low) <= 1.5
        low = points.glob_kernel.lower(
            jnp.ones((2, points.N_SCAN_SOFT)), th.TheoryParams.stack([p, p]), ("map", SoftmaxTheory)
        )
        assert 1.0 <= points.points_bytes(2, "softmax") / peak(low) <= 1.5
        draws = solve.make_draws(p, solve.VariationalSettings(n_rows=4096))  # an argument
        low = solve.free_energy_program(p, True).lower(jnp.zeros(6), 100.0, draws)
        # the estimate counts the coarse search's rows too: compare the full rows' share
        est = solve.rows_bytes(6, 4, 4096) * 4096 / (4096 + max(4096 // solve.COARSE, 256))
        assert 1.0 <= est / peak(low) <= 1.5
