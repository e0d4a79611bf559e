r"""What a sweep will cost, before it starts: its evaluations of $U$ and $\nabla U$ and their time
at the unit cost timed here (:func:`~copyhead_jax.sampling.cost.unit_seconds`).

Per run: Adam takes one full-batch evaluation per epoch, ``min_epochs`` at the fewest (early
stopping) to ``max_epochs``, at its padding group's rows; the exact solver one per L-BFGS
iteration plus one per Lanczos step of its certificate, 15-90 and 22-64 at the paper's
configuration (:mod:`copyhead_jax.fit.exact`), so 37-154 per run is the range said, and
``max_steps + 64`` the cap, over the run's own blocks of 32 rows. Continuation in P re-solves
the runs of each P once per pass."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..config import AdamConfig, Config
from ..fit import solver_program
from ..runner.eta import Estimate
from ..sampling.cost import unit_seconds

__all__ = ["EXACT_EVALS", "sweep_estimate"]

#: evaluations per exact run at the paper's configuration: (fewest, most) seen
#: (L-BFGS 15-90 iterations, Lanczos 22-64 steps; copyhead_jax.fit.exact)
EXACT_EVALS = (15 + 22, 90 + 64)
#: the exact solver's blocks of sequences (``fit.exact.BLOCK``)
_BLOCK = 32


def sweep_estimate(cfg: Config, unit=None) -> Estimate:
    """The evaluations of :func:`~.run.run_sweep` on ``cfg`` and their time (module doc);
    ``unit``: seconds of one evaluation by rows (default: timed here)."""
    sw = cfg.sweep
    program = solver_program(cfg)
    n_runs = len(sw.P) * sw.n_seeds
    P_of = np.repeat(np.asarray(sw.P), sw.n_seeds)
    if isinstance(cfg.solver, AdamConfig):
        rows = np.zeros(n_runs)
        for pad, runs in program.padding_groups().items():
            rows[runs] = pad
        per = (cfg.solver.min_epochs or 1, cfg.solver.max_epochs)
        dtype, basis = jnp.float32, "per run min_epochs (early stopping) to max_epochs"
    else:
        rows = _BLOCK * np.ceil(P_of / _BLOCK)
        per = EXACT_EVALS
        dtype = jnp.float64
        basis = (
            f"per run {per[0]}-{per[1]} as at the paper's configuration, at most "
            f"{cfg.solver.max_steps + 64}"
        )
    t = unit or unit_seconds(cfg, rows, dtype=dtype)
    extra = program.extra_runs() / max(n_runs, 1)  # continuation: re-solves, each like a run
    s = float(t(rows).sum()) * (1 + extra)
    n = n_runs * (1 + extra)
    return Estimate(
        f"sweep {cfg.model.attention} N={cfg.model.width}, {n_runs} runs"
        + (f" + {program.extra_runs()} continuation re-solves" if extra else ""),
        (n * per[0], n * per[1]),
        "evaluations of U and its gradient",
        (s * per[0], s * per[1]),
        f"{basis}; one evaluation timed here: {_ms(t(rows.max()))} at {int(rows.max())} rows",
    )


def _ms(s) -> str:
    s = float(np.asarray(s))
    return f"{1e3 * s:.2g} ms" if s < 1 else f"{s:.3g} s"
