"""Frozen, validated configuration dataclasses (the presets live in :mod:`.presets`).

A :class:`Config` bundles what one sweep needs: the task (docs/theory.md §1), the network and its
prior (§2), the likelihood, the MAP solver (:mod:`.solvers`), and the sweep grid.
Symbols follow docs/theory.md: ``L`` positions, ``V`` tokens, ``width`` = N = d_model,
``sigma2`` = sigma^2, ``chi``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .._checks import (
    check_choice,
    check_float,
    check_int,
    check_P_grid,
    normalise_scalars,
    python_scalar,
)
from .samplers import SAMPLERS as SAMPLERS  # the sampler configs, re-exported
from .samplers import STARTS as STARTS
from .samplers import HMCConfig as HMCConfig
from .samplers import SGLDConfig as SGLDConfig
from .solvers import (
    ADAM_FIELDS,
    EXACT_FIELDS,
    Solver,
    check_solver,
    flat_train,
    solver_from_dict,
    solver_to_dict,
    update_solver,
)
from .solvers import SOLVERS as SOLVERS  # the solver configs, re-exported
from .solvers import AdamConfig as AdamConfig
from .solvers import AutoConfig as AutoConfig
from .solvers import ExactConfig as ExactConfig

Attention = Literal["linear", "softmax", "sigmoid"]
ATTENTIONS = ("linear", "softmax", "sigmoid")  # written once: models.HEADS maps each to a class
BOTH = ATTENTIONS[:2]  # what ``--attention both`` runs: the paper's two heads
LIKELIHOODS = ("per_sequence", "per_position")
LINEAR_SCALES = ("none", "inv_sqrt_L", "inv_L")
INITS = ("prior", "zero", "copy")
ENGINES = ("full", "reduced")
GRAMS = ("realised", "wishart")
MAX_WIDTH = 65_536  # full engine: W^G is N x N
MAX_REDUCED_WIDTH = 10**15  # reduced engine: any width (math.inf: the N -> infinity limit)
#: largest N * (V + L) for which the reduced engine draws the embeddings themselves
#: (``gram='realised'``); beyond it use ``gram='wishart'``
MAX_REALISED_ELEMENTS = 2**27


@dataclass(frozen=True)
class TaskConfig:
    """Copy task: one-hot tokens (i.i.d. uniform, or a stationary Markov chain: :mod:`.sources`),
    target ``y^a = x^{a-1}`` (periodic; without position 0 under ``ModelConfig.causal``)."""

    L: int = 25  # sequence length
    V: int = 5  # vocabulary size
    n_test: int = 512  # held-out sequences per seed (test loss, copy accuracy)
    # token source (see copyhead_jax.sources): "iid" uniform tokens, or a stationary Markov
    # chain: the stickiness family rho, a Dirichlet(alpha) matrix drawn from chain_seed, or a
    # given transition matrix (rows sum to 1)
    source: Literal["iid", "markov"] = "iid"
    rho: float = 0.0  # markov: stay with probability rho + (1 - rho)/V, else uniform
    alpha: float | None = None  # markov: rows of the matrix ~ Dirichlet(alpha 1_V)
    chain_seed: int = 0  # markov with alpha: seed of the Dirichlet matrix (fixed across seeds)
    transition: tuple[tuple[float, ...], ...] | None = None  # markov: a given V x V matrix

    def __post_init__(self):
        normalise_scalars(self)
        # L reaches the closed-form theory's asymptotics; a run's arrays face the memory checks
        check_int("TaskConfig.L", self.L, lo=2, hi=10**6)
        check_int("TaskConfig.V", self.V, lo=2, hi=4096)
        check_int("TaskConfig.n_test", self.n_test, lo=1, hi=10**6)
        from ..sources import check_task_source  # sources imports this module

        check_task_source(self)


@dataclass(frozen=True)
class ModelConfig:
    """Single-head attention, its prior scales and the muP readout scaling (docs/theory.md §2).

    ``engine='reduced'`` trains the exact width-``D = V + L`` image of the width-``N`` head
    (docs/theory.md §2c; trained embeddings: the exact joint MAP, §2d, finite width): ``width``
    is then any int ``>= V + L`` or ``math.inf``; the embedding Gram ``C`` is the realised Gram
    of embeddings drawn as the full engine draws them (``gram='realised'``, same seed) or a
    Wishart draw ``N C ~ W(N, Sigma)`` that never forms an ``N``-sized array
    (``gram='wishart'``); at ``width=inf``, ``C = Sigma``.
    """

    attention: Attention = "softmax"
    width: int | float = 10_000  # N = d_model (reduced engine: also math.inf)
    sigma_e: float = 1.0  # token-embedding prior std
    sigma_p: float = 1.0  # positional-bias prior std
    sigma_G: float = 1.0  # key-query prior std
    sigma_O: float = 1.0  # readout prior std (times 1/sqrt(chi N), or 1/sqrt(N): PosteriorConfig)
    # linear attention A = s, s / sqrt(L) or s / L (docs/theory.md §2b)
    linear_scale: Literal["none", "inv_sqrt_L", "inv_L"] = "inv_L"
    engine: Literal["full", "reduced"] = "full"  # reduced: exact width-(V+L) image, §2c
    gram: Literal["realised", "wishart"] = "realised"  # reduced engine: source of the Gram C
    causal: bool = False  # causal mask (b <= a) and the non-periodic target, see models._mask

    def __post_init__(self):
        normalise_scalars(self)
        check_choice("ModelConfig.attention", self.attention, ATTENTIONS)
        check_choice("ModelConfig.engine", self.engine, ENGINES)
        check_choice("ModelConfig.gram", self.gram, GRAMS)
        if self.engine == "full":
            try:
                check_int("ModelConfig.width", self.width, lo=1, hi=MAX_WIDTH)
            except ValueError as e:
                raise ValueError(
                    f"{e} under engine='full' (W^G is N x N); with quenched embeddings "
                    "engine='reduced' (CLI --engine reduced) runs any width, 'inf' included"
                ) from None
        else:
            object.__setattr__(self, "width", check_width(self.width))
        for name in ("sigma_e", "sigma_p", "sigma_G", "sigma_O"):
            check_float(f"ModelConfig.{name}", getattr(self, name), lo=0.0, hi=1e6)
        check_choice("ModelConfig.linear_scale", self.linear_scale, LINEAR_SCALES)
        if not isinstance(self.causal, bool):
            raise ValueError(f"ModelConfig.causal must be a bool, got {self.causal!r}")


@dataclass(frozen=True)
class PosteriorConfig:
    """Likelihood ``y ~ N(f, sigma^2/chi)`` per sequence entry, or ``N(f, L sigma^2/chi)``
    (``per_position``: the loss averaged over positions), and where chi enters (§2b).

    ``chi_in_noise=False``: noise ``sigma^2`` (``L sigma^2``), not divided by chi;
    ``chi_in_readout_prior=False``: readout prior variance ``sigma_O^2 / N``, not
    ``sigma_O^2 / (chi N)``. Both default to True, the reading of the ``paper`` preset.
    """

    sigma2: float = 30.0
    chi: float = 30.0
    likelihood: Literal["per_sequence", "per_position"] = "per_position"
    chi_in_readout_prior: bool = True  # readout prior sigma_O^2/(chi N); False: sigma_O^2/N
    chi_in_noise: bool = True  # noise sigma^2/chi; False: sigma^2

    def __post_init__(self):
        normalise_scalars(self)
        check_float("PosteriorConfig.sigma2", self.sigma2, lo=0.0, hi=1e12)
        check_float("PosteriorConfig.chi", self.chi, lo=0.0, hi=1e12)
        check_choice("PosteriorConfig.likelihood", self.likelihood, LIKELIHOODS)
        for name in ("chi_in_readout_prior", "chi_in_noise"):
            if not isinstance(getattr(self, name), bool):
                value = getattr(self, name)
                raise ValueError(f"PosteriorConfig.{name} must be a bool, got {value!r}")


@dataclass(frozen=True)
class TrainConfig:
    """How each run is fitted: the MAP ``solver`` (:mod:`.solvers`: ``AdamConfig``,
    ``ExactConfig``, or ``AutoConfig``, exact under the reduced engine and Adam under the full
    one) and what it fits from where."""

    train_embeddings: bool = True  # False = quenched MAP protocol (docs/theory.md §2)
    # where the solver starts W^G: a prior draw, zero logits (the pooling branch), or logits
    # init_copy_logit * G* on the positional block (the copy branch; hysteresis studies)
    init_attention: Literal["prior", "zero", "copy"] = "prior"
    init_copy_logit: float = 5.0
    log_every: int = 10  # Adam: loss curves are kept every log_every epochs
    solver: Solver = field(default_factory=AutoConfig)  # or a dict {"kind": "exact", ...}

    def __post_init__(self):
        normalise_scalars(self)
        if not isinstance(self.train_embeddings, bool):
            raise ValueError(
                f"TrainConfig.train_embeddings must be a bool, got {self.train_embeddings!r}"
            )
        check_choice("TrainConfig.init_attention", self.init_attention, INITS)
        check_float("TrainConfig.init_copy_logit", self.init_copy_logit, lo=-1e4, hi=1e4)
        check_int("TrainConfig.log_every", self.log_every, lo=1, hi=10**8)
        if isinstance(self.solver, dict):  # {"kind": "exact", ...}, as to_dict writes it
            object.__setattr__(self, "solver", solver_from_dict(self.solver))
        check_solver("TrainConfig.solver", self.solver)


@dataclass(frozen=True)
class SweepConfig:
    """The grid of runs: every training-set size ``P`` times ``n_seeds`` seeds."""

    P: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    n_seeds: int = 10  # paper: 10 seeds per point
    seed: int = 0  # seed s uses jax.random.key(seed + s)
    chunk_runs: int = 0  # runs per compiled chunk; 0 = automatic from the memory budget
    memory_budget_gb: float = 0.0  # per device; 0 = automatic (free device memory, or 4 GB on CPU)
    n_devices: int = 0  # devices the run axis is sharded over; 0 = all
    # "max": every run padded to P_max, one compiled program for the sweep; "pow2": runs
    # grouped by P rounded up to a power of two, one program per group (<= log2 P_max of them),
    # which on a wide log grid does several times less padded work
    padding: Literal["max", "pow2"] = "max"

    def __post_init__(self):
        normalise_scalars(self)
        object.__setattr__(self, "P", check_P_grid("SweepConfig.P", self.P))
        check_int("SweepConfig.n_seeds", self.n_seeds, lo=1, hi=100_000)
        check_int("SweepConfig.seed", self.seed, lo=0, hi=2**31 - 1)
        check_int("SweepConfig.chunk_runs", self.chunk_runs, lo=0, hi=10**7)
        check_float("SweepConfig.memory_budget_gb", self.memory_budget_gb, lo=0.0, lo_open=False)
        check_int("SweepConfig.n_devices", self.n_devices, lo=0, hi=100_000)
        check_choice("SweepConfig.padding", self.padding, ("max", "pow2"))

    @property
    def P_max(self) -> int:
        return self.P[-1]


@dataclass(frozen=True)
class Config:
    """Everything one sweep needs."""

    task: TaskConfig = field(default_factory=TaskConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    posterior: PosteriorConfig = field(default_factory=PosteriorConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)

    def __post_init__(self):
        normalise_scalars(self)
        for name, cls in _SECTIONS.items():
            sec = getattr(self, name)
            if not isinstance(sec, cls):
                raise ValueError(f"Config.{name} must be a {cls.__name__}")
            for f in dataclasses.fields(sec):  # np.int64(4) -> 4: JSON, hashing, fingerprints
                object.__setattr__(sec, f.name, python_scalar(getattr(sec, f.name)))
        m, t, solver = self.model, self.train, self.solver
        exact = isinstance(solver, ExactConfig)
        if m.engine == "reduced":
            D = self.task.V + self.task.L
            if t.train_embeddings and (
                not exact or solver.continuation or not math.isfinite(m.width)
            ):
                raise ValueError(
                    "ModelConfig.engine='reduced' with trained embeddings is the exact joint MAP "
                    "(docs/theory.md §2d): it needs the exact solver (ExactConfig or AutoConfig) "
                    "without continuation and a finite width; else use quenched embeddings "
                    "(--train-embeddings false)"
                )
            if m.width < D:
                raise ValueError(
                    f"ModelConfig.width must be >= V + L = {D} under engine='reduced' (the "
                    f"embedding Gram must have full rank), got {m.width}"
                )
            if (
                m.gram == "realised"
                and math.isfinite(m.width)
                and m.width * D > MAX_REALISED_ELEMENTS
            ):
                raise ValueError(
                    f"ModelConfig.width={m.width} is too large to draw the embeddings "
                    f"(N (V+L) = {m.width * D:.3g} > {MAX_REALISED_ELEMENTS}); use "
                    "ModelConfig.gram='wishart' (CLI --gram wishart), which draws the Gram "
                    "directly"
                )
        elif exact:
            raise ValueError(
                "TrainConfig.solver=ExactConfig needs ModelConfig.engine='reduced' (the exact "
                "solver works on the width-(V+L) image of the head); use AdamConfig, "
                "AutoConfig or engine='reduced'"
            )
        if isinstance(t.solver, AutoConfig) and t.solver.exact.continuation and not exact:
            raise ValueError(
                "ExactConfig.continuation=True needs the exact solver (engine='reduced'); "
                f"this config's solver is {solver.kind!r}"
            )
        if not exact and t.log_every > solver.max_epochs:
            raise ValueError(
                f"TrainConfig.log_every must be an int in [1, {solver.max_epochs}] "
                f"(AdamConfig.max_epochs), got {t.log_every}"
            )

    @property
    def solver(self) -> AdamConfig | ExactConfig:
        """The MAP solver in use: ``ExactConfig`` or ``AdamConfig`` (an ``AutoConfig`` resolved
        by the engine); ``cfg.solver.kind`` is ``'exact'`` or ``'adam'``."""
        s = self.train.solver
        return s.resolve(self.model.engine) if isinstance(s, AutoConfig) else s

    def replace(self, solver: Any = None, **sections: Any) -> Config:
        """``cfg.replace(model=dict(width=64))``: update fields of sections by dict or object.

        ``solver``: a solver config (``cfg.replace(solver=ExactConfig(continuation=True))``
        sets ``train.solver``), a dict of its fields (``solver=dict(max_epochs=4000)``: under
        ``AutoConfig`` each field updates the setting that has it), or a dict with ``kind``
        (``solver=dict(kind="exact", gtol=1e-8)``: a new one, as ``to_dict`` writes it); applied
        to the new ``train`` section, and the whole config validated once."""
        new = {}
        for name, value in sections.items():
            if name not in _SECTIONS:
                raise ValueError(f"Config has no section {name!r}; sections: {list(_SECTIONS)}")
            if isinstance(value, dict):
                _check_fields(_SECTIONS[name], value)
                value = replace(getattr(self, name), **value)
            new[name] = value
        if solver is not None:
            train = new.get("train", self.train)
            if isinstance(solver, dict):
                solver = (
                    solver_from_dict(solver)
                    if "kind" in solver
                    else update_solver(train.solver, solver)
                )
            new["train"] = replace(train, solver=check_solver("solver", solver))
        return replace(self, **new)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain JSON-able sections; ``train.solver`` nested: ``{"kind": "exact", "gtol": ...}``
        (``solvers.solver_to_dict``)."""
        return {k: _section_dict(getattr(self, k)) for k in _SECTIONS}

    @classmethod
    def from_dict(cls, d: dict[str, dict[str, Any]]) -> Config:
        """The inverse of :meth:`to_dict`; it also reads the dicts of files written before the
        typed solver (flat Adam and ``exact_*`` fields in ``train``): the one conversion,
        ``solvers.flat_train``, keeps their solver and its numbers."""
        unknown = set(d) - set(_SECTIONS)
        if unknown:
            raise ValueError(f"unknown config sections {sorted(unknown)}; known: {list(_SECTIONS)}")
        kw = {}
        for name, sec_cls in _SECTIONS.items():
            values = dict(d.get(name, {}))
            if name == "train":
                values = flat_train(values, d.get("model", {}).get("attention", "softmax"))
                if "solver" in values:
                    values["solver"] = solver_from_dict(values["solver"])
            _check_fields(sec_cls, values)
            if "P" in values:
                values["P"] = tuple(values["P"])
            kw[name] = sec_cls(**values)
        return cls(**kw)


