"""The posterior samplers' settings, one frozen config per sampler (``copyhead sample``).

:class:`SGLDConfig` (full engine: every weight, NumPyro-contract SGLD kernel) and
:class:`HMCConfig` (reduced engine: collapsed HMC on ``W^G``) are passed to
:func:`copyhead_jax.sampling.run.run_sampler`, which chooses the sampler by the config's type; each
carries its real ``name`` (progress bar, figures, tables, netCDF and file metadata).

**Stopping when enough** (both samplers): with ``ess_target > 0`` the draws are taken in rounds
(``round_iter`` HMC iterations, ``round_steps`` SGLD steps), each run until its ESS of U and of
both order parameters is ``>= ess_target`` and their split R-hat ``<= rhat_target``, or the cap:
the fixed length (``n_iter``; SGLD ``n_steps - burn_in``) rounded up to whole rounds
(:mod:`copyhead_jax.sampling.rounds`; each run stops on its own). The default,
``ess_target = 0``, is the fixed length, so that no number of a default run changes: whether a
target reproduces the fixed-length numbers within their errors is a property of each posterior,
measured (``benchmarks/bench_rounds.py``), not assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .._checks import check_choice, check_float, check_int, normalise_scalars
from .health import FINAL


class Rounds:
    """What a target adds to a fixed-length sampler's settings (a mixin of frozen dataclasses
    with ``thin``, ``ess_target``, ``n_draws`` and the round-length field ``ROUND_FIELD``): the
    draws per chain of one round and the rounds at most."""

    ROUND_FIELD: ClassVar[str]

    @property
    def round_draws(self) -> int:
        """Draws per chain of one round (no target: one round of ``n_draws``)."""
        return getattr(self, self.ROUND_FIELD) // self.thin if self.ess_target else self.n_draws

    @property
    def n_rounds(self) -> int:
        """Rounds at most: the fixed length in whole rounds (1 without a target)."""
        return math.ceil(self.n_draws / self.round_draws)


#: Chains per run of every sampler (SGLD, collapsed HMC, the LLC's and the transition's): four
#: chains are the fewest for which split R-hat compares enough independent sequences to flag one
#: that is stuck (Vehtari et al. 2021 advise at least four), and even, as ``starts='both'`` needs.
DEFAULT_CHAINS = 4


@dataclass(frozen=True)
class SGLDConfig(Rounds):
    """SGLD as in docs/theory.md §2: ``theta - eta grad U + sqrt(2 eta) xi`` (T = 1 on U), every
    weight of a full-engine head sampled (``copyhead sample --sampler sgld``)."""

    name: ClassVar[str] = "SGLD"
    kind: ClassVar[str] = "sgld"
    ROUND_FIELD: ClassVar[str] = "round_steps"

    step_size: float = 1e-6  # eta, in units of U
    n_steps: int = 2000
    burn_in: int = 500
    thin: int = 10
    n_chains: int = DEFAULT_CHAINS
    seed: int = 1
    keep_loglik: bool = False  # record each training sequence's log-likelihood per draw
    ess_target: float = 0.0  # > 0: stop when ESS >= this and R-hat <= rhat_target (docstring)
    rhat_target: float = FINAL.rhat_max  # the bar for final results (health.FINAL)
    round_steps: int = 500  # SGLD steps per round (a multiple of thin) when a target is set

    def __post_init__(self):
        normalise_scalars(self)
        check_float("SGLDConfig.step_size", self.step_size, lo=0.0, hi=1.0)
        if not isinstance(self.keep_loglik, bool):
            raise ValueError(
                f"SGLDConfig.keep_loglik must be True or False, got {self.keep_loglik!r}"
            )
        check_int("SGLDConfig.n_steps", self.n_steps, lo=1, hi=10**9)
        check_int("SGLDConfig.burn_in", self.burn_in, lo=0, hi=self.n_steps - 1)
        check_int("SGLDConfig.thin", self.thin, lo=1, hi=self.n_steps)
        check_int("SGLDConfig.n_chains", self.n_chains, lo=1, hi=100_000)
        check_int("SGLDConfig.seed", self.seed, lo=0, hi=2**31 - 1)
        check_target(self, "SGLDConfig", "round_steps")

    @property
    def n_draws(self) -> int:
        """Draws kept per chain: ``(n_steps - burn_in) // thin`` (with a target: the cap)."""
        return (self.n_steps - self.burn_in) // self.thin

    def describe(self) -> str:
        """One line for titles and tables."""
        return (
            f"SGLD eta={self.step_size:g}, {self.n_steps} steps, {self.n_chains} chains"
            + target_text(self)
        )


