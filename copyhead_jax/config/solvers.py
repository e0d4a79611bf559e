"""The MAP solvers' settings, one frozen config per solver (``TrainConfig.solver``).

:class:`AdamConfig` (full-batch Adam with the paper's protocol, either engine),
:class:`ExactConfig` (float64 quasi-Newton to a stationary point, reduced engine only) and
:class:`AutoConfig` (the default: exact under the reduced engine, Adam under the full one; it
carries both settings, so a preset keeps its Adam numbers when a study switches its engine).
``Config.solver`` is the one in use, ``AdamConfig`` or ``ExactConfig``; each carries its
``kind`` (``"adam"``, ``"exact"``), as the CLI's ``--solver`` and the saved files name it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .._checks import check_choice, check_float, check_int, normalise_scalars

SCHEDULES = ("constant", "cosine")
LR_SCALINGS = ("raw", "mup")
MONITORS = ("loss", "U")
SOLVERS = ("auto", "adam", "exact")


_scalars = normalise_scalars


@dataclass(frozen=True)
class AdamConfig:
    """Full-batch Adam on the negative log posterior U, with the paper's protocol.

    ``lr_scaling='raw'`` applies ``lr`` to every weight in the raw parametrisation (the paper's
    protocol); ``'mup'`` scales it per block with the width so that one ``lr`` works across
    widths (see ``fit.adam.block_lr_factors``).
    """

    kind: ClassVar[str] = "adam"

    lr: float = 1e-5
    lr_scaling: Literal["raw", "mup"] = "raw"  # per-block lr factors, see train.block_lr_factors
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    schedule: Literal["constant", "cosine"] = "constant"  # after warm-up
    final_lr_frac: float = 0.01  # cosine: lr decays to lr * final_lr_frac at max_epochs
    # linear lr warm-up over this fraction of max_epochs; None: the head's default
    # (``warmup_default``: 0.1 for softmax, the paper's protocol; 0 for linear)
    warmup_frac: float | None = None
    min_epochs: int = 2000  # paper: 2,000 warm-up epochs before early stopping may trigger
    max_epochs: int = 20_000
    patience: int = 100  # stop after this many epochs without improvement of the monitor
    rel_tol: float = 1e-7  # an improvement must exceed rel_tol * |best|
    # early stopping watches the training loss (the paper's protocol) or U; the part of W^G
    # outside the span of the embeddings only decays under the prior and never changes the
    # attention, but it dominates U at large width, so U keeps improving long after A settled
    monitor: Literal["loss", "U"] = "loss"

    def __post_init__(self):
        _scalars(self)
        check_float("AdamConfig.lr", self.lr, lo=0.0, hi=10.0)
        check_choice("AdamConfig.lr_scaling", self.lr_scaling, LR_SCALINGS)
        check_float("AdamConfig.b1", self.b1, lo=0.0, hi=1.0, lo_open=False)
        check_float("AdamConfig.b2", self.b2, lo=0.0, hi=1.0, lo_open=False)
        check_float("AdamConfig.eps", self.eps, lo=0.0, hi=1.0)
        check_choice("AdamConfig.schedule", self.schedule, SCHEDULES)
        check_float("AdamConfig.final_lr_frac", self.final_lr_frac, lo=0.0, hi=1.0, lo_open=False)
        if self.warmup_frac is not None:
            check_float("AdamConfig.warmup_frac", self.warmup_frac, lo=0.0, hi=1.0, lo_open=False)
        check_int("AdamConfig.max_epochs", self.max_epochs, lo=1, hi=10**8)
        check_int("AdamConfig.min_epochs", self.min_epochs, lo=0, hi=self.max_epochs)
        check_int("AdamConfig.patience", self.patience, lo=1, hi=10**8)
        check_choice("AdamConfig.monitor", self.monitor, MONITORS)
        check_float("AdamConfig.rel_tol", self.rel_tol, lo=0.0, hi=1.0, lo_open=False)


@dataclass(frozen=True)
class ExactConfig:
    """The exact solver of the reduced engine: float64 quasi-Newton on U to a stationary point,
    stopped at ``|grad U| <= gtol max(1, |U|)`` or after ``max_steps`` iterations
    (``converged=False``). ``continuation``: also start each run from the kept fits of its
    neighbouring P (same seed; an ascending, then a descending pass) and keep the lowest-U
    minimum (:mod:`copyhead_jax.fit.continuation`)."""

    kind: ClassVar[str] = "exact"

    gtol: float = 1e-9
    max_steps: int = 5000
    continuation: bool = False

    def __post_init__(self):
        _scalars(self)
        check_float("ExactConfig.gtol", self.gtol, lo=0.0, hi=1.0)
        check_int("ExactConfig.max_steps", self.max_steps, lo=1, hi=10**7)
        if not isinstance(self.continuation, bool):
            raise ValueError(
                f"ExactConfig.continuation must be True or False, got {self.continuation!r}"
            )


@dataclass(frozen=True)
class AutoConfig:
    """The solver chosen by the engine: ``exact`` under ``engine='reduced'``, ``adam`` under
    ``engine='full'`` (:meth:`resolve`), each with its settings here."""

    kind: ClassVar[str] = "auto"

    adam: AdamConfig = field(default_factory=AdamConfig)
    exact: ExactConfig = field(default_factory=ExactConfig)

    def __post_init__(self):
        if not isinstance(self.adam, AdamConfig):
            raise ValueError(f"AutoConfig.adam must be an AdamConfig, got {self.adam!r}")
        if not isinstance(self.exact, ExactConfig):
            raise ValueError(f"AutoConfig.exact must be an ExactConfig, got {self.exact!r}")

    def resolve(self, engine: str) -> AdamConfig | ExactConfig:
        """The solver in use under ``engine``."""
        return self.exact if engine == "reduced" else self.adam


Solver = AdamConfig | ExactConfig | AutoConfig
#: The solver configs by ``kind`` (``copyhead sweep --solver``; files record the kind).
SOLVER_CONFIGS = {"auto": AutoConfig, "adam": AdamConfig, "exact": ExactConfig}
ADAM_FIELDS = tuple(f.name for f in dataclasses.fields(AdamConfig))
EXACT_FIELDS = tuple(f.name for f in dataclasses.fields(ExactConfig))


def check_solver(name: str, solver: Any) -> Solver:
    """``solver`` must be an ``AdamConfig``, ``ExactConfig`` or ``AutoConfig``."""
    if not isinstance(solver, Solver):
        raise ValueError(f"{name} must be an AdamConfig, ExactConfig or AutoConfig, got {solver!r}")
    return solver


def update_solver(solver: Solver, fields: dict[str, Any]) -> Solver:
    """``solver`` with ``fields`` replaced; under ``AutoConfig`` each field goes to the setting
    that has it (``lr`` to ``adam``, ``gtol`` to ``exact``). Unknown names raise."""
    own = (
        ADAM_FIELDS + EXACT_FIELDS
        if isinstance(solver, AutoConfig)
        else (tuple(f.name for f in dataclasses.fields(solver)))
    )
    bad = sorted(set(fields) - set(own))
    if bad:
        raise ValueError(
            f"{type(solver).__name__} has no field(s) {', '.join(bad)}; valid "
            f"fields: {', '.join(own)}"
        )
    if not isinstance(solver, AutoConfig):
        return dataclasses.replace(solver, **fields)
    adam = {k: v for k, v in fields.items() if k in ADAM_FIELDS}
    exact = {k: v for k, v in fields.items() if k in EXACT_FIELDS}
    return AutoConfig(
        dataclasses.replace(solver.adam, **adam), dataclasses.replace(solver.exact, **exact)
    )


def exact_settings(solver: Solver) -> ExactConfig:
    """The exact solver's settings ``solver`` carries (``AdamConfig``: the defaults)."""
    if isinstance(solver, AutoConfig):
        return solver.exact
    return solver if isinstance(solver, ExactConfig) else ExactConfig()


