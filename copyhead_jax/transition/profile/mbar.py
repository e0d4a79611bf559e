r"""Windows joined by MBAR (``pymbar``, the reference implementation with a robust solver, so not
rewritten here): the unbiased posterior's weights on every window's draws.

With draws $a_n$ from windows $k=1..K$ ($N_k$ each) of biases $b_k(a)=\frac\kappa2(a-c_k)^2$,
MBAR (Shirts & Chodera 2008) solves for the windows' free energies
$$f_k=-\log\sum_n\frac{e^{-b_k(a_n)}}{\sum_jN_je^{f_j-b_j(a_n)}},$$
and the unbiased density gives each draw the weight
$$w_n\propto\Big[\sum_kN_ke^{f_k-b_k(a_n)}\Big]^{-1}$$
(the energy $U$ common to every window cancels: only the biases enter, the reduced potentials
at unit temperature). Correlated draws leave the estimate consistent; its error is taken from
independent replicas, not from MBAR's asymptotic variance. ``overlap`` is MBAR's overlap
matrix $O=W^\top WN$; neighbouring windows whose $O_{k,k+1}$ is small do not constrain each
other's $f$ (a gap in the chain of windows).

``pymbar`` switches JAX to 64-bit mode globally the first time it solves, unless it is
already on: the solve runs inside ``jax.enable_x64(True)``, which leaves the rest of the
process in its own precision.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import jax
import numpy as np
from scipy.special import logsumexp

#: pymbar warns at import that it will use 64-bit JAX (handled here) and in its solver's
#: progress; neither is for the user.
logging.getLogger("pymbar").setLevel(logging.ERROR)


class Joined(NamedTuple):
    """``a[N]`` all draws' order parameter, ``log_w[N]`` their normalised log weights under the
    unbiased posterior, ``f[K]`` the windows' free energies (``f[0] = 0``), ``overlap[K, K]``."""

    a: np.ndarray
    log_w: np.ndarray
    f: np.ndarray
    overlap: np.ndarray


def bias_matrix(a: np.ndarray, centers: np.ndarray, kappa: float) -> np.ndarray:
    """``u[k, n] = kappa / 2 (a_n - c_k)^2``."""
    return 0.5 * kappa * (a[None, :] - np.asarray(centers, np.float64)[:, None]) ** 2


def join(a_k: list[np.ndarray], centers: np.ndarray, kappa: float) -> Joined:
    """MBAR over windows whose draws are ``a_k[k]`` (1-d arrays, any lengths > 0)."""
    import pymbar

    N_k = np.array([len(x) for x in a_k])
    if np.any(N_k == 0):
        raise ValueError("every window needs at least one draw")
    a = np.concatenate([np.asarray(x, np.float64) for x in a_k])
    u = bias_matrix(a, centers, kappa)
    with jax.enable_x64(True), jax.numpy_rank_promotion("allow"):  # pymbar broadcasts
        m = pymbar.MBAR(u, N_k, solver_protocol="robust")
        f = np.asarray(m.f_k, np.float64)
        O = np.asarray(m.compute_overlap()["matrix"], np.float64)
    log_den = logsumexp(np.log(N_k)[:, None] + f[:, None] - u, axis=0)
    log_w = -log_den
    log_w -= logsumexp(log_w)
    return Joined(a, log_w, f - f[0], O)


def neighbour_overlap(O: np.ndarray) -> np.ndarray:
    """``[K - 1]``: $O_{k,k+1}$ of neighbouring windows."""
    return np.array([O[k, k + 1] for k in range(O.shape[0] - 1)])
