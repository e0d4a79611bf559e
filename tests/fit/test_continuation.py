"""Continuation in P of exact MAP fits (``ExactConfig.continuation``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.fit import exact_solve_from, quenched_energy, sweep_inputs
from copyhead_jax.fit.continuation import FROM_ABOVE, FROM_BELOW, OWN, continue_in_P, steps
from copyhead_jax.fit.polish import full_head
from copyhead_jax.objective import Objective
from copyhead_jax.observables import measure

# linear attention in the plain conventions (sigma^2 = chi = 30) at L = 8, V = 3: several minima
# at small P, as at L = 25 (ch.TINY's smaller prior variances have one on this grid)
CFG = ch.SMALL.replace(
    task=dict(L=8, V=3, n_test=16),
    model=dict(attention="linear", engine="reduced", width=64),
    train=dict(train_embeddings=False),
    sweep=dict(P=(1, 2, 3, 4, 6, 8, 12, 16), n_seeds=4),
)


@pytest.fixture(scope="module")
def sweeps():
    single = ch.run_sweep(CFG, progress=False, keep_params=True)
    cont = ch.run_sweep(
        CFG.replace(solver=dict(continuation=True)), progress=False, keep_params=True
    )
    return single, cont


def test_steps_visit_every_P_from_both_sides():
    s = steps((1, 2, 4, 8))
    assert [x[:2] for x in s if x[2] == FROM_BELOW] == [(1, 0), (2, 1), (3, 2)]
    assert [x[:2] for x in s if x[2] == FROM_ABOVE] == [(2, 3), (1, 2), (0, 1)]


def test_continuation_keeps_the_lowest_converged_minimum(sweeps):
    """The own start is the single-start sweep's fit (same program, same inputs: bit for bit);
    every kept run is a converged minimum no higher than it, strictly lower exactly where it
    came from a neighbour, and on this grid some runs do come from a neighbour (else the test
    would not exercise the merge)."""
    single, cont = sweeps
    assert np.array_equal(cont["U_own_start"], single["U"])
    assert cont["converged"].all() and (cont["min_eig"] > 0).all()
    src = cont["start_source"]
    assert (cont["U"] <= cont["U_own_start"]).all()
    assert (cont["U"][src != OWN] < cont["U_own_start"][src != OWN]).all()
    assert np.array_equal(cont["U"][src == OWN], single["U"][src == OWN])
    assert (src != OWN).sum() >= 2


def test_kept_fields_belong_to_the_kept_weights(sweeps):
    """U, the mean attention and psi of each run that came from a neighbour (and of one that
    kept its own start) are those of its kept weights, recomputed from them on the run's data
    (float64; the blocked sums of the solver and of measure_blocked differ from these by
    rounding only: 1e-9 relative)."""
    _, cont = sweeps
    inp = sweep_inputs(CFG, None)
    nS = cont["U"].shape[1]
    obj = Objective.from_config(CFG)
    moved = list(zip(*np.nonzero(cont["start_source"] != OWN)))
    energy_and_measure = jax.jit(
        lambda h, t, m, te: (quenched_energy(h, t, m, obj), measure(h, t, m, te))
    )
    with jax.enable_x64(True):
        for i, s in [(0, 0), *moved]:
            r = i * nS + s
            head = full_head(
                CFG, {k: cont[f"params/{k}"][i, s] for k in ("W_E", "b", "W_G", "W_O_hat")}
            )
            t, m = jnp.asarray(inp.train[r]), jnp.asarray(inp.mask[r], jnp.float64)
            U, meas = energy_and_measure(head, t, m, jnp.asarray(inp.test[r]))
            U = float(U)
            assert abs(U - cont["U"][i, s]) <= 1e-9 * max(1.0, abs(U))
            np.testing.assert_allclose(
                cont["mean_attention"][i, s], np.asarray(meas.mean_attention), atol=1e-9
            )
            assert abs(float(meas.order.psi) - cont["psi"][i, s]) <= 1e-7


def test_interrupted_continuation_resumes_identically(sweeps, tmp_path):
    """A continuation killed after 4 of its steps and rerun on its checkpoints gives the
    uninterrupted result bit for bit."""
    single, cont = sweeps
    cfg = CFG.replace(solver=dict(continuation=True))
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("runs",))
    solve = exact_solve_from(cfg, mesh)
    inputs = sweep_inputs(cfg, None)
    arrays = {
        k: np.asarray(v).reshape((-1,) + v.shape[2:])
        for k, v in single.arrays.items()
        if v.shape[:2] == single["U"].shape
    }
    calls = []

    def dying(inp, w):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(1)
        return solve(inp, w)

    with pytest.raises(KeyboardInterrupt):
        continue_in_P(cfg, inputs, arrays, dying, tmp_path, "fp")
    resumed = continue_in_P(cfg, inputs, arrays, solve, tmp_path, "fp")
    for k in ("U", "psi", "start_source", "params/W_G", "mean_attention"):
        assert np.array_equal(resumed[k].reshape(cont[k].shape), cont[k]), k


def test_continuation_needs_the_exact_solver():
    with pytest.raises(ValueError, match="continuation=True needs the exact solver"):
        ch.TINY.replace(solver=dict(continuation=True))  # AutoConfig under the full engine
    with pytest.raises(ValueError, match="ExactConfig.continuation must be True or False"):
        ch.ExactConfig(continuation=1)


@pytest.mark.slow  # two sweeps and their continuation end to end: ~18 s idle
def test_experiment_runs_continue_over_their_sweeps_union(sweeps, tmp_path):
    """``experiments.common.Runs`` measured as two single-start sweeps (every other P, then the
    rest: a grid refined after a first continuation) and continued over their union give the
    sweep-level continuation of the same grid: the same minima (U and psi to rounding: the
    sweeps pad their pools differently, 1e-9); a second ``Runs`` on the same cache solves no
    step again."""
    import types

    from experiments import common as C

    _, cont = sweeps
    spec = types.SimpleNamespace(cost=dict(compile_s=1e9), cache_dir=tmp_path)  # one group
    cfg = CFG.replace(solver=dict(continuation=True))
    P = CFG.sweep.P
    runs = C.Runs(cfg, "linear")
    C.measure(runs, P[::2], spec)
    assert runs.get("U").shape == (len(P[::2]), CFG.sweep.n_seeds)  # continued over 4 P
    C.measure(runs, P[1::2], spec)
    assert len(runs.parts) == 2
    np.testing.assert_allclose(runs.get("U"), cont["U"], rtol=1e-9)
    np.testing.assert_allclose(runs.get("psi"), cont["psi"], atol=1e-7)
    assert np.array_equal(runs.get("start_source") != OWN, cont["start_source"] != OWN)
    files = set((tmp_path / "continuation").glob("step-*.npz"))
    again = C.Runs(cfg, "linear")
    C.measure(again, P, spec)
    assert np.array_equal(again.get("U"), runs.get("U"))
    assert set((tmp_path / "continuation").glob("step-*.npz")) == files