def check_target(mc, name: str, round_field: str) -> None:
    """The stopping fields of a sampler config (module docstring): ``ess_target >= 0``,
    ``rhat_target > 1``, and with a target a round that is a whole number of ``thin`` blocks
    holding at least 4 draws (split R-hat and ESS need them)."""
    check_float(f"{name}.ess_target", mc.ess_target, lo=0.0, hi=1e9, lo_open=False)
    check_float(f"{name}.rhat_target", mc.rhat_target, lo=1.0, hi=10.0)
    n = check_int(f"{name}.{round_field}", getattr(mc, round_field), lo=1, hi=10**9)
    if mc.ess_target and (n % mc.thin or n // mc.thin < 4):
        raise ValueError(
            f"{name}.{round_field} must be a multiple of thin = {mc.thin} holding "
            f">= 4 draws when ess_target is set, got {n}"
        )


def target_text(mc) -> str:
    """``", until ESS >= N and R-hat <= r (at most CAP draws)"`` with a target, else ``""``."""
    if not mc.ess_target:
        return ""
    return (
        f", until ESS >= {mc.ess_target:g} and R-hat <= {mc.rhat_target:g} (at most "
        f"{mc.n_rounds * mc.round_draws} draws per chain)"
    )


#: Where the chains of ``copyhead sample`` start: ``fit`` the sweep's fitted weights, ``both``
#: half the chains at each branch start of the head (softmax: pooling = zero logits, copy =
#: copy logits; ``models._reduce.copy_start``), ``prior`` a draw of W^G from its prior.
STARTS = ("fit", "both", "prior")


@dataclass(frozen=True)
class HMCConfig(Rounds):
    """Collapsed HMC of a reduced sweep (docs/theory.md §2c; ``copyhead sample --sampler hmc``):
    the readout integrated out exactly, HMC on ``W^G`` in the whitened coordinates of the
    marginal. Per chain: ``n_warmup`` unadjusted-Langevin steps (discarded), ``n_adapt`` HMC
    iterations that tune the leapfrog step from ``step_size`` by dual averaging towards
    ``target_accept`` and, with ``adapt_mass``, a diagonal mass (Stan's windows;
    ``copyhead_jax.sampling.hmc``; with ``pooled_adaptation`` one step and mass for the chains
    of a start group, from all their transitions) (discarded), then ``n_iter`` HMC iterations of
    ``n_leapfrog`` leapfrog steps at the frozen step and mass, a draw every ``thin``."""

    name: ClassVar[str] = "collapsed HMC"
    kind: ClassVar[str] = "hmc"
    ROUND_FIELD: ClassVar[str] = "round_iter"

    step_size: float = 0.35  # initial leapfrog step in whitened units (the target's scale ~ 1)
    n_iter: int = 1500
    n_warmup: int = 500
    thin: int = 1
    n_chains: int = DEFAULT_CHAINS
    seed: int = 1
    n_leapfrog: int = 5  # x 0.35 ~ pi/2: a quarter period of a unit-curvature direction
    n_adapt: int = 200  # mass + step (bench_posterior, linear P = 322: c1 ESS 298 -> 529)
    target_accept: float = 0.75  # HMC's efficient range is 0.65-0.8 (Beskos et al. 2013)
    adapt_mass: bool = True  # diagonal mass on top of the whitening (benchmarks/bench_posterior)
    pooled_adaptation: bool = False  # one step and mass from all chains of a start group
    starts: str = "fit"
    branch_threshold: float = 1.0  # a draw is on the copy branch when aG >= this
    keep_loglik: bool = False  # record each training sequence's log-likelihood per draw
    keep_weights: bool = False  # record W^G and W_O_hat per draw
    ess_target: float = 0.0  # > 0: stop when ESS >= this and R-hat <= rhat_target (docstring)
    rhat_target: float = FINAL.rhat_max  # the bar for final results (health.FINAL)
    #: HMC iterations per round (a multiple of thin) when a target is set: 17 of the paper
    #: configuration's 24 measured runs met ESS >= 400 by 375 draws per chain
    #: (benchmarks/results/bench_paper_posterior.json: 3 seeds x 4 P x 2 heads, rounds of 125),
    #: where rounds of 500 check first at 500; 100 is a multiple of the usual thin (2, 4, 5, 10)
    round_iter: int = 100

    def __post_init__(self):
        normalise_scalars(self)
        check_float("HMCConfig.step_size", self.step_size, lo=0.0, hi=2.0)
        check_int("HMCConfig.n_iter", self.n_iter, lo=1, hi=10**9)
        check_int("HMCConfig.n_warmup", self.n_warmup, lo=0, hi=10**9)
        check_int("HMCConfig.thin", self.thin, lo=1, hi=self.n_iter)
        check_int("HMCConfig.n_chains", self.n_chains, lo=1, hi=100_000)
        check_int("HMCConfig.seed", self.seed, lo=0, hi=2**31 - 1)
        check_int("HMCConfig.n_leapfrog", self.n_leapfrog, lo=1, hi=10_000)
        check_int("HMCConfig.n_adapt", self.n_adapt, lo=0, hi=10**7)
        check_float("HMCConfig.target_accept", self.target_accept, lo=0.0, hi=0.99)
        check_choice("HMCConfig.starts", self.starts, STARTS)
        check_float("HMCConfig.branch_threshold", self.branch_threshold)
        for f in ("adapt_mass", "pooled_adaptation", "keep_loglik", "keep_weights"):
            if not isinstance(getattr(self, f), bool):
                raise ValueError(f"HMCConfig.{f} must be True or False, got {getattr(self, f)!r}")
        if self.starts == "both" and self.n_chains % 2:
            raise ValueError(
                f"HMCConfig.n_chains must be even with starts='both' (half per branch start), "
                f"got {self.n_chains}"
            )
        check_target(self, "HMCConfig", "round_iter")

    @property
    def n_draws(self) -> int:
        """Draws kept per chain: ``n_iter // thin`` (with a target: the cap)."""
        return self.n_iter // self.thin

    def describe(self) -> str:
        """One line for titles and tables."""
        return (
            f"collapsed HMC step0={self.step_size:g} x {self.n_leapfrog} leapfrog, "
            f"{'' if self.adapt_mass else 'unit mass, '}"
            f"{'pooled adaptation, ' if self.pooled_adaptation else ''}{self.n_iter} iterations, "
            f"{self.n_chains} chains, starts {self.starts}" + target_text(self)
        )


#: The sampler configs by ``kind`` (``copyhead sample --sampler``; files record the kind).
SAMPLERS = {"sgld": SGLDConfig, "hmc": HMCConfig}
