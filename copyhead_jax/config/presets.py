"""The named presets: ``PAPER``, ``PAPER_CHI_LIK``, ``PAPER_MAP``, ``PLAIN``, ``SMALL``, ``TINY``;
:func:`preset`.

Comments mark the values that differ from the dataclass defaults of :mod:`.sections`.
"""

from __future__ import annotations

from .._checks import check_choice
from .sections import Config, ModelConfig, PosteriorConfig, SweepConfig, TaskConfig, TrainConfig
from .solvers import AdamConfig, AutoConfig, ExactConfig

PAPER = Config(
    task=TaskConfig(L=25, V=5),
    model=ModelConfig(width=10_000),  # d_model = 10,000; sigma^2 = chi = 30 are the defaults
    posterior=PosteriorConfig(likelihood="per_position"),  # paper preset of docs/theory.md §2b
    # paper: every weight trained by Adam, lr 1e-5 (AutoConfig: exact under the reduced engine)
    train=TrainConfig(train_embeddings=True, solver=AutoConfig(adam=AdamConfig(lr=1e-5))),
    sweep=SweepConfig(
        P=(4, 8, 16, 23, 32, 64, 128, 200, 256, 300, 322, 400, 512, 640, 800, 1000), n_seeds=10
    ),
)

#: The paper with chi in the likelihood only (docs/theory.md §2b): readout prior sigma_O^2 / N.
PAPER_CHI_LIK = PAPER.replace(posterior=dict(chi_in_readout_prior=False))

#: The plain reading of the loss 1/2 sum ||f - y||^2 (docs/theory.md §2b): per-sequence noise,
#: A = s.
PLAIN = PAPER.replace(model=dict(linear_scale="none"), posterior=dict(likelihood="per_sequence"))

#: Laptop-sized (minutes on a CPU): the plain conventions put every P* of L=25, V=5 below
#: P ~ 40 (all P* scale by L under the per-position likelihood), width 128, quenched embeddings.
SMALL = PLAIN.replace(
    model=dict(width=128),
    train=dict(train_embeddings=False),  # quenched embeddings (docs/theory.md §2)
    solver=dict(  # the Adam numbers of AutoConfig (the reduced engine: the exact solver)
        lr=1.0,  # base lr of the muP per-block scaling (W^G moves at lr/N, the rest lr/sqrt(N))
        lr_scaling="mup",
        schedule="cosine",
        min_epochs=1000,
        max_epochs=4000,  # linear attention needs ~4k epochs to settle at this lr
        patience=200,
        rel_tol=1e-5,
    ),
    sweep=dict(P=(2, 4, 8, 16, 24, 32, 64, 128), n_seeds=2),
)

#: The README's main job: the paper's conventions at its width, quenched, through the exact width
#: reduction (docs/theory.md §2c) and the exact float64 MAP; a grid that brackets the EK P* of
#: L=25, V=5 (P*_c1 ~ 104, P*_aG ~ 613 in [543, 853], P*_cG ~ 2,125). A couple of CPU minutes.
PAPER_MAP = PAPER.replace(
    model=dict(engine="reduced"),  # the exact width-(V+L) image of the width-10,000 head
    train=dict(
        train_embeddings=False,  # quenched: needed by the reduction
        # linear attention has several minima near its transitions: also start each run from
        # its neighbouring P's fits and keep the lowest U (docs/reports/multistart.md)
        solver=ExactConfig(continuation=True),
    ),
    sweep=dict(
        P=(32, 64, 80, 96, 112, 128, 160, 256, 400, 512, 560, 600, 650, 700, 800, 1000, 1500,
           1750, 2000, 2250, 2500, 3000, 4000),  # fmt: skip
        n_seeds=3,  # enough for a bootstrap interval over seeds
    ),
)

#: Seconds-sized, for tests and smoke runs.
TINY = Config(
    task=TaskConfig(L=6, V=3, n_test=64),
    model=ModelConfig(width=16),
    posterior=PosteriorConfig(),
    train=TrainConfig(
        solver=AutoConfig(adam=AdamConfig(
            lr=2e-2, lr_scaling="mup", schedule="cosine", min_epochs=20, max_epochs=200,
            patience=20,
        )),
        log_every=5,
        train_embeddings=False,
    ),
    sweep=SweepConfig(P=(2, 4, 8), n_seeds=2),
)

PRESETS = {
    "paper": PAPER,
    "paper-chi-lik": PAPER_CHI_LIK,
    "paper-map": PAPER_MAP,
    "plain": PLAIN,
    "small": SMALL,
    "tiny": TINY,
}


def preset(name: str) -> Config:
    """The named preset (one of :data:`PRESETS`)."""
    return PRESETS[check_choice("preset", name, PRESETS)]


__all__ = ["PAPER", "PAPER_CHI_LIK", "PAPER_MAP", "PLAIN", "PRESETS", "SMALL", "TINY", "preset"]
