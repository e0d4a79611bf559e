"""The named presets: ``PAPER``, ``PAPER_CHI_LIK``, ``PLAIN``, ``SMALL``, ``TINY``, :func:`preset`.

Comments mark the values that differ from the dataclass defaults of :mod:`.config`, which
re-exports every name here (``from copyhead_jax.config import SMALL`` keeps working).
"""

from __future__ import annotations

from ._checks import check_choice
from .config import Config, ModelConfig, PosteriorConfig, SweepConfig, TaskConfig, TrainConfig

PAPER = Config(
    task=TaskConfig(L=25, V=5),
    model=ModelConfig(width=10_000),  # d_model = 10,000; sigma^2 = chi = 30 are the defaults
    posterior=PosteriorConfig(likelihood="per_position"),  # paper preset of docs/theory.md §2b
    train=TrainConfig(lr=1e-5, train_embeddings=True),  # paper: every weight trained, lr 1e-5
    sweep=SweepConfig(
        P=(4, 8, 16, 23, 32, 64, 128, 200, 256, 300, 322, 400, 512, 640, 800, 1000), n_seeds=10
    ),
)

#: The paper with chi in the likelihood only (docs/theory.md §2b): readout prior sigma_O^2 / N.
PAPER_CHI_LIK = PAPER.replace(posterior=dict(chi_in_readout_prior=False))

#: The plain reading of the loss 1/2 sum ||f - y||^2 (docs/theory.md §2b): per-sequence noise, A = s.
PLAIN = PAPER.replace(model=dict(linear_scale="none"), posterior=dict(likelihood="per_sequence"))

#: Laptop-sized (minutes on a CPU): the plain conventions put every P* of L=25, V=5 below
#: P ~ 40 (all P* scale by L under the per-position likelihood), width 128, quenched embeddings.
SMALL = PLAIN.replace(
    model=dict(width=128),
    train=dict(
        lr=1.0,  # base lr of the muP per-block scaling (W^G moves at lr/N, the rest lr/sqrt(N))
        lr_scaling="mup",
        schedule="cosine",
        min_epochs=1000,
        max_epochs=4000,  # linear attention needs ~4k epochs to settle at this lr
        patience=200,
        rel_tol=1e-5,
        train_embeddings=False,  # quenched embeddings (docs/theory.md §2)
    ),
    sweep=dict(P=(2, 4, 8, 16, 24, 32, 64, 128), n_seeds=2),
)

#: Seconds-sized, for tests and smoke runs.
TINY = Config(
    task=TaskConfig(L=6, V=3, n_test=64),
    model=ModelConfig(width=16),
    posterior=PosteriorConfig(),
    train=TrainConfig(
        lr=2e-2,
        lr_scaling="mup",
        schedule="cosine",
        min_epochs=20,
        max_epochs=200,
        patience=20,
        log_every=5,
        train_embeddings=False,
    ),
    sweep=SweepConfig(P=(2, 4, 8), n_seeds=2),
)

PRESETS = {
    "paper": PAPER, "paper_chi_lik": PAPER_CHI_LIK, "plain": PLAIN, "small": SMALL, "tiny": TINY,
}  # fmt: skip


def preset(name: str) -> Config:
    """The named preset (``paper``, ``paper_chi_lik``, ``plain``, ``small``, ``tiny``)."""
    return PRESETS[check_choice("preset", name, PRESETS)]


__all__ = ["PAPER", "PAPER_CHI_LIK", "PLAIN", "PRESETS", "SMALL", "TINY", "preset"]
