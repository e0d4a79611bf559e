r"""HMC with a diagonal mass, step jitter, an optional region, and windowed adaptation.

One transition from $w$ with $U$, $\nabla U$: momentum $p_0\sim\mathcal N(0,I)$, ``n_leap``
leapfrog steps of size $\epsilon=e^{\log\epsilon}\,u$, $u\sim\mathcal U(0.8,1.2)$ (the jitter
breaks the resonance of a fixed trajectory length with a period of the target), then accept
with probability $\min(1,e^{H_0-H_1})$, $H=U+\tfrac12|p|^2$. With a region $R$ (``inside``), a
proposal that ends outside is rejected: exact Metropolis-Hastings for $e^{-U}$ restricted to
$R$ (the target is 0 outside; the leapfrog map stays volume preserving and reversible).

Adaptation (Hoffman & Gelman 2014, §3.2, their constants $t_0=10$, $\gamma=0.05$,
$\kappa=0.75$, $\mu=\log10\epsilon_0$): with $h_t=\delta-a_t$ (target $\delta$, acceptance
$a_t$), $\bar h_t=(1-\frac1{t+t_0})\bar h_{t-1}+\frac{h_t}{t+t_0}$,
$\log\epsilon_t=\min(\mu-\frac{\sqrt t}{\gamma}\bar h_t,\log2)$ and
$\log\bar\epsilon_t=t^{-\kappa}\log\epsilon_t+(1-t^{-\kappa})\log\bar\epsilon_{t-1}$; after
``n_adapt`` iterations the step is frozen at $\bar\epsilon$, so what follows is an exact chain.
The cap $\epsilon\le2$ (in whitened units, where the target's scale is ~1) stops the early
iterations, whose acceptance is high near a minimum, from jumping to steps that overflow $U$.

Mass (``adapt_mass=True``; Stan's windowed scheme, shortened): the inverse mass is
$M^{-1}={\rm diag}(s^2)$, i.e. unit-mass HMC on $z=w/s$ (momentum $p\sim\mathcal N(0,I)$ in
$z$, position step $w\mathrel{+}=\epsilon\,s\odot p$, force $s\odot\nabla U$). The
adaptation iterations split 15% / 75% / 10% (Stan's proportions for a short warm-up): a fast
window tunes the step alone; the slow window, cut in two doubling halves, estimates the variance
of $w$ in each (Welford) and sets $s^2=\frac{n}{n+5}\widehat{\rm Var}+10^{-3}\frac5{n+5}$
(Stan's regularisation) at its end, restarting the dual averaging from the current step; the
terminal fast window tunes the step for the last mass. With ``adapt_mass=False``, $s=1$: the
unit-mass chain, bit for bit.

Own code, not ``blackjax.hmc``/``window_adaptation``: the region rejection and the step jitter
are not in BlackJAX's kernel, and BlackJAX is a bench-only extra; its ``dual_averaging`` gives
the same step sequence without the cap (tested), its average lags one iteration behind Hoffman &
Gelman's Algorithm 5, which this one follows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float

#: Leapfrog steps per HMC iteration. With the default step 0.35 a trajectory is about 1.75
#: whitened units, near pi/2 (a quarter period of a unit-curvature direction): long enough to
#: decorrelate, short of the half period at which a Gaussian's energy U returns.
LEAPFROG = 5
#: HMC iterations (discarded) that tune each chain's leapfrog step before it is frozen, and the
#: acceptance they aim at (0.65-0.8 is HMC's efficient range; Beskos et al. 2013: 0.651).
HMC_ADAPT, TARGET_ACCEPT = 100, 0.75
#: Hoffman & Gelman's dual-averaging constants, and the cap on the adapted step (docstring).
T0, GAMMA, KAPPA, LOG_EPS_MAX = 10.0, 0.05, 0.75, math.log(2.0)

Flat = Float[Array, " n"]
State = tuple[Flat, Float[Array, ""], Flat]  # (w, U(w), grad U(w))


def hmc_transition(
    vg: Callable, inside: Callable | None, key: Array, state: State, log_eps, n_leap: int,
    scale=1.0,
) -> tuple[State, tuple[Array, Array]]:  # fmt: skip
    """One HMC transition of ``(w, U(w), grad U(w))`` (module docstring); ``vg`` is
    ``value_and_grad(U)``, ``inside=None``: no region, ``scale``: the square root of the
    diagonal inverse mass (1: unit mass). Returns
    ``(state, (acceptance probability, proposal left the region))``."""
    state, (accept, out, _) = hmc_transition_energy(vg, inside, key, state, log_eps, n_leap,
                                                    scale)  # fmt: skip
    return state, (accept, out)


def hmc_transition_energy(
    vg: Callable, inside: Callable | None, key: Array, state: State, log_eps, n_leap: int,
    scale=1.0,
) -> tuple[State, tuple[Array, Array, Array]]:  # fmt: skip
    """:func:`hmc_transition` that also returns the Hamiltonian ``H = U + |p|^2 / 2`` where the
    transition ends: at the proposal ``(w1, p1)`` if accepted, else at ``(w, p0)`` (Stan's and
    NumPyro's ``energy``, the input of the BFMI). Same draws as :func:`hmc_transition`."""
    w, u, g = state
    k_eps, k_p, k_acc = jax.random.split(key, 3)
    eps = jnp.exp(log_eps) * jax.random.uniform(k_eps, (), w.dtype, 0.8, 1.2)
    p0 = jax.random.normal(k_p, w.shape, w.dtype)

    def leap(c, _):
        x, p, _, gg = c
        p = p - 0.5 * eps * (scale * gg)
        x = x + eps * (scale * p)
        uu, gg = vg(x)
        return (x, p - 0.5 * eps * (scale * gg), uu, gg), None

    (w1, p1, u1, g1), _ = lax.scan(leap, (w, p0, u, g), None, length=n_leap)
    h0, h1 = u + 0.5 * jnp.sum(p0**2), u1 + 0.5 * jnp.sum(p1**2)
    log_a = h0 - h1
    finite = jnp.isfinite(log_a) & jnp.all(jnp.isfinite(g1))
    out = jnp.asarray(False) if inside is None else ~inside(w1)
    log_a = jnp.where(finite & ~out, log_a, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, (), w.dtype)) < log_a
    state = jax.tree.map(lambda a, b: jnp.where(acc, a, b), (w1, u1, g1), (w, u, g))
    energy = jnp.where(acc, h1, h0)
    return state, (jnp.minimum(1.0, jnp.exp(log_a)), out.astype(w.dtype), energy)


