"""``--full``: the paper's configuration (width 10,000, 10 seeds, the paper's Adam and SGLD
protocols), meant for a GPU. On a CPU it starts and checkpoints every finished chunk of runs
(``run_sweep`` resumes from them), but a single run takes hours.

Adam: lr 1e-5 on every raw weight, embeddings trained, 2,000 warm-up epochs then early stopping
(patience 100), 10% linear warm-up for softmax; SGLD: eta = 5e-10 (lr 5e-10 on the loss with
sigma^2 = chi = 30), 20,000 steps (``copyhead_jax.sampling.run.PAPER_SGLD``). Grids span the paper's
range P in [1, 1000] (plain) / [1, 10000] (paper preset, whose P* reach ~2500).
"""

ENGINE = dict(sweep=dict(n_seeds=10, padding="max", chunk_runs=1))  # the preset's own protocol

_SCALING = dict(measure=["P_c1", "P_cG", "P_aG"], rounds=3, n_new=3, max_run_s=1e9, n_grid=9)

# the paper preset's grids span its P range (its P* reach ~2,500)
_PAPER_LINEAR = [4, 8, 16, 23, 32, 64, 96, 128, 200, 256, 322, 512, 1000, 2000, 4000, 8000]
_PAPER_POOL = [4, 8, 16, 32, 64, 128, 200, 256, 300, 400, 512, 640, 800, 1000, 1280, 2000]

CONFIG = dict(
    engine=ENGINE,
    softmax_solver={},
    # PAPER_SGLD (eta_seq = 0: the step is eta_max at every P)
    sgld=dict(
        eta_max=5e-10, eta_seq=1e30, n_steps=20_000, burn_in=5_000, thin=50, n_chains=4, seed=1
    ),
    cost=dict(compile_s=60.0, seq_epoch_us=50.0),
    presets=dict(
        plain=dict(
            main=dict(
                P_linear=[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512, 1000],
                P_pool=[1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1000],
                P_copy=[8, 12, 16, 20, 24, 28, 32, 40, 48, 64],
                sgld_linear=[1, 2, 3, 4, 6, 8, 16, 32, 64],
                sgld_softmax=[4, 8, 12, 16, 20, 24, 28, 32, 48, 64],
                rounds=3,
                n_new=3,
                max_run_s=1e9,
                theory_P=[0.05, 2000.0],
            ),
            hysteresis=dict(rounds=3, n_new=3, P_linear_copy=[1, 2, 3, 4, 6, 8, 16, 32]),
            scaling_L=dict(values=[10, 16, 25, 40, 60], n_seeds=10, **_SCALING),
            scaling_V=dict(values=[2, 3, 5, 8, 12], n_seeds=10, **_SCALING),
        ),
        paper=dict(
            main=dict(
                P_linear=_PAPER_LINEAR,
                P_pool=_PAPER_POOL,
                P_copy=[256, 300, 400, 512, 640, 800, 1000, 1280],
                sgld_linear=[16, 32, 64, 96, 128, 256, 512, 1000, 2000],
                sgld_softmax=[128, 256, 400, 512, 640, 800],
                rounds=3,
                n_new=3,
                max_run_s=1e9,
                theory_P=[1.0, 30000.0],
            ),
            hysteresis=dict(rounds=3, n_new=3, P_linear_copy=[64, 128, 256, 512, 1000, 2000]),
            scaling_L=dict(values=[10, 16, 25, 40, 60], n_seeds=10, **_SCALING),
            scaling_V=dict(values=[2, 3, 5, 8, 12], n_seeds=10, **_SCALING),
        ),
    ),
)
