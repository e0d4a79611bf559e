"""The named presets (``PAPER``, ``PAPER_MAP``, ``SMALL``, ``TINY``: what a run does) and the
readings of the paper's conventions (:data:`READINGS`: what its loss and priors mean,
docs/theory.md §2b), two separate choices joined by :func:`preset`. ``PAPER_CHI_LIK`` and
``PLAIN`` are shorthands: the ``paper`` preset under the ``chi-lik`` and ``plain`` readings.

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

#: The readings of the paper's conventions (docs/theory.md §2b): each sets every convention field
#: (section -> field -> value), so a reading means the same on top of any preset. ``paper``: the
#: loss averaged over positions, A = s/L, chi in the noise and the readout prior; ``chi-lik``: as
#: ``paper`` with chi a likelihood precision only (readout prior sigma_O^2 / N); ``plain``: the
#: literal loss 1/2 sum ||f - y||^2 (per-sequence noise) and A = s.
READINGS: dict[str, dict[str, dict]] = {
    "paper": {
        "model": {"linear_scale": "inv_L"},
        "posterior": {
            "likelihood": "per_position",
            "chi_in_readout_prior": True,
            "chi_in_noise": True,
        },
    },
    "chi-lik": {
        "model": {"linear_scale": "inv_L"},
        "posterior": {
            "likelihood": "per_position",
            "chi_in_readout_prior": False,
            "chi_in_noise": True,
        },
    },
    "plain": {
        "model": {"linear_scale": "none"},
        "posterior": {
            "likelihood": "per_sequence",
            "chi_in_readout_prior": True,
            "chi_in_noise": True,
        },
    },
}


def with_reading(cfg: Config, reading: str) -> Config:
    """``cfg`` under the reading ``reading`` (one of :data:`READINGS`): its convention fields
    replaced, every other field kept."""
    return cfg.replace(**READINGS[check_choice("reading", reading, READINGS)])


def reading_of(cfg: Config) -> str | None:
    """The reading whose convention fields ``cfg`` has (None: no reading of :data:`READINGS`)."""
    for name, fields in READINGS.items():
        if all(
            getattr(getattr(cfg, sec), k) == v for sec, kv in fields.items() for k, v in kv.items()
        ):
            return name
    return None


#: The paper with chi in the likelihood only (docs/theory.md §2b): readout prior sigma_O^2 / N.
PAPER_CHI_LIK = with_reading(PAPER, "chi-lik")

#: The plain reading of the loss 1/2 sum ||f - y||^2 (docs/theory.md §2b): per-sequence noise,
#: A = s.
PLAIN = with_reading(PAPER, "plain")

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
        P=(
            32,
            64,
            80,
            96,
            112,
            128,
            160,
            256,
            400,
            512,
            560,
            600,
            650,
            700,
            800,
            1000,
            1500,
            1750,
            2000,
            2250,
            2500,
            3000,
            4000,
        ),
        n_seeds=3,  # enough for a bootstrap interval over seeds
    ),
)

#: Seconds-sized, for tests and smoke runs.
TINY = Config(
    task=TaskConfig(L=6, V=3, n_test=64),
    model=ModelConfig(width=16),
    posterior=PosteriorConfig(),
    train=TrainConfig(
        solver=AutoConfig(
            adam=AdamConfig(
                lr=2e-2,
                lr_scaling="mup",
                schedule="cosine",
                min_epochs=20,
                max_epochs=200,
                patience=20,
            )
        ),
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

#: The presets that are another preset under a reading: name -> (preset, reading).
SHORTHANDS = {"paper-chi-lik": ("paper", "chi-lik"), "plain": ("paper", "plain")}

#: The preset every command starts from unless told otherwise: the paper's configuration by
#: exact MAP (the README's main job, a couple of CPU minutes as a sweep; its theory is the
#: ``paper`` preset's).
DEFAULT_PRESET = "paper-map"


def preset(name: str, reading: str | None = None) -> Config:
    """The named preset (one of :data:`PRESETS`), under the reading ``reading`` (one of
    :data:`READINGS`) when given, else under its own."""
    cfg = PRESETS[check_choice("preset", name, PRESETS)]
    return cfg if reading is None else with_reading(cfg, reading)


def run_name(name: str, cfg: Config) -> str:
    """The name of a run of preset ``name`` whose config is ``cfg``: ``name`` when ``cfg`` has
    the preset's own reading (or none of :data:`READINGS`), else the preset under that reading,
    its shorthand where one exists (``paper`` under ``plain``: ``plain``) or ``PRESET-READING``.
    Equal configs of one protocol get one name, however their reading was asked for."""
    own, asked = reading_of(preset(name)), reading_of(cfg)
    if asked is None or asked == own:
        return name
    base = SHORTHANDS.get(name, (name,))[0]
    named = {v: k for k, v in SHORTHANDS.items()}
    return named.get(
        (base, asked), base if asked == reading_of(preset(base)) else f"{base}-{asked}"
    )


__all__ = [
    "DEFAULT_PRESET",
    "PAPER",
    "PAPER_CHI_LIK",
    "PAPER_MAP",
    "PLAIN",
    "PRESETS",
    "READINGS",
    "SHORTHANDS",
    "SMALL",
    "TINY",
    "preset",
    "reading_of",
    "run_name",
    "with_reading",
]
