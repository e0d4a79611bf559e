r"""Posterior sampling of a whole sweep: one entry, :func:`run_sampler`, and two samplers
chosen by the config's type: :class:`SGLDConfig` (full engine, below) and :class:`HMCConfig`
(reduced engine: the collapsed HMC of :mod:`copyhead_jax.sampling.collapsed_hmc`, chains started per
``HMCConfig.starts``, :mod:`copyhead_jax.sampling.starts`).

**SGLD.** Every run of a :class:`SweepResult` (each P and seed) runs ``n_chains`` SGLD chains
on the same energy U as Adam (``objective.neg_log_posterior``, docs/theory.md §2), all weights
sampled, embeddings included, in one compiled program: ``vmap`` over runs x ``vmap`` over chains x
``scan`` over draws (``thin`` steps between draws, after ``burn_in`` steps). Positions are
never stored: each draw records U, the training loss, the order parameters and the coverage of
the mean attention matrix. Per run, the posterior mean and variance of each recorded quantity
are kept: the variance of the order parameters is the susceptibility, the paper's early-warning
signal.

Update (T = 1 on U): $\Theta_{t+1}=\Theta_t-\eta\nabla U+\sqrt{2\eta}\,\xi_t$. In loss units
($U=\frac{\chi}{\sigma^2}\mathcal L$) this is
$\Theta-\eta'\nabla\mathcal L+\sqrt{2\eta'\sigma^2/\chi}\,\xi$ with $\eta=\eta'\sigma^2/\chi$.
The paper's setting (lr $5\cdot10^{-10}$ on the loss, noise $\sigma^2=30$, $\chi=30$) is
therefore $\eta=5\cdot10^{-10}\cdot30/30=5\cdot10^{-10}$ here: the ``PAPER_SGLD`` preset.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from .._checks import check_int, check_output_path
from ..config import Config, HMCConfig, SGLDConfig
from ..data import masked_mean
from ..fit import sweep_inputs
from ..models import AbstractHead, head_class, root_of
from ..objective import Objective, embedding_prior_energy, neg_log_posterior, squared_errors
from ..observables import attention_matrices, order_parameters
from ..results import (
    DRAW_FIELDS,
    GENERIC_ORDER,
    POSTERIOR_KIND,
    PosteriorResult,
    SweepResult,
    check_param_shapes,
    order_names,
    rename_order,
)
from ..runner import check_sampler_memory, run_chunked, run_mesh, shard_runs, to_host
from ..storage import acquire_lock, environment, release_lock, remove_tmp_orphans
from .collapsed import marginal_whitening
from .collapsed_hmc import collapsed_chains, warmup_chains, whitening
from .health import health_arrays, posterior_warnings, run_flags, var_U_ratio
from .records import log_likelihood, split_extras
from .sgld import draw_steps, run_chains
from .starts import branch_arrays, default_starts, start_points, start_warnings

#: The paper's SGLD protocol translated to eta on U (see the module docstring).
PAPER_SGLD = SGLDConfig(step_size=5e-10, n_steps=20_000, burn_in=5_000, thin=50, n_chains=4)

#: Reduced sweeps: the collapsed sampler of :mod:`copyhead_jax.sampling.collapsed_hmc` (the readout
#: integrated out exactly, HMC on W^G): 500 unadjusted-Langevin warm-up steps, 100 adaptation
#: iterations, then 1,500 HMC iterations of 5 leapfrog steps at the frozen step (times a jitter in
#: [0.8, 1.2]). Measured on the small default (docs/reports/reduced_sampler.md): acceptance
#: ~0.75-0.85; the slowest quantity is U at P = 128 (ESS ~ 0.09 per iteration and chain), so
#: 1,500 iterations x 4 chains give ESS >= 400 for U and both order parameters in every softmax
#: run.
REDUCED_HMC = HMCConfig()
#: Linear attention: c1 through the pooling-to-copying crossover mixes slowest (small default,
#: P = 64: ESS of c1 261 and 313 after 1,500 iterations, 690 and 424 after 3,000), so linear
#: reduced sweeps default to 3,500 HMC iterations.
REDUCED_HMC_LINEAR = dataclasses.replace(REDUCED_HMC, n_iter=3500)


def default_sampler(sweep) -> SGLDConfig | HMCConfig:
    """The default sampler of a sweep: full engine ``SGLDConfig()``; reduced engine
    ``REDUCED_HMC`` (softmax; starts ``both`` near the coexistence window,
    :func:`~copyhead_jax.sampling.starts.default_starts`) or ``REDUCED_HMC_LINEAR``."""
    cfg = sweep.config
    if cfg.model.engine != "reduced":
        return SGLDConfig()
    if not head_class(cfg.model.attention).two_branches:
        return REDUCED_HMC_LINEAR
    return dataclasses.replace(REDUCED_HMC, starts=default_starts(cfg))


def draw_fields(cfg: Config) -> tuple[str, ...]:
    """``DRAW_FIELDS`` with the head's order-parameter names (softmax: ``a1``, ``aG``)."""
    return tuple(rename_order(f, GENERIC_ORDER, order_names(cfg)) for f in DRAW_FIELDS)


