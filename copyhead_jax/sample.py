r"""Posterior sampling of a whole sweep: SGLD chains warm-started from the MAP fits.

Every run of a :class:`SweepResult` (each P and seed) runs ``n_chains`` SGLD chains on the same
energy U as Adam (``posterior.neg_log_posterior``, THEORY.md §2), all weights sampled, embeddings
included, in one compiled program: ``vmap`` over runs x ``vmap`` over chains x ``scan`` over
draws (``thin`` steps between draws, after ``burn_in`` steps). Positions are never stored: each
draw records U, the training loss, the order parameters and the coverage of the mean attention
matrix. Per run, the posterior mean and variance of each recorded quantity are kept: the variance
of the order parameters is the susceptibility, the paper's early-warning signal.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from ._chunks import run_chunked
from ._devices import run_mesh, shard_runs, to_host
from .config import Config, SGLDConfig
from .data import masked_mean
from .models import AbstractHead, head_class
from .observables import attention_matrices, order_parameters
from .posterior import Objective, embedding_prior_energy, neg_log_posterior, squared_errors
from .results import (
    GENERIC_ORDER,
    SCHEMA_VERSION,
    SweepResult,
    atomic_save_npz,
    environment,
    load_npz,
    order_names,
    rename_order,
    resolve_order,
    upgrade_schema1,
)
from .sample_reduced import whitened_potential, whitening
from .sgld import chain_health, draw_steps, health_warnings, run_chains
from .sweep import _all_inputs, _check_writable

POSTERIOR_KIND = "copyhead_jax.PosteriorResult"

#: The paper's SGLD protocol translated to eta on U (see the module docstring).
PAPER_SGLD = SGLDConfig(step_size=5e-10, n_steps=20_000, burn_in=5_000, thin=50, n_chains=4)

#: Reduced sweeps: eta in whitened coordinates (unit curvature at the fit). The stationary
#: variance of a quadratic well is inflated by 1 / (1 - eta / 2) = 1.053 (the bias measured
#: against NUTS); the lag-10 autocorrelation of a unit-curvature direction is (1 - eta)^10 =
#: 0.35, so 4 chains x 500 draws give ESS ~ 1,000 in a quadratic well.
REDUCED_SGLD = SGLDConfig(step_size=0.1, n_steps=6000, burn_in=1000, thin=10, n_chains=4)


def default_sgld(sweep) -> SGLDConfig:
    """The default SGLD protocol for a sweep: ``REDUCED_SGLD`` under the reduced engine."""
    return REDUCED_SGLD if sweep.config.model.engine == "reduced" else SGLDConfig()


#: Quantities recorded at every draw, in this order, under the generic order-parameter names
#: (a result names them for its head: :func:`draw_fields`).
DRAW_FIELDS = ("U", "train_loss", "c1", "cG", "r", "psi", "coverage")


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


class Sampler(eqx.Module):
    """Static description of a sweep's sampling program."""

    cfg: Config = eqx.field(static=True)
    sgld: SGLDConfig = eqx.field(static=True)

    def observe(self, head: AbstractHead, train, mask) -> jax.Array:
        V = self.cfg.task.V
        A = masked_mean(attention_matrices(head, train), mask)
        o = order_parameters(A, gauge_fix=head.gauge_fix)
        U = neg_log_posterior(head, train, mask, Objective.from_config(self.cfg))
        if self.cfg.model.engine == "reduced":  # quenched U, as the exact fits report it
            U = U - embedding_prior_energy(head, Objective.from_config(self.cfg))
        loss = masked_mean(squared_errors(head, train, V), mask)
        return jnp.stack([U, loss, o.c1, o.cG, o.r, o.psi, o.coverage])

    def run(self, keys, head0: AbstractHead, train, mask, theta=None, C=None) -> DrawStats:
        """All chains of one run (``keys``: one per chain, ``head0`` the shared warm start),
        through :func:`sgld.run_chains` with the observables as ``draw_fn``.

        Reduced sweeps: only ``(W^G, W_O_hat)`` are sampled (the embeddings are quenched), in
        the whitened coordinates of :mod:`copyhead_jax.sample_reduced` (a constant
        preconditioner, the inverse Hessian at the fit)."""
        s = self.sgld
        obj = Objective.from_config(self.cfg)
        if C is not None:  # reduced sweep: (theta*, C) from whiten_runs
            U_w, head_of = whitened_potential(head0, obj)
            res = run_chains(
                keys, jnp.zeros_like(theta), U_w,
                n_steps=s.n_steps, step_size=s.step_size, burn_in=s.burn_in, thin=s.thin,
                n_chains=s.n_chains, args=(theta, C, train, mask),
                draw_fn=lambda w, th, c, t, m: self.observe(head_of(w, th, c), t, m),
            )  # fmt: skip
        else:
            res = run_chains(
                keys, head0, lambda h, t, m: neg_log_posterior(h, t, m, obj),
                n_steps=s.n_steps, step_size=s.step_size, burn_in=s.burn_in, thin=s.thin,
                n_chains=s.n_chains, args=(train, mask), draw_fn=self.observe,
            )  # fmt: skip
        n_draws = res.draws.shape[1]
        acc = res.accept_prob[:, s.n_steps - n_draws * s.thin :]  # the steps leading to draws
        return DrawStats(
            draws=res.draws,
            accept=acc.reshape(s.n_chains, n_draws, s.thin).mean(-1),
            distance=res.draw_distance,
            U0=res.init_potential,
            finite=res.finite & jnp.all(jnp.isfinite(res.draws), axis=(1, 2)),
        )


