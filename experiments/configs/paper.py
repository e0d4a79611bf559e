"""The default mode (``python -m experiments all``): the paper's configuration on a CPU.

Width 10,000 (the paper's d_model) with quenched embeddings, through the exact width reduction
(``engine='reduced'``, docs/theory.md §2c: a width-N head with frozen embeddings is exactly a width-
(V+L) head on the root of its realised embedding Gram), fitted by the exact float64 MAP solver
(``ExactConfig``: quasi-Newton to |grad U| <= 1e-9 max(1, |U|), the smallest Hessian
eigenvalue reported), 10 seeds, both softmax branches started explicitly (pooling: zero logits;
copy: ``init_copy_logit * G*``). Width infinity (the prior Gram, ``C = Sigma``) and, for the
width table, widths 1,024 and 128 (their realised Grams) are measured the same way as extra
columns (``extra_widths``).

Not the paper's Adam / SGLD dynamics: those stay the ``--full-network`` mode (``full.py``, a GPU
job). No posterior sampling here (the posterior artefact is ``experiments/posterior.py``).
Grids are the ``--full-network`` grids (the paper's P range), refined near each located P*.
"""

import json
import math
from pathlib import Path

ENGINE = dict(
    model=dict(width=10_000, engine="reduced", gram="realised"),  # the paper's width, exactly
    train=dict(train_embeddings=False),  # quenched: required by the exact reduction (theory §2)
    solver=dict(kind="exact"),  # the MAP itself, not an optimiser's approximation of it
    sweep=dict(n_seeds=10, padding="max"),  # the paper's 10 seeds
)

# the cost model groups P into compiled programs: a group's runs are padded to its largest P, and
# the exact solver's time grows with it (measured: 4 P padded to 4,096 x 10 seeds, linear, paper
# preset, 340 s on this shared CPU, i.e. ~0.1 us per sequence per "epoch" with the preset's
# max_epochs = 20,000 standing in for the solver's iterations, which it does not use)
COST = dict(compile_s=15.0, seq_epoch_us=0.1)

# one refinement round of 2 new P per bracket: the exact solver takes ~5-50 s per P x 10 seeds on
# this shared 2-core CPU (more at large P), and every P* is located per seed anyway
# extra widths: infinity (the prior's Gram) and the width table's 1,024 and 128 (the realised
# Gram of those widths, Wishart-distributed; 128 is the old --quick width)
_MAIN_COMMON = dict(rounds=1, n_new=2, max_run_s=1e9, extra_widths=[math.inf, 1024, 128])