class DrawStats(NamedTuple):
    """One chain's record: per-draw observables and running health counters."""

    draws: jax.Array  # [C, S, len(DRAW_FIELDS)]
    accept: jax.Array  # [C, S] mean MALA acceptance proxy over the thin steps before each draw
    distance: jax.Array  # [C, S] || Theta_draw - Theta_0 ||
    U0: jax.Array  # [C] U at the warm start
    finite: jax.Array  # [C] no non-finite U or MALA log-ratio along the chain
    step: jax.Array  # [C] step size of the kept draws (reduced: each chain's adapted HMC step)
    energy: jax.Array | None = None  # [C, S] HMC: the Hamiltonian at each draw; SGLD: none


class Sampler(eqx.Module):
    """Static description of a sweep's sampling program (``mc``: the sampler config)."""

    cfg: Config = eqx.field(static=True)
    mc: SGLDConfig | HMCConfig = eqx.field(static=True)

    def observe(self, head: AbstractHead, train, mask) -> jax.Array:
        V = self.cfg.task.V
        A = masked_mean(attention_matrices(head, train), mask)
        o = order_parameters(A, gauge_fix=head.gauge_fix)
        U = neg_log_posterior(head, train, mask, Objective.from_config(self.cfg))
        if self.cfg.model.engine == "reduced":  # quenched U, as the exact fits report it
            U = U - embedding_prior_energy(head, Objective.from_config(self.cfg))
        loss = masked_mean(squared_errors(head, train, V), mask)
        return jnp.stack([U, loss, o.c1, o.cG, o.r, o.psi, o.coverage])

    def observe_all(self, head: AbstractHead, train, mask) -> jax.Array:
        """:meth:`observe`, then (``HMCConfig.keep_loglik``) each sequence's log-likelihood
        (0 on padding rows), then (``keep_weights``) ``W^G`` and ``W_O_hat`` flattened."""
        parts = [self.observe(head, train, mask)]
        if getattr(self.mc, "keep_loglik", False):
            parts.append(jnp.where(mask > 0, log_likelihood(head, train, self.cfg), 0.0))
        if getattr(self.mc, "keep_weights", False):
            parts += [head.W_G.ravel(), head.W_O_hat.ravel()]
        return jnp.concatenate(parts) if len(parts) > 1 else parts[0]

    def run(self, keys, head0: AbstractHead, train, mask) -> DrawStats:
        """All chains of one run (``keys``: one per chain, ``head0`` the shared warm start),
        through :func:`sgld.run_chains` with the observables as ``draw_fn`` (full-width sweeps:
        every weight sampled; reduced sweeps use :func:`sample_collapsed` instead)."""
        s = self.mc
        obj = Objective.from_config(self.cfg)
        res = run_chains(
            keys, head0, lambda h, t, m: neg_log_posterior(h, t, m, obj),
            n_steps=s.n_steps, step_size=s.step_size, burn_in=s.burn_in, thin=s.thin,
            n_chains=s.n_chains, args=(train, mask), draw_fn=self.observe_all,
        )  # fmt: skip
        n_draws = res.draws.shape[1]
        acc = res.accept_prob[:, s.n_steps - n_draws * s.thin :]  # the steps leading to draws
        return DrawStats(
            draws=res.draws,
            accept=acc.reshape(s.n_chains, n_draws, s.thin).mean(-1),
            distance=res.draw_distance,
            U0=res.init_potential,
            finite=res.finite & jnp.all(jnp.isfinite(res.draws), axis=(1, 2)),
            step=jnp.full((s.n_chains,), s.step_size, res.draws.dtype),
        )


