r"""Estimators per run of a sweep's posterior (:class:`~copyhead_jax.results.PosteriorResult`).

Each run ``[P, seed]`` uses only its chains that stayed finite and its own draws (a run in
rounds holds ``n_draws[P, seed]``, NaN past them: :mod:`.rounds`); a run with no finite chain
(or fewer than 4 draws) gets NaN. The susceptibility of an observable $x$ is
$\chi_x=P\,\mathrm{Var}_{\rm post}(x)$, the paper's early-warning signal, with its delta-method
MCSE (:mod:`.stats`).
"""

from __future__ import annotations

import numpy as np

from .stats import Susceptibility, ess, mcse_mean, susceptibility

__all__ = ["run_mean", "run_susceptibility"]


def _runs(post, name: str):
    x = np.asarray(post[name], np.float64)  # [P, seed, chain, draw]
    finite = np.asarray(post.arrays["finite"], bool)  # [P, seed, chain]
    if x.ndim != 4 or finite.shape != x.shape[:3]:
        raise ValueError(f"{name!r} must be [P, seed, chain, draw] with finite [P, seed, chain]")
    return x, finite


def run_draws(post, x: np.ndarray, finite: np.ndarray, i: int, j: int) -> np.ndarray:
    """``x[i, j]`` ``[chain, draw]`` of run ``(i, j)``: its finite chains and its own draws."""
    n = post.arrays.get("n_draws")
    d = x[i, j][finite[i, j]]
    return d if n is None else d[:, : int(n[i, j])]


def run_susceptibility(post, name: str) -> Susceptibility:
    """$P\\,\\mathrm{Var}_{\\rm post}$ of field ``name`` per run ``[P, seed]``, finite chains."""
    x, finite = _runs(post, name)
    P = np.asarray(post.P, np.float64)[: x.shape[0]]
    out = [np.full(x.shape[:2], np.nan) for _ in Susceptibility._fields]
    for i, j in np.ndindex(x.shape[:2]):
        ok = run_draws(post, x, finite, i, j)
        if ok.shape[0] and ok.shape[1] >= 4:
            for arr, v in zip(out, susceptibility(ok, P[i])):
                arr[i, j] = v
    return Susceptibility(*out)


def run_mean(post, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior mean of field ``name``, its MCSE and ESS per run ``[P, seed]``, finite chains."""
    x, finite = _runs(post, name)
    mean, se, n_eff = (np.full(x.shape[:2], np.nan) for _ in range(3))
    for i, j in np.ndindex(x.shape[:2]):
        ok = run_draws(post, x, finite, i, j)
        if ok.shape[0] and ok.shape[1] >= 4:
            mean[i, j], se[i, j], n_eff[i, j] = ok.mean(), mcse_mean(ok), ess(ok)
    return mean, se, n_eff
