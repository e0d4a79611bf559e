"""``python -m experiments.posterior``: the posterior of the copy head (issue 12, items 0-4).

On top of ``ch.SMALL`` (L = 25, V = 5, sigma^2 = chi = 30) with the exact width reduction at the
paper's width, in two conventions (``presets``): ``plain`` (per-sequence likelihood, A = s:
``ch.SMALL`` as it is) and ``paper`` (per-position likelihood, A = s / L: ``ch.PAPER``'s
switches). Sampling uses the reduced engine's default sampler, collapsed HMC
(``sample.REDUCED_SGLD``: the readout integrated out exactly, HMC on W^G, 500 warm-up steps,
100 adaptation iterations), with the overrides in ``sampler``. Each non-default value says why.
"""

# The plain-convention softmax sweeps of the previous run (3 seeds): item 3's free energies
# (tempered whitened SGLD from the MAP fits, ``posterior_features``) are computed on them and
# cached; they do not depend on the posterior sampler, and rerunning them on more seeds
# (first run: 193 s for 3 seeds, ``softmax.free_energy.seconds``) did not fit this run's budget.
TI = dict(
    n_seeds=3, P_pool=[8, 12, 16, 20, 22, 24, 26, 28, 32], P_copy=[22, 24, 26, 28, 32],
    # Laplace-referenced TI, 6 rungs t = k/5, plus the WBIC temperature, whitened SGLD eta 0.1
    sgld=dict(n_rungs=5, n_steps=1200, burn_in=300, thin=5, n_chains=2, step_size=0.1),
)  # fmt: skip

QUICK = dict(
    # the reduced engine: exact MAP (float64 L-BFGS) and a width-(V+L) image of width 10,000
    engine=dict(model=dict(engine="reduced", width=10_000)),
    # REDUCED_SGLD is 4 chains x 1,500 HMC iterations, thin 1 (~40 s per run at P = 32 on one
    # core, measured). Halved chains, 1,000 iterations and thin 2 (the observables at every
    # other iteration) cost ~1/3 of that; on the small default 4 x 1,500 gave ESS >= 1,100
    # everywhere but linear P = 64, so ~1/3 of it keeps ESS ~ 400 there (reported per run)
    sampler=dict(n_chains=2, n_steps=1500, burn_in=500, thin=2),
    presets=dict(
        plain=dict(
            conventions=dict(),
            # the first run's 5 seeds (kept: cached), then seeds 5-9 as a second block
            # (`branch`: same data as a 10-seed sweep, fresh chain noise): the 10
            n_seeds=5,
            n_seeds_total=10,
            # EK MAP P*_cG = 3.40 (0.5 P* = 1.7, 0.9 P* = 3.06); P*_c1 = 0.17 (below any P).
            P_linear=[1, 2, 3, 4, 8],
            # the posterior's own copy onset (collapsed HMC on the small default: posterior cG
            # 0.64 at P = 32, 4.3 at 64, 22 at 128): 5 seeds, the cost grows ~P
            P_linear_high=dict(P=[16, 32, 64, 128], n_seeds=5, n_seeds_total=5),
            # softmax pooling start: EK MAP P*_aG = 24.5 (0.5 P* = 12.25, 0.9 P* = 22.05),
            # MAP spinodals [21.7, 34.1]
            P_pool=[12, 16, 22, 24, 32],
            P_copy=[],
            # chains from the copy-branch MAP, inside the window (24) and above it (48): the
            # first run's 3 seeds, then 3-9
            P_copy_high=dict(P=[24, 48], n_seeds=3),
            ti=TI,
            # item 2 in devinterp's default (beta = 1/log n, gamma = 100), localised SGLD from
            # each MAP (experiments.posterior_llc): ~40 s per P for 10 seeds
            llc_devinterp=dict(gammas=[100.0]),
        ),
        paper=dict(
            conventions=dict(
                model=dict(linear_scale="inv_L"), posterior=dict(likelihood="per_position")
            ),  # fmt: skip
            # cost ~ P: the paper preset's P* are ~25x the plain ones (per-position likelihood).
            # The first run's 3 seeds (cached), then seeds 3-9 as a second block: the 10
            n_seeds=3,
            n_seeds_total=10,
            chunk_one_P=True,  # P values far apart: no padding to the larger one
            # EK MAP P*_c1 = 103.9 (0.5 P* = 51.9, 0.9 P* = 93.5)
            P_linear=[32, 51, 94, 128],
            # EK MAP P*_cG = 2,124.9 (0.5 P* = 1,062.4 and 0.9 P* = 1,912.4, bracketed): the
            # first run's 3 seeds, then seeds 3-9 (10-17 min per run there on one core: the cost
            # grows ~P), as sweeps that two processes can fill at once: P = 1,913's seeds in two
            # blocks (3-4, 5-9) so that one process does 1,062 and 1,913's first block
            P_linear_high=[
                dict(P=[1062], n_seeds=3, n_seeds_total=10),
                dict(P=[1913], n_seeds=3, n_seeds_total=10, blocks=[2, 5]),
            ],
            # EK MAP P*_aG = 612.6 (0.5 P* = 306.3, 0.9 P* = 551.3), spinodals [543, 853]; the
            # two points that bracket the verdict's, nothing more (~2.5 min per run at P = 552)
            P_pool=[306, 552],
            P_copy=[],
            # item 2 in devinterp's default on every sweep (~2 s per run at P <= 128, 26-47 s
            # at 1,062-1,913 linear, ~64 s at 306-552 softmax, one core; ``max_P`` would skip
            # the larger sweeps, NaN in the tables)
            llc_devinterp=dict(gammas=[100.0]),
        ),
    ),
)

TINY = dict(
    engine=dict(task=dict(L=6, V=3, n_test=32), model=dict(engine="reduced", width=64)),
    sampler=dict(n_chains=2, n_steps=300, burn_in=100, thin=2),  # seconds, not physics
    presets=dict(
        plain=dict(
            conventions=dict(), n_seeds=2, P_linear=[1, 2, 4, 8], P_pool=[2, 4, 8], P_copy=[4, 8],
            ti=dict(n_seeds=2, P_pool=[2, 4, 8], P_copy=[4, 8],
                    sgld=dict(n_rungs=2, n_steps=200, burn_in=50, thin=5, n_chains=2,
                              step_size=0.1)),
        ),
        paper=dict(
            conventions=dict(model=dict(linear_scale="inv_L"),
                             posterior=dict(likelihood="per_position")),
            n_seeds=2, P_linear=[4, 8], P_pool=[4, 8], P_copy=[],
        ),
    ),
)  # fmt: skip

CONFIGS = {"quick": QUICK, "tiny": TINY}