@functools.partial(jax.jit, static_argnums=0)
def sample_runs(sampler: Sampler, keys, heads, train, mask) -> DrawStats:
    """``vmap`` over runs of :meth:`Sampler.run`: the one compiled program of a sweep."""
    return jax.vmap(sampler.run)(keys, heads, train, mask)


@functools.partial(jax.jit, static_argnums=0)
def whiten_runs(cfg: Config, heads, train, mask):
    """``(theta*, C)`` of every run of a reduced sweep: the whitening of the joint posterior at
    the fit (the earlier default sampler's; kept for experiments). Call inside
    ``jax.enable_x64``."""
    obj = Objective.from_config(cfg)
    return jax.lax.map(lambda a: whitening(*a, obj), (heads, train, mask))


@functools.partial(jax.jit, static_argnums=0)
def _marginal_whitening_runs(cfg: Config, heads, train, mask):
    """The marginal whitening of every run (one run at a time: a vmap over runs would hold
    runs x 32 tangents of the data block); call inside ``jax.enable_x64``."""
    obj = Objective.from_config(cfg)
    return jax.lax.map(lambda a: marginal_whitening(*a, obj), (heads, train, mask))


@functools.partial(jax.jit, static_argnums=0)
def _warmup_runs(sampler: Sampler, keys, heads, train, mask, C):
    obj = Objective.from_config(sampler.cfg)
    n = sampler.mc.n_warmup
    return jax.vmap(lambda k, h, t, m, c: warmup_chains(k, h, t, m, obj, c, n))(
        keys, heads, train, mask, C
    )


@functools.partial(jax.jit, static_argnums=0)
def _collapsed_runs(sampler: Sampler, keys, heads, train, mask, x_init, C):
    s = sampler.mc
    obj = Objective.from_config(sampler.cfg)

    def one(k, h, t, m, x, c):
        obs = lambda hh: sampler.observe_all(hh, t, m)
        st = collapsed_chains(k, h, t, m, obj, x, c, obs, n_iter=s.n_iter, thin=s.thin,
                              step_size=s.step_size, n_leap=s.n_leapfrog, n_adapt=s.n_adapt,
                              target_accept=s.target_accept, adapt_mass=s.adapt_mass)  # fmt: skip
        U0 = sampler.observe(h, t, m)[0]
        return DrawStats(st.draws, st.accept, st.distance, jnp.full(k.shape, U0), st.finite,
                         st.step_size, st.energy)  # fmt: skip

    return jax.vmap(one)(keys, heads, train, mask, x_init, C)


def sample_collapsed(sampler: Sampler, keys, heads, train, mask) -> DrawStats:
    """Reduced sweeps, every run of a chunk: whitening of the marginal at the fit, warm-up,
    whitening at the end of chain 0's warm-up, HMC (:mod:`copyhead_jax.sampling.collapsed_hmc`)."""
    f64 = lambda tree: jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), tree)
    f32 = lambda tree: jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), tree)
    k_warm = jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, 1)))(keys)
    k_hmc = jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, 2)))(keys)
    with jax.enable_x64(True):
        C1 = _marginal_whitening_runs(sampler.cfg, f64(heads), train, f64(mask))
    heads, mask = f32(heads), f32(mask)
    x_warm = _warmup_runs(sampler, k_warm, heads, train, mask, f32(C1))  # [runs, chains, n]
    typical = eqx.tree_at(lambda h: h.W_G, heads, x_warm[:, 0].reshape(heads.W_G.shape))
    with jax.enable_x64(True):
        C2 = _marginal_whitening_runs(sampler.cfg, f64(typical), train, f64(mask))
    return _collapsed_runs(sampler, k_hmc, heads, train, mask, x_warm, f32(C2))


def sample_from_starts(sampler: Sampler, keys, heads, train, mask, starts) -> DrawStats:
    """:func:`sample_collapsed` once per start group: group ``g`` of ``G = len(starts)`` runs
    the chains ``keys[:, g C/G : (g+1) C/G]`` from ``W^G = starts[g]`` (``[runs, D, D]``);
    the groups' chains are concatenated in order. One group at the fits is the plain call."""
    G = len(starts)
    Cg = keys.shape[1] // G
    parts = []
    for g in range(G):
        # placed as the other weights are: an uncommitted W^G would compile the whitening twice
        W_G = jax.device_put(np.asarray(starts[g], heads.W_G.dtype), heads.W_G.sharding)
        h = eqx.tree_at(lambda hh: hh.W_G, heads, W_G)
        parts.append(sample_collapsed(sampler, keys[:, g * Cg:(g + 1) * Cg], h, train, mask))
    if G == 1:
        return parts[0]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *parts)