_SECTIONS = {
    "task": TaskConfig,
    "model": ModelConfig,
    "posterior": PosteriorConfig,
    "train": TrainConfig,
    "sweep": SweepConfig,
}


def check_width(value: Any) -> int | float:
    """A reduced-engine width: an int in ``[1, MAX_REDUCED_WIDTH]``, or ``inf`` / ``"inf"``."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return math.inf
    value = python_scalar(value)  # np.float32('inf'), np.int64(64): as Python numbers
    if isinstance(value, float) and value == math.inf:
        return math.inf
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_int("ModelConfig.width", value, lo=1, hi=MAX_REDUCED_WIDTH)


def _check_fields(sec_cls, values: dict) -> None:
    """Unknown field names (typos) raise a ValueError listing the valid ones."""
    fields = [f.name for f in dataclasses.fields(sec_cls)]
    bad = sorted(set(values) - set(fields))
    if bad:
        hint = ""
        old = {*ADAM_FIELDS, *(f"exact_{f}" for f in EXACT_FIELDS)}
        if sec_cls is TrainConfig and set(bad) & old:
            hint = (
                " (the solver's settings live in TrainConfig.solver: "
                "cfg.replace(solver=dict(lr=...)) or solver=ExactConfig(...))"
            )
        raise ValueError(
            f"{sec_cls.__name__} has no field(s) {', '.join(bad)}; "
            f"valid fields: {', '.join(fields)}{hint}"
        )


#: fields written only when they differ from their default, so that the configs (and the
#: checkpoint fingerprints hashed from them) of every earlier reading stay byte for byte the same
_OMIT_AT_DEFAULT = {"PosteriorConfig": ("chi_in_readout_prior", "chi_in_noise")}


def _section_dict(sec) -> dict[str, Any]:
    d = dataclasses.asdict(sec)
    if isinstance(sec, TrainConfig):
        d["solver"] = solver_to_dict(sec.solver)
    for name in _OMIT_AT_DEFAULT.get(type(sec).__name__, ()):
        if d[name] == type(sec).__dataclass_fields__[name].default:
            del d[name]
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}
