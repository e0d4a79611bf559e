r"""Exact MAP fits of a sweep's runs under the reduced engine (docs/theory.md §2c), in one program.

A chunk of runs (``inputs.RunInputs``: init key, nested training pool, mask, test set) is
initialised as reduced heads (:func:`models.init_reduced`: the run's embedding Gram per
``cfg.model``, weights from the prior or a branch start), solved to a stationary point of $U$
in float64 (:func:`.exact.solve_map`; runs one after the other on one CPU, ``vmap`` elsewhere)
and measured with the same observables as the Adam fits. One compiled program serves every P of
a sweep: the pools are padded to ``P_max`` and each chunk (one P) passes the number of blocks of
sequences that hold data. The per-run arrays have the keys of an Adam chunk (one-point
"curves"), plus ``rel_grad``, ``min_eig``, ``converged``, ``solver_steps`` and the Gram.
With ``train_embeddings`` the embeddings are solved for too: the joint MAP of the width-N
network, exactly (docs/theory.md §2d; ``models._reduce_trained.joint_split``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..config import Config, single_start
from ..models import (
    ARRAY_FIELDS,
    AbstractHead,
    head_class,
    head_template,
    init_reduced_arrays,
    joint_split,
    reduced_head,
    target_weights,
)
from ..objective import Objective, predictions, squared_errors
from ..observables import (
    Measurement,
    attention_matrices,
    copy_accuracy_of,
    order_parameters,
    positional_logits,
)
from ..runner import shard_runs, to_host
from .exact import BLOCK, ExactFit, blocks_of, quenched_split, solve_map
from .inputs import RunInputs


class _InitSpec(NamedTuple):
    """What a reduced run's starting point depends on (not the attention, not the sweep)."""

    model: object
    train: object
    task: object
    posterior: object  # only chi and chi_in_readout_prior: the readout prior draw


@functools.partial(jax.jit, static_argnums=0)
def _init_arrays(spec: _InitSpec, key: jax.Array):
    # one key per call: the vmapped program compiled for 2.7 s, this one for 1.3 s (CPU)
    return init_reduced_arrays(key, spec, jnp.float64)


_INIT_CACHE: dict = {}