class DualAveraging(NamedTuple):
    """Adaptation state: the current and averaged log step, and the mean error."""

    log_eps: Array
    log_eps_bar: Array
    h_bar: Array
    mu: Array


def dual_averaging_init(step_size, dtype=jnp.float32) -> DualAveraging:
    """Start from ``step_size``; the update shrinks towards ``mu = log(10 step_size)``."""
    eps0 = jnp.asarray(step_size, dtype)
    return DualAveraging(jnp.log(eps0), jnp.log(eps0), jnp.zeros((), dtype), jnp.log(10.0 * eps0))


def dual_averaging_update(da: DualAveraging, t, accept, target_accept) -> DualAveraging:
    """Iteration ``t = 1, 2, ...`` with acceptance probability ``accept`` (module docstring)."""
    h_bar = (1 - 1 / (t + T0)) * da.h_bar + (target_accept - accept) / (t + T0)
    log_eps = jnp.minimum(da.mu - jnp.sqrt(t) / GAMMA * h_bar, LOG_EPS_MAX)
    w = t**-KAPPA
    return DualAveraging(log_eps, w * log_eps + (1 - w) * da.log_eps_bar, h_bar, da.mu)


class HMCChain(NamedTuple):
    """One chain of :func:`hmc_chain` (``S`` recorded blocks)."""

    records: Any  # pytree with leading axis [S]: record(w, j) after block j
    accept: Array  # [S]: mean acceptance probability of the block's iterations
    outside: Array  # [S]: fraction of the block's proposals that left the region
    finite: Array  # []: U finite at the start and the end
    step_size: Array  # []: the frozen (adapted) step
    energy: Array  # [S]: the Hamiltonian where the block's last transition ended (the draw's)
    scale: Array  # [n]: the frozen sqrt of the diagonal inverse mass (ones: unit mass)


#: Stan's split of a short warm-up: initial fast window, slow (mass) window, terminal window.
MASS_FAST, MASS_TERMINAL = 0.15, 0.10
#: Fewest adaptation iterations with which the mass is adapted (each slow half needs draws).
MASS_MIN_ADAPT = 20


def mass_windows(n_adapt: int) -> tuple[int, int, int]:
    """``(start, middle, end)`` of the two slow windows ``[start, middle)``, ``[middle, end)``
    of ``n_adapt`` adaptation iterations (module docstring; the second twice the first)."""
    start = max(1, int(MASS_FAST * n_adapt))
    end = n_adapt - max(1, int(MASS_TERMINAL * n_adapt))
    return start, start + (end - start) // 3, end


class _Welford(NamedTuple):
    n: Array
    mean: Array
    m2: Array


