"""``TheoryParams``: the one parameter record of the theory (docs/theory.md §2, §2b), derived from
a config's sections by :meth:`TheoryParams.from_config` and validated by the same validators."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice, python_scalar
from ..config import PRESETS, Config, ModelConfig, PosteriorConfig, TaskConfig

#: where each field of the record lives in a config (its validator is that section's)
SECTION = {
    "L": "task",
    "V": "task",
    "sigma_e": "model",
    "sigma_p": "model",
    "sigma_G": "model",
    "sigma_O": "model",
    "linear_scale": "model",
    "sigma2": "posterior",
    "chi": "posterior",
    "likelihood": "posterior",
    "chi_in_readout_prior": "posterior",
    "chi_in_noise": "posterior",
}
_SECTIONS = {"task": TaskConfig, "model": ModelConfig, "posterior": PosteriorConfig}


@dataclass(frozen=True)
class TheoryParams:
    """Task size, prior scales and convention switches of the Bayesian copy-head theory.

    The fields are those of the config's ``task``, ``model`` and ``posterior`` sections that the
    theory reads, with their defaults (the paper preset of docs/theory.md §2b), and a record is
    valid exactly when those sections are: construction builds them, so the config's validators
    accept and refuse (the errors name ``TheoryParams.<field>``).

    The same record holds arrays for the compiled closed forms (:meth:`arrays`, :meth:`stack`:
    a pytree; the switches as numbers: ``likelihood`` 0/1 for per_sequence/per_position,
    ``linear_scale`` the exponent ``k`` of ``A = s / L^k``, the chi switches 0/1), which every
    function of :mod:`copyhead_jax.conventions` reads as it reads the names.
    """

    L: int = 25
    V: int = 5
    sigma_e: float = 1.0
    sigma_p: float = 1.0
    sigma_G: float = 1.0
    sigma_O: float = 1.0
    sigma2: float = 30.0
    chi: float = 30.0
    likelihood: str = "per_position"
    linear_scale: str = "inv_L"
    chi_in_readout_prior: bool = True  # readout prior sigma_O^2/(chi N); False: sigma_O^2/N
    chi_in_noise: bool = True  # noise sigma^2/chi; False: sigma^2

    def __post_init__(self):
        built = {}
        for name, cls in _SECTIONS.items():
            kw = {f: getattr(self, f) for f, s in SECTION.items() if s == name}
            try:
                built[name] = cls(**kw)
            except ValueError as e:  # the section's message, naming this record's field
                raise ValueError(re.sub(rf"\b{cls.__name__}\.", "TheoryParams.", str(e))) from None
        for f, s in SECTION.items():  # as the sections store them (np.int64(4) -> 4)
            object.__setattr__(self, f, python_scalar(getattr(built[s], f)))
        for f in ("sigma_e", "sigma_p", "sigma_G", "sigma_O", "sigma2", "chi"):
            object.__setattr__(self, f, float(getattr(self, f)))

    @classmethod
    def from_config(cls, cfg: Config) -> TheoryParams:
        """The theory of a :class:`~copyhead_jax.config.Config` (task, model prior, posterior)."""
        if not isinstance(cfg, Config):
            raise ValueError(f"cfg must be a copyhead_jax.config.Config, got {type(cfg).__name__}")
        return cls(**{f: getattr(getattr(cfg, s), f) for f, s in SECTION.items()})

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> TheoryParams:
        """``TheoryParams.preset('plain', L=40)``: a config preset's theory, fields overridden."""
        return cls.from_config(PRESETS[check_choice("preset", name, PRESETS)]).replace(**overrides)

    def replace(self, **kw: Any) -> TheoryParams:
        return dataclasses.replace(self, **kw)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    # ---- the record as arrays (for jit and vmap) ----

    @classmethod
    def stack(cls, params: list[TheoryParams], dtype=None) -> TheoryParams:
        """One record whose fields are arrays ``[B]`` over ``params`` (switches as numbers)."""
        cols = [p._numbers() for p in params]
        dt = jnp.result_type(float) if dtype is None else dtype
        return _of_leaves({f: jnp.asarray(np.array([c[f] for c in cols]), dt) for f in SECTION})

    def arrays(self, dtype=None) -> TheoryParams:
        """This record with every field a scalar array (switches as numbers)."""
        dt = jnp.result_type(float) if dtype is None else dtype
        return _of_leaves({f: jnp.asarray(v, dt) for f, v in self._numbers().items()})

    def _numbers(self) -> dict[str, float]:
        if not isinstance(self.likelihood, str):
            raise ValueError("the record already holds arrays")
        switches = ("likelihood", "linear_scale", "chi_in_readout_prior", "chi_in_noise")
        return {
            **{f: float(getattr(self, f)) for f in SECTION if f not in switches},
            "likelihood": float(self.likelihood == "per_position"),
            "linear_scale": conv.LINEAR_SCALE_EXPONENTS[self.linear_scale],
            "chi_in_readout_prior": float(self.chi_in_readout_prior),
            "chi_in_noise": float(self.chi_in_noise),
        }

    @property
    def sigma2_chi(self):
        """``(sigma2, chi)`` of the closed forms for this reading, in which the noise is
        ``sigma2/chi`` and the readout prior ``sigma_O^2/(chi N)`` (``theory_sigma2_chi``)."""
        return conv.theory_sigma2_chi(
            self.sigma2,
            self.chi,
            chi_in_readout_prior=self.chi_in_readout_prior,
            chi_in_noise=self.chi_in_noise,
        )


_FIELDS = tuple(f.name for f in dataclasses.fields(TheoryParams))


def _of_leaves(values: dict) -> TheoryParams:
    """A record of arrays (or tracers): no validation, which is for Python values."""
    p = object.__new__(TheoryParams)
    for f in _FIELDS:
        object.__setattr__(p, f, values[f])
    return p


jax.tree_util.register_pytree_node(
    TheoryParams,
    lambda p: (tuple(getattr(p, f) for f in _FIELDS), None),
    lambda _, leaves: _of_leaves(dict(zip(_FIELDS, leaves, strict=True))),
)


__all__ = ["TheoryParams"]