def initial_arrays(cfg: Config, key_data: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(T, W_G, W_O_hat)`` of :func:`models.init_reduced` for each run's key (host arrays).

    Drawing the width-N embeddings compiles for ~3 s and every chunk of a sweep (and the other
    attention of the same sweep) starts its runs from the same few seeds: the program is shared
    by both attentions and the arrays are kept for the last few key sets."""
    p = cfg.posterior
    readout = type(p)(chi=p.chi, chi_in_readout_prior=p.chi_in_readout_prior)
    model = dataclasses.replace(cfg.model, attention="linear")
    spec = _InitSpec(model, cfg.train, cfg.task, readout)
    key_data = np.asarray(key_data)
    cache_key = (spec, key_data.shape, key_data.tobytes())
    if cache_key not in _INIT_CACHE:
        uniq, inv = np.unique(key_data.reshape(len(key_data), -1), axis=0, return_inverse=True)
        with jax.enable_x64(True):
            keys = jax.random.wrap_key_data(jnp.asarray(uniq.reshape((-1,) + key_data.shape[1:])))
            per_key = [_init_arrays(spec, k) for k in keys]
            arrs = tuple(np.stack([np.asarray(r[i]) for r in per_key]) for i in range(3))
        while len(_INIT_CACHE) >= 8:
            _INIT_CACHE.pop(next(iter(_INIT_CACHE)))
        _INIT_CACHE[cache_key] = tuple(a[inv.ravel()] for a in arrs)
    return _INIT_CACHE[cache_key]


class ExactSolver(eqx.Module):
    """Static description of a sweep's exact-MAP program."""

    cfg: Config = eqx.field(static=True)
    serial: bool = eqx.field(static=True, default=True)  # runs one after the other (CPU)

    @classmethod
    def of(cls, cfg: Config, serial: bool = True) -> ExactSolver:
        """The solver of ``cfg`` with what its program does not read reset (the grid, the
        start, the continuation: starts are inputs): sweeps whose runs have the same shapes
        share one compilation (the continuation's steps, a refined grid, the two softmax
        starts)."""
        reset = ("init_attention", "init_copy_logit")
        default = type(cfg.train)()
        neutral = dataclasses.replace(
            cfg.train, **{f: getattr(default, f) for f in reset}, solver=single_start(cfg.solver)
        )
        return cls(dataclasses.replace(cfg, train=neutral, sweep=type(cfg.sweep)()), serial)

    def fit(self, inp: RunInputs, start, n_blocks: jax.Array) -> tuple[ExactFit, object]:
        t, ex = self.cfg.train, self.cfg.solver
        head = reduced_head(*start, head_template(self.cfg))
        split = quenched_split  # trained embeddings: the joint MAP at width N (§2d)
        if t.train_embeddings:
            split = functools.partial(joint_split, width=self.cfg.model.width)
        fit = solve_map(
            head,
            inp.train,
            inp.mask,
            Objective.from_config(self.cfg),
            gtol=ex.gtol,
            max_steps=ex.max_steps,
            n_blocks=n_blocks,
            split=split,
        )
        return fit, measure_blocked(fit.head, inp.train, inp.mask, inp.test, n_blocks)


def measure_blocked(
    head: AbstractHead, train, mask, test, n_blocks, block: int = BLOCK
) -> Measurement:
    """``observables.measure`` with the training-set means summed over the first ``n_blocks``
    blocks of ``block`` sequences (as the solver's data term): a chunk of small P does not pay
    for the rows padded up to ``P_max`` (measure on 1,000 rows cost ~5 evaluations of U)."""
    V = head.W_E.shape[1]
    P, L = train.shape
    B = min(block, P)
    n = -(-P // B)
    tb = jnp.concatenate([train, jnp.zeros((n * B - P, L), train.dtype)]).reshape(n, B, L)
    mb = jnp.concatenate([mask, jnp.zeros((n * B - P,), mask.dtype)]).reshape(n, B)

    def body(i, acc):
        keep = mb[i] > 0
        A = attention_matrices(head, tb[i])
        cov = jnp.nan_to_num(jax.vmap(lambda a: order_parameters(a).coverage)(A))
        err = squared_errors(head, tb[i], V)
        return (
            acc[0] + jnp.sum(jnp.where(keep[:, None, None], A, 0.0), axis=0),
            acc[1] + jnp.sum(jnp.where(keep, cov, 0.0)),
            acc[2] + jnp.sum(jnp.where(keep, err, 0.0)),
        )

    dt = head.W_G.dtype
    zero = (jnp.zeros((L, L), dt), jnp.zeros((), dt), jnp.zeros((), dt))
    A_sum, cov_sum, err_sum = jax.lax.fori_loop(0, jnp.minimum(n_blocks, n), body, zero)
    count = jnp.maximum(jnp.sum(mask), 1.0)
    A_bar = A_sum / count
    # the test loss and the copy accuracy of observables.measure from one forward pass
    f = predictions(head, test, V)  # [n_test, L, V]
    prev = jnp.roll(test, 1, axis=-1)
    sq = (f - jax.nn.one_hot(prev, V, dtype=f.dtype)) ** 2
    if head.causal:  # position 0 has no previous token: out of the loss (models._mask)
        sq = sq * target_weights(L, True).astype(sq.dtype)[None, :, None]
    test_err = jnp.sum(sq, axis=(1, 2))
    return Measurement(
        mean_attention=A_bar,
        order=order_parameters(A_bar, gauge_fix=head.gauge_fix),
        sample_coverage=cov_sum / count,
        positional_logits=positional_logits(head),
        train_loss=err_sum / count,
        test_loss=jnp.mean(test_err),
        copy_accuracy=copy_accuracy_of(f, test, head.causal),
    )


@functools.partial(jax.jit, static_argnums=0)
def fit_runs(solver: ExactSolver, inp: RunInputs, start, n_blocks: jax.Array):
    """Every run of ``inp`` solved from ``start = (T, W_G, W_O_hat)`` in one program;
    ``n_blocks`` (traced, shared by the runs): blocks of the training pools that hold data, so
    one compilation serves every ``P``.

    With ``solver.serial`` (one CPU device) the runs go one after the other (``lax.map``), not
    side by side (``vmap``): under ``vmap`` every run iterates until the slowest of the chunk
    has converged (the linear head's seeds take 50 to 100 evaluations at P = 800), while on a
    CPU one run's blocks are already large enough to vectorise (an evaluation cost the same per
    run either way, measured). An accelerator, or runs sharded over devices, keep ``vmap``."""
    if solver.serial:
        return jax.lax.map(lambda a: solver.fit(*a, n_blocks), (inp, start))
    return jax.vmap(solver.fit, in_axes=(0, 0, None))(inp, start, n_blocks)


def run_exact_chunk(
    cfg: Config, inp: RunInputs, keep_params: bool, mesh, weights: tuple | None = None
) -> dict[str, np.ndarray]:
    """Solve and measure one chunk of runs (float64 inside ``jax.enable_x64``), from the
    config's start or from ``weights = (W_G, W_O_hat)`` (per run; the embeddings are the runs')."""
    with jax.enable_x64(True):
        start = initial_arrays(cfg, np.asarray(inp.key))
        if weights is not None:
            start = (start[0], *(np.asarray(w, np.float64) for w in weights))
        rows = np.asarray(inp.mask) > 0
        P_used = int(np.max(np.where(rows.any(1), rows.shape[1] - np.argmax(rows[:, ::-1], 1), 0)))
        n_blocks = jnp.asarray(blocks_of(max(P_used, 1), rows.shape[1]), jnp.int32)
        inp, start = shard_runs((inp, start), mesh)
        serial = mesh.size == 1 and mesh.devices.flat[0].platform == "cpu"
        fit, m = fit_runs(ExactSolver.of(cfg, serial), inp, start, n_blocks)
        o = m.order
        n1, nG = head_class(cfg.model.attention).order_names  # softmax: a1, aG
        out = {
            n1: o.c1,
            nG: o.cG,
            "r": o.r,
            "psi": o.psi,
            "coverage": o.coverage,
            "sample_coverage": m.sample_coverage,
            "train_loss": m.train_loss,
            "test_loss": m.test_loss,
            "copy_accuracy": m.copy_accuracy,
            "U": fit.U,
            "grad_norm": fit.grad_norm,
            "grad_norm_span": fit.grad_norm,
            "stop_epoch": fit.n_steps,
            "mean_attention": m.mean_attention,
            "positional_logits": m.positional_logits,
            "rel_grad": fit.rel_grad,
            "min_eig": fit.min_eig,
            "converged": fit.converged,
        }
        out = {k: to_host(v) for k, v in out.items()}
        out["finite"] = (
            np.isfinite(out["U"])
            & np.all(np.isfinite(out["mean_attention"]), axis=(1, 2))
            & np.isfinite(out["train_loss"])
        )
        out["curve_U"] = out["U"][:, None].astype(np.float64)
        out["curve_loss"] = out["train_loss"][:, None].astype(np.float64)
        T = np.asarray(start[0])
        if cfg.train.train_embeddings:  # the Gram U U^T / N moved: the fit's, not the start's
            W_E, b = to_host(fit.head.W_E), to_host(fit.head.b)  # [runs, D, V], [runs, D, L]
            E = np.concatenate([np.swapaxes(W_E, 1, 2), np.swapaxes(b, 1, 2)], axis=1)
            T = E / np.sqrt(E.shape[-1])  # E = sqrt(D) T' for the fit's root T'

        out["gram"] = T @ np.swapaxes(T, 1, 2)
        if keep_params:
            for k in ARRAY_FIELDS:
                out[f"params/{k}"] = to_host(getattr(fit.head, k))
    return out


def exact_solve_from(cfg: Config, mesh):
    """``solve(inp, (W_G, W_O_hat))``: exact fits of the runs ``inp`` from those weights, the
    runs padded to a multiple of the mesh size (repeats of the last) and cut back."""

    def solve(inp: RunInputs, weights: tuple) -> dict[str, np.ndarray]:
        n = len(np.asarray(inp.mask))
        idx = np.minimum(np.arange(n + (-n) % mesh.size), n - 1)
        inp = jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], inp)
        out = run_exact_chunk(cfg, inp, True, mesh, tuple(np.asarray(w)[idx] for w in weights))
        return {k: v[:n] for k, v in out.items()}

    return solve
