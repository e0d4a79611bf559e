"""``--tiny``: seconds-sized smoke runs (the test suite runs every artefact with this).

L = 6, V = 3, width 16, 200 epochs, 1 seed, tiny grids and chains: it exercises the code paths
(sweeps, SGLD, finite-width and EK theory, tables, figures), not the physics. At L = 6 the
softmax theory has no first-order transition; the artefacts must report that. Main refines
nothing (``rounds=0``: each round is a new compiled program per branch, a third of main's time
here; refinement is tested on planted sweeps in tests/sweep/test_refine.py); hysteresis refines.
"""

ENGINE = dict(
    task=dict(L=6, V=3, n_test=64),  # paper: L = 25, V = 5
    model=dict(width=16),  # paper: 10,000
    train=dict(log_every=5, train_embeddings=False),  # quenched (docs/theory.md §2)
    solver=dict(
        lr=2e-2,  # TINY's protocol
        lr_scaling="mup",
        schedule="cosine",
        min_epochs=20,
        max_epochs=200,
        patience=20,
    ),
    sweep=dict(n_seeds=1, padding="max"),  # paper: 10 seeds
)

_SCALING = dict(n_seeds=1, rounds=0, n_new=1, max_run_s=5.0, n_grid=3)

# markov / causal: one sticky and one Dirichlet chain, theory on 7 P, one seed at width inf
_BEYOND = dict(
    task=dict(L=6, V=3, n_test=64),
    rho=[0.0, 0.5],
    alpha=[1.0],
    seeds=1,
    width="inf",
    P=[8, 32, 128],
    n_P=7,
    spaces=["full"],
)

_PRESET = dict(
    main=dict(
        P_linear=[1, 2, 4, 8],
        P_pool=[2, 4, 8],
        P_copy=[4, 8],
        sgld_linear=[2, 8],
        sgld_softmax=[4, 8],
        rounds=0,
        n_new=1,
        max_run_s=5.0,
        theory_P=[0.1, 200.0],
    ),
    hysteresis=dict(rounds=1, n_new=1, P_linear_copy=[2, 8]),
    scaling_L=dict(values=[5, 6], measure=["P_aG"], **_SCALING),  # L = 6 comes from main
    scaling_V=dict(values=[2, 3], measure=["P_c1", "P_cG"], **_SCALING),  # V = 3 from main
    markov=_BEYOND,
    markov_finite=_BEYOND,
    causal=_BEYOND,
    markov_dirichlet=dict(_BEYOND, rho=[]),
    markov_follow=dict(
        _BEYOND,
        rho=[0.5],
        alpha=[],
        networks_rho=[],
        spaces=[],
        follow=[dict(rho=[0.5], P=[16, 24, 32], seeds=1)],
    ),
    causal_follow=dict(
        _BEYOND,
        rho=[0.5],
        alpha=[],
        networks_rho=[],
        spaces=[],
        follow=[dict(rho=[0.5], P=[16, 24, 32], seeds=1)],
    ),
    markov_cg=dict(_BEYOND, rho=[0.5], alpha=[], spaces=[], starts=["linear"]),
    causal_inf=dict(
        _BEYOND, rho=[0.5], alpha=[], networks_rho=[], spaces=[], width_inf=dict(rho=[0.5], seeds=1)
    ),
    reduction=dict(base="tiny", widths=[16, 64, float("inf")], parts=["width", "polish"]),
    markov_transition=dict(
        task=dict(L=4, V=3, n_test=32),
        rho=[0.0, 0.5],
        seeds=1,  # no theory
        P_grid=[8, 16, 32, 64],
        theory=False,
        ti=dict(
            ts=(0.0, 0.5, 1.0),
            n_chains=2,
            n_iter=32,
            n_adapt=8,
            n_ref=200,
            smc_particles=8,
            smc_max_steps=20,
        ),
    ),
)

# posterior-branches, plain preset only (seconds, not physics): configs/posterior.py's TINY
# engine has no copy minimum, so its threshold splits the pooling fits (aG 0.01 at P = 4, 0.04 at
# P = 8) to exercise both branches
_BRANCHES = dict(
    mc="tiny",
    n_seeds=2,
    a_thr=0.03,
    a_alt=(0.02, 0.05),
    discard=0.25,
    sweeps=dict(pool=[[2, 4, 8]], copy=[[4, 8]]),
    groups=[[4, 8]],
    ts=[0.0, 0.5, 1.0],
    n_chains=2,
    n_ref=500,
    hmc=dict(n_iter=40, thin=2, step_size=0.35, n_adapt=20),
    blocks=[
        dict(seeds=[2], n_seeds_total=3, groups=[[8]], sweeps=dict(pool=[[4, 8]], copy=[[4, 8]]))
    ],
)

# posterior-smc (seconds, not physics): the TINY engine, posterior_branches' tiny references
_SMC = dict(
    branches="tiny",
    block=0,
    n_seeds=3,
    groups=[[4, 8]],
    a_thr=0.03,
    n_particles=24,
    n_pilot=12,
    n_reps=2,
    ess_target=0.5,
    n_moves=2,
    n_leap=3,
    step_size=0.3,
    max_steps=60,
)

# the posterior artefacts on configs/posterior.py's TINY engine (``mc``), both presets
_POSTERIOR = dict(mc="tiny")
_MULTISTART = dict(mc="tiny", P=[1, 2, 4, 8], n_seeds=2)  # plain only
# the embeddings artefacts (paper preset only): seconds-sized tasks and runs
_EMBEDDINGS = dict(config="tiny")  # configs/embeddings.py's TINY
_PROTOCOL = dict(
    # (attention, width, P, seed, epochs, train_embeddings)
    runs=[
        ("softmax", 16, 8, 0, 40, True),
        ("linear", 16, 8, 0, 40, True),
        ("softmax", 16, 8, 0, 40, False),
    ],
    every=20,
    task=dict(L=6, V=3, n_test=32),
    solver=dict(lr=1e-3, max_epochs=40, min_epochs=40),
)
_EMB_POSTERIOR = dict(
    widths=[8, 32], P=[8], extra_P=None, n_warmup=30, n_samples=20, task=dict(L=4, V=2)
)

CONFIG = dict(
    engine=ENGINE,
    softmax_solver=dict(max_epochs=100, min_epochs=20),
    sgld=dict(eta_max=1e-3, eta_seq=5e-3, n_steps=40, burn_in=10, thin=5, n_chains=2, seed=1),
    cost=dict(compile_s=10.0, seq_epoch_us=8.0),
    presets=dict(
        plain=dict(
            _PRESET,
            posterior=_POSTERIOR,
            posterior_branches=_BRANCHES,
            posterior_smc=_SMC,
            multistart=_MULTISTART,
        ),
        paper=dict(
            _PRESET,
            posterior=_POSTERIOR,
            embeddings=_EMBEDDINGS,
            embeddings_protocol=_PROTOCOL,
            embeddings_posterior=_EMB_POSTERIOR,
        ),
    ),
)