def _regularised_scale(acc: _Welford) -> Array:
    """Stan's regularised variance of a window's draws, as a standard deviation."""
    n = acc.n
    var = acc.m2 / jnp.maximum(n - 1.0, 1.0)
    return jnp.sqrt(n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0))


def hmc_chain(
    key: Array, potential: Callable, w0: Flat, record: Callable, *, n_iter: int, thin: int,
    step_size: float | Array, inside: Callable | None = None, n_leap: int = LEAPFROG,
    n_adapt: int = HMC_ADAPT, target_accept: float = TARGET_ACCEPT,
    adapt_mass: bool = False, report: Callable | None = None,
) -> HMCChain:  # fmt: skip
    """One HMC chain on ``potential(w)`` from ``w0`` (one example in: ``vmap`` adds chains).

    ``n_adapt`` iterations tune the step from ``step_size`` (and, with ``adapt_mass`` and at
    least ``MASS_MIN_ADAPT`` of them, a diagonal mass; module docstring) and are discarded; then
    ``n_iter // thin`` blocks of ``thin`` iterations at the frozen step and mass,
    ``record(w, j)`` after block ``j``.
    Iteration ``i`` draws from ``fold_in(key, i)`` (``i`` counts adaptation iterations too), so
    ``record`` may use other folds of ``key`` (e.g. negative ones). ``report(done)`` (traced
    iteration count) is called after every adaptation iteration and every block. ``energy``
    holds each draw's Hamiltonian (:func:`hmc_transition_energy`), one float per draw."""
    vg = jax.value_and_grad(potential)
    rep = (lambda d: None) if report is None else report
    mass = adapt_mass and n_adapt >= MASS_MIN_ADAPT
    start, middle, end = mass_windows(n_adapt) if mass else (n_adapt, n_adapt, n_adapt)
    dt = w0.dtype

    def transition(state, i, log_eps, scale):
        key_i = jax.random.fold_in(key, i)
        return hmc_transition_energy(vg, inside, key_i, state, log_eps, n_leap, scale)

    def adapt(carry, i):
        state, da, scale, acc = carry
        restarted = jnp.where(i >= end, end, jnp.where(i >= middle, middle, 0))  # last cut
        state, (a, _, _) = transition(state, i, da.log_eps, scale if mass else 1.0)
        da = dual_averaging_update(da, (i + 1 - restarted).astype(dt), a, target_accept)
        if mass:
            w = state[0]
            slow = (i >= start) & (i < end)
            n = acc.n + slow
            d = w - acc.mean
            mean = jnp.where(slow, acc.mean + d / jnp.maximum(n, 1.0), acc.mean)
            m2 = jnp.where(slow, acc.m2 + d * (w - mean), acc.m2)
            acc = _Welford(n, mean, m2)
            cut = (i + 1 == middle) | (i + 1 == end)  # a slow window ends: new mass, restart
            scale = jnp.where(cut, _regularised_scale(acc), scale)
            restart = dual_averaging_init(jnp.exp(da.log_eps), dt)
            da = jax.tree.map(lambda r, x: jnp.where(cut, r, x), restart, da)
            zero = jnp.zeros_like(w)
            acc = jax.tree.map(lambda z, x: jnp.where(cut, z, x),
                               _Welford(jnp.zeros((), dt), zero, zero), acc)  # fmt: skip
        rep(i + 1)
        return (state, da, scale, acc), None

    u0, g0 = vg(w0)
    ones = jnp.ones_like(w0)
    acc0 = _Welford(jnp.zeros((), dt), jnp.zeros_like(w0), jnp.zeros_like(w0))
    carry = ((w0, u0, g0), dual_averaging_init(step_size, dt), ones, acc0)
    if n_adapt > 0:
        carry, _ = lax.scan(adapt, carry, jnp.arange(n_adapt))
    state, log_eps, scale = carry[0], carry[1].log_eps_bar, carry[2]
    if not mass:
        scale = 1.0  # the unit-mass chain, bit for bit

    def block(state, j):
        state, (a, o, e) = lax.scan(lambda st, i: transition(st, i, log_eps, scale), state,
                                    n_adapt + j * thin + jnp.arange(thin))  # fmt: skip
        rep(n_adapt + (j + 1) * thin)
        return state, (record(state[0], j), jnp.mean(a), jnp.mean(o), e[-1])

    state, (rec, acc, out, energy) = lax.scan(block, state, jnp.arange(n_iter // thin))
    finite = jnp.isfinite(u0) & jnp.isfinite(state[1])
    return HMCChain(rec, acc, out, finite, jnp.exp(log_eps), energy, scale * ones)
