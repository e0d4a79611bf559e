r"""Posterior sampling of a whole sweep: one entry, :func:`run_sampler`, for every sampler.

The sampler config chooses the program (:data:`SAMPLERS`: ``SGLDConfig`` ->
:class:`~.full_sgld.FullSGLD`, SGLD on every weight of a full-engine sweep; ``HMCConfig`` ->
:class:`~.collapsed_hmc.CollapsedHMC`, collapsed HMC on a reduced sweep); ``run_sampler`` does
what is the same for all: the checks, the chain keys, chunks of runs compiled once and
checkpointed, the lock, progress, the merge into ``[P, seed, ...]`` arrays and the chain
health (:mod:`.health`). Per run, the posterior mean and variance of each recorded quantity
are kept: the variance of the order parameters is the susceptibility, the paper's
early-warning signal.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings as _warnings  # the name warnings is a list here
from pathlib import Path

import jax
import numpy as np

from .._checks import check_int, check_output_path
from .._warn import RunHealthWarning
from ..config import Config, HMCConfig, SGLDConfig
from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective
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
from ..runner import (
    Progress,
    available_bytes,
    check_sampler_memory,
    claim,
    failures,
    fingerprint,
    map_groups,
    run_mesh,
    shard_runs,
    to_host,
)
from ..runner.eta import announce
from ..storage import environment
from .collapsed_hmc import CollapsedHMC, whitening
from .cost import sampler_estimate
from .full_sgld import PAPER_SGLD as PAPER_SGLD
from .full_sgld import FullSGLD
from .health import health_arrays, posterior_warnings, run_flags, target_arrays, target_meta
from .records import split_extras
from .rounds import ROUNDS, by_length, merge, sample_rounds
from .sampler import DrawStats, Sampler
from .starts import default_starts

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


#: The program of each sampler config (:class:`~.sampler.Sampler`): the one table the sweep
#: sampler dispatches on.
SAMPLERS: dict[type, type[Sampler]] = {SGLDConfig: FullSGLD, HMCConfig: CollapsedHMC}


def sampler_for(cfg: Config, mc: SGLDConfig | HMCConfig) -> Sampler:
    """The program that runs ``mc`` on the sweeps of ``cfg``."""
    if type(mc) not in SAMPLERS:
        raise ValueError(f"sampler must be an SGLDConfig or an HMCConfig, got {type(mc).__name__}")
    return SAMPLERS[type(mc)](cfg, mc)


@functools.partial(jax.jit, static_argnums=0)
def whiten_runs(cfg: Config, heads, train, mask):
    """``(theta*, C)`` of every run of a reduced sweep: the whitening of the joint posterior at
    the fit (:func:`~.collapsed_hmc.whitening`; the whitened-SGLD free energies' reference).
    Call inside ``jax.enable_x64``."""
    obj = Objective.from_config(cfg)
    return jax.lax.map(lambda a: whitening(*a, obj), (heads, train, mask))


def run_sampler(
    sweep: SweepResult,
    sampler: SGLDConfig | HMCConfig,
    *,
    out: str | Path | None = None,
    progress: bool = True,
    chunk_runs: int = 0,
    on_chunk=None,
    cluster: str | None = None,
    estimate: bool | None = None,
) -> PosteriorResult:
    """Sample the posterior of every run of ``sweep`` with ``sampler`` (:class:`SGLDConfig`:
    full-engine sweeps, every weight, warm-started from the fits; :class:`HMCConfig`: reduced
    sweeps, collapsed HMC from ``sampler.starts``; :func:`default_sampler` picks one).

    Chunks of runs are compiled once, checkpointed next to ``out`` and resumed like sweeps.
    Before any work: the sampler's fit to the sweep, the draw count (at least one),
    ``chunk_runs``, the kept weights' shapes, ``out`` (a writable ``.npz`` that holds no other
    kind of result) and the memory of a chunk are checked, and ``out`` is locked against a
    second sampler. Unhealthy chains (non-finite, R-hat, ESS, acceptance, NaN diagnostics,
    starts that disagree) are reported by name on stderr and recorded in ``meta["warnings"]``;
    ``flagged[P, seed]`` marks the runs whose means are not to be trusted. ``cluster``: the
    chunks not kept run on a Dask cluster (``"tcp://host:port"``, ``"local:N"``;
    :func:`~copyhead_jax.runner.map_groups`), each built there from the configs, the fitted
    weights and the chain keys of its runs (:func:`remote_chunk`): the same numbers as here,
    checkpointed here as they return. ``estimate``: say what the chains will cost before they
    start (one progress note, :mod:`.cost`; default: with ``progress``).
    """
    if not isinstance(sweep, SweepResult):
        raise ValueError(f"sweep must be a SweepResult, got {type(sweep).__name__}")
    if not sweep.has_params:
        raise ValueError(
            "sweep has no fitted weights to warm-start from; rerun it with keep_params=True"
        )
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
    cfg = sweep.config
    program = sampler_for(cfg, sampler)
    program.check(sweep)
    chunk_runs = check_int("chunk_runs", chunk_runs, lo=0, hi=10**7)
    if sampler.n_draws < 1:
        raise ValueError(
            f"SGLDConfig keeps no draw: (n_steps - burn_in) // thin = ({sampler.n_steps} - "
            f"{sampler.burn_in}) // {sampler.thin} = 0; raise n_steps (--steps) or lower "
            "burn_in (--burn-in) or thin (--thin)"
        )  # HMCConfig checks thin <= n_iter itself
    t0 = time.time()
    check_param_shapes(sweep.arrays, cfg, "sweep")
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    n_runs, C = nP * nS, sampler.n_chains
    if out is not None:
        out = check_output_path("out", out, kind=POSTERIOR_KIND)
    mesh = run_mesh(cfg.sweep.n_devices)
    chunk = chunk_runs or cfg.sweep.chunk_runs or program.chunk_runs(n_runs) or n_runs
    chunk = mesh.size * math.ceil(min(chunk, n_runs) / mesh.size)
    check_sampler_memory(
        sampler, math.ceil(chunk / mesh.size), program.run_bytes(), available_bytes(cfg)
    )
    if progress if estimate is None else estimate:  # what it will cost, before any work
        announce(lambda: sampler_estimate(cfg, sampler), __name__)
    ckpt = Path(str(out) + ".chunks") if out is not None else None
    held = claim(out, ckpt=ckpt)  # one sampler per output; released after the final save
    inputs = sweep_inputs(cfg, None)
    heads = sweep.head_arrays(flat=True)
    chains = jax.random.split(jax.random.key(sampler.seed), n_runs * C)
    chain_keys = np.asarray(jax.random.key_data(chains)).reshape(n_runs, C, -1)
    prepared = program.prepare(heads)
    bar = Progress(
        n_runs,
        f"{sampler.name} {cfg.model.attention} ({C} chains per run)",
        show=progress,
        n_chunks=math.ceil(n_runs / chunk),
        on_chunk=on_chunk,
    )

    def chunk_arrays(idx) -> dict[str, np.ndarray]:
        """The host arrays of the runs ``idx``: chain keys, rows, mask and fitted weights."""
        rows = {"train": np.asarray(inputs.train)[idx], "mask": np.asarray(inputs.mask)[idx]}
        return {"keys": chain_keys[idx], **rows, **{k: v[idx] for k, v in heads.items()}}

    def compute(idx, snapshot):
        return sample_chunk(program, mesh, chunk_arrays(idx), prepared, idx, snapshot)

    def fan_out(idxs: list) -> list[dict[str, np.ndarray]]:
        """The chunks of runs ``idxs`` on ``cluster``, each built there from the config."""
        tasks = [(cfg, sampler, chunk_arrays(idx), prepared, idx) for idx in idxs]
        got = map_groups(remote_chunk, tasks, cluster=cluster)
        bad = failures(got)
        if bad:
            raise ValueError(
                f"{len(bad)} of {len(idxs)} sampler chunk(s) failed on {cluster}: {bad[0]}"
            )
        return got

    # the record fields name what a checkpoint holds (older chunks without energy are redone),
    # and ROUNDS how rounds stop (chunks whose runs stopped together are redone)
    fp = fingerprint(
        [cfg.to_dict(), sampler.kind, dataclasses.asdict(sampler), chunk, DrawStats._fields]
        + ([ROUNDS] if sampler.ess_target else [])
    )
    merged = bar.chunks(
        n_runs=n_runs,
        chunk=chunk,
        compute=compute,
        fingerprint=fp,
        ckpt_dir=ckpt,
        snapshots=True,
        merge=merge,
        fan_out=None if cluster is None else fan_out,
    )
    bar.close()
    arrays = {k: v.reshape((nP, nS) + v.shape[1:]) for k, v in merged.items()}
    n_used = arrays["n_draws"]
    arrays["draw_step"] = program.draw_step(int(n_used.max()))
    arrays.update(by_length(lambda a: health_arrays(a, order_names(cfg)), arrays, n_used))
    arrays.update(by_length(program.extras, arrays, n_used))
    arrays.update(target_arrays(arrays, order_names(cfg), sampler))
    meta = {
        "environment": environment(),
        "sampler_name": sampler.name,
        "target": target_meta(sampler),
    }
    if "tokens_sha256" in sweep.meta:  # a user's rows: the data cannot be redrawn from cfg
        meta["tokens_sha256"] = sweep.meta["tokens_sha256"]
    res = PosteriorResult(cfg, sampler, arrays, meta, draw_fields(cfg))
    res.meta["warnings"] = warnings = posterior_warnings(res) + program.warnings(res)
    res.arrays["flagged"] = flagged = run_flags(res)  # "ok" means ok: health past doubt
    res.meta["wall_seconds"] = time.time() - t0
    for w in warnings:
        _warnings.warn(w, RunHealthWarning, stacklevel=2)
    if flagged.any():
        _warnings.warn(
            f"{int(flagged.sum())} of {n_runs} runs flagged (non-finite chains, or "
            "R-hat/ESS NaN or past the thresholds: flagged=True)",
            RunHealthWarning,
            stacklevel=2,
        )
    held.finish(None if out is None else lambda: res.save(out))
    return res


def sample_chunk(program: Sampler, mesh, data: dict[str, np.ndarray], prepared, idx, snapshot):
    """The host arrays of one chunk of runs ``idx``: ``data`` holds their chain keys
    (``jax.random.key_data``), ``train``, ``mask`` and fitted weights (a leading run axis),
    ``prepared`` what :meth:`~.sampler.Sampler.prepare` made of every run's weights;
    ``snapshot``: where its rounds are saved (:mod:`.rounds`)."""
    cfg, sampler = program.cfg, program.mc
    train, mask = data["train"], data["mask"]
    if program.trim_rows:  # drop the padding rows no run of the chunk uses
        n_keep = max(1, int((mask > 0).sum(-1).max()))
        if not np.any(mask[:, n_keep:] > 0):
            train, mask = train[:, :n_keep], mask[:, :n_keep]
    data = shard_runs({**data, "train": train, "mask": mask}, mesh)
    head = head_class(cfg.model.attention).from_arrays(cfg, data)
    keys = jax.random.wrap_key_data(data["keys"])
    t, m = data["train"], data["mask"]

    def host(st):
        got = {k: to_host(v) for k, v in st._asdict().items() if v is not None}
        return split_extras(got, sampler, mask, cfg)

    if not sampler.ess_target:
        st = program.sample(keys, head, t, m, prepared, idx)
        return {**host(st), "n_draws": np.full(len(idx), sampler.n_draws, np.int64)}
    return sample_rounds(
        sampler,
        lambda: program.start(keys, head, t, m, prepared, idx),
        lambda carry, n, active: program.more(carry, head, t, m, prepared, idx, n, active),
        host,
        program.carry_structure(head),
        snapshot,
        each=True,
    )


def remote_chunk(task: tuple) -> dict[str, np.ndarray]:
    """One chunk of :func:`run_sampler` from ``(cfg, sampler config, data, prepared, idx)``
    alone (a cluster's worker): its program built from the configs, its rounds not saved."""
    cfg, mc, data, prepared, idx = task
    return sample_chunk(
        sampler_for(cfg, mc), run_mesh(cfg.sweep.n_devices), data, prepared, idx, None
    )
