r"""The one chain loop: any kernel with NumPyro's contract, chains batched from outside.

A kernel (:class:`Kernel`) is a set of pure functions over an explicit NamedTuple state:
``init(key, position, *args) -> state`` evaluates the target at the start, ``step(state, *args)
-> state`` is one transition; a kernel that tunes itself (HMC's step size and mass) also has
``warmup(state, *args) -> state``, a transition that adapts, run ``n_warmup`` times before any
other. Every randomness of step ``i`` derives from the chain's key and ``i`` (the state counts its
steps), so a chain is a function of its key, its start and the number of steps alone (after a
pooled warm-up, of all the chains' keys and starts).

:func:`run_chains` is the loop outside the kernels (NumPyro's and BlackJAX's shape), per chain:

1. ``init``, then the kernel's ``n_warmup`` warm-up transitions (discarded; a kernel with a
   ``pool`` runs them on all chains in step, ``pool`` after each, so the chains adapt together);
2. ``burn_in`` further transitions at the tuned settings (discarded);
3. ``n_draws`` blocks of ``thin`` transitions, ``record(state, j, *args)`` kept after block ``j``
   (the draws); ``trace(state)``, if given, after every transition of 1-3 (per-step health).

:func:`continue_chains` runs more blocks of step 3 from the chains' last states: a chain run in
rounds (one :func:`run_chains`, then :func:`continue_chains` calls) is the chain of one call of
the summed length, since every transition's randomness is fixed by the chain's key and count.

``lax.scan`` over the transitions, ``vmap`` (or ``lax.map``, one chain after the other) over
chains, one compiled program. ``args`` reach every chain alike; ``chain_args`` carry a leading
chain axis and reach chain ``c`` as their ``c``-th slice (e.g. each chain's own origin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .._checks import check_int

PyTree = Any


class Kernel(NamedTuple):
    """A Markov kernel of one chain (NumPyro's ``MCMCKernel`` contract as a pytree of pure
    functions). ``warmup``: an adapting transition run ``n_warmup`` times first (``None``: the
    kernel does not adapt and ``n_warmup`` is 0). ``pool``: where the chains adapt together,
    a function of all chains' states (leaves ``[C, ...]``) run after each of their warm-up
    transitions (``None``: each chain adapts alone)."""

    init: Callable[..., Any]
    step: Callable[..., Any]
    warmup: Callable[..., Any] | None = None
    n_warmup: int = 0
    pool: Callable[[Any], Any] | None = None


class Chains(NamedTuple):
    """What :func:`run_chains` returns; ``C`` chains, ``S`` draws, ``T`` transitions."""

    records: PyTree  # leaves [C, S, ...]: record(state, j) after block j
    trace: PyTree  # leaves [C, T, ...]: trace(state) after every transition (None: not asked)
    init: PyTree  # leaves [C, ...]: each chain's state after init
    state: PyTree  # leaves [C, ...]: each chain's last state


def total_steps(kernel: Kernel, *, n_draws: int, thin: int = 1, burn_in: int = 0) -> int:
    """Transitions per chain: warm-up, burn-in and the ``n_draws`` blocks of ``thin``."""
    return kernel.n_warmup + burn_in + n_draws * thin


#: On the CPU, chains run batched (``vmap``) while their ``chains x P x L x L`` float logits
#: take at most this many bytes, else one after the other. Per gradient inside a chain's loops
#: (``benchmarks/bench_collapsed.py --loops --chains N``, float32): batched 1.5x faster at
#: L = 12, P = 50 (6 chains, 0.16 MiB), even at L = 25, P = 50 (4, 0.5 MiB), one after the other
#: 1.2x faster at L = 40, P = 56 (6, 2 MiB), 1.4x at L = 25, P = 322 (4, 3 MiB) and 1.7x at
#: P = 1,036 (4, 9.9 MiB).
CPU_BATCH_BYTES = 3 << 19  # 1.5 MiB


def batch_chains(n: int, rows: int, L: int, itemsize: int = 4) -> bool:
    """Whether ``n`` chains of a potential over ``rows`` sequences of length ``L`` run batched:
    always on an accelerator; on the CPU while their logits fit :data:`CPU_BATCH_BYTES` (beyond,
    a batch's ``[n, P, L, L]`` intermediates leave the cache)."""
    if jax.default_backend() != "cpu":
        return True
    return n * rows * L * L * itemsize <= CPU_BATCH_BYTES


def map_chains(f: Callable, batched: bool) -> Callable:
    """``vmap(f)`` over a leading axis, or ``f`` mapped one slice after the other
    (``lax.map``): the same numbers up to float rounding; one after the other keeps a large
    potential's intermediates in the CPU's cache."""
    return jax.vmap(f) if batched else (lambda *xs: lax.map(lambda a: f(*a), xs))


def run_chains(
    kernel: Kernel,
    keys,
    positions: PyTree,
    *,
    n_draws: int,
    thin: int = 1,
    burn_in: int = 0,
    record: Callable[..., PyTree] | None = None,
    trace: Callable[[Any], PyTree] | None = None,
    args: tuple = (),
    chain_args: tuple = (),
    batched: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Chains:
    """Run one chain per key from ``positions`` (leading chain axis) with ``kernel`` (module
    docstring). ``record(state, j, *args, *chain_args)`` (default: the state's ``position``
    field) is kept after each of the ``n_draws`` blocks of ``thin`` transitions.

    ``progress(done, total)`` is called on the host after every warm-up and burn-in transition
    and every block, with the transitions done of :func:`total_steps`. Its argument depends on
    the loop counter only, so under any further ``vmap`` (runs, rungs) it is called once per
    step for the whole batch; it changes no number. Every ``int`` argument is static."""
    n_draws = check_int("n_draws", n_draws, lo=1)
    thin = check_int("thin", thin, lo=1)
    burn_in = check_int("burn_in", burn_in, lo=0)
    n_warm = check_int("kernel.n_warmup", kernel.n_warmup, lo=0)
    if n_warm and kernel.warmup is None:
        raise ValueError(f"kernel.n_warmup = {n_warm} needs a kernel.warmup transition")
    if not isinstance(args, tuple) or not isinstance(chain_args, tuple):
        raise ValueError("args and chain_args must be tuples of extra kernel arguments")
    total = total_steps(kernel, n_draws=n_draws, thin=thin, burn_in=burn_in)
    report = _reporter(progress, total)
    keep = (lambda s, j, *a: s.position) if record is None else record
    follow = (lambda s: ()) if trace is None else trace

    def run(fn, start, a):
        def one(s, k):
            s, t = _step_and_trace(fn, follow, s, a)
            report(start + k + 1)
            return s, t

        return one

    def chain(key, position, *own, state0=None, tr_pre=()):
        """One chain from its start (or, ``state0``, from the end of a pooled warm-up)."""
        a = (*args, *own)
        tr_pre = list(tr_pre)
        state = init = kernel.init(key, position, *a) if state0 is None else state0
        if state0 is None and n_warm:
            state, t = lax.scan(run(kernel.warmup, 0, a), state, jnp.arange(n_warm))
            tr_pre.append(t)
        if burn_in:
            state, t = lax.scan(run(kernel.step, n_warm, a), state, jnp.arange(burn_in))
            tr_pre.append(t)
        state, (rec, tr) = _blocks(
            kernel, state, n_draws, thin, keep, follow, a, report, n_warm + burn_in, 0
        )
        tr = jax.tree.map(lambda *xs: jnp.concatenate(xs), *tr_pre, tr) if tr_pre else tr
        return Chains(rec, tr if trace is not None else None, init, state)

    if kernel.pool is None or not n_warm:
        return map_chains(chain, batched)(keys, positions, *chain_args)
    # pooled warm-up: each transition runs on every chain, then their adaptation is pooled
    inits = map_chains(lambda k, x, *own: kernel.init(k, x, *args, *own), batched)(
        keys, positions, *chain_args
    )
    step_all = map_chains(lambda s, *own: kernel.warmup(s, *args, *own), batched)

    def warm(states, k):
        states = kernel.pool(step_all(states, *chain_args))
        report(k + 1)
        return states, jax.vmap(follow)(states)

    states, tr_warm = lax.scan(warm, inits, jnp.arange(n_warm))
    tr_warm = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), tr_warm)  # [C, n_warm, ...]
    rest = map_chains(lambda s, t, *own: chain(None, None, *own, state0=s, tr_pre=(t,)), batched)(
        states, tr_warm, *chain_args
    )
    return rest._replace(init=inits)


