"""``python -m experiments embeddings --preset paper``: the joint MAP with trained embeddings
versus width (the modes its ``config`` setting names: ``full`` in the default mode, ``tiny``).

On top of the ``paper-map`` preset (L = 25, V = 5, sigma^2 = chi = 30, per-position likelihood,
A = s / L, the exact float64 solver of the reduced engine); each non-default value says why.
"""

FULL = dict(
    # the widths asked for (64 ... the paper's 10,000); the joint MAP costs the same at any width
    # (the paper's width first: a run cut short by its budget still has it; --widths picks some)
    widths=[10_000, 64, 1000, 256],
    # 2 seeds: a run is solved 3 (linear) or 5 (softmax) times (quenched per start, joint per
    # start) and the experiment's budget is ~25 CPU-minutes on a shared 2-core machine
    n_seeds=2,
    # softmax: quenched EK P*_aG = 613 (spinodals 543, 853); the upper decades for the joint
    # MAP (a width-256 probe with the copy start sat at aG = 0 up to P = 3,000)
    P_softmax=[200, 400, 600, 800, 1200, 2000, 3200],
    # linear: EK P*_c1 = 104, P*_cG = 2,125 (psi = 1/2 at 2,448)
    P_linear=[50, 100, 200, 400, 800, 1600, 2400, 3200],
    # the realised Gram of the embeddings drawn at each width (paper-map's default; N (V + L)
    # = 3e5 numbers at the largest width)
    gram="realised",
    # a softmax run copies when aG jumps by more than this between neighbouring P
    # (compare.pstar's rule: 0.1 sqrt(L) = 0.5 at L = 25)
    min_jump=0.5,
)

TINY = dict(
    widths=[16, 64],  # >= V + L = 9
    n_seeds=1,
    P_softmax=[8, 32, 128],
    P_linear=[8, 32, 128],
    gram="realised",
    min_jump=0.1,
    task=dict(L=6, V=3, n_test=32),  # seconds, not physics
)

CONFIGS = {"full": FULL, "tiny": TINY}