# scaling: every P* of the paper's laws (P_c1 ~ V^2, P_cG ~ L^{3/2} V^{1/2}, P_aG ~ L ln^2 L) at 5
# values of each axis (the preset's own point from main, 10 seeds; the others 3 seeds, one
# refinement round). Grids: ~n_grid points over [P*/f, f P*] around each EK P* (f = spread)
# (3 seeds per point: the exponent's CI comes from the 5 points' scatter). The paper preset's
# measured P_c1 and P_cG sit within 5% of EK (main), so a narrow grid brackets them; P_cG's runs
# are the expensive ones (P ~ 2 P_cG ~ 10^4 at L = 40)
_SCALING = dict(
    measure=["P_c1", "P_cG", "P_aG"],
    n_seeds=3,
    rounds=1,
    n_new=2,
    max_run_s=1e9,
    n_grid=5,
    spread={"P_c1": 2.5, "P_cG": 2.0, "P_aG": 1.5},
)
# paper preset: 2 seeds per point and no finite-width theory per point (each costs ~1 min here;
# at N = 10,000 the finite theory sits within 1% of EK at the main point, see main_paper.json):
# the cold suite's time on this shared CPU
_SCALING_PAPER = {**_SCALING, "n_seeds": 2, "finite": False}
# plain conventions: P_c1 < 1 (below any training set) at every point, so not measured; the
# measured P_cG is ~2.3x the EK value (main), so its grid is wide (cheap: P ~ 10)
_SCALING_PLAIN = {
    **_SCALING,
    "measure": ["P_cG", "P_aG"],
    "n_grid": 7,
    "spread": {"P_cG": 6.0, "P_aG": 1.5},
}
# markov / causal (experiments/beyond.py, its DEFAULTS otherwise; docs/reports/markov.md): the
# exact MAP at width 10,000 on the DEFAULTS grid (32 ... 3,500), 5 seeds, every rho; the theory's
# full L x L minimiser on 31 P (the ansatz's coverage is reported by the full space itself)
_RHOS = [0.0, 0.25, 0.5, 0.75, 0.9]
_BEYOND = dict(rho=_RHOS, seeds=5, spaces=["full"], n_P=31)
# P*_aG: the softmax coexistence window (EK: 569-835 at rho = 0) and the jumps at rho >= 0.75,
# resolved on finer P (5 seeds; no continuation in P, so the main runs are found again: checked)
_MARKOV = dict(
    _BEYOND,
    extra=[
        dict(attention="softmax", P=[600, 650, 750, 850, 1200], seeds=5, rho=_RHOS),
        dict(attention="softmax", P=[2700, 3000], seeds=5, rho=[0.9]),
    ],
    width_inf=dict(rho=[0.0, 0.9], seeds=2),
)
_CAUSAL = _BEYOND
# markov-dirichlet: the Dirichlet family (each transition row ~ Dirichlet(alpha 1_V), chain_seed
# 0), no mask, the same networks, softmax extras and theory as _MARKOV's rho rows (EK windows:
# [583, 754] at alpha = 0.5, [569, 835] at 5; docs/reports/markov.md)
_DIRICHLET = dict(
    _BEYOND,
    rho=[],
    alpha=[0.5, 5.0],
    chain_seed=0,
    extra=[dict(attention="softmax", P=[600, 650, 750, 850, 1200], seeds=5, alpha=[0.5, 5.0])],
)
# causal-inf: networks at width infinity (the prior's Gram) with the mask, beside causal's rows
# (no theory: causal.json holds it for these rows)
_CAUSAL_INF = dict(
    _BEYOND, rho=[0.0, 0.9], networks_rho=[], spaces=[], width_inf=dict(rho=[0.0, 0.9], seeds=3)
)
# markov-follow / causal-follow: softmax branches followed up (from the pool start at the grid's
# bottom) and down (from the copy start at its top) on fine grids around the steps of markov.json /
# causal.json (experiments/beyond_follow.py), 5 seeds; rho = 0: the control (coexistence known)
_FOLLOW = dict(_BEYOND, networks_rho=[], spaces=[])
_MARKOV_FOLLOW = dict(
    _FOLLOW,
    rho=[0.0, 0.75, 0.9],
    follow=[
        dict(rho=[0.0], P=list(range(540, 821, 20)), seeds=5),
        dict(rho=[0.75], P=list(range(975, 1226, 25)), seeds=5),
        dict(rho=[0.9], P=list(range(2200, 2751, 50)), seeds=5),
    ],
)
_CAUSAL_FOLLOW = dict(
    _FOLLOW,
    rho=[0.9],
    follow=[
        dict(
            rho=[0.9],
            seeds=5,
            P=[700, 850, 1000, 1200, 1400, 1700, 2000, 2250, 2500, 2750, 3000, 3500],
        )
    ],
)
# markov-cg: P*_cG above markov.json's grid top (3,500): linear networks only, continued in P over
# one grid from 32 to 14,000 (a sweep started at 3,500 lands in higher minima: markov.md), 3 seeds
# (~13-40 min per rho on one core of a loaded 2-core machine; the Dirichlet chains not run)
_MARKOV_CG = dict(
    _BEYOND,
    rho=[0.25, 0.5, 0.75, 0.9],
    spaces=[],
    starts=["linear"],
    seeds=3,
    P=[
        32,
        64,
        100,
        160,
        256,
        400,
        560,
        700,
        1000,
        1500,
        2000,
        2700,
        3500,
        4500,
        6000,
        8000,
        10500,
        14000,
    ],
)
# plain conventions (A = s, per-sequence likelihood): every EK P* ~ 1/L of paper-map's
_BEYOND_PLAIN = dict(
    rho=[0.0, 0.5, 0.9],
    seeds=5,
    spaces=["full"],
    n_P=31,
    theory_P=[0.05, 2000.0],
    P=[2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 128, 256],
)


