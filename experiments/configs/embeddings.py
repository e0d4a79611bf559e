"""``python -m experiments.embeddings``: trained against quenched embeddings (issue 13, item 5).

On top of ``ch.SMALL`` (the plain preset: L = 25, V = 5, sigma^2 = chi = 30, per-sequence
likelihood, A = s; its training protocol: muP Adam, lr 1, cosine, 1,000-4,000 epochs, early
stop on the training loss with patience 200). Every protocol of a mode uses the same seeds,
hence the same datasets (nested in P) and the same initial embeddings and weights:

* ``trained``: full network, ``train_embeddings=True`` (the joint MAP over all weights);
* ``quenched``: full network, ``train_embeddings=False`` (docs/theory.md §2's MAP protocol);
* ``exact``: the quenched exact MAP, ``engine='reduced'``, ``gram='realised'`` (the same
  embeddings as the full network's seed, float64 L-BFGS, docs/theory.md §2c): it separates Adam's
  failures from the effect of training the embeddings.

Each non-default value below says why.
"""

FULL = dict(
    engine=dict(
        # the largest width this CPU allows for the full network at these grids: a run costs
        # ~O(N^2) per epoch in W^G (measured ~11 s for a 4,000-epoch softmax run at P = 256)
        model=dict(width=256),  # SMALL: 128
        # runs grouped by P rounded up to a power of two (SMALL pads every run to P_max): the
        # grids below span 1-256, and padding to 256 would cost ~4x
        sweep=dict(padding="pow2"),
    ),
    # 2 seeds per P (the brief: 1-2); cost ~ P, so the whole mode stays ~10 CPU-min
    n_seeds=2,
    # EK MAP P*_c1 = 0.17 (below any P), P*_cG = 3.40 (psi = 1/2 at 3.92). The upper decade is
    # for the trained network: probes (1 seed, 4,000 epochs) copied at P = 128 and not at
    # P = 64 (the embeddings shrink under their prior, whose energy N (V + L) / 2 = 3,840 at
    # width 256 dwarfs the data term at small P)
    P_linear=[1, 2, 3, 4, 6, 8, 16, 32, 48, 64, 96, 128, 192, 256],
    # EK MAP P*_aG = 24.5, spinodals [21.7, 34.1]; the upper part for the trained network
    # (probe: its copy start fell to pooling at P = 64 and stayed copying at P = 256)
    P_softmax=[8, 12, 16, 20, 24, 28, 32, 40, 48, 64, 96, 128, 192, 256],
    # softmax: zero logits (the pooling branch) and the copy init (train.init_attention)
    softmax_inits=["zero", "copy"],
    # an Adam run counts as converged when its gradient in the directions that change the
    # function (grad_norm_span) is below this times max(1, |U|) (U without the constant energy
    # of quenched embeddings); whether early stopping fired is reported next to it
    grad_rtol=1e-3,
    # two softmax starts sit on distinct branches at a P when their aG differ by more than this
    # (as experiments.posterior does); only such P enter the branch crossing P*_aG
    distinct_aG=0.5,
    # linear P*_c1 proxy: the seed-mean gauge-fixed r passes this level (the onset of c1; the
    # EK P*_c1 = 0.17 is below the grid, so a quenched r is already O(1) at P = 1)
    r_level=0.05,
    # diagnostic: the trained protocol with 4x SMALL's longest schedule and no early stop
    # (min_epochs = max_epochs; the cosine decay stretched to it). SMALL's early stop (patience
    # 200 on the training loss) stops every trained linear run at min_epochs = 1,000 with a
    # large gradient (the loss plateaus while the embeddings are still shrinking); a 1-seed
    # probe at 4,000 epochs no longer copied at P = 64. Linear only: softmax runs are
    # converged under SMALL's schedule (gradient test above), so none are repeated. The grid is
    # the main one from 2 (the trained c1 onset lies at 6-8 under SMALL's schedule) with 12, 24
    # and 80 added near the trained c1 onset and P*_cG
    long=dict(
        P_linear=[2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 192, 256],
        P_softmax=[],
        softmax_inits=[],
        n_seeds=2,
        train=dict(min_epochs=16_000, max_epochs=16_000),
    ),
)

TINY = dict(
    engine=dict(
        task=dict(L=6, V=3, n_test=32),  # seconds, not physics (SMALL: L = 25, V = 5)
        model=dict(width=16),  # >= V + L = 9 for the realised Gram of the exact MAP
        # TINY's protocol (SMALL's 1,000-4,000 epochs would take minutes)
        train=dict(lr=2e-2, min_epochs=20, max_epochs=200, patience=20, log_every=5),
        sweep=dict(padding="pow2"),
    ),
    n_seeds=2,
    P_linear=[1, 2, 4, 8],
    P_softmax=[2, 4, 8],
    softmax_inits=["zero", "copy"],
    grad_rtol=1e-3,
    distinct_aG=0.5,
    r_level=0.05,
)

CONFIGS = {"full": FULL, "tiny": TINY}
