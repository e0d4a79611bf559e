"""The engine modes (``mc``) of the posterior artefacts (``python -m experiments posterior``,
``posterior-branches``, ``posterior-smc``, ``multistart``): ``ch.SMALL`` (L = 25, V = 5,
sigma^2 = chi = 30) on the reduced engine at width 10,000, presets ``plain`` (per-sequence
likelihood, A = s) and ``paper`` (per-position, A = s / L); collapsed HMC
(``sample.REDUCED_HMC``) with the overrides in ``sampler``. Why each grid and seed count:
docs/reports/posterior.md ("Seeds", "Sampler").
"""

# item 3 (whitened-SGLD TI) on the first run's 3-seed plain softmax sweeps (cached; 193 s)
TI = dict(
    n_seeds=3,
    P_pool=[8, 12, 16, 20, 22, 24, 26, 28, 32],
    P_copy=[22, 24, 26, 28, 32],
    # Laplace-referenced TI, 6 rungs t = k/5, plus the WBIC temperature, whitened SGLD eta 0.1
    sgld=dict(n_rungs=5, n_steps=1200, burn_in=300, thin=5, n_chains=2, step_size=0.1),
)

QUICK = dict(
    engine=dict(model=dict(engine="reduced", width=10_000)),
    # ~1/3 of REDUCED_HMC's cost, ESS >= ~400 per run; unit mass: the committed artefacts' sampler
    sampler=dict(n_chains=2, n_iter=1000, n_warmup=500, thin=2, adapt_mass=False, n_adapt=100),
    presets=dict(
        plain=dict(
            conventions=dict(),
            # seeds 0-4, then 5-9 as a second block (same data as a 10-seed sweep)
            n_seeds=5,
            n_seeds_total=10,
            P_linear=[1, 2, 3, 4, 8],  # EK MAP P*_cG = 3.40
            # the posterior's own copy onset (posterior cG 0.64 at 32, 22 at 128)
            P_linear_high=dict(P=[16, 32, 64, 128], n_seeds=5, n_seeds_total=5),
            P_pool=[12, 16, 22, 24, 32],  # EK MAP P*_aG = 24.5, spinodals [21.7, 34.1]
            P_copy=[],
            P_copy_high=dict(P=[24, 48], n_seeds=3),  # copy-branch chains, seeds 0-2 then 3-9
            ti=TI,
            llc_devinterp=dict(gammas=[100.0]),  # devinterp's default (its figure too)
        ),
        paper=dict(
            conventions=dict(
                model=dict(linear_scale="inv_L"), posterior=dict(likelihood="per_position")
            ),
            n_seeds=3,
            n_seeds_total=10,  # P* ~25x the plain ones, cost ~P: 3 + 7 seeds
            chunk_one_P=True,  # P values far apart: no padding to the larger one
            P_linear=[32, 51, 94, 128],  # EK MAP P*_c1 = 103.9 (0.5 and 0.9 P* bracketed)
            # EK MAP P*_cG = 2,124.9: 0.5 and 0.9 P*, as sweeps two processes can fill at once
            P_linear_high=[
                dict(P=[1062], n_seeds=3, n_seeds_total=10),
                dict(P=[1913], n_seeds=3, n_seeds_total=10, blocks=[2, 5]),
            ],
            P_pool=[306, 552],  # EK MAP P*_aG = 612.6: 0.5 and 0.9 P*
            P_copy=[],
            llc_devinterp=dict(gammas=[100.0]),
        ),
        # the early-warning windows only (experiments/reading.py posterior): 0.5 and 0.9 of each
        # EK MAP P* of this reading, bracketed (P_c1 19.0, P_cG 387.9, P_aG 230.0, spinodals
        # [220.8, 247.3]); above the upper spinodal the pooling start has no minimum of its own,
        # so no pool-start draws are taken in the Bayesian window (0.5-0.9 x ~1,000)
        **{
            "paper-chi-lik": dict(
                conventions=dict(
                    model=dict(linear_scale="inv_L"),
                    posterior=dict(likelihood="per_position", chi_in_readout_prior=False),
                ),
                n_seeds=3,
                n_seeds_total=10,
                chunk_one_P=True,
                P_linear=[9, 10, 17, 18],
                P_linear_high=[
                    dict(P=[193], n_seeds=3, n_seeds_total=10),
                    dict(P=[350], n_seeds=3, n_seeds_total=10, blocks=[3, 4]),
                ],
                P_pool=[114, 208],
                P_copy=[],
            )
        },
    ),
)

TINY = dict(
    engine=dict(task=dict(L=6, V=3, n_test=32), model=dict(engine="reduced", width=64)),
    sampler=dict(n_chains=2, n_iter=200, n_warmup=100, thin=2, n_adapt=100),  # seconds
    presets=dict(
        plain=dict(
            conventions=dict(),
            n_seeds=2,
            P_linear=[1, 2, 4, 8],
            P_pool=[2, 4, 8],
            P_copy=[4, 8],
            ti=dict(
                n_seeds=2,
                P_pool=[2, 4, 8],
                P_copy=[4, 8],
                sgld=dict(n_rungs=2, n_steps=200, burn_in=50, thin=5, n_chains=2, step_size=0.1),
            ),
        ),
        paper=dict(
            conventions=dict(
                model=dict(linear_scale="inv_L"), posterior=dict(likelihood="per_position")
            ),
            n_seeds=2,
            P_linear=[4, 8],
            P_pool=[4, 8],
            P_copy=[],
        ),
    ),
)

CONFIGS = {"quick": QUICK, "tiny": TINY}
