"""``copyhead_jax.sweep.finite_theory``: the finite-width theory sees exactly a run's training set
and embeddings, and its transition points are located from its curves (planted curves; no fit)."""

import types

import jax
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.sweep.finite_theory import (
    finite_points,
    run_gram,
    seed_gram,
    seed_tokens,
    summarise_points,
)


def test_seed_tokens_are_the_sweeps_training_sets():
    cfg = ch.TINY.replace(sweep=dict(P=(3, 5), n_seeds=2, seed=7))
    inp = sweep_inputs(cfg, None)
    for s in range(2):
        # nested prefixes: the first P sequences of the seed's draw, as the sweep trains on them
        np.testing.assert_array_equal(seed_tokens(cfg, s, 5), np.asarray(inp.train[s])[:5])


def test_run_gram_is_the_fitted_embeddings_gram_and_seed_gram_the_initial_one():
    cfg = ch.TINY.replace(sweep=dict(n_seeds=1))
    k = jax.random.split(jax.random.key(cfg.sweep.seed))
    head = ch.init_head(k[1], cfg.model, L=cfg.task.L, V=cfg.task.V, chi=cfg.posterior.chi)
    W_E, b = np.asarray(head.W_E, np.float64), np.asarray(head.b, np.float64)
    runs = types.SimpleNamespace(row=lambda P: {"params/W_E": W_E[None], "params/b": b[None]})
    U = np.concatenate([W_E.T, b.T])
    np.testing.assert_allclose(run_gram(runs, 4, 0), U @ U.T / W_E.shape[0], rtol=1e-12)
    # the prior draw the sweep starts from is the one seed_gram rebuilds
    np.testing.assert_allclose(seed_gram(cfg, 0), run_gram(runs, 4, 0), rtol=1e-5, atol=1e-6)


def test_finite_points_locate_the_jump_and_the_spinodals_of_a_planted_curve():
    P = np.array([10, 20, 30, 40, 50, 60, 70])
    aG = np.array([0.1, 0.1, 0.1, 0.1, 3.0, 3.0, 3.0])[:, None]
    n_min = np.array([1, 1, 2, 2, 2, 1, 1])[:, None]  # two minima coexist on [30, 50]
    pts = finite_points({"P": P, "aG": aG, "n_min": n_min}, "softmax", 0)
    assert pts["P_aG"].bracket == (40.0, 50.0)
    assert pts["spinodal_lo"].bracket == (20.0, 30.0) and pts["spinodal_hi"].bracket == (50.0, 60.0)
    s = summarise_points([pts, pts])
    assert s["P_aG"]["mean"] == pytest.approx(pts["P_aG"].P_star) and s["P_aG"]["sd"] == 0.0
    assert s["spinodal_hi"]["per_seed"] == [pts["spinodal_hi"].P_star] * 2


def test_finite_action_gap_is_the_seed_mean_weak_minus_strong_action_per_sequence():
    """Two local minima per (P, seed), weak (aG 0.1) and strong (aG 3); where only one exists
    the gap is NaN on that seed (and on every seed: NaN at that P)."""
    from copyhead_jax.sweep import finite_action_gap

    P = np.array([10.0, 20.0, 40.0])
    weak = np.array([[1.0, 3.0], [4.0, 4.0], [8.0, 8.0]])  # [P, seed]
    strong = np.array([[2.0, 2.0], [2.0, 0.0], [8.0, 8.0]])
    valid = np.ones((3, 2, 2), bool)
    valid[2, :, 1] = False  # P = 40: the strong minimum is gone on both seeds
    ft = {
        "P": P,
        "aG": np.array([[0.1, 3.0]] * 3),  # the global minimum's: split at 1.55
        "minima_aG": np.broadcast_to([0.1, 3.0], (3, 2, 2)),
        "minima_value": np.stack([weak, strong], -1),
        "minima_valid": valid,
    }
    gap = finite_action_gap(ft)
    assert gap[:2] == pytest.approx([0.0, 0.15]) and np.isnan(gap[2])