def continue_chains(
    kernel: Kernel,
    states: PyTree,
    *,
    n_draws: int,
    thin: int = 1,
    first_draw=0,
    record: Callable[..., PyTree] | None = None,
    trace: Callable[[Any], PyTree] | None = None,
    args: tuple = (),
    chain_args: tuple = (),
    batched: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Chains:
    """``n_draws`` more blocks of ``thin`` transitions from ``states`` (leaves ``[C, ...]``, a
    :class:`Chains`' ``state``): no init, warm-up or burn-in. ``record(state, first_draw + j,
    ...)`` is kept after block ``j`` (``first_draw``, the draws already taken, may be traced: one
    compiled program serves every round); ``Chains.init`` holds ``states``; ``progress`` counts
    this call's ``n_draws * thin`` transitions."""
    n_draws = check_int("n_draws", n_draws, lo=1)
    thin = check_int("thin", thin, lo=1)
    report = _reporter(progress, n_draws * thin)
    keep = (lambda s, j, *a: s.position) if record is None else record
    follow = (lambda s: ()) if trace is None else trace

    def chain(state0, *own):
        a = (*args, *own)
        state, (rec, tr) = _blocks(
            kernel, state0, n_draws, thin, keep, follow, a, report, 0, first_draw
        )
        return Chains(rec, tr if trace is not None else None, state0, state)

    return map_chains(chain, batched)(states, *chain_args)


def _blocks(
    kernel: Kernel,
    state,
    n_draws: int,
    thin: int,
    keep,
    follow,
    a: tuple,
    report,
    done: int,
    first_draw,
):
    """Step 3 of the loop from ``state``: ``(state, (records, trace))``, the trace flattened to
    ``[n_draws * thin, ...]``; ``done`` transitions came before (progress only)."""

    def block(s, j):
        s, t = lax.scan(
            lambda c, _: _step_and_trace(kernel.step, follow, c, a), s, None, length=thin
        )
        report(done + (j + 1) * thin)
        return s, (keep(s, first_draw + j, *a), t)

    state, (rec, tr) = lax.scan(block, state, jnp.arange(n_draws))
    tr = jax.tree.map(lambda x: x.reshape((n_draws * thin,) + x.shape[2:]), tr)
    return state, (rec, tr)


def _step_and_trace(step: Callable, follow: Callable, state, a: tuple):
    state = step(state, *a)
    return state, follow(state)


def _reporter(progress: Callable[[int, int], None] | None, total: int) -> Callable:
    """A traced ``report(done)`` that calls ``progress(done, total)`` on the host."""
    if progress is None:
        return lambda done: None

    def report(done):
        jax.debug.callback(lambda d: progress(int(d), total), done)

    return report
