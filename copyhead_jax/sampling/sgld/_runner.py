r"""SGLD chains: the SGLD kernel on the flat position, run by the package's one chain loop
(:func:`~copyhead_jax.sampling.chains.run_chains`: ``lax.scan`` over steps, ``vmap`` over
chains, one compiled program), with SGLD's per-step health traces.

Randomness is counter-based (:mod:`._noise`): the noise of step $t$ of chain $c$ depends only on
the chain key $k_c$ and $t$, so the loop gives the chain that :func:`sgld_kernel`'s ``step``
gives one step at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from ..._checks import check_int
from ..chains import Kernel, continue_chains, run_chains
from ._kernel import Core, SGLDState, make_core
from ._layout import Layout, PyTree
from ._noise import as_key
from ._schedules import Schedule

Scalar = Float[Array, ""]


def draw_steps(n_steps: int, burn_in: int, thin: int) -> np.ndarray:
    """Step numbers ``t`` (states ``Theta_t``, 1-based) kept as draws, as ``MCMC`` keeps them.

    The last state is always a draw; ``(n_steps - burn_in) % thin`` extra steps are burnt in.
    """
    n_draws = (n_steps - burn_in) // thin
    return n_steps - thin * np.arange(n_draws - 1, -1, -1)


class SGLDResult(NamedTuple):
    r"""What :func:`sgld_chains` returns; ``C`` chains, ``T`` steps, ``S`` draws.

    Steps are counted from 1: ``potential[c, t - 1]`` is $U(\Theta_t)$. Draws are the states at
    :func:`draw_steps`; an outer ``vmap`` over runs adds leading axes to every field.
    """

    draws: PyTree  # leaves (C, S, *leaf_shape), or draw_fn's outputs (C, S, *out_shape)
    potential: Float[Array, "C T"]  # U(Theta_t)
    drift_norm: Float[Array, "C T"]  # || eta M grad U(Theta_{t-1}) ||
    noise_norm: Float[Array, "C T"]  # || sqrt(2 eta M) xi_{t-1} ||
    accept_prob: Float[Array, "C T"]  # MALA acceptance proxy of Theta_{t-1} -> Theta_t
    draw_potential: Float[Array, "C S"]  # U at the draws
    draw_distance: Float[Array, "C S"]  # || Theta_draw - Theta_0 || (distance from the warm start)
    init_potential: Float[Array, " C"]  # U(Theta_0)
    finite: Bool[Array, " C"]  # no step had a non-finite U or MALA log-ratio
    last_state: SGLDState  # leaves (C, ...): continue with SGLD / sgld_kernel(...).step


def _chain_keys(key: Array, n_chains: int) -> Array:
    key = as_key(key)
    if key.shape == ():
        return jax.random.split(key, n_chains)
    if key.shape != (n_chains,):
        raise ValueError(
            f"key must be one key or a batch of n_chains={n_chains} keys, got shape {key.shape}"
        )
    return key


def sgld_chains(
    key: Array,
    init_position: PyTree,
    potential_fn: Callable[..., Scalar],
    *,
    n_steps: int,
    step_size: float | Array | Schedule,
    burn_in: int = 0,
    thin: int = 1,
    n_chains: int = 1,
    args: tuple = (),
    preconditioner: PyTree | None = None,
    batch_fn: Callable[..., Any] | None = None,
    per_chain_init: bool = False,
    noise: str = "threefry",
    record_potential: bool = True,
    draw_fn: Callable[..., PyTree] | None = None,
    state: SGLDState | None = None,
) -> SGLDResult:
    r"""Run ``n_chains`` SGLD chains for ``n_steps`` steps (``lax.scan`` x ``vmap`` over chains).

    The draws are the states after the last ``(n_steps - burn_in) // thin`` blocks of ``thin``
    steps; the steps before them (``burn_in`` and the remainder) are the loop's burn-in.

    $\Theta_{t+1}=\Theta_t-\eta_t M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\,\xi_t$ (docs/theory.md §2);
    see :func:`sgld_kernel` for ``potential_fn``, ``step_size``, ``preconditioner`` and
    ``batch_fn``, which have the same meaning here.

    Args:
      key: one key (split into ``n_chains`` chain keys, as ``numpyro.infer.MCMC`` does) or a
        batch of ``n_chains`` chain keys.
      init_position: the warm start, shared by all chains; with ``per_chain_init=True`` every
        leaf has a leading axis of size ``n_chains``.
      n_steps: total steps $T$, burn-in included.
      burn_in, thin: draws are $\Theta_t$ for ``t in draw_steps(n_steps, burn_in, thin)``:
        ``(n_steps - burn_in) // thin`` states ending at the last one.
      args: extra arguments of ``potential_fn`` (and ``batch_fn``), e.g. the data of a run. To
        sweep, ``jax.vmap`` ``sgld_chains`` over keys, warm starts and ``args``.
      noise: the normal generator, ``"threefry"`` (default) or ``"jax"``: see
        :func:`sgld_kernel`.
      draw_fn: keep ``draw_fn(position, *args)`` (any pytree, e.g. observables) at each draw
        instead of the position, which is then never stored: ``draws`` leaves are
        ``(C, S, *out_shape)``.
      record_potential: ``False`` takes ``jax.grad`` instead of ``jax.value_and_grad`` (faster
        when the value costs extra work, e.g. a softplus likelihood); ``potential``,
        ``accept_prob``, ``draw_potential`` and ``init_potential`` are then NaN, ``finite``
        checks the gradient, and :func:`~copyhead_jax.sampling.sgld.chain_health` reports
        only divergences, distances and noise.

      state: a previous result's ``last_state`` (same ``init_position``, ``args`` and
        settings): continue those chains for ``n_steps`` more steps, all kept in blocks of
        ``thin`` (``burn_in`` must be 0); the chains equal one run of the summed length.

    Every ``int`` argument is static. Works under ``jit`` and ``vmap``.
    """
    n_steps = check_int("n_steps", n_steps, lo=1)
    burn_in = check_int("burn_in", burn_in, lo=0, hi=n_steps - 1)
    thin = check_int("thin", thin, lo=1, hi=n_steps - burn_in)
    n_chains = check_int("n_chains", n_chains, lo=1)
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple of extra potential_fn arguments, got {args!r}")
    if not isinstance(per_chain_init, bool):
        raise ValueError(f"per_chain_init must be a bool, got {per_chain_init!r}")
    if draw_fn is not None and not callable(draw_fn):
        raise ValueError(f"draw_fn must be None or callable, got {draw_fn!r}")
    if not isinstance(record_potential, bool):
        raise ValueError(f"record_potential must be a bool, got {record_potential!r}")
    core = make_core(potential_fn, step_size, preconditioner, batch_fn, noise)
    core = core._replace(with_value=record_potential)
    keys = _chain_keys(key, n_chains)
    if per_chain_init:
        for x in jax.tree.leaves(init_position):
            if jnp.ndim(x) < 1 or jnp.shape(x)[0] != n_chains:
                raise ValueError(
                    "with per_chain_init=True every init_position leaf needs a leading axis of "
                    f"size n_chains={n_chains}, got shape {jnp.shape(x)}"
                )
        one = jax.tree.map(lambda x: x[0], init_position)
    else:
        one = init_position
    layout, m = core.setup(one)  # checks the position and the preconditioner's structure
    n_draws = (n_steps - burn_in) // thin
    starts = (
        jax.vmap(layout.flatten)(init_position)
        if per_chain_init
        else jnp.broadcast_to(layout.flatten(one), (n_chains, layout.size))
    )
    kernel = flat_kernel(core, layout, m)

    def record(state: SGLDState, j, *a):
        z0 = a[-1]  # the chain's warm start (flat): a chain argument
        dist = jnp.sqrt(jnp.sum(jnp.square(state.z - z0)))
        kept = state.z if draw_fn is None else draw_fn(layout.unflatten(state.z), *a[:-1])
        return kept, dist

    trace = lambda s: (
        s.potential_energy,
        s.drift_norm,
        s.noise_norm,
        s.accept_prob,  # noqa: E731
        s.diverging,
    )
    if state is None:
        c = run_chains(
            kernel,
            keys,
            starts,
            n_draws=n_draws,
            thin=thin,
            burn_in=n_steps - n_draws * thin,
            record=record,
            trace=trace,
            args=args,
            chain_args=(starts,),
        )
    else:
        if burn_in or n_steps % thin:
            raise ValueError(
                "continuing chains (state=...) needs burn_in = 0 and n_steps a "
                f"multiple of thin, got burn_in={burn_in}, n_steps={n_steps}"
            )
        flat = state._replace(
            z=jax.vmap(layout.flatten)(state.z), z_grad=jax.vmap(layout.flatten)(state.z_grad)
        )
        c = continue_chains(
            kernel,
            flat,
            n_draws=n_draws,
            thin=thin,
            record=record,
            trace=trace,
            args=args,
            chain_args=(starts,),
        )
    (kept, dist), (u, drift, noise_n, acc, div) = c.records, c.trace
    first = n_steps - thin * (n_draws - 1)
    bad = c.init.diverging | jnp.any(div, axis=1)
    last = c.state._replace(
        z=jax.vmap(layout.unflatten)(c.state.z), z_grad=jax.vmap(layout.unflatten)(c.state.z_grad)
    )
    return SGLDResult(
        draws=jax.vmap(jax.vmap(layout.unflatten))(kept) if draw_fn is None else kept,
        potential=u,
        drift_norm=drift,
        noise_norm=noise_n,
        accept_prob=acc,
        draw_potential=u[:, first - 1 :: thin],
        draw_distance=dist.astype(u.dtype),
        init_potential=c.init.potential_energy,
        finite=~bad & jnp.isfinite(u).all(axis=1) if record_potential else ~bad,
        last_state=last,
    )


def flat_kernel(core: Core, layout: Layout, m) -> Kernel:
    """The SGLD kernel on the flat position vector (``z``, ``z_grad`` flat in the state), the
    form the loop runs: one fused update per step, no flattening in between. Its extra
    arguments are ``potential_fn``'s, then the chain's flat warm start (unused here)."""

    def init(key, z, *a):
        key = as_key(key)
        u, g = core.value_and_grad(layout, z, key, jnp.zeros((), jnp.int32), a[:-1])
        s = core.init_state(key, z, u, g)
        return s

    def step(state: SGLDState, *a) -> SGLDState:
        xi = layout.noise(state.rng_key, state.i, core.noise)
        mv = core.move(
            layout,
            m,
            state.z,
            state.potential_energy,
            state.z_grad,
            xi,
            state.i,
            state.rng_key,
            a[:-1],
        )
        return SGLDState(
            state.i + 1,
            mv.z,
            mv.u,
            mv.g,
            mv.drift_norm,
            mv.noise_norm,
            mv.accept_prob,
            mv.diverging,
            state.rng_key,
        )

    return Kernel(init, step)