@functools.partial(jax.jit, static_argnums=0)
def sample_runs(sampler: Sampler, keys, heads, train, mask, theta=None, C=None) -> DrawStats:
    """``vmap`` over runs of :meth:`Sampler.run`: the one compiled program of a sweep."""
    return jax.vmap(sampler.run)(keys, heads, train, mask, theta, C)


@functools.partial(jax.jit, static_argnums=0)
def whiten_runs(cfg: Config, heads, train, mask):
    """``(theta*, C)`` of every run of a reduced sweep (call inside ``jax.enable_x64``)."""
    obj = Objective.from_config(cfg)
    # one run at a time: a vmap over runs would hold runs x 32 tangents x the P x L x L block
    # (GiBs at the paper's P); the Hessian-vector products are vectorised inside each run
    return jax.lax.map(lambda a: whitening(*a, obj), (heads, train, mask))


@dataclass
class PosteriorResult:
    """SGLD draws of a sweep: ``draws[P, seed, chain, draw, field]`` with ``fields``, plus
    per-run posterior means/variances and health (``rhat``, ``ess``, ``accept``, ...).

    The order parameters carry the head's names (softmax: ``a1``, ``aG``, ``rhat_aG``);
    ``post["c1"]``/``post["cG"]`` are aliases (c1/cG are the generic names, a1/aG the softmax
    ones)."""

    config: Config
    sgld: SGLDConfig
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)
    fields: tuple[str, ...] = DRAW_FIELDS

    @property
    def P(self) -> np.ndarray:
        return np.asarray(self.config.sweep.P)

    @property
    def order_names(self) -> tuple[str, str]:
        """This head's names of the generic ``(c1, cG)``; softmax: ``(a1, aG)``."""
        return order_names(self.config)

    def __getitem__(self, name: str) -> np.ndarray:
        name = resolve_order(name, (*self.fields, *self.arrays), self.order_names)
        if name in self.fields:
            return self.arrays["draws"][..., self.fields.index(name)]
        if name not in self.arrays:
            raise KeyError(f"PosteriorResult has no {name!r}; fields {self.fields}, "
                           f"arrays {sorted(self.arrays)}")  # fmt: skip
        return self.arrays[name]

    def moments(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of ``name`` per run ``[P, seed]`` over finite chains."""
        x = np.where(self.arrays["finite"][..., None], self[name], np.nan)
        with np.errstate(all="ignore"):
            return np.nanmean(x, axis=(-2, -1)), np.nanvar(x, axis=(-2, -1))

    def save(self, path) -> Path:
        meta = dict(self.meta)
        meta.update(
            kind=POSTERIOR_KIND, schema=SCHEMA_VERSION, config=self.config.to_dict(),
            sgld=dataclasses.asdict(self.sgld), fields=list(self.fields),
        )  # fmt: skip
        return atomic_save_npz(path, self.arrays, meta)

    @classmethod
    def load(cls, path) -> PosteriorResult:
        arrays, meta = load_npz(path, kind=POSTERIOR_KIND)
        try:
            cfg, sg = Config.from_dict(meta["config"]), SGLDConfig(**meta["sgld"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{str(path)!r} has an invalid config: {e}") from None
        fields = tuple(meta["fields"])
        if meta.get("schema", SCHEMA_VERSION) < 2:  # schema 1: c1/cG for every head
            fields = tuple(rename_order(f, GENERIC_ORDER, order_names(cfg)) for f in fields)
        return cls(cfg, sg, upgrade_schema1(arrays, meta, cfg), meta, fields)

    def to_arviz(self):
        """ArviZ InferenceData (ArviZ < 1) or DataTree (>= 1): :func:`arviz_io.to_arviz`."""
        from .arviz_io import to_arviz

        return to_arviz(self)


def run_sampler(
    sweep: SweepResult,
    sgld: SGLDConfig,
    *,
    out: str | Path | None = None,
    progress: bool = True,
    chunk_runs: int = 0,
    on_chunk=None,
) -> PosteriorResult:
    """Sample the posterior of every run of ``sweep``, warm-started from its fitted weights.

    Chunks of runs are compiled once, checkpointed next to ``out`` and resumed like sweeps.
    Unhealthy chains (non-finite, R-hat, ESS, acceptance proxy) are reported by name on stderr
    and recorded in ``meta["warnings"]``.
    """
    if not isinstance(sweep, SweepResult):
        raise ValueError(f"sweep must be a SweepResult, got {type(sweep).__name__}")
    if not sweep.has_params:
        raise ValueError(
            "sweep has no fitted weights to warm-start from; rerun it with keep_params=True"
        )
    if not isinstance(sgld, SGLDConfig):
        raise ValueError(f"sgld must be an SGLDConfig, got {type(sgld).__name__}")
    t0 = time.time()
    cfg = sweep.config
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    n_runs, C = nP * nS, sgld.n_chains
    if out is not None:
        _check_writable(Path(out))
    inputs = _all_inputs(cfg, None)
    heads = {k: sweep[f"params/{k}"].reshape((n_runs,) + sweep[f"params/{k}"].shape[2:])
             for k in ("W_E", "b", "W_G", "W_O_hat")}  # fmt: skip
    chains = jax.random.split(jax.random.key(sgld.seed), n_runs * C)
    chain_keys = jax.random.key_data(chains).reshape(n_runs, C, -1)
    mesh = run_mesh(cfg.sweep.n_devices)
    chunk = chunk_runs or max(1, min(n_runs, cfg.sweep.chunk_runs or n_runs))
    chunk = mesh.size * math.ceil(chunk / mesh.size)
    sampler = Sampler(cfg, sgld)
    cls = head_class(cfg.model.attention)
    n_chunks = math.ceil(n_runs / chunk)
    bar = tqdm(total=n_chunks, desc=f"sgld {cfg.model.attention} ({n_runs} runs x {C} chains)",
               disable=not progress, file=sys.stderr, leave=False)  # fmt: skip

    def compute(idx):
        data = shard_runs(
            dict(keys=chain_keys[idx], train=np.asarray(inputs.train)[idx],
                 mask=np.asarray(inputs.mask)[idx], **{k: v[idx] for k, v in heads.items()}),
            mesh,
        )  # fmt: skip
        head = cls.from_arrays(cfg, data)
        keys = jax.random.wrap_key_data(data["keys"])
        theta = C = None
        if cfg.model.engine == "reduced":  # whitening: dense Hessian at the fit, float64
            with jax.enable_x64(True):
                h64 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), head)
                theta, C = whiten_runs(cfg, h64, data["train"], data["mask"])
                theta, C = np.asarray(theta, np.float32), np.asarray(C, np.float32)
            head = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), head)
        st = sample_runs(sampler, keys, head, data["train"], data["mask"], theta, C)
        return {k: to_host(getattr(st, k)) for k in DrawStats._fields}

    def done(c, n, loaded):
        bar.update(1)
        if on_chunk is not None and not loaded:
            on_chunk(c, n)

    blob = json.dumps([cfg.to_dict(), dataclasses.asdict(sgld), chunk], sort_keys=True)
    fp = hashlib.sha256(blob.encode()).hexdigest()[:16]
    ckpt = Path(str(out) + ".chunks") if out is not None else None
    merged = run_chunked(n_runs=n_runs, chunk=chunk, compute=compute, fingerprint=fp,
                         ckpt_dir=ckpt, on_done=done)  # fmt: skip
    bar.close()
    arrays = {k: v.reshape((nP, nS) + v.shape[1:]) for k, v in merged.items()}
    arrays["draw_step"] = draw_steps(sgld.n_steps, sgld.burn_in, sgld.thin)
    arrays.update(_health_arrays(arrays, order_names(cfg)[1]))
    if cfg.model.engine == "reduced":
        D = cfg.task.V + cfg.task.L
        arrays["var_U_ratio"] = _var_U_ratio(arrays, D * D + cfg.task.V * D)
    res = PosteriorResult(cfg, sgld, arrays, {"environment": environment()}, draw_fields(cfg))
    res.meta["warnings"] = warnings = _warnings(res)
    res.meta["wall_seconds"] = time.time() - t0
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if out is not None:
        res.save(out)
        shutil.rmtree(ckpt, ignore_errors=True)
    return res


class _HealthInput(NamedTuple):
    potential: np.ndarray
    accept_prob: np.ndarray
    finite: np.ndarray
    draw_distance: np.ndarray
    draw_potential: np.ndarray
    init_potential: np.ndarray


#: Reduced sweeps: in a Gaussian posterior of n weights U - U_min ~ Gamma(n/2), Var U = n/2; a
#: ratio outside this range flags a non-Gaussian posterior or a biased chain (measured on the
#: small default: linear attention at P = 32, NUTS 0.9, whitened SGLD at eta = 0.02 19).
GAUSS_VAR_RANGE = (0.5, 2.0)


def _var_U_ratio(a: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Posterior variance of U over the finite chains, per run, in units of ``n / 2``."""
    U = np.where(a["finite"][..., None], a["draws"][..., 0], np.nan)
    with np.errstate(all="ignore"):
        return np.nanvar(U.reshape(U.shape[:2] + (-1,)), axis=-1) / (n / 2)


def _health_arrays(a: dict[str, np.ndarray], nG: str) -> dict[str, np.ndarray]:
    """Split R-hat and ESS of U and of cG (named ``nG``) over each run's chains, acceptance,
    distance, ..."""
    U = a["draws"][..., 0]
    h = chain_health(_HealthInput(U, a["accept"], a["finite"], a["distance"], U, a["U0"]))
    hG = chain_health(
        _HealthInput(a["draws"][..., 3], a["accept"], a["finite"], a["distance"], U, a["U0"])
    )
    return {
        "rhat": h.rhat, "ess": h.ess, f"rhat_{nG}": hG.rhat, f"ess_{nG}": hG.ess,
        "accept_mean": h.accept_prob, "distance_mean": h.distance,
        "frac_below_start": h.frac_below_start,
    }  # fmt: skip


def _warnings(res: PosteriorResult) -> list[str]:
    a = res.arrays
    U = a["draws"][..., 0]
    h = chain_health(_HealthInput(U, a["accept"], a["finite"], a["distance"], U, a["U0"]))
    msgs = health_warnings(h)
    # name runs by (P, seed) rather than by array index
    P = res.P
    out = []
    for m in msgs:
        for i, p in enumerate(P):
            for s in range(res.config.sweep.n_seeds):
                m = m.replace(f"run ({i}, {s})", f"run P={p} seed={s}")
        out.append(m)
    if res.config.model.engine == "reduced" and "var_U_ratio" in a:
        for i, p in enumerate(P):
            for s, r in enumerate(a["var_U_ratio"][i]):
                if not GAUSS_VAR_RANGE[0] <= r <= GAUSS_VAR_RANGE[1]:
                    out.append(
                        f"run P={p} seed={s}: posterior variance of U is {r:.2f} x n/2, the "
                        "value of a Gaussian posterior in n weights: the posterior is far from "
                        "Gaussian or the step too large for the whitening; check the means "
                        "against NUTS (sample_reduced.nuts_reference) before trusting them"
                    )
    return out
