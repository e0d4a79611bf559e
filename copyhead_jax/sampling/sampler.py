r"""The sampler of a sweep's posterior: what every program records, and the contract
:func:`~copyhead_jax.sampling.run.run_sampler` drives.

A sampler config (``SGLDConfig``, ``HMCConfig``; frozen, in :mod:`copyhead_jax.config`, so that
result files can name them) is run by one :class:`Sampler` subclass, its program: which sweeps
it samples, how many runs a compiled chunk holds and what one run costs in memory, where its
chains start, the compiled chunk itself, and what it adds to the health arrays and warnings.
``run_sampler`` owns the rest (keys, chunks, checkpoints, lock, progress, health), the same for
every sampler. Every draw records :meth:`Sampler.observe` (U, the training loss, the order
parameters, the coverage of the mean attention), then what the config asks to keep.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..config import FINAL, Config, HMCConfig, SGLDConfig
from ..data import masked_mean
from ..models import AbstractHead
from ..objective import Objective, embedding_prior_energy, neg_log_posterior, squared_errors
from ..observables import attention_matrices, order_parameters
from ..results import PosteriorResult, SweepResult
from .records import log_likelihood


def observations(U, loss, A, gauge_fix: bool) -> jax.Array:
    """``[U, loss, c1, cG, r, psi, coverage]`` (:meth:`Sampler.observe`) from U, the loss and
    the mean attention matrix ``A``."""
    o = order_parameters(A, gauge_fix=gauge_fix)
    return jnp.stack([U, loss, o.c1, o.cG, o.r, o.psi, o.coverage])


class DrawStats(NamedTuple):
    """The chains of the runs of one chunk: per-draw observables and health counters."""

    draws: jax.Array  # [runs, C, S, len(DRAW_FIELDS) + kept extras]
    accept: jax.Array  # [runs, C, S] mean acceptance (SGLD: MALA proxy) of the thin steps
    distance: jax.Array  # [runs, C, S] distance of the draw from the chain's reference point
    U0: jax.Array  # [runs, C] U at the warm start
    finite: jax.Array  # [runs, C] no non-finite energy or record along the chain
    step: jax.Array  # [runs, C] step size of the kept draws (HMC: each chain's adapted step)
    energy: jax.Array | None = None  # [runs, C, S] HMC: the Hamiltonian at each draw


def left_out(stats: DrawStats, active) -> DrawStats:
    """``stats`` with the rounds of the runs not ``active[runs]`` left out: their per-draw
    arrays NaN, ``finite`` true (a round a run did not draw says nothing of its chains)."""

    def cut(x):
        if x is None or x.ndim < 3:
            return x
        on = active.reshape(active.shape + (1,) * (x.ndim - 1))
        return jnp.where(on, x, jnp.nan)

    out = stats._replace(**{f: cut(getattr(stats, f)) for f in ("draws", "accept", "distance")})
    out = out._replace(energy=cut(stats.energy), finite=stats.finite | ~active[:, None])
    return out


class Sampler(eqx.Module):
    """The program of one sampler config ``mc`` on the sweeps of ``cfg`` (module docstring).
    Subclasses set ``config`` (the config type they run) and implement the contract below."""

    cfg: Config = eqx.field(static=True)
    mc: SGLDConfig | HMCConfig = eqx.field(static=True)

    config: ClassVar[type]
    #: drop the padding rows no run of a chunk uses (their cost is that of data)
    trim_rows: ClassVar[bool] = False

    @property
    def program(self) -> Sampler:
        """This sampler as its compiled programs see it (their static argument): the fields only
        the host reads set to one value (the seed: the chain keys and start points are made
        from it outside the programs; the target's values: they only decide whether another
        round runs), so calls that differ only in them share one compilation. Whether there is
        a target stays: it sets a round's length."""
        mc = dataclasses.replace(
            self.mc,
            seed=0,
            ess_target=float(self.mc.ess_target > 0),
            rhat_target=FINAL.rhat_max,
        )
        return type(self)(self.cfg, mc)

    def observe(self, head: AbstractHead, train, mask) -> jax.Array:
        """``[U, loss, c1, cG, r, psi, coverage]`` of one head on its run's training data (the
        reduced engine's U without the frozen embeddings' prior, as its exact fits report it)."""
        V = self.cfg.task.V
        A = masked_mean(attention_matrices(head, train), mask)
        U = neg_log_posterior(head, train, mask, Objective.from_config(self.cfg))
        if self.cfg.model.engine == "reduced":  # quenched U, as the exact fits report it
            U = U - embedding_prior_energy(head, Objective.from_config(self.cfg))
        loss = masked_mean(squared_errors(head, train, V), mask)
        return observations(U, loss, A, head.gauge_fix)

    def observe_all(self, head: AbstractHead, train, mask, observed=None) -> jax.Array:
        """:meth:`observe` (or ``observed``, where the caller has it), then (``keep_loglik``)
        each sequence's log-likelihood (0 on padding rows), then (``keep_weights``) ``W^G`` and
        ``W_O_hat`` flattened."""
        parts = [self.observe(head, train, mask) if observed is None else observed]
        if getattr(self.mc, "keep_loglik", False):
            parts.append(jnp.where(mask > 0, log_likelihood(head, train, self.cfg), 0.0))
        if getattr(self.mc, "keep_weights", False):
            parts += [head.W_G.ravel(), head.W_O_hat.ravel()]
        return jnp.concatenate(parts) if len(parts) > 1 else parts[0]

    # the contract ------------------------------------------------------------------------

    def check(self, sweep: SweepResult) -> None:
        """Refuse, before any work, a sweep this sampler cannot sample (one line, the reason)."""
        raise NotImplementedError

    def chunk_runs(self, n_runs: int) -> int | None:
        """Runs per compiled chunk when neither the call nor the config sets it (``None``: all)."""
        return None

    def run_bytes(self, P: int | None = None) -> int:
        """Estimated peak device bytes of one run's chains (datasets padded to ``P``)."""
        raise NotImplementedError

    def prepare(self, heads: dict[str, np.ndarray]) -> Any:
        """Whatever the chunks need from all runs' fitted weights ``heads`` (flat run axis),
        e.g. where the chains start; passed to :meth:`sample` with the chunk's run indices."""
        return None

    def sample(self, keys, head: AbstractHead, train, mask, prepared: Any, idx) -> DrawStats:
        """Every chain of the runs of one chunk (``keys[runs, C]``, heads and data with a
        leading run axis, ``idx`` the runs' indices into the sweep)."""
        raise NotImplementedError

    def start(self, keys, head: AbstractHead, train, mask, prepared: Any, idx):
        """The first round of :mod:`.rounds` (``mc.round_draws`` draws per chain, everything
        before them included): ``(DrawStats, carry)``, the carry what :meth:`more` continues."""
        raise NotImplementedError

    def more(self, carry, head: AbstractHead, train, mask, prepared: Any, idx, first_draw, active):
        """The next round of the runs still drawing (``active[runs]``) from ``carry``
        (``first_draw`` draws per chain so far): ``(DrawStats, carry)``, the other runs' left
        out (:func:`left_out`; their work may be skipped); the chains equal one run of the
        summed length."""
        raise NotImplementedError

    def carry_structure(self, head: AbstractHead):
        """The pytree structure of the carry (a saved round's leaves are rebuilt with it)."""
        raise NotImplementedError

    def draw_step(self, n_draws: int | None = None) -> np.ndarray:
        """The step (SGLD) or iteration after adaptation (HMC) of each of the first
        ``n_draws`` draws (default: the config's)."""
        raise NotImplementedError

    def extras(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Arrays this sampler adds to the merged ``[P, seed, ...]`` arrays before health."""
        return {}

    def warnings(self, res: PosteriorResult) -> list[str]:
        """Warnings of this sampler beyond the common chain health."""
        return []
