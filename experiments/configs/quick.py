"""``python -m experiments ... --quick``: a 2-core CPU, at most ~15 minutes per artefact and preset.

Smaller width, fewer seeds, a coarse P grid refined near each transition, SGLD chains of a few
thousand steps; every measured point is compared with the finite-width theory of
docs/theory.md §2b on
the same embeddings and data. Values are the preset's unless set here; each override says why.
Grids are lists of training-set sizes P (sequences); ``rounds`` / ``n_new``: adaptive refinement
rounds and new P per bracket per round; ``max_run_s``: a P whose estimated run time (cost model
below) exceeds this is out of reach and reported as such.
"""

# Engine overrides shared by both presets (on top of ch.PLAIN / ch.PAPER).
ENGINE = dict(
    model=dict(width=128),  # paper: 10,000; finite-width theory on the realised embeddings
    train=dict(train_embeddings=False),  # quenched embeddings: the MAP protocol (theory §2)
    solver=dict(
        lr=1.0,  # SMALL's muP base lr (the paper's raw lr 1e-5 needs width 10,000 and a GPU)
        lr_scaling="mup",
        schedule="cosine",
        # linear attention needs ~4k epochs to settle at lr 1, width 128, and longer next to
        # P*_c1 (critical slowing down): no early stopping, every linear run gets all 4k epochs
        min_epochs=4000,
        max_epochs=4000,
        patience=200,
        rel_tol=1e-5,
    ),
    sweep=dict(n_seeds=2, padding="max"),  # paper: 10 seeds; P groups are chosen by the cost model
)

# scaling: one seed and one refinement round per point, on ~n_grid P around each EK P*
_SCALING = dict(
    measure=["P_c1", "P_cG", "P_aG"], n_seeds=1, rounds=1, n_new=2, max_run_s=30.0, n_grid=7
)
_SCALING_PAPER = {**_SCALING, "max_run_s": 25.0, "n_grid": 6}  # its P* are 10x larger

CONFIG = dict(
    engine=ENGINE,
    # softmax settles in fewer epochs than linear attention (grad_norm_span is reported)
    softmax_solver=dict(max_epochs=2000, min_epochs=500),
    # SGLD on U (T = 1), all weights: eta = min(eta_max, eta_seq / P_eff) per compiled group
    # (the likelihood curvature grows like P_eff); the paper's eta = 5e-10 x 20k steps barely
    # leaves the MAP at width 128, so the quick mode uses the largest stable step instead
    sgld=dict(eta_max=1e-3, eta_seq=5e-3, n_steps=1500, burn_in=500, thin=10, n_chains=2, seed=1),
    # grouping P into compiled programs: compile time vs padded work (this 2-core CPU, L = 25)
    cost=dict(compile_s=10.0, seq_epoch_us=3.0),
    presets=dict(
        plain=dict(
            main=dict(
                P_linear=[1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128],  # P_c1 ~ 0.17, P_cG ~ 3.4
                P_pool=[4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 128],  # P_aG ~ 24.5
                P_copy=[8, 12, 16, 20, 24, 28, 32, 40, 48, 64],  # spinodals ~ [21.7, 34.1]
                sgld_linear=[1, 2, 3, 4, 6, 8, 16, 32],
                sgld_softmax=[8, 12, 16, 20, 24, 28, 32, 48],
                rounds=2,
                n_new=3,
                max_run_s=60.0,
                theory_P=[0.05, 400.0],  # theory curves' range
            ),
            hysteresis=dict(rounds=2, n_new=3, P_linear_copy=[1, 2, 3, 4, 6, 8, 16, 32]),
            scaling_L=dict(values=[10, 16, 25, 40, 60], **_SCALING),
            scaling_V=dict(values=[2, 3, 5, 8, 12], **_SCALING),
        ),
        paper=dict(
            engine=dict(sweep=dict(n_seeds=1)),  # P* up to ~2500: one seed to fit the budget
            main=dict(
                # P_c1 ~ 104, P_cG ~ 2125 (psi = 1/2 at ~2448)
                P_linear=[16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192],
                P_pool=[128, 256, 384, 512, 640, 768, 896, 1024, 1280],  # P_aG ~ 613
                P_copy=[256, 384, 512, 640, 768, 896, 1024],  # spinodals ~ [543, 853]
                sgld_linear=[16, 32, 64, 96, 128, 256, 512, 1024],
                sgld_softmax=[128, 256, 384, 512, 640],
                # max_run_s: P = 8192 (linear, 4k epochs) is ~100 s on this CPU
                rounds=2,
                n_new=2,
                max_run_s=120.0,
                theory_P=[2.0, 20000.0],
            ),
            hysteresis=dict(rounds=2, n_new=2, P_linear_copy=[64, 128, 256, 512, 1024]),
            scaling_L=dict(values=[10, 16, 25, 40, 60], **_SCALING_PAPER),
            # P_cG ~ 1850-2730 at every V: out of the budget
            scaling_V={**_SCALING_PAPER, "values": [2, 3, 5, 8, 12], "measure": ["P_c1", "P_aG"]},
        ),
    ),
)
