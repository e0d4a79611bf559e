r"""Continuation in P of a sweep's exact MAP fits: each run also started from its neighbours'.

Where $U$ has several minima (the linear head near its transitions), one start per run need not
end in the lowest: ``experiments/multistart.py`` found the prior-draw start above the lowest of
six starts in up to 9 of 10 seeds near $P^*_{c_G}$. Continuation (``ExactConfig.
continuation``) adds two starts per run and keeps, per run, the converged minimum of lowest
$U$ (docs/theory.md's MAP): an ascending pass solves each $P$ from the kept fit of the next smaller
$P$ of the same seed (same embeddings; the pools are nested), then a descending pass from the next
larger. A minimum reached at any $P$ is carried along the whole grid in both directions, so it is
lost only where it ceases to exist. On the multi-start check's grids it reached the lowest $U$ of
the six starts in every run and a lower one in some (``docs/reports/multistart.md``). Cost: two more
solves per run, from starts closer to a minimum than a prior draw.

Per run the result adds ``start_source`` (0: the run's own start, ``TrainConfig.init_attention``;
1: from the smaller $P$; 2: from the larger) and ``U_own_start``. Each step is checkpointed with
the sweep's chunks (keyed by its start), so an interrupted continuation resumes with identical
results and a grid refined afterwards reuses the steps whose start did not change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from ..config import Config
from ..runner import checkpointed
from ..runner import fingerprint as content_hash
from .inputs import RunInputs

_KIND = "copyhead_jax.ContinuationStep"
#: a candidate replaces the kept fit if its U is lower by more than this times max(1, |U|): two
#: starts that end in the same minimum differ by rounding (|grad U| <= 1e-9 max(1, |U|))
U_RTOL = 1e-9
OWN, FROM_BELOW, FROM_ABOVE = 0, 1, 2


def steps(P: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """``(P index, neighbour's P index, source)`` in order: ascending, then descending."""
    n = len(P)
    return [(i, i - 1, FROM_BELOW) for i in range(1, n)] + [
        (i, i + 1, FROM_ABOVE) for i in range(n - 2, -1, -1)
    ]


def better(cand: dict, kept: dict) -> np.ndarray:
    """Runs where ``cand`` is a converged finite minimum and ``kept`` is not, or has higher U."""
    ok_c = np.asarray(cand["finite"]) & np.asarray(cand["converged"])
    ok_k = np.asarray(kept["finite"]) & np.asarray(kept["converged"])
    Uc, Uk = np.asarray(cand["U"]), np.asarray(kept["U"])
    lower = Uc < Uk - U_RTOL * np.maximum(1.0, np.abs(Uk))
    return ok_c & (~ok_k | lower)


def _step_key(fingerprint: str, P: int, inputs: RunInputs, start: tuple) -> str:
    """What a step's result depends on: the sweep (``fingerprint``, without its P grid), the
    P solved, the padded pool length and the start's bytes. A grid refined between two runs of
    a continuation reuses every step whose start did not change."""
    return content_hash(
        [fingerprint, int(P), list(inputs.train.shape)],
        *(np.ascontiguousarray(w, np.float64).tobytes() for w in start),
        digits=24,
    )


def continue_in_P(
    cfg: Config,
    inputs: RunInputs,
    arrays: dict[str, np.ndarray],
    solve: Callable[[RunInputs, tuple], dict[str, np.ndarray]],
    ckpt_dir: Path | None,
    fingerprint: str,
    on_step: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """The sweep's per-run arrays (P-major, ``params/W_G`` and ``params/W_O_hat`` included)
    after both passes. ``solve(inp, (W_G, W_O_hat))`` fits the runs ``inp`` from those weights
    (``exact_sweep.run_exact_chunk``); ``inputs`` are the sweep's, P-major like ``arrays``."""
    P, nS = cfg.sweep.P, cfg.sweep.n_seeds
    kept = {k: np.array(v) for k, v in arrays.items()}
    kept["U_own_start"] = kept["U"].copy()
    kept["start_source"] = np.full(len(kept["U"]), OWN, np.int8)
    for i, j, source in steps(P):
        rows, prev = np.arange(i * nS, (i + 1) * nS), np.arange(j * nS, (j + 1) * nS)
        start = (kept["params/W_G"][prev], kept["params/W_O_hat"][prev])
        fp = _step_key(fingerprint, P[i], inputs, start)
        path = None if ckpt_dir is None else ckpt_dir / f"step-{fp}.npz"
        cand, _ = checkpointed(
            path,
            _KIND,
            fp,
            lambda rows=rows, start=start: solve(
                jax.tree_util.tree_map(lambda a: a[rows], inputs), start
            ),
        )
        win = better(cand, {key: kept[key][rows] for key in ("finite", "converged", "U")})
        for key, v in cand.items():
            if key in kept:
                kept[key][rows[win]] = np.asarray(v)[win]
        kept["start_source"][rows[win]] = source
        if "diverged" in kept:  # a merged sweep's flag: a kept candidate is a finite minimum
            kept["diverged"][rows[win]] = False
        if on_step is not None:
            on_step()
    return kept


__all__ = ["FROM_ABOVE", "FROM_BELOW", "OWN", "U_RTOL", "better", "continue_in_P", "steps"]
