r"""The HMC kernel: diagonal mass, step jitter, an optional region, windowed adaptation.

:func:`hmc_kernel` is a :class:`~.chains.Kernel` (``init`` / ``warmup`` / ``step`` over an
explicit :class:`HMCState`; the loop, :func:`~.chains.run_chains`, lives outside), and
:func:`hmc_chains` runs a batch of its chains with the records every HMC user keeps: the
collapsed sampler of reduced sweeps, the TI rungs of branch free energies, SMC's moves.

One transition from $w$ with $U$, $\nabla U$: momentum $p_0\sim\mathcal N(0,I)$, ``n_leap``
leapfrog steps of size $\epsilon=e^{\log\epsilon}\,u$, $u\sim\mathcal U(0.8,1.2)$ (the jitter
breaks the resonance of a fixed trajectory length with a period of the target), then accept
with probability $\min(1,e^{H_0-H_1})$, $H=U+\tfrac12|p|^2$. With a region $R$ (``inside``), a
proposal that ends outside is rejected: exact Metropolis-Hastings for $e^{-U}$ restricted to
$R$ (the target is 0 outside; the leapfrog map stays volume preserving and reversible).

Adaptation, the kernel's warm-up (Hoffman & Gelman 2014, §3.2, their constants $t_0=10$,
$\gamma=0.05$, $\kappa=0.75$, $\mu=\log10\epsilon_0$): with $h_t=\delta-a_t$ (target
$\delta$, acceptance $a_t$), $\bar h_t=(1-\frac1{t+t_0})\bar h_{t-1}+\frac{h_t}{t+t_0}$,
$\log\epsilon_t=\min(\mu-\frac{\sqrt t}{\gamma}\bar h_t,\log2)$ and
$\log\bar\epsilon_t=t^{-\kappa}\log\epsilon_t+(1-t^{-\kappa})\log\bar\epsilon_{t-1}$; after
``n_adapt`` warm-up transitions the step is frozen at $\bar\epsilon$, so what follows is an
exact chain. The cap $\epsilon\le2$ (in whitened units, where the target's scale is ~1) stops
the early iterations, whose acceptance is high near a minimum, from jumping to steps that
overflow $U$.

Mass (``adapt_mass=True``; Stan's windowed scheme, shortened): the inverse mass is
$M^{-1}={\rm diag}(s^2)$, i.e. unit-mass HMC on $z=w/s$ (momentum $p\sim\mathcal N(0,I)$ in
$z$, position step $w\mathrel{+}=\epsilon\,s\odot p$, force $s\odot\nabla U$). The
warm-up splits 15% / 75% / 10% (Stan's proportions for a short warm-up): a fast
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
from jaxtyping import Array, Float, Int

from .._checks import check_int
from .chains import Kernel, continue_chains, run_chains

#: Leapfrog steps per HMC iteration. With the default step 0.35 a trajectory is about 1.75
#: whitened units, near pi/2 (a quarter period of a unit-curvature direction): long enough to
#: decorrelate, short of the half period at which a Gaussian's energy U returns.
LEAPFROG = 5
#: The range of the uniform factor on each transition's leapfrog step (module docstring).
JITTER = (0.8, 1.2)
#: HMC iterations (discarded) that tune each chain's leapfrog step before it is frozen, and the
#: acceptance they aim at (0.65-0.8 is HMC's efficient range; Beskos et al. 2013: 0.651).
HMC_ADAPT, TARGET_ACCEPT = 100, 0.75
#: Hoffman & Gelman's dual-averaging constants, and the cap on the adapted step (docstring).
T0, GAMMA, KAPPA, LOG_EPS_MAX = 10.0, 0.05, 0.75, math.log(2.0)

Flat = Float[Array, " n"]
State = tuple[Flat, Float[Array, ""], Flat, Any]  # (w, U(w), grad U(w), aux at w)


def hmc_transition(
    vg: Callable,
    inside: Callable | None,
    key: Array,
    state: State,
    log_eps,
    n_leap: int,
    scale=1.0,
) -> tuple[State, tuple[Array, Array, Array]]:
    """One HMC transition of ``(w, U(w), grad U(w), aux)`` (module docstring); ``vg(w, last)``
    returns ``(U, grad U, aux)`` at ``w``, where ``last`` (a traced bool, true at the
    trajectory's final step only) says whether ``aux`` is kept: the proposal's is, with its
    position. ``inside=None``: no region, ``scale``: the square root of the diagonal inverse
    mass (1: unit mass). Returns ``(state, (acceptance probability, proposal left the region,
    H))`` with the Hamiltonian ``H = U + |p|^2 / 2`` where the transition ends: at the proposal
    ``(w1, p1)`` if accepted, else at ``(w, p0)`` (Stan's and NumPyro's ``energy``, the input
    of the BFMI)."""
    w, u, g, aux = state
    k_eps, k_p, k_acc = jax.random.split(key, 3)
    eps = jnp.exp(log_eps) * jax.random.uniform(k_eps, (), w.dtype, *JITTER)
    p0 = jax.random.normal(k_p, w.shape, w.dtype)

    def leap(c, i):
        x, p, _, gg, _ = c
        p = p - 0.5 * eps * (scale * gg)
        x = x + eps * (scale * p)
        uu, gg, a = vg(x, i == n_leap - 1)
        return (x, p - 0.5 * eps * (scale * gg), uu, gg, a), None

    (w1, p1, u1, g1, aux1), _ = lax.scan(leap, (w, p0, u, g, aux), jnp.arange(n_leap))
    h0, h1 = u + 0.5 * jnp.sum(p0**2), u1 + 0.5 * jnp.sum(p1**2)
    log_a = h0 - h1
    finite = jnp.isfinite(log_a) & jnp.all(jnp.isfinite(g1))
    out = jnp.asarray(False) if inside is None else ~inside(w1)
    log_a = jnp.where(finite & ~out, log_a, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, (), w.dtype)) < log_a
    state = jax.tree.map(lambda a, b: jnp.where(acc, a, b), (w1, u1, g1, aux1), (w, u, g, aux))
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


class Adaptation(NamedTuple):
    """The warm-up's state: the dual averaging of the step and the running moments (Welford)
    of the position in the current slow window."""

    step: DualAveraging
    moments: _Welford


class HMCState(NamedTuple):
    """One chain after ``i`` transitions (NumPyro's ``HMCState`` naming). ``accept_prob``,
    ``outside`` and ``energy`` describe the last transition (1, 0 and ``U`` at ``i = 0``)."""

    i: Int[Array, ""]  # transitions taken, warm-up included
    position: Flat  # w
    potential_energy: Float[Array, ""]  # U(w)
    potential_grad: Flat  # grad U(w)
    accept_prob: Float[Array, ""]  # min(1, e^{H0 - H1}) of the last proposal (0 if rejected out)
    outside: Float[Array, ""]  # 1 if the last proposal left the region, else 0
    energy: Float[Array, ""]  # the Hamiltonian where the last transition ended (the draw's)
    scale: Flat  # sqrt of the diagonal inverse mass (ones: unit mass)
    adaptation: Adaptation
    rng_key: Array  # the chain's key; transition i draws from fold_in(rng_key, i)
    aux: Any = ()  # what ``value_and_grad`` returned beside U at w (:func:`hmc_kernel`)


def hmc_kernel(
    potential_fn: Callable,
    *,
    step_size: float | Array,
    n_leap: int = LEAPFROG,
    n_adapt: int = HMC_ADAPT,
    target_accept: float = TARGET_ACCEPT,
    adapt_mass: bool = False,
    inside: Callable | None = None,
    pooled: bool = False,
    value_and_grad: Callable | None = None,
) -> Kernel:
    """HMC on ``potential_fn(w, *args)`` (module docstring) as a :class:`~.chains.Kernel`.

    ``warmup`` (run ``n_adapt`` times first) tunes the step from ``step_size`` towards
    acceptance ``target_accept`` by dual averaging and, with ``adapt_mass`` and at least
    ``MASS_MIN_ADAPT`` warm-up transitions, a diagonal mass (Stan's windows); ``step`` runs at
    the averaged step ``exp(state.adaptation.step.log_eps_bar)`` and the mass ``state.scale``,
    both frozen after the warm-up, so what follows it is an exact chain (unit mass without
    ``adapt_mass``). ``inside(w, *args) == False`` rejects a proposal (``None``:
    no region). Transition ``i`` draws from ``fold_in(key, i)``, so a caller may use other
    folds of the chain key (e.g. negative ones) for its own draws.

    ``pooled``: the chains run together share one adaptation (the kernel's ``pool``): the dual
    averaging sees their mean acceptance and the mass their end points in every slow window
    (``C`` times the draws of one chain's), so all end with the same step and mass.

    ``value_and_grad(w, keep, *args)``: ``(U, grad U, aux)`` of ``potential_fn`` in one pass,
    ``aux`` what that pass computes on the way and a chain's record reuses (e.g. the data's
    moments), kept in ``HMCState.aux`` for the chain's position; ``keep`` (a traced bool) is
    false where ``aux`` will be dropped (every leapfrog step but the last), so that its extra
    work can be skipped there (any values of the same shapes). ``None``: autodiff of
    ``potential_fn``, no ``aux``."""
    n_adapt = check_int("n_adapt", n_adapt, lo=0)
    n_leap = check_int("n_leap", n_leap, lo=1)
    mass = adapt_mass and n_adapt >= MASS_MIN_ADAPT
    start, middle, end = mass_windows(n_adapt) if mass else (n_adapt, n_adapt, n_adapt)
    if value_and_grad is None:

        def vga(w, keep, *args):
            return (*jax.value_and_grad(potential_fn)(w, *args), ())
    else:
        vga = value_and_grad

    def transition(state: HMCState, log_eps, scale, args) -> tuple[State, tuple]:
        vg = lambda w, keep: vga(w, keep, *args)  # noqa: E731
        region = None if inside is None else (lambda w: inside(w, *args))
        key = jax.random.fold_in(state.rng_key, state.i)
        old = (state.position, state.potential_energy, state.potential_grad, state.aux)
        return hmc_transition(vg, region, key, old, log_eps, n_leap, scale)

    def moved(state: HMCState, new: State, info, **changes) -> HMCState:
        (w, u, g, aux), (a, out, e) = new, info
        return state._replace(
            i=state.i + 1,
            position=w,
            potential_energy=u,
            potential_grad=g,
            accept_prob=a,
            outside=out,
            energy=e,
            aux=aux,
            **changes,
        )

    def init(key, position, *args) -> HMCState:
        u, g, aux = vga(position, jnp.asarray(True), *args)
        dt = position.dtype
        da = dual_averaging_init(step_size, dt)
        zero = jnp.zeros_like(position)
        moments = _Welford(jnp.zeros((), dt), zero, zero)
        return HMCState(
            jnp.zeros((), jnp.int32),
            position,
            u,
            g,
            jnp.ones((), dt),
            jnp.zeros((), dt),
            u,
            jnp.ones_like(position),
            Adaptation(da, moments),
            key,
            aux,
        )

    def adapt(state: HMCState, accept: Float[Array, " C"], w: Float[Array, "C n"]):
        """The warm-up's update after transition ``state.i - 1``, from the acceptance and
        end point of each of ``C`` chains: dual averaging on their mean acceptance, their end
        points added to the slow window's moments (Chan et al.'s batch update), and at a
        window's end the new mass and a restarted step. ``C = 1``: one chain's own update."""
        i, dt = state.i - 1, state.position.dtype
        da, acc = state.adaptation
        scale = state.scale
        restarted = jnp.where(i >= end, end, jnp.where(i >= middle, middle, 0))  # last cut
        da = dual_averaging_update(
            da, (i + 1 - restarted).astype(dt), jnp.mean(accept), target_accept
        )
        if mass:
            slow = (i >= start) & (i < end)
            n = acc.n + slow * w.shape[0]
            d = w - acc.mean[None]
            mean = jnp.where(slow, acc.mean + jnp.sum(d, 0) / jnp.maximum(n, 1.0), acc.mean)
            m2 = jnp.where(slow, acc.m2 + jnp.sum(d * (w - mean[None]), 0), acc.m2)
            acc = _Welford(n, mean, m2)
            cut = (i + 1 == middle) | (i + 1 == end)  # a slow window ends: new mass, restart
            scale = jnp.where(cut, _regularised_scale(acc), scale)
            restart = dual_averaging_init(jnp.exp(da.log_eps), dt)
            da = jax.tree.map(lambda r, x: jnp.where(cut, r, x), restart, da)
            zero = jnp.zeros_like(mean)
            acc = jax.tree.map(
                lambda z, x: jnp.where(cut, z, x), _Welford(jnp.zeros((), dt), zero, zero), acc
            )
        return state._replace(scale=scale, adaptation=Adaptation(da, acc))

    def advance(state: HMCState, *args) -> HMCState:
        """A warm-up transition at the current step and mass, not yet adapted."""
        log_eps = state.adaptation.step.log_eps
        new, info = transition(state, log_eps, state.scale if mass else 1.0, args)
        return moved(state, new, info)

    def warmup(state: HMCState, *args) -> HMCState:
        state = advance(state, *args)
        return adapt(state, state.accept_prob[None], state.position[None])

    def pool(states: HMCState) -> HMCState:
        """One adaptation for all chains (leaves ``[C, ...]``), from all their transitions."""
        first = jax.tree.map(lambda x: x[0], states)
        shared = adapt(first, states.accept_prob, states.position)
        C = states.i.shape[0]
        return states._replace(
            scale=jnp.broadcast_to(shared.scale, states.scale.shape),
            adaptation=jax.tree.map(
                lambda x: jnp.broadcast_to(x, (C, *x.shape)), shared.adaptation
            ),
        )

    def step(state: HMCState, *args) -> HMCState:
        log_eps = state.adaptation.step.log_eps_bar  # the averaged step, frozen after warm-up
        new, info = transition(state, log_eps, state.scale if mass else 1.0, args)
        return moved(state, new, info)

    if not n_adapt:
        return Kernel(init, step)
    if pooled:
        return Kernel(init, step, advance, n_adapt, pool)
    return Kernel(init, step, warmup, n_adapt)


class HMCChains(NamedTuple):
    """Chains of :func:`hmc_chains` (``C`` chains, ``S`` recorded draws)."""

    records: Any  # pytree with leading axes [C, S]: record(state, j) after block j
    accept: Array  # [C, S]: mean acceptance probability of the block's transitions
    outside: Array  # [C, S]: fraction of the block's proposals that left the region
    finite: Array  # [C]: U finite at the start and the end
    step_size: Array  # [C]: the frozen (adapted) step
    energy: Array  # [C, S]: the Hamiltonian where the block's last transition ended (the draw's)
    scale: Array  # [C, n]: the frozen sqrt of the diagonal inverse mass (ones: unit mass)
    state: Any = None  # HMCState, leaves [C, ...]: each chain's last state (to continue it)


def hmc_state_structure(aux: Any = ()):
    """The pytree structure of an :class:`HMCState` whose ``aux`` has the structure of ``aux``
    (any pytree of that shape, e.g. a tuple of as many zeros as it has leaves), to rebuild a
    saved state from its leaves (``jax.tree.leaves`` order)."""
    z = 0
    aux = jax.tree.map(lambda _: z, aux)
    ada = Adaptation(DualAveraging(z, z, z, z), _Welford(z, z, z))
    return jax.tree.structure(HMCState(z, z, z, z, z, z, z, z, ada, z, aux))


def hmc_chains(
    keys,
    potential_fn: Callable,
    positions,
    record: Callable | None = None,
    *,
    n_iter: int,
    thin: int = 1,
    step_size: float | Array,
    inside: Callable | None = None,
    n_leap: int = LEAPFROG,
    n_adapt: int = HMC_ADAPT,
    target_accept: float = TARGET_ACCEPT,
    adapt_mass: bool = False,
    args: tuple = (),
    chain_args: tuple = (),
    batched: bool = True,
    progress: Callable[[int, int], None] | None = None,
    state: HMCState | None = None,
    first_draw=0,
    pooled: bool = False,
    value_and_grad: Callable | None = None,
) -> HMCChains:
    """HMC chains on ``potential_fn(w, *args, *chain_args)``, one per key from
    ``positions[c]``: :func:`hmc_kernel` through :func:`~.chains.run_chains` (``batched``:
    ``vmap`` over chains, else one after the other). The ``n_adapt`` warm-up transitions are
    discarded; then ``n_iter // thin`` blocks of ``thin`` transitions at the frozen step and
    mass, ``record(state, j, *args, *chain_args)`` after block ``j`` (default: the position).
    Every start must lie inside the region. ``progress``: see :func:`~.chains.run_chains`.

    ``state`` (a previous call's ``HMCChains.state``): continue those chains for ``n_iter`` more
    iterations (:func:`~.chains.continue_chains`: no warm-up; ``positions`` unused), their draws
    numbered from ``first_draw``; the chains equal one call of the summed length. ``pooled``:
    one adaptation shared by the chains; ``value_and_grad``: ``potential_fn``'s value,
    gradient and the ``aux`` a record reads from ``state.aux`` (both :func:`hmc_kernel`)."""
    kernel = hmc_kernel(
        potential_fn,
        step_size=step_size,
        n_leap=n_leap,
        n_adapt=n_adapt,
        target_accept=target_accept,
        adapt_mass=adapt_mass,
        inside=inside,
        pooled=pooled,
        value_and_grad=value_and_grad,
    )
    n_draws = check_int("n_iter // thin", n_iter // check_int("thin", thin, lo=1), lo=1)

    def keep(state: HMCState, j, *a):
        rec = state.position if record is None else record(state, j, *a)
        return rec, state.energy

    common = dict(
        n_draws=n_draws,
        thin=thin,
        record=keep,
        args=args,
        chain_args=chain_args,
        trace=lambda s: (s.accept_prob, s.outside),
        batched=batched,
        progress=progress,
    )
    if state is None:
        c = run_chains(kernel, keys, positions, **common)
    else:
        c = continue_chains(kernel, state, first_draw=first_draw, **common)
    rec, energy = c.records
    skip = n_adapt if state is None else 0
    acc, out = (x[:, skip:].reshape(x.shape[0], n_draws, thin).mean(-1) for x in c.trace)
    finite = jnp.isfinite(c.init.potential_energy) & jnp.isfinite(c.state.potential_energy)
    step = jnp.exp(c.state.adaptation.step.log_eps_bar)
    return HMCChains(rec, acc, out, finite, step, energy, c.state.scale, c.state)
