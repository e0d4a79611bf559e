"""What one (seed, P) group of branch TI is asked to do (:mod:`.branch_group`): its Monte-Carlo
settings (:class:`TISettings`: rungs, chains, iterations, reference draws, SMC particles, stop
when enough), the rung schedules (:func:`rung_ts`), how many reference draws are evaluated at a
time and in how many rounds, and the peak bytes a group needs (:func:`group_bytes`, checked
against the memory budget before any work). Importing it compiles nothing and starts no JAX
backend (the command's parser reads its defaults)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import numpy as np

from .._checks import check_float, check_int
from ..config import TRANSITION_RUN, Rounds
from ..config.samplers import check_target

#: Reference draws evaluated together on the CPU: larger batches' [batch, P, L, L] attention
#: overflows its cache (the chains and the SMC particles run one after the other there for the
#: same reason); on an accelerator ``ACCEL_REF_BATCH`` at a time, and everything else batched.
REF_BATCH = 10
ACCEL_REF_BATCH = 250
#: With ``TISettings.exact_t0``, rounds of ``n_ref`` reference draws are added (at most
#: ``REF_ROUNDS`` in all) until every branch has ``MIN_T0_HITS`` draws inside it: the t = 0
#: rung's mean and variance need a few dozen i.i.d. draws; P_ref(R) is then estimated from all.
MIN_T0_HITS = 64
REF_ROUNDS = 20


def batched_default() -> bool:
    """Run branches, rungs, chains and SMC particles batched (``vmap``): on an accelerator,
    where one chain's kernels leave the device idle; not on the CPU, where a batch's
    ``[P, L, L]`` intermediates overflow the cache (measured 2x more CPU per gradient)."""
    return jax.default_backend() != "cpu"


#: Where the TI rungs crowd: ``near-1`` (default) or ``near-0``; :func:`rung_ts`.
RUNG_SCHEDULES = ("near-1", "near-0")


def rung_ts(K: int, schedule: str = "near-1") -> tuple[float, ...]:
    """``K`` TI rungs from 0 to 1 spaced like ``1 - (1 - k/(K-1))^1.5`` (``near-1``) or
    ``(k/(K-1))^1.5`` (``near-0``). The Laplace reference is exact near the mode, so the
    integrand E_t[U - U_ref] bends most as t -> 1, where the restricted posterior leaves the
    reference Gaussian: at the plain preset's probes, 9 rungs near 1 gave 2.2-8x smaller
    quadrature (Euler-Maclaurin) terms than 9 near 0 (docs/reports/posterior_branches.md)."""
    if schedule not in RUNG_SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(RUNG_SCHEDULES)}; got {schedule!r}")
    k = np.linspace(0.0, 1.0, K)
    t = 1.0 - (1.0 - k) ** 1.5 if schedule == "near-1" else k**1.5
    return tuple(float(x) for x in t)


@dataclasses.dataclass(frozen=True)
class TISettings(Rounds):
    """Monte-Carlo settings of one group (defaults: sized for a 2-core CPU; the plain (25, 5)
    experiment used 6 rungs, 2 chains, 360 iterations).

    ``ts``: the TI rungs in t (default :func:`rung_ts` ``(5)``, crowded near t = 1; the
    earlier default was ``(0, 0.1, 0.3, 0.6, 1)``); ``n_chains`` HMC chains per rung and branch,
    ``n_adapt`` step adaptation iterations (discarded), then ``n_iter`` iterations recorded
    every ``thin``, the first ``discard`` fraction dropped; ``n_ref`` exact reference draws for
    ``P_ref(R)``; ``smc_particles`` particles of the SMC cross-check (0: none) with
    ``smc_moves`` HMC moves per tempering step. ``batched``: run branches, rungs, chains and
    particles batched (``vmap``) instead of one after the other (``None``:
    :func:`batched_default`, batched on an accelerator); the same chains up to float rounding.
    ``adapt_mass``: the rungs' HMC adapts a diagonal mass in its warm-up (default: unit mass in
    the whitened coordinates). ``exact_t0``: the t = 0 rung is the reference draws that hit the
    branch (exact i.i.d. draws of the restricted reference, at least ``MIN_T0_HITS`` where
    ``REF_ROUNDS`` rounds of ``n_ref`` draws reach them: one energy each) instead of chains
    (``False``: chains at every rung, the earlier protocol).

    **Stop when enough** (``ess_target > 0``; the rule of the profile's umbrella windows): the
    rungs are drawn in rounds of ``round_iter`` iterations (:mod:`copyhead_jax.sampling.rounds`,
    the chains continued from their states) until each rung's kept draws (after ``discard``)
    have ESS ``>= ess_target`` and split R-hat ``<= rhat_target`` on ``g`` and ``a_G`` with
    every chain finite, or ``n_iter`` in whole rounds (the cap). Each rung stops on its own: run
    one after the other, a rung that met the target skips the next rounds at no cost (batched,
    it is computed and discarded). The default, 0, is the fixed ``n_iter``."""

    ROUND_FIELD: ClassVar[str] = "round_iter"

    ts: tuple[float, ...] = rung_ts(5)
    n_chains: int = 2
    n_iter: int = 160
    thin: int = 2
    n_adapt: int = 60
    step_size: float = 0.35
    discard: float = 0.25
    n_ref: int = 500
    smc_particles: int = 24
    smc_moves: int = 2
    smc_max_steps: int = 120
    batched: bool | None = None
    adapt_mass: bool = False
    exact_t0: bool = True
    ess_target: float = 0.0
    rhat_target: float = TRANSITION_RUN.rhat_max
    round_iter: int = 40

    def __post_init__(self):
        ts = tuple(float(t) for t in self.ts)
        if len(ts) < 2 or ts[0] != 0.0 or ts[-1] != 1.0 or any(np.diff(ts) <= 0):
            raise ValueError(f"TISettings.ts must rise strictly from 0 to 1, got {self.ts!r}")
        object.__setattr__(self, "ts", ts)
        if self.batched is None:
            object.__setattr__(self, "batched", batched_default())
        if not isinstance(self.batched, bool):
            raise ValueError(
                f"TISettings.batched must be True, False or None, got {self.batched!r}"
            )
        check_int("TISettings.n_chains", self.n_chains, lo=1, hi=64)
        check_int("TISettings.thin", self.thin, lo=1, hi=1000)
        check_int("TISettings.n_iter", self.n_iter, lo=8 * self.thin, hi=10**6)
        check_int("TISettings.n_adapt", self.n_adapt, lo=0, hi=10**6)
        check_float("TISettings.step_size", self.step_size, lo=0.0, hi=10.0)
        check_float("TISettings.discard", self.discard, lo=0.0, hi=0.9, lo_open=False)
        check_int("TISettings.n_ref", self.n_ref, lo=100, hi=10**7)
        check_int("TISettings.smc_particles", self.smc_particles, lo=0, hi=10**5)
        check_int("TISettings.smc_moves", self.smc_moves, lo=1, hi=100)
        check_int("TISettings.smc_max_steps", self.smc_max_steps, lo=2, hi=10**4)
        check_target(self, "TISettings", "round_iter")

    @property
    def n_draws(self) -> int:
        """Draws recorded per chain of a rung (with a target: the cap)."""
        return self.n_iter // self.thin

    @property
    def chain_ts(self) -> tuple[float, ...]:
        """The rungs run by chains (all of ``ts`` but t = 0 with ``exact_t0``)."""
        return self.ts[1:] if self.exact_t0 else self.ts

    def hmc(self) -> dict:
        return dict(
            n_iter=self.n_iter,
            thin=self.thin,
            step_size=self.step_size,
            n_adapt=self.n_adapt,
            adapt_mass=self.adapt_mass,
        )


def group_bytes(s: TISettings, *, L: int, V: int, P_pad: int) -> int:
    """Peak bytes of one group: the activations of one energy and its gradient (``[P, L, L]``
    and ``[P, L, D]`` float32, a few copies each, once per chain and SMC particle run at the same
    time: one, or all of them with ``s.batched``), per chain (2 branches x rungs x chains) its
    state and records, the reference draws (``REF_BATCH`` or ``ACCEL_REF_BATCH`` at a time), the
    float64 whitening (Hessian by ``n`` products, ``n = D^2``), the SMC particles' states."""
    D = V + L
    n = D * D
    chains = 2 * len(s.chain_ts) * s.n_chains
    act = P_pad * L * (L + D + V) * 4 * 6
    at_once = max(chains, s.smc_particles) if s.batched else 1
    rec = 4 * (s.n_iter // s.thin) * 4
    whiten = 8 * (4 * n * n + 32 * min(P_pad, 256) * L * (L + D) * 6)
    ref = 4 * 2 * s.n_ref * n + (ACCEL_REF_BATCH if s.batched else REF_BATCH) * act
    smc = 2 * s.smc_particles * 4 * n * 4 if s.smc_particles else 0
    return 2 * at_once * act + chains * (rec + 8 * n * 4) + max(whiten, ref) + smc


__all__ = ["RUNG_SCHEDULES", "TISettings", "batched_default", "group_bytes", "rung_ts"]
