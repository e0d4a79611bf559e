"""The program of each MAP solver config in a sweep: which runs share a padded length, the chunk
function, what follows the chunks, and the logged epochs.

``run_sweep`` (:mod:`copyhead_jax.sweep.run`) owns the harness (chunks, checkpoints, lock,
progress, the result) and asks :func:`solver_program` for the rest, so that a new solver is a
config (``config/solvers.py``), a chunk function and one :class:`SolverProgram` subclass
registered in :data:`SOLVERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..config import AdamConfig, Config, ExactConfig
from .adam import Trainer
from .adam_sweep import run_adam_chunk
from .continuation import continue_in_P
from .exact_sweep import exact_solve_from, run_exact_chunk
from .inputs import RunInputs


class SolverProgram:
    """What a sweep does with one solver config (``cfg.solver``)."""

    config: ClassVar[type]

    def __init__(self, cfg: Config):
        self.cfg = cfg

    def padding_groups(self) -> dict[int, np.ndarray]:
        """Padded dataset length -> the runs (P-major indices) trained at that length: powers
        of two up to ``P_max`` (``SweepConfig.padding='pow2'``), or all at ``P_max``."""
        sw = self.cfg.sweep
        P_of = np.repeat(np.asarray(sw.P), sw.n_seeds)
        if sw.padding == "max":
            return {sw.P_max: np.arange(len(P_of))}
        pads = np.minimum(2 ** np.ceil(np.log2(P_of)).astype(int), sw.P_max)
        return {int(p): np.flatnonzero(pads == p) for p in np.unique(pads)}

    def keep_fitted(self, keep_params: bool) -> bool:
        """Whether the chunks keep the fitted weights (those asked for, or needed later)."""
        return keep_params

    def run_chunk(self, inp: RunInputs, keep: bool, bar, mesh, snapshot, snapshot_every_s):
        """Fit and measure one chunk of runs; per-run host arrays."""
        raise NotImplementedError

    def extra_runs(self) -> int:
        """Run fits after the chunks (progress: the bar's total counts them)."""
        return 0

    def after_chunks(
        self,
        inputs: RunInputs,
        merged: dict,
        mesh,
        ckpt: Path | None,
        fingerprint: str,
        on_runs: Callable[[int], None],
    ) -> dict:
        """The merged per-run arrays after any work that needs every chunk's fits (its
        checkpoints under ``ckpt``, keyed by ``fingerprint``; ``on_runs(n)`` after each step
        that re-fits ``n`` runs)."""
        return merged

    def curve_epoch(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The epochs of the logged curve points."""
        n_logs = arrays["curve_U"].shape[-1]
        return (np.arange(n_logs) + 1) * self.cfg.train.log_every


class AdamSweep(SolverProgram):
    """Full-batch Adam with the paper's protocol (:mod:`.adam_sweep`): segments, snapshots."""

    config = AdamConfig

    def __init__(self, cfg: Config):
        super().__init__(cfg)
        self.trainer: Trainer | None = None  # built by the first chunk, after every check

    def run_chunk(self, inp, keep, bar, mesh, snapshot, snapshot_every_s):
        if self.trainer is None:
            self.trainer = Trainer(self.cfg)
        return run_adam_chunk(self.trainer, inp, keep, bar, mesh, snapshot, snapshot_every_s)


class ExactSweep(SolverProgram):
    """The exact solver (:mod:`.exact_sweep`), and with ``ExactConfig.continuation`` the
    continuation in P after the chunks (:mod:`.continuation`)."""

    config = ExactConfig

    @property
    def continuation(self) -> bool:
        return self.cfg.solver.continuation and len(self.cfg.sweep.P) > 1

    def padding_groups(self) -> dict[int, np.ndarray]:
        """Always ``P_max``, in one group: each chunk is passed the number of blocks of
        sequences that hold data (``fit.exact.value_and_grad_fn``), so a P = 4 run costs the
        work of one block while one compiled program serves every P of the sweep."""
        sw = self.cfg.sweep
        return {sw.P_max: np.arange(len(sw.P) * sw.n_seeds)}

    def keep_fitted(self, keep_params: bool) -> bool:
        return keep_params or self.continuation  # continuation starts from the kept weights

    def run_chunk(self, inp, keep, bar, mesh, snapshot, snapshot_every_s):
        out = run_exact_chunk(self.cfg, inp, keep, mesh)
        if bar is not None:
            bar.update(len(np.asarray(inp.mask)))
        return out

    def extra_runs(self) -> int:
        """Continuation: one step per P and pass, each re-solving the ``n_seeds`` runs of a P."""
        sw = self.cfg.sweep
        return 2 * (len(sw.P) - 1) * sw.n_seeds if self.continuation else 0

    def after_chunks(self, inputs, merged, mesh, ckpt, fingerprint, on_runs):
        if not self.continuation:
            return merged
        nS = self.cfg.sweep.n_seeds
        return continue_in_P(
            self.cfg,
            inputs,
            merged,
            exact_solve_from(self.cfg, mesh),
            ckpt,
            fingerprint,
            on_step=lambda: on_runs(nS),
        )

    def curve_epoch(self, arrays):
        """One point: the solver's last iterate."""
        return np.asarray(arrays["stop_epoch"]).max(keepdims=True).ravel()


#: The program of each solver config: the one table a sweep dispatches on.
SOLVERS: dict[type, type[SolverProgram]] = {AdamConfig: AdamSweep, ExactConfig: ExactSweep}


def solver_program(cfg: Config) -> SolverProgram:
    """The program of ``cfg.solver`` (the solver in use: ``AutoConfig`` resolved)."""
    return SOLVERS[type(cfg.solver)](cfg)