def run_sampler(
    sweep: SweepResult,
    sampler: SGLDConfig | HMCConfig,
    *,
    out: str | Path | None = None,
    progress: bool = True,
    chunk_runs: int = 0,
    on_chunk=None,
) -> PosteriorResult:
    """Sample the posterior of every run of ``sweep`` with ``sampler`` (:class:`SGLDConfig`:
    full-engine sweeps, every weight, warm-started from the fits; :class:`HMCConfig`: reduced
    sweeps, collapsed HMC from ``sampler.starts``; :func:`default_sampler` picks one).

    Chunks of runs are compiled once, checkpointed next to ``out`` and resumed like sweeps.
    Before any work: the sampler's fit to the engine, the draw count (at least one),
    ``chunk_runs``, the kept weights' shapes, ``out`` (a writable ``.npz`` that holds no other
    kind of result) and the memory of a chunk (:func:`.runner.check_sampler_memory`) are
    checked, and ``out`` is locked against a second sampler. Unhealthy chains (non-finite,
    R-hat, ESS, acceptance, NaN diagnostics, starts that disagree) are reported by name on
    stderr and recorded in ``meta["warnings"]``; ``flagged[P, seed]`` marks the runs whose
    means are not to be trusted.
    """
    if not isinstance(sweep, SweepResult):
        raise ValueError(f"sweep must be a SweepResult, got {type(sweep).__name__}")
    if not sweep.has_params:
        raise ValueError(
            "sweep has no fitted weights to warm-start from; rerun it with keep_params=True"
        )
    if not isinstance(sampler, SGLDConfig | HMCConfig):
        raise ValueError(
            f"sampler must be an SGLDConfig or an HMCConfig, got {type(sampler).__name__}"
        )
    reduced = sweep.config.model.engine == "reduced"
    if reduced and isinstance(sampler, SGLDConfig):
        raise ValueError(
            "sampler: a reduced sweep is sampled by collapsed HMC (HMCConfig, CLI --sampler "
            "hmc); SGLDConfig samples every weight of a full-engine sweep"
        )
    if reduced and sweep.config.train.train_embeddings:
        raise ValueError(
            "sweep: a reduced sweep with trained embeddings holds joint-MAP fits (docs/theory.md "
            "§2d); the collapsed HMC samples the quenched posterior only (train_embeddings=False)"
        )
    if not reduced and isinstance(sampler, HMCConfig):
        raise ValueError(
            "sampler: collapsed HMC (HMCConfig) needs a reduced sweep (engine='reduced'); a "
            "full-engine sweep is sampled by SGLD (SGLDConfig, CLI --sampler sgld)"
        )
    chunk_runs = check_int("chunk_runs", chunk_runs, lo=0, hi=10**7)
    if sampler.n_draws < 1:
        raise ValueError(
            f"SGLDConfig keeps no draw: (n_steps - burn_in) // thin = ({sampler.n_steps} - "
            f"{sampler.burn_in}) // {sampler.thin} = 0; raise n_steps (--steps) or lower "
            "burn_in (--burn-in) or thin (--thin)"
        )  # HMCConfig checks thin <= n_iter itself
    t0 = time.time()
    cfg = sweep.config
    check_param_shapes(sweep.arrays, cfg, "sweep")
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    n_runs, C = nP * nS, sampler.n_chains
    if out is not None:
        out = check_output_path("out", out, kind=POSTERIOR_KIND)
    mesh = run_mesh(cfg.sweep.n_devices)
    chunk = chunk_runs or max(1, min(n_runs, cfg.sweep.chunk_runs or n_runs))
    if cfg.model.engine == "reduced" and not (chunk_runs or cfg.sweep.chunk_runs):
        # runs are P-major: chunks of two P values, each trimmed to its largest P (the padding
        # rows cost as much as data in the collapsed sampler; 4 compiles on the small default)
        chunk = min(n_runs, 2 * nS)
    chunk = mesh.size * math.ceil(min(chunk, n_runs) / mesh.size)
    check_sampler_memory(cfg, sampler, math.ceil(chunk / mesh.size))
    lock = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(out)  # one sampler per output; released after the final save
        remove_tmp_orphans(out, Path(str(out) + ".chunks"))  # a killed final write's
    inputs = sweep_inputs(cfg, None)
    heads = {k: sweep[f"params/{k}"].reshape((n_runs,) + sweep[f"params/{k}"].shape[2:])
             for k in ("W_E", "b", "W_G", "W_O_hat")}  # fmt: skip
    chains = jax.random.split(jax.random.key(sampler.seed), n_runs * C)
    chain_keys = jax.random.key_data(chains).reshape(n_runs, C, -1)
    mc, program = sampler, Sampler(cfg, sampler)
    cls = head_class(cfg.model.attention)
    if reduced:  # [G, runs, D, D]: each start group's W^G (starts.py)
        roots = np.asarray(jax.vmap(root_of)(cls.from_arrays(cfg, heads)))
        starts = start_points(cfg, mc, heads["W_G"], roots, np.random.default_rng(mc.seed))
    bar = tqdm(total=n_runs, desc=f"{mc.name} {cfg.model.attention} ({C} chains per run)",
               unit="run", disable=not progress, file=sys.stderr, leave=False)  # fmt: skip

    def compute(idx):
        train, mask = np.asarray(inputs.train)[idx], np.asarray(inputs.mask)[idx]
        if cfg.model.engine == "reduced":  # drop the padding rows no run of the chunk uses
            n_keep = max(1, int((mask > 0).sum(-1).max()))
            if not np.any(mask[:, n_keep:] > 0):
                train, mask = train[:, :n_keep], mask[:, :n_keep]
        data = shard_runs(
            dict(keys=chain_keys[idx], train=train, mask=mask,
                 **{k: v[idx] for k, v in heads.items()}),
            mesh,
        )  # fmt: skip
        head = cls.from_arrays(cfg, data)
        keys = jax.random.wrap_key_data(data["keys"])
        if reduced:  # the readout integrated out exactly
            st = sample_from_starts(program, keys, head, data["train"], data["mask"],
                                    starts[:, idx])  # fmt: skip
        else:
            st = sample_runs(program, keys, head, data["train"], data["mask"])
        got = {k: to_host(v) for k, v in st._asdict().items() if v is not None}
        return split_extras(got, mc, mask, cfg)

    def done(c, n, loaded):
        bar.update(min(chunk, n_runs - c * chunk))  # the chunk's runs, not its padded slots
        if on_chunk is not None and not loaded:
            on_chunk(c, n)

    # the record fields name what a checkpoint holds: older chunks without energy are redone
    blob = json.dumps([cfg.to_dict(), mc.kind, dataclasses.asdict(mc), chunk, DrawStats._fields],
                      sort_keys=True)  # fmt: skip
    fp = hashlib.sha256(blob.encode()).hexdigest()[:16]
    ckpt = Path(str(out) + ".chunks") if out is not None else None
    merged = run_chunked(n_runs=n_runs, chunk=chunk, compute=compute, fingerprint=fp,
                         ckpt_dir=ckpt, on_done=done)  # fmt: skip
    bar.close()
    arrays = {k: v.reshape((nP, nS) + v.shape[1:]) for k, v in merged.items()}
    if reduced:  # HMC iterations after adaptation at which draws were kept
        arrays["draw_step"] = np.arange(1, mc.n_draws + 1) * mc.thin
    else:
        arrays["draw_step"] = draw_steps(mc.n_steps, mc.burn_in, mc.thin)
    arrays.update(health_arrays(arrays, order_names(cfg)))
    if reduced:
        D = cfg.task.V + cfg.task.L
        arrays["var_U_ratio"] = var_U_ratio(arrays, D * D + cfg.task.V * D)
        if head_class(cfg.model.attention).two_branches:
            arrays.update(branch_arrays(arrays["draws"][..., 3], arrays["finite"], mc))
    meta = {"environment": environment(), "sampler_name": mc.name}
    res = PosteriorResult(cfg, mc, arrays, meta, draw_fields(cfg))
    res.meta["warnings"] = warnings = posterior_warnings(res)
    if reduced:
        warnings += start_warnings(arrays, res.P, mc, res.order_names[1])
    res.arrays["flagged"] = flagged = run_flags(res)  # "ok" means ok: health past doubt
    res.meta["wall_seconds"] = time.time() - t0
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if flagged.any():
        print(f"warning: {int(flagged.sum())} of {n_runs} runs flagged (non-finite chains, or "
              "R-hat/ESS NaN or past the thresholds: flagged=True)", file=sys.stderr)  # fmt: skip
    if out is not None:
        res.save(out)
        shutil.rmtree(ckpt, ignore_errors=True)
        release_lock(lock)
    return res