def single_start(solver: Solver) -> Solver:
    """``solver`` without the exact solver's continuation in P (Adam: unchanged)."""
    if isinstance(solver, AdamConfig):
        return solver
    return update_solver(solver, {"continuation": False})


def solver_to_dict(solver: Solver) -> dict[str, Any]:
    """``{"kind": ..., field: value, ...}``; ``AutoConfig``: its ``adam`` and ``exact`` nested."""
    if isinstance(solver, AutoConfig):
        return {
            "kind": "auto",
            "adam": solver_to_dict(solver.adam),
            "exact": solver_to_dict(solver.exact),
        }
    return {"kind": solver.kind, **dataclasses.asdict(solver)}


def solver_from_dict(d: dict[str, Any]) -> Solver:
    """The inverse of :func:`solver_to_dict`."""
    if not isinstance(d, dict) or d.get("kind") not in SOLVER_CONFIGS:
        raise ValueError(
            f"TrainConfig.solver must be a dict with 'kind' one of "
            f"{', '.join(map(repr, SOLVERS))}, got {d!r}"
        )
    values = {k: v for k, v in d.items() if k != "kind"}
    cls = SOLVER_CONFIGS[d["kind"]]
    if cls is AutoConfig:
        bad = sorted(set(values) - {"adam", "exact"})
        if bad:
            raise ValueError(
                f"AutoConfig has no field(s) {', '.join(bad)}; valid fields: adam, exact"
            )
        return AutoConfig(**{k: solver_from_dict({"kind": k, **v}) for k, v in values.items()})
    return update_solver(cls(), values)


def flat_train(train: dict[str, Any], attention: str) -> dict[str, Any]:
    """A saved ``train`` section of either format, in today's (nested ``solver``) form.

    Files written before the typed solver hold the Adam fields (``lr`` ... ``monitor``),
    ``exact_gtol``, ``exact_max_steps``, ``exact_continuation`` and ``solver`` ('auto', 'adam'
    or 'exact') flat in ``train``; older ones hold ``warmup_frac_softmax`` and
    ``warmup_frac_linear`` (the file's ``attention`` picks one). They become ``AutoConfig``,
    ``AdamConfig`` or ``ExactConfig`` with the same numbers, so the solver in use is unchanged."""
    train = dict(train)
    old = {k: train.pop(k) for k in ("warmup_frac_softmax", "warmup_frac_linear") if k in train}
    if old and "warmup_frac" not in train:
        train["warmup_frac"] = old.get(f"warmup_frac_{attention}")
    old_exact = {f"exact_{k}": k for k in EXACT_FIELDS}
    flat = set(train) & (set(ADAM_FIELDS) | set(old_exact))
    if not isinstance(train.get("solver", ""), str) or not (flat or "solver" in train):
        return train  # today's form (stray flat fields are then refused by name)
    kind = train.pop("solver", "auto")
    adam = {k: train.pop(k) for k in ADAM_FIELDS if k in train}
    exact = {old_exact[k]: train.pop(k) for k in old_exact if k in train}
    parts = {"adam": {"kind": "adam", **adam}, "exact": {"kind": "exact", **exact}}
    train["solver"] = {"kind": "auto", **parts} if kind == "auto" else parts.get(kind, kind)
    return train