def _width_reference() -> dict:
    """The width table's reference per preset: what docs/reports/results.md reported at width 128
    before the default mode existed (``--quick``: full-width muP Adam, commit bb8fc14), read from
    the committed width tables (``docs/reports/results/width_*.json``, ``reference_128``), so the
    table can say how much of each disagreement was finite width."""
    results = Path(__file__).resolve().parents[2] / "docs" / "reports" / "results"
    files = {p: results / f"width_{p}.json" for p in ("plain", "paper")}
    return {
        p: json.loads(f.read_text()).get("reference_128") for p, f in files.items() if f.exists()
    }


# posterior-branches (experiments/posterior_branches.py): the reduced engine of configs/posterior.py
# (``mc``), its quick mode, at width 10,000; method and numbers: docs/reports/posterior_branches.md
_BRANCHES = dict(
    mc="quick",
    n_seeds=3,
    a_thr=1.0,
    a_alt=(0.5, 1.5),
    # the reference MAP sweeps: posterior.py's 3-seed TI and copy-start sweeps, plus copy starts
    sweeps=dict(
        pool=[[8, 12, 16, 20, 22, 24, 26, 28, 32]],
        copy=[[22, 24, 26, 28, 32], [24, 48], [40, 64], [52, 56, 60]],
    ),
    # one compiled program per group; [52, 56], [60]: a finer grid inside the bracket (48, 64)
    groups=[[22, 24, 28, 32], [40, 48], [64], [52, 56], [60]],
    ts=[0.0, 0.1, 0.25, 0.45, 0.7, 1.0],
    # 2 chains per rung, the first quarter of the kept iterations dropped: ~25 CPU-min
    n_chains=2,
    n_ref=4000,
    discard=0.25,
    hmc=dict(n_iter=360, thin=2, step_size=0.35, n_adapt=100),
    # seeds 3-9 where the crossing is bracketed, from 10-seed sweeps (seeds 0-2: same data);
    # the pooling start jumps to copying above P ~ 34, so its references lie at P <= 32
    blocks=[
        dict(
            seeds=list(range(3, 10)),
            n_seeds_total=10,
            groups=[[40, 48], [52, 56]],
            sweeps=dict(pool=[[24, 28, 32, 40, 48, 52, 56]], copy=[[40, 48, 52, 56]]),
        )
    ],
)
# Paper preset: every EK P* is L = 25 times the plain one, so the plain crossing 49.3 predicts
# ~1,233: P = 1,200, 1,300 (25 x 48, 25 x 52). A run costs ~33x a plain one. Pool-start MAPs
# exist up to ~830; the copy-start sweep holds the copy references at 1,200 and 1,300.
_BRANCH_SWEEPS_PAPER = dict(
    pool=[[560, 600, 640, 700, 800]], copy=[[560, 600, 640, 700, 800, 1200, 1300]]
)
_BRANCHES_PAPER = dict(
    _BRANCHES,
    n_seeds=2,
    sweeps=_BRANCH_SWEEPS_PAPER,
    groups=[[1200], [1300]],
    # seeds 2-3 (groups 100, 101: a 4-seed sweep's data), then from 10-seed sweeps seeds 4-5
    # (groups 200, 201), 6 (300, 301), 7 (400, 401), 8-9 (500, 501)
    blocks=[
        dict(seeds=[2, 3], n_seeds_total=4, groups=[[1200], [1300]], sweeps=_BRANCH_SWEEPS_PAPER),
        *(
            dict(
                seeds=s,
                n_seeds_total=10,
                groups=[[1200], [1300]],
                sweeps=dict(pool=[[700, 800]], copy=[[1200, 1300]]),
            )
            for s in ([4, 5], [6], [7], [8, 9])
        ),
    ],
)


