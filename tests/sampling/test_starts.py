"""sampling/starts.py: where the chains start (both branches, prior draws) and when both
branches are the default (the coexistence window)."""

import dataclasses

import numpy as np

import copyhead_jax as ch

CFG = ch.TINY.replace(solver=dict(max_epochs=150), sweep=dict(P=(2, 8), n_seeds=2))


def test_start_points_are_the_branch_starts_and_prior_draws():
    """``both``: group 0 is W^G = 0, group 1 has logits T A T^T = logit G* on the positional
    block and 0 elsewhere (the copy start, exact up to float32 rounding of T^{-1}: atol 1e-4);
    ``prior``: one draw per chain with the prior's scale (900 entries: sd within 10%)."""

    from copyhead_jax.conventions import shift_matrix
    from copyhead_jax.sampling.starts import start_points

    cfg = CFG.replace(
        model=dict(engine="reduced", width=64, attention="softmax"),
        train=dict(train_embeddings=False),
    )
    L, V = cfg.task.L, cfg.task.V
    D = L + V
    rng = np.random.default_rng(0)
    roots = np.linalg.qr(rng.normal(size=(2, D, D)))[0] + 0.5 * np.eye(D)  # [runs, D, D]
    fits = rng.normal(size=(2, D, D))
    mc = ch.HMCConfig(n_chains=4, starts="both")
    s = start_points(cfg, mc, fits, roots, rng)
    assert s.shape == (2, 2, D, D) and not s[0].any()
    want = np.zeros((D, D))
    want[V:, V:] = cfg.train.init_copy_logit * np.asarray(shift_matrix(L))
    for r in range(2):
        np.testing.assert_allclose(roots[r] @ s[1, r] @ roots[r].T, want, atol=1e-4)
    assert np.array_equal(
        start_points(cfg, dataclasses.replace(mc, starts="fit"), fits, roots, rng)[0], fits
    )
    p = start_points(cfg, dataclasses.replace(mc, starts="prior"), fits, roots, rng)
    assert p.shape == (4, 2, D, D)
    sigma_G = ch.Objective.from_config(cfg).sigma_G
    assert abs(p.std() / sigma_G - 1) < 0.1 and not np.allclose(p[0], p[1])


def test_default_starts_follow_the_coexistence_window():
    """``both`` exactly when a P of the grid lies within NEAR_FACTOR of the MAP theory's
    spinodals (softmax, reduced engine); linear attention and the full engine: ``fit``."""
    from copyhead_jax.sampling.starts import NEAR_FACTOR, default_starts
    from copyhead_jax.theory import TheoryParams, transition_points

    cfg = ch.SMALL.replace(
        model=dict(engine="reduced", attention="softmax"), train=dict(train_embeddings=False)
    )
    lo, hi = transition_points(TheoryParams.from_config(cfg), "softmax")["spinodals"]
    inside = int(np.sqrt(lo * hi))
    far = int(hi * NEAR_FACTOR * 4)
    assert default_starts(cfg.replace(sweep=dict(P=(inside, far)))) == "both"
    assert default_starts(cfg.replace(sweep=dict(P=(far,)))) == "fit"
    assert default_starts(cfg.replace(model=dict(attention="linear"))) == "fit"


# bad input and crash safety (moved from test_bad_input.py)
