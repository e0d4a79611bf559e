"""``TheoryParams``: the frozen, validated inputs of the theory (docs/theory.md §2, §2b)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import conventions as conv
from .._checks import check_choice, check_float, check_int
from ..config import LIKELIHOODS, LINEAR_SCALES, PRESETS, Config
from ._common import NUMERIC_FIELDS, OBJECTIVES, Scales, as_float, make_scales


@dataclass(frozen=True)
class TheoryParams:
    """Task size, prior scales and convention switches of the Bayesian copy-head theory.

    Defaults are the paper preset of docs/theory.md §2b (``per_position``, ``inv_L``,
    ``sigma2 = chi = 30``, chi in both the noise and the readout prior, unit prior scales),
    matching :mod:`copyhead_jax.config`.
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
        check_int("TheoryParams.L", self.L, lo=2, hi=10**6)
        check_int("TheoryParams.V", self.V, lo=2, hi=10**6)
        for name in ("sigma_e", "sigma_p", "sigma_G", "sigma_O"):
            check_float(f"TheoryParams.{name}", getattr(self, name), lo=0.0, hi=1e6)
        check_float("TheoryParams.sigma2", self.sigma2, lo=0.0, hi=1e12)
        check_float("TheoryParams.chi", self.chi, lo=0.0, hi=1e12)
        check_choice("TheoryParams.likelihood", self.likelihood, LIKELIHOODS)
        check_choice("TheoryParams.linear_scale", self.linear_scale, LINEAR_SCALES)
        for name in ("chi_in_readout_prior", "chi_in_noise"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise ValueError(f"TheoryParams.{name} must be a bool, got {getattr(self, name)!r}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        for name in ("L", "V"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for name in ("sigma_e", "sigma_p", "sigma_G", "sigma_O", "sigma2", "chi"):
            object.__setattr__(self, name, float(getattr(self, name)))

    @classmethod
    def from_config(cls, cfg: Config) -> TheoryParams:
        """The theory of a :class:`~copyhead_jax.config.Config` (task, model prior, posterior)."""
        if not isinstance(cfg, Config):
            raise ValueError(f"cfg must be a copyhead_jax.config.Config, got {type(cfg).__name__}")
        m, p = cfg.model, cfg.posterior
        return cls(
            L=cfg.task.L,
            V=cfg.task.V,
            sigma_e=m.sigma_e,
            sigma_p=m.sigma_p,
            sigma_G=m.sigma_G,
            sigma_O=m.sigma_O,
            sigma2=p.sigma2,
            chi=p.chi,
            likelihood=p.likelihood,
            linear_scale=m.linear_scale,
            chi_in_readout_prior=p.chi_in_readout_prior,
            chi_in_noise=p.chi_in_noise,
        )

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> TheoryParams:
        """``TheoryParams.preset('plain', L=40)``: a config preset's theory, fields overridden."""
        return dataclasses.replace(
            cls.from_config(PRESETS[check_choice("preset", name, PRESETS)]), **overrides
        )

    def replace(self, **kw: Any) -> TheoryParams:
        return dataclasses.replace(self, **kw)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def sigma2_chi(self) -> tuple[float, float]:
        """``(sigma2, chi)`` of the closed forms for this reading, in which the noise is
        ``sigma2/chi`` and the readout prior ``sigma_O^2/(chi N)`` (``theory_sigma2_chi``)."""
        return conv.theory_sigma2_chi(
            self.sigma2, self.chi, chi_in_readout_prior=self.chi_in_readout_prior,
            chi_in_noise=self.chi_in_noise,
        )  # fmt: skip

    def scales(self, objective: str = "map", pushforward: bool = False) -> Scales:
        """The numeric fields and switches as arrays (a vmappable pytree)."""
        return make_scales(
            **{k: getattr(self, k) for k in NUMERIC_FIELDS},
            likelihood=self.likelihood,
            linear_scale=self.linear_scale,
            objective=objective,
            pushforward=pushforward,
            chi_in_readout_prior=self.chi_in_readout_prior,
            chi_in_noise=self.chi_in_noise,
        )


def scales_batch(params: list[TheoryParams], objective: str = "map") -> Scales:
    """``Scales`` with leaves ``[B]`` for a list of parameter sets (one array per field)."""
    check_choice("objective", objective, OBJECTIVES)
    cols = {k: [getattr(p, k) for p in params] for k in NUMERIC_FIELDS}
    cols["sigma2"], cols["chi"] = ([p.sigma2_chi[i] for p in params] for i in (0, 1))
    cols["per_position"] = [float(p.likelihood == "per_position") for p in params]
    cols["inv_L"] = [conv.LINEAR_SCALE_EXPONENTS[p.linear_scale] for p in params]
    cols["w_D"] = [float(objective == "post")] * len(params)
    cols["w_J"] = [0.0] * len(params)
    return Scales(**{k: as_float(np.asarray(cols[k], dtype=np.float64)) for k in Scales._fields})


__all__ = ["TheoryParams", "scales_batch"]
