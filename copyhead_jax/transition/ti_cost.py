r"""What a branch-TI transition (:mod:`.search`) will cost, before it starts: its evaluations of
the collapsed $U_m(W^G)$ and its gradient and their time at the unit cost timed here
(:func:`~copyhead_jax.sampling.cost.unit_seconds`, one compiled evaluation at the first probe's
padded rows), announced like the profile method's (:mod:`.profile.cost`).

Per (seed, P) group (:mod:`.branch_group`): both branches' rungs run by chains, ``n_chains``
each, ``n_adapt`` warm-up iterations and then ``n_iter`` (with a target: one round, the fewest,
to ``n_iter``, the cap), :data:`~copyhead_jax.sampling.hmc.LEAPFROG` evaluations each; with
``exact_t0`` the reference draws, ``n_ref`` per branch in one to ``REF_ROUNDS`` rounds (an energy
without its gradient each, counted as one evaluation). A seed measures 2 groups (the fewest a
bracket takes; a later seed anchored on the earlier seeds' slope: 1) to ``MAX_PROBES``. The SMC
cross-check at the bracket's two ends: ``smc_particles`` particles, per tempering step
``smc_moves`` HMC moves of ``SMC_LEAP`` steps and two energies, from 2 steps (seed 0's ends
alone, the fewest) to ``smc_max_steps`` (every seed's). Left out: the exact MAP sweeps of both
starts before the groups and the whitening Hessians (on at most 64 sequences)."""

from __future__ import annotations

import jax.numpy as jnp

from ..config import Config
from ..runner.eta import Estimate
from ..sampling.cost import unit_seconds
from ..sampling.hmc import LEAPFROG
from .plan import MAX_PROBES
from .ti_settings import REF_ROUNDS, TISettings

__all__ = ["SMALLER", "SMC_LEAP", "ti_estimate"]

#: leapfrog steps of one SMC move (``branch_group``'s SMC programs)
SMC_LEAP = 5

#: how to run a smaller branch-TI transition
SMALLER = (
    "its cost grows with L, V and P*; a smaller one: fewer --rungs, --chains, --iterations, "
    "--smc-particles or --n-seeds, or a smaller --L"
)


def group_evaluations(s: TISettings) -> tuple[int, int]:
    """Evaluations of one (seed, P) group, the fewest and the most (module docstring)."""
    chains = 2 * len(s.chain_ts) * s.n_chains
    first = min(s.round_draws * s.thin, s.n_iter) if s.ess_target else s.n_iter
    ref = 2 * s.n_ref if s.exact_t0 else 0
    lo = chains * (s.n_adapt + first) * LEAPFROG + ref
    hi = chains * (s.n_adapt + s.n_iter) * LEAPFROG + ref * REF_ROUNDS
    return lo, hi


def smc_evaluations(s: TISettings, steps: int) -> int:
    """Evaluations of one SMC cross-check point of ``steps`` tempering steps."""
    return s.smc_particles * steps * (s.smc_moves * SMC_LEAP + 2)


def ti_estimate(
    cfg: Config,
    s: TISettings,
    *,
    n_seeds: int,
    rows: int,
    where: str,
    anchored: bool = True,
    cross_check: bool = True,
    unit=None,
) -> Estimate:
    """The groups' and SMC cross-checks' evaluations of ``n_seeds`` seeds and their time, each
    at ``rows`` padded rows (the first probe's; ``where``: where it came from); ``anchored``: a
    later seed's fewest groups are 1 (else 2); ``unit``: seconds of one evaluation by rows
    (default: timed here)."""
    g_lo, g_hi = group_evaluations(s)
    n_lo = 2 + (n_seeds - 1) * (1 if anchored else 2)
    n_hi = n_seeds * MAX_PROBES
    smc = cross_check and s.smc_particles > 0
    lo = n_lo * g_lo + (2 * smc_evaluations(s, 2) if smc else 0)
    hi = n_hi * g_hi + (2 * n_seeds * smc_evaluations(s, s.smc_max_steps) if smc else 0)
    t = unit or unit_seconds(cfg, [rows], energy="marginal", dtype=jnp.float32)
    sec = float(t(rows))
    return Estimate(
        f"branch TI L={cfg.task.L} V={cfg.task.V}, {n_seeds} seed(s), first probe at "
        f"{rows} padded rows ({where})",
        (lo, hi),
        "evaluations of U_m and its gradient",
        (lo * sec, hi * sec),
        f"{n_lo}-{n_hi} groups x 2 branches x {len(s.chain_ts)} rungs x {s.n_chains} chains x "
        f"up to {s.n_adapt + s.n_iter} iterations x {LEAPFROG} leapfrog steps"
        + (f", SMC {s.smc_particles} particles" if smc else "")
        + f"; one evaluation timed here: {1e3 * sec:.2g} ms",
    )