# the posterior (experiments/posterior.py): configs/posterior.py's QUICK engine (``mc``), both
# presets; method and numbers: docs/reports/posterior.md
_POSTERIOR = dict(mc="quick")
# posterior-smc (plain only): tempered SMC across the window on posterior_branches' references
# (its ``branches`` mode, ``block`` of seeds, ``a_thr``); docs/reports/posterior_branches.md.
# block 0: posterior_branches' 10-seed sweeps; P = 48, 52: the TI's bracketing points (10 seeds
# there); 49, 50: inside, where the TI puts every seed's crossing (49.0-49.5). 62 CPU-min in all
_SMC = dict(
    branches="paper",
    block=0,
    n_seeds=10,
    groups=[[48, 49], [50, 52]],
    a_thr=1.0,
    n_particles=128,
    n_pilot=64,
    n_reps=2,
    ess_target=0.5,
    n_moves=4,
    n_leap=5,
    step_size=0.3,
    max_steps=200,
)
# multistart: P grids around each preset's linear transitions (EK P*_cG: plain 3.4, paper
# 2,125), 10 seeds, the QUICK engine (reduced, width 10,000); docs/reports/multistart.md
_MULTISTART_PLAIN = dict(
    mc="quick", n_seeds=10, P=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 20, 24, 32, 64]
)
_MULTISTART_PAPER = dict(
    mc="quick", n_seeds=10, P=[128, 256, 512, 768, 1062, 1500, 2000, 2500, 3000, 4000, 6000]
)
# the embeddings artefacts (paper preset only; docs/reports/embeddings*.md): the joint MAP
# (configs/embeddings.py's FULL), the paper's Adam protocol, the posterior of every weight
_EMBEDDINGS = dict(config="full")
# runs: (attention, width, P, seed, epochs, train_embeddings), in this order (cache per run),
# cut to fit ~30 CPU-minutes on the shared 2-core machine; every: epochs between Gram measurements
_PROTOCOL = dict(
    runs=[
        ("softmax", 2000, 300, 0, 2000, True),
        ("softmax", 2000, 600, 0, 2000, True),
        ("softmax", 2000, 1000, 0, 2000, True),
        ("linear", 2000, 160, 0, 2000, True),
        ("linear", 2000, 2000, 0, 2000, True),
        ("softmax", 2000, 1000, 0, 2000, False),
        ("softmax", 10_000, 1000, 0, 200, True),
        ("softmax", 2000, 1000, 1, 2000, True),
        ("linear", 2000, 2000, 1, 2000, True),
        ("linear", 2000, 2000, 0, 2000, False),
    ],
    every=100,
)
# 4 NUTS chains of 200 warm-up + 200 draws; extra_P: where the quenched posterior copies (aG ~
# 1.6 at N = 4,096), at the two largest widths only
_EMB_POSTERIOR = dict(
    widths=[16, 64, 256, 4096], P=[96, 192], extra_P=384, n_warmup=200, n_samples=200
)

