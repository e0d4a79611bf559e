r"""Adaptive tempered sequential Monte Carlo on a batch of independent problems (the design
of BlackJAX's ``adaptive_tempered_smc``).

Each problem ``r`` anneals $N$ particles along $\pi_t\propto e^{-U_0-t\,g}$, $t:0\to1$, from a
normalised reference $\pi_0=e^{-U_0}$ (exact draws ``x0``) to $e^{-U_1}$, $g=U_1-U_0$. A step
from $t$ to $t'$:

1. incremental weights $\log v_i=-(t'-t)\,g(x_i)$, with $t'$ the largest $\le1$ whose
   $\mathrm{ESS}=(\sum v)^2/\sum v^2$ is at least ``ess_target`` $\cdot N$ (bisection);
2. $\log Z\mathrel{+}=\log\frac1N\sum_i v_i$ (the weights are uniform after step 3);
3. systematic resampling by $v$;
4. ``mutate``: any kernel that leaves $\pi_{t'}$ invariant, e.g. HMC (:func:`hmc_move`).

At the end $\log\hat Z=\log Z_1-\log Z_0$ (unbiased in $Z$). The kernel may be reducible: a
kernel that never leaves the region of its start and leaves each restricted $\pi_t$ invariant
leaves $\pi_t$ invariant, and the weights alone then move mass between regions. The mass of a
region at $t=1$ is read from the last step's weighted particles, before their resampling
(``log_w1``, ``obs1``). A non-finite $g$ gets zero weight; a problem whose particles all do is
flagged (``finite = False``, $\log\hat Z=$ NaN) and stops without stopping the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from scipy.special import logsumexp

from .._checks import check_float, check_int
from ..sampling import hmc_kernel

PyTree = Any


class SMCResult(NamedTuple):
    """``R`` problems, ``N`` particles, ``K`` steps (a problem that reached t = 1 early repeats
    t = 1 in ``ts`` with zero increments and keeps mutating at its target)."""

    x: jax.Array  # [R, N, ...] particles at t = 1 after the final resampling and mutation
    log_z: np.ndarray  # [R] log(Z_1 / Z_0)
    ts: np.ndarray  # [K, R] the tempering schedule (t after each step)
    ess: np.ndarray  # [K, R] ESS / N of each step's incremental weights
    accept: np.ndarray  # [K, R] mean acceptance of each step's mutation
    log_w1: np.ndarray  # [R, N] normalised log weights of the last reweighting (to t = 1)
    obs1: np.ndarray  # [R, N, ...] record(x) at the particles ``log_w1`` weighs
    obs: np.ndarray  # [R, N, ...] record(x) at the final particles
    finite: np.ndarray  # [R] some particle had a finite g at every step
    reached: np.ndarray  # [R] t = 1 was reached within max_steps


def ess_fraction(log_v: np.ndarray) -> np.ndarray:
    """``(sum v)^2 / (N sum v^2)`` along the last axis, from log weights (-inf allowed)."""
    n = log_v.shape[-1]
    with np.errstate(invalid="ignore"):
        return np.exp(2 * logsumexp(log_v, -1) - logsumexp(2 * log_v, -1)) / n


def next_temperature(g: np.ndarray, t: np.ndarray, ess_target: float, n_bisect: int = 60):
    """``t'[R]``: per row of ``g[R, N]`` the largest ``t' <= 1`` with ESS of
    ``exp(-(t' - t) g)`` at least ``ess_target`` (bisection; 1 if it holds at 1)."""
    g = np.where(np.isfinite(g), g, np.inf)
    with np.errstate(invalid="ignore"):  # a row of +inf only: NaN, its answer unused
        gc = g - np.min(g, -1, keepdims=True)  # ESS is shift invariant

    def ok(dt):
        with np.errstate(invalid="ignore"):
            lv = np.where(np.isfinite(gc), -dt[:, None] * gc, -np.inf)
        return ess_fraction(lv) >= ess_target

    hi = 1.0 - t
    lo = np.zeros_like(hi)
    done = ok(hi)
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        lo, hi = np.where(good, mid, lo), np.where(good, hi, mid)
    return np.where(done, 1.0, t + lo)


@jax.jit
def systematic_resample(key, log_w):
    """Indices ``[R, N]`` of a systematic resampling of each row of ``log_w[R, N]``."""
    R, N = log_w.shape
    w = jax.nn.softmax(log_w, -1)
    u = (jax.random.uniform(key, (R, 1), w.dtype) + jnp.arange(N, dtype=w.dtype)[None]) / N
    cdf = jnp.cumsum(w, -1)
    cdf = cdf.at[:, -1].set(1.0)
    return jax.vmap(jnp.searchsorted)(cdf, u)


def hmc_move(
    key,
    potential: Callable,
    w,
    *,
    step_size,
    n_steps: int,
    n_leap: int,
    inside: Callable | None = None,
):
    """``n_steps`` transitions of the package's HMC kernel (:func:`~copyhead_jax.sampling.
    hmc_kernel`: unit mass, step ``step_size`` jittered by U(0.8, 1.2), no adaptation) of one
    particle from ``w``, proposals outside ``inside`` rejected. Returns ``(w, mean acceptance
    probability)``."""
    kernel = hmc_kernel(potential, step_size=step_size, n_leap=n_leap, n_adapt=0, inside=inside)

    def step(state, _):
        state = kernel.step(state)
        return state, state.accept_prob

    state, a = lax.scan(step, kernel.init(key, w), None, length=n_steps)
    return state.position, jnp.mean(a)


def tempered_smc(
    key,
    x0,
    g_fn: Callable,
    mutate: Callable,
    aux: PyTree = None,
    *,
    ess_target: float = 0.5,
    max_steps: int = 500,
    record: Callable | None = None,
    progress: Callable | None = None,
    schedule=None,
) -> tuple[SMCResult, PyTree]:
    r"""Adaptive tempered SMC (module docstring) of ``R`` problems at once.

    ``x0[R, N, ...]``: exact draws of each reference. ``g_fn(x[R, N, ...]) -> [R, N]``:
    $U_1-U_0$. ``mutate(key, x, t[R], aux) -> (x, accept[R, N], aux)``: a $\pi_t$-invariant
    kernel per problem (``aux``: the caller's state, e.g. step sizes adapted from acceptance).
    ``record(x) -> [R, N, ...]``: what ``obs1``/``obs`` hold (default ``x``). ``progress(k, t)``
    is called after each step. ``schedule[K, R]`` (or ``[K]``): a fixed schedule ending at 1
    instead of the adaptive one, e.g. a pilot run's ``ts``; with a fixed schedule
    $\hat Z$ is unbiased, with the adaptive one it is not quite (the step is chosen from the
    particles it weighs: an O(1/N) bias, low). Returns
    ``(SMCResult, aux)``."""
    ess_target = check_float("ess_target", ess_target, lo=0.0, hi=0.99)
    max_steps = check_int("max_steps", max_steps, lo=1)
    record = (lambda x: x) if record is None else record
    x = x0
    R, N = jax.tree.leaves(x)[0].shape[:2]
    t = np.zeros(R)
    log_z = np.zeros(R)
    finite = np.ones(R, bool)
    ts, esses, accs = [], [], []
    log_w1 = np.full((R, N), -np.log(N))
    obs1 = None
    if schedule is not None:
        schedule = np.broadcast_to(
            np.asarray(schedule, np.float64).reshape(len(schedule), -1), (len(schedule), R)
        )
        if (
            np.any(np.diff(schedule, axis=0) < 0)
            or np.any(schedule[-1] != 1.0)
            or np.any(schedule[0] <= 0)
        ):
            raise ValueError("schedule must rise from above 0 to exactly 1 in every column")
        max_steps = len(schedule)
    for k in range(max_steps):
        if np.all((t >= 1.0) | ~finite):
            break
        g = np.asarray(g_fn(x), np.float64)
        bad = ~np.isfinite(g).any(-1)
        finite &= ~bad
        active = (t < 1.0) & finite
        t_next = next_temperature(g, t, ess_target) if schedule is None else schedule[k]
        t_new = np.where(active, t_next, np.where(finite, t, 1.0))
        dt = t_new - t
        with np.errstate(invalid="ignore"):
            log_v = np.where(np.isfinite(g), -dt[:, None] * g, -np.inf)
        log_v = np.where(active[:, None], log_v, 0.0)
        lse = logsumexp(log_v, -1)
        log_z += np.where(active, lse - np.log(N), 0.0)
        esses.append(ess_fraction(log_v))
        last = active & (t_new >= 1.0)
        if last.any():
            o = np.asarray(record(x))
            obs1 = o.copy() if obs1 is None else obs1
            obs1[last] = o[last]
            log_w1[last] = (log_v - lse[:, None])[last]
        key, k_res, k_mut = jax.random.split(key, 3)
        idx = systematic_resample(k_res, jnp.asarray(log_v, jnp.float32))
        x = jax.tree.map(
            lambda a: jnp.take_along_axis(a, idx.reshape(idx.shape + (1,) * (a.ndim - 2)), 1), x
        )
        t = t_new
        x, acc, aux = mutate(k_mut, x, jnp.asarray(t, jnp.float32), aux)
        accs.append(np.asarray(acc, np.float64).mean(-1))
        ts.append(t.copy())
        if progress is not None:
            progress(k, t)
    obs1 = np.asarray(record(x)) if obs1 is None else obs1
    res = SMCResult(
        x=x,
        log_z=np.where(finite, log_z, np.nan),
        ts=np.asarray(ts),
        ess=np.asarray(esses),
        accept=np.asarray(accs),
        log_w1=log_w1,
        obs1=obs1,
        obs=np.asarray(record(x)),
        finite=finite,
        reached=t >= 1.0,
    )
    return res, aux


#: Tempered SMC has collapsed where a step's weights leave fewer than this fraction of the
#: particles effective (the adaptive schedule keeps every step at its ESS target, 0.5: only a
#: fixed schedule can fall below), or where fewer than this fraction of the final particles are
#: distinct (the moves did not rejuvenate the resampled copies: the weights then rest on a
#: handful of points, and so does the copy weight read from them).
SMC_FLOOR = 0.25


def smc_collapse(r: dict) -> list[str]:
    """Why an SMC cross-check (:func:`~.branch_group.smc_weight`'s record) cannot be trusted,
    one phrase per reason (empty: none): t = 1 not reached, no finite particle, a step's ESS or
    the distinct final particles under :data:`SMC_FLOOR`."""
    why = []
    if not r["reached"]:
        why.append(f"t = 1 not reached in {r['n_steps']} steps")
    if not r["finite"]:
        why.append("no particle with a finite energy")
    ess = np.asarray(r["ess"], float)
    if ess.size and np.nanmin(ess) < SMC_FLOOR:
        k = int(np.nanargmin(ess))
        why.append(f"ESS {ess[k]:.2f} N at step {k} (t = {r['ts'][k]:.3g})")
    if r["unique"] < SMC_FLOOR:
        why.append(f"{r['unique']:.2f} of the final particles distinct")
    return why
