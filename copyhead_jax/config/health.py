"""The chain-health thresholds of the package, one frozen record per purpose.

Every module that judges chains (a sweep's posterior, a branch-TI run, an umbrella window, the
agreement of two starts, a stopping target) reads its bar here; no other module writes an R-hat,
ESS or acceptance threshold (``tests/config/test_health.py`` scans the package). Where two
purposes differ, their reasons say why. R-hat is split R-hat, ESS the effective sample size with
chains pooled (``sampling/stats.py``), of the quantity the purpose names.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._checks import check_float


@dataclasses.dataclass(frozen=True)
class Mixing:
    """Chains count as mixed for one purpose when split R-hat ``<= rhat_max``, ESS
    ``>= ess_min`` (``None``: not judged) and, for a Metropolis-type kernel, the mean acceptance
    ``>= accept_min`` (``None``: not judged); ``why`` says where the numbers come from."""

    rhat_max: float
    ess_min: float | None = None
    accept_min: float | None = None
    why: str = ""

    def __post_init__(self):
        check_float("Mixing.rhat_max", self.rhat_max, lo=1.0)
        if self.ess_min is not None:
            check_float("Mixing.ess_min", self.ess_min, lo=0.0)
        if self.accept_min is not None:
            check_float("Mixing.accept_min", self.accept_min, lo=0.0, hi=1.0)

    def mixed(self, rhat, ess=None):
        """Whether ``rhat`` (and ``ess``, where this purpose judges it) meet the bar; NaN fails
        (arrays element-wise)."""
        ok = np.asarray(rhat) <= self.rhat_max
        if self.ess_min is not None:
            ok = ok & (np.asarray(ess) >= self.ess_min)
        return ok if np.ndim(ok) else bool(ok)

    def bar(self) -> str:
        """The failing side in words, e.g. ``R-hat > 1.05 or ESS < 100``."""
        ess = "" if self.ess_min is None else f" or ESS < {self.ess_min:g}"
        return f"R-hat > {self.rhat_max:g}{ess}"


#: SGLD chains of a full-engine sweep, on U (``sampling/sgld/diagnostics.py``).
SGLD_RUN = Mixing(
    rhat_max=1.1,
    ess_min=100.0,
    accept_min=0.7,
    why="Gelman et al. 2013's 1.1; below ESS 100 of U a moment is not trusted; the MALA "
    "acceptance proxy saturates near 0.5 at any large step, so a mean below 0.7 flags "
    "a step that is large on the posterior's scale",
)
#: Collapsed HMC of a reduced sweep, on U and both order parameters (``sampling/health.py``).
HMC_RUN = Mixing(
    rhat_max=1.05,
    ess_min=400.0,
    accept_min=0.3,
    why="stricter than SGLD's: an exact (Metropolis-corrected) sampler of the collapsed "
    "posterior can meet Vehtari et al. 2021's ESS 400 and their working R-hat 1.05; a tuned HMC "
    "accepts 0.6-0.9, below 0.3 the step is too large",
)
#: Chains from different starts of one run (``sampling/starts.py``): R-hat between the groups.
BETWEEN_STARTS = Mixing(
    rhat_max=1.05,
    why="the bar of HMC_RUN's R-hat within a run, so starts that disagree are named like chains "
    "that do (no ESS: the groups are few)",
)
#: One run of the Bayesian transition: a branch-TI rung's chains, the linear head's posterior
#: psi (``transition/search.py``, ``transition/linear.py``, ``compare/crossing.py``).
TRANSITION_RUN = Mixing(
    rhat_max=1.05,
    ess_min=100.0,
    why="the working R-hat 1.05; ESS 100 keeps the MCSE of each rung's mean reliable, and a "
    "failing run is named in the result beside its P*, not refused (there are many rungs)",
)
#: One umbrella window of the free-energy profile, on a_G (``transition/profile/windows.py``).
PROFILE_WINDOW = Mixing(
    rhat_max=1.1,
    ess_min=50.0,
    why="looser than a run's: a window is one of many, restrained to a narrow range of a_G, "
    "and a flagged window widens the profile's errors (the replicas' SD instead of their SE), "
    "so the flag costs width, never a narrower interval",
)
#: The default target of sampling until enough (samplers, umbrella windows, ``--rhat-target``)
#: and the strict column of the posterior summaries' health table (``sampling/summary.py``).
FINAL = Mixing(
    rhat_max=1.01,
    ess_min=400.0,
    why="Vehtari et al. 2021's bar for final results (R-hat < 1.01, ESS > 400)",
)

#: Every purpose by name (docs and tests read the table from here).
MIXING = {
    "sgld_run": SGLD_RUN,
    "hmc_run": HMC_RUN,
    "between_starts": BETWEEN_STARTS,
    "transition_run": TRANSITION_RUN,
    "profile_window": PROFILE_WINDOW,
    "final": FINAL,
}

__all__ = [
    "BETWEEN_STARTS",
    "FINAL",
    "HMC_RUN",
    "MIXING",
    "PROFILE_WINDOW",
    "SGLD_RUN",
    "TRANSITION_RUN",
    "Mixing",
]
