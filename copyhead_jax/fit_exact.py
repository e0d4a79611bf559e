r"""Exact MAP fits of a sweep's runs under the reduced engine (THEORY.md §2c), in one program.

A chunk of runs (``train.RunInputs``: init key, nested training pool, mask, test set) is
initialised as reduced heads (:func:`models.init_reduced`: the run's embedding Gram per
``cfg.model``, weights from the prior or a branch start), solved to a stationary point of $U$
in float64 (:func:`solve.solve_map`, ``vmap`` over runs) and measured with the same
observables as the Adam fits. The per-run arrays have the keys of an Adam chunk (one-point
"curves"), plus ``rel_grad``, ``min_eig``, ``converged``, ``solver_steps`` and the Gram.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._devices import shard_runs, to_host
from .config import Config
from .models import AbstractHead, head_class, head_template, init_reduced, root_of
from .observables import measure
from .posterior import Objective
from .solve import ExactFit, solve_map
from .train import RunInputs


class ExactSolver(eqx.Module):
    """Static description of a sweep's exact-MAP program."""

    cfg: Config = eqx.field(static=True)

    def init(self, key: jax.Array) -> AbstractHead:
        return init_reduced(key, self.cfg, head_template(self.cfg), dtype=jnp.float64)

    def fit(self, inp: RunInputs) -> tuple[ExactFit, object]:
        t = self.cfg.train
        head = self.init(inp.key)
        fit = solve_map(
            head, inp.train, inp.mask, Objective.from_config(self.cfg),
            gtol=t.exact_gtol, max_steps=t.exact_max_steps,
        )  # fmt: skip
        return fit, measure(fit.head, inp.train, inp.mask, inp.test)


@functools.partial(jax.jit, static_argnums=0)
def fit_runs(solver: ExactSolver, inp: RunInputs):
    return jax.vmap(solver.fit)(inp)


def run_exact_chunk(cfg: Config, inp: RunInputs, keep_params: bool, mesh) -> dict[str, np.ndarray]:
    """Solve and measure one chunk of runs (float64 inside ``jax.enable_x64``)."""
    with jax.enable_x64(True):
        inp = shard_runs(inp, mesh)
        kinp = inp._replace(key=jax.random.wrap_key_data(inp.key))
        fit, m = fit_runs(ExactSolver(cfg), kinp)
        o = m.order
        n1, nG = head_class(cfg.model.attention).order_names  # softmax: a1, aG
        out = {
            n1: o.c1, nG: o.cG, "r": o.r, "psi": o.psi, "coverage": o.coverage,
            "sample_coverage": m.sample_coverage, "train_loss": m.train_loss,
            "test_loss": m.test_loss, "copy_accuracy": m.copy_accuracy, "U": fit.U,
            "grad_norm": fit.grad_norm, "grad_norm_span": fit.grad_norm,
            "stop_epoch": fit.n_steps, "mean_attention": m.mean_attention,
            "positional_logits": m.positional_logits, "rel_grad": fit.rel_grad,
            "min_eig": fit.min_eig, "converged": fit.converged,
        }  # fmt: skip
        out = {k: to_host(v) for k, v in out.items()}
        out["finite"] = (
            np.isfinite(out["U"])
            & np.all(np.isfinite(out["mean_attention"]), axis=(1, 2))
            & np.isfinite(out["train_loss"])
        )
        out["curve_U"] = out["U"][:, None].astype(np.float64)
        out["curve_loss"] = out["train_loss"][:, None].astype(np.float64)
        T = jax.vmap(root_of)(fit.head)
        out["gram"] = to_host(T @ jnp.swapaxes(T, 1, 2))
        if keep_params:
            for k in ("W_E", "b", "W_G", "W_O_hat"):
                out[f"params/{k}"] = to_host(getattr(fit.head, k))
    return out
