r"""SGLD over every weight of a full-engine sweep (``SGLDConfig``): the program of
:class:`FullSGLD`.

Every run of the sweep (each P and seed) runs ``n_chains`` SGLD chains on the same energy U as
Adam (``objective.neg_log_posterior``, docs/theory.md §2), all weights sampled, embeddings
included, warm-started from the fit, in one compiled program: ``vmap`` over runs of
:func:`~copyhead_jax.sampling.sgld.sgld_chains` (``vmap`` over chains x ``scan`` over steps).
Positions are never stored: each draw records :meth:`Sampler.observe`.

Update (T = 1 on U): $\Theta_{t+1}=\Theta_t-\eta\nabla U+\sqrt{2\eta}\,\xi_t$. In loss units
($U=\frac{\chi}{\sigma^2}\mathcal L$) this is
$\Theta-\eta'\nabla\mathcal L+\sqrt{2\eta'\sigma^2/\chi}\,\xi$ with $\eta=\eta'\sigma^2/\chi$.
The paper's setting (lr $5\cdot10^{-10}$ on the loss, noise $\sigma^2=30$, $\chi=30$) is
therefore $\eta=5\cdot10^{-10}\cdot30/30=5\cdot10^{-10}$ here: the ``PAPER_SGLD`` preset.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ..config import SGLDConfig
from ..objective import Objective, neg_log_posterior
from ..results import SweepResult
from .sampler import DrawStats, Sampler, left_out
from .sgld import SGLDState, draw_steps, sgld_chains

#: The paper's SGLD protocol translated to eta on U (see the module docstring).
PAPER_SGLD = SGLDConfig(step_size=5e-10, n_steps=20_000, burn_in=5_000, thin=50, n_chains=4)


class FullSGLD(Sampler):
    """SGLD on every weight of a full-engine sweep's runs (module docstring)."""

    config: ClassVar[type] = SGLDConfig

    def check(self, sweep: SweepResult) -> None:
        if sweep.config.model.engine == "reduced":
            raise ValueError(
                "sampler: a reduced sweep is sampled by collapsed HMC (HMCConfig, CLI --sampler "
                "hmc); SGLDConfig samples every weight of a full-engine sweep"
            )

    def run_bytes(self, P: int | None = None) -> int:
        """The per-draw records (7 observables, acceptance, distance) and per-step traces (U,
        drift, noise, acceptance) of every chain, four copies of the weights and a step's
        activations per chain."""
        cfg, mc = self.cfg, self.mc
        L, V = cfg.task.L, cfg.task.V
        P = cfg.sweep.P_max if P is None else P
        extra = mc.keep_loglik * P
        N = int(cfg.model.width)
        weights = N * N + V * N + N * (V + L)
        activations = P * L * L * 8 + P * L * V * 6
        return (
            4
            * mc.n_chains
            * (4 * mc.n_steps + (9 + extra) * mc.n_draws + 4 * weights + activations)
        )

    def run(
        self,
        keys,
        head0,
        train,
        mask,
        n_steps: int | None = None,
        burn_in: int | None = None,
        state=None,
    ):
        """All chains of one run (``keys``: one per chain, ``head0`` the shared warm start):
        ``n_steps`` steps (default the config's) after ``burn_in``, or continued from ``state``
        (:mod:`.rounds`). Returns ``(DrawStats, the chains' last state)``."""
        s = self.mc
        n_steps = s.n_steps if n_steps is None else n_steps
        burn_in = s.burn_in if burn_in is None else burn_in
        obj = Objective.from_config(self.cfg)
        res = sgld_chains(
            keys,
            head0,
            lambda h, t, m: neg_log_posterior(h, t, m, obj),
            n_steps=n_steps,
            step_size=s.step_size,
            burn_in=burn_in,
            thin=s.thin,
            n_chains=s.n_chains,
            args=(train, mask),
            draw_fn=self.observe_all,
            state=state,
        )
        n_draws = res.draws.shape[1]
        acc = res.accept_prob[:, n_steps - n_draws * s.thin :]  # the steps leading to draws
        return DrawStats(
            draws=res.draws,
            accept=acc.reshape(s.n_chains, n_draws, s.thin).mean(-1),
            distance=res.draw_distance,
            U0=res.init_potential,
            finite=res.finite & jnp.all(jnp.isfinite(res.draws), axis=(1, 2)),
            step=jnp.full((s.n_chains,), s.step_size, res.draws.dtype),
        ), res.last_state

    def sample(self, keys, head, train, mask, prepared, idx) -> DrawStats:
        return _sample_runs(self.program, keys, head, train, mask)

    def start(self, keys, head, train, mask, prepared, idx):
        """The first round (:mod:`.rounds`): ``burn_in`` steps, then ``round_steps``."""
        return _start_runs(self.program, keys, head, train, mask)

    def more(self, carry, head, train, mask, prepared, idx, first_draw, active):
        """``round_steps`` more steps of every chain from ``carry`` (the last states), the
        rounds of the runs not ``active`` left out (the runs are batched: computed alike)."""
        stats, carry = _more_runs(self.program, carry, head, train, mask)
        return left_out(stats, active), carry

    def carry_structure(self, head):
        """The structure of the carry: an SGLD state whose position and gradient are heads."""
        z = jax.tree.unflatten(jax.tree.structure(head), [0] * len(jax.tree.leaves(head)))
        return jax.tree.structure(SGLDState(0, z, 0, z, 0, 0, 0, 0, 0))

    def draw_step(self, n_draws: int | None = None) -> np.ndarray:
        s = self.mc
        if not s.ess_target:
            return draw_steps(s.n_steps, s.burn_in, s.thin)
        return s.burn_in + s.thin * np.arange(1, (n_draws or s.n_draws) + 1)


@functools.partial(jax.jit, static_argnums=0)
def _sample_runs(sampler: FullSGLD, keys, heads, train, mask) -> DrawStats:
    """``vmap`` over runs of :meth:`FullSGLD.run`: the one compiled program of a chunk."""
    return jax.vmap(lambda *a: sampler.run(*a)[0])(keys, heads, train, mask)


@functools.partial(jax.jit, static_argnums=0)
def _start_runs(sampler: FullSGLD, keys, heads, train, mask):
    n = sampler.mc.burn_in + sampler.mc.round_draws * sampler.mc.thin
    return jax.vmap(lambda *a: sampler.run(*a, n_steps=n))(keys, heads, train, mask)


@functools.partial(jax.jit, static_argnums=0)
def _more_runs(sampler: FullSGLD, states, heads, train, mask):
    n = sampler.mc.round_draws * sampler.mc.thin

    def one(st, h, t, m):
        keys = st.rng_key  # unused when continuing: the chains carry their keys
        return sampler.run(keys, h, t, m, n_steps=n, burn_in=0, state=st)

    return jax.vmap(one)(states, heads, train, mask)