CONFIG = dict(
    width_reference=_width_reference(),
    engine=ENGINE,
    softmax_solver={},
    # linear attention has several minima near its transitions; one prior-draw start missed the
    # lowest in up to 9/10 seeds there (docs/reports/multistart.md). The continuation in P adds each
    # run's neighbours' kept fits as starts (ascending, then descending; ~2x the solves) and
    # keeps the lowest U: on the multi-start grids it reached the lowest of 6 starts in every run
    linear_solver=dict(continuation=True),
    sgld=None,
    cost=COST,
    presets=dict(
        plain=dict(
            main=dict(
                # EK: P_c1 ~ 0.17 (below any P), P_cG ~ 3.4, P_aG ~ 24.5 [21.7, 34.1]
                # the --full-network grids thinned where no P* is (cost, see _MAIN_COMMON)
                P_linear=[1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256],
                P_pool=[12, 16, 20, 24, 28, 32, 40, 64],
                P_copy=[16, 20, 24, 28, 32, 40],
                theory_P=[0.05, 2000.0],
                **_MAIN_COMMON,
            ),
            hysteresis=dict(rounds=2, n_new=2, P_linear_copy=[1, 2, 3, 4, 6, 8, 16, 32]),
            scaling_L=dict(values=[10, 16, 25, 40, 60], **_SCALING_PLAIN),
            scaling_V=dict(values=[2, 3, 5, 8, 12], **_SCALING_PLAIN),
            posterior=_POSTERIOR,
            posterior_branches=_BRANCHES,
            posterior_smc=_SMC,
            multistart=_MULTISTART_PLAIN,
            markov=_BEYOND_PLAIN,
            causal=_BEYOND_PLAIN,
            # the Bayesian P*_aG; rho 0.9: a MAP grid over the networks'
            # MAP step (90.5, not the EK 37.2), top 200 (4 x top fits the 4 GiB default budget)
            markov_transition=dict(
                rho=[0.0, 0.5, 0.9],
                widths=["inf"],
                seeds=3,
                P_grid={0.9: [40, 47, 55, 64, 75, 88, 103, 120, 140, 160, 180, 200]},
                # the settings it was measured with (TISettings' defaults before 2026-12)
                ti=dict(ts=(0.0, 0.1, 0.3, 0.6, 1.0), n_ref=2000, smc_particles=48, exact_t0=False),
                anchored=False,
            ),
            # the small default (plain conventions only); NUTS (~16 min) kept from the JSON
            reduction=dict(reuse_nuts=True),
        ),
        paper=dict(
            main=dict(
                # EK: P_c1 ~ 104, P_cG ~ 2125, P_aG ~ 613 [543, 853]; the paper: 23 / 322 / 300
                # the --full-network grids thinned where no P* is (the exact solver's time grows
                # with P: ~85 s per P = 4,096 x 10 seeds on this shared CPU)
                P_linear=[16, 32, 64, 96, 128, 200, 322, 512, 1000, 2000, 4000],
                P_pool=[256, 400, 512, 640, 800, 1000],
                P_copy=[400, 512, 640, 800],
                theory_P=[2.0, 10000.0],
                # each width of this preset is ~10 min on the shared CPU
                **_MAIN_COMMON,
            ),
            hysteresis=dict(rounds=2, n_new=2, P_linear_copy=[64, 128, 256, 512, 1000, 2000]),
            # L <= 32: P_cG's runs grow like L^{1.44} in P and L^2 in cost per sequence (L = 40
            # alone would be ~8 min of the cold suite on this shared CPU); L >= 10: at L = 8 the
            # EK softmax transition is no longer first order
            scaling_L=dict(values=[10, 13, 18, 25, 32], **_SCALING_PAPER),
            scaling_V=dict(values=[2, 3, 5, 8, 12], **_SCALING_PAPER),
            posterior=_POSTERIOR,
            posterior_branches=_BRANCHES_PAPER,
            multistart=_MULTISTART_PAPER,
            embeddings=_EMBEDDINGS,
            embeddings_protocol=_PROTOCOL,
            embeddings_posterior=_EMB_POSTERIOR,
            markov=_MARKOV,
            causal=_CAUSAL,
            markov_dirichlet=_DIRICHLET,
            causal_inf=_CAUSAL_INF,
            markov_follow=_MARKOV_FOLLOW,
            markov_cg=_MARKOV_CG,
            markov_finite=dict(_BEYOND, alpha=[0.5, 5.0]),  # the chains of markov, dirichlet
            causal_follow=_CAUSAL_FOLLOW,
        ),
    ),
)
