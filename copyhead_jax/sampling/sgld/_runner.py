r"""The chain runner: ``lax.scan`` over steps, ``vmap`` over chains, one compiled program.

Randomness is counter-based (:mod:`._noise`): the noise of step $t$ of chain $c$ depends only on
the chain key $k_c$ and $t$, so the runner can draw the noise of several steps in one call and
still give the chain that :func:`sgld_kernel`'s ``step`` gives one step at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Bool, Float

from ..._checks import check_int
from ._kernel import SGLDState, make_core
from ._layout import Layout, PyTree
from ._noise import as_key
from ._schedules import Schedule

Scalar = Float[Array, ""]

#: Noise of ``noise_block`` steps is drawn at once; the automatic block holds at most this many
#: normals per chain (64 KiB in float32), so a vmap over runs x chains stays small.
AUTO_NOISE_ELEMENTS = 2**14
MAX_AUTO_NOISE_BLOCK = 64


def draw_steps(n_steps: int, burn_in: int, thin: int) -> np.ndarray:
    """Step numbers ``t`` (states ``Theta_t``, 1-based) kept as draws, as ``MCMC`` keeps them.

    The last state is always a draw; ``(n_steps - burn_in) % thin`` extra steps are burnt in.
    """
    n_draws = (n_steps - burn_in) // thin
    return n_steps - thin * np.arange(n_draws - 1, -1, -1)


class SGLDResult(NamedTuple):
    r"""What :func:`run_chains` returns; ``C`` chains, ``T`` steps, ``S`` draws.

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


def _noise_block(noise_block: int | None, size: int, n_steps: int) -> int:
    """The given block, or the largest divisor of ``n_steps`` within the automatic budget."""
    if noise_block is not None:
        return check_int("noise_block", noise_block, lo=1, hi=n_steps)
    cap = max(1, min(MAX_AUTO_NOISE_BLOCK, n_steps, AUTO_NOISE_ELEMENTS // max(size, 1)))
    return next(k for k in range(cap, 0, -1) if n_steps % k == 0)  # no tail loop to compile


def run_chains(
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
    noise_block: int | None = None,
    noise: str = "threefry",
    record_potential: bool = True,
    draw_fn: Callable[..., PyTree] | None = None,
) -> SGLDResult:
    r"""Run ``n_chains`` SGLD chains for ``n_steps`` steps (``lax.scan`` x ``vmap`` over chains).

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
        sweep, ``jax.vmap`` ``run_chains`` over keys, warm starts and ``args``.
      noise_block: draw the noise of this many steps in one call (same values, faster; memory
        ``noise_block x size`` per chain); ``None`` picks the largest divisor of ``n_steps`` up
        to ``MAX_AUTO_NOISE_BLOCK`` with at most ``AUTO_NOISE_ELEMENTS`` normals per chain; 1
        draws the noise inside each step.
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
    layout = Layout.of(one)
    block = _noise_block(noise_block, layout.size, n_steps)
    steps = draw_steps(n_steps, burn_in, thin)
    n_draws, first = len(steps), int(steps[0])

    def run_one(key: Array, z0: PyTree) -> SGLDResult:
        state = core.init(key, z0, args)
        layout, m = core.setup(z0)
        z, g = layout.flatten(z0), layout.flatten(state.z_grad)
        z0_flat = z

        def distance(z):  # || Theta - Theta_0 ||
            return jnp.sqrt(jnp.sum(jnp.square(z - z0_flat)))

        def record(z):  # (what is kept of a draw, its distance from the warm start)
            if draw_fn is None:  # the distances are taken from the kept draws at the end
                return z, jnp.zeros((), z.dtype)
            return draw_fn(layout.unflatten(z), *args), distance(z)

        zero_rec = jax.tree.map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(record, z0_flat)
        )
        buf = jax.tree.map(lambda x: jnp.zeros((n_draws, *x.shape), x.dtype), zero_rec)

        def one_step(carry, inp):
            z, u, g, buf, bad = carry
            xi, t = inp  # t is unbatched: cond stays a branch, the write a dynamic_update_slice
            is_draw = (t + 1 >= first) & ((t + 1 - first) % thin == 0)
            mv = core.move(layout, m, z, u, g, xi, t, key, args)
            if draw_fn is None:  # cheap: write every state, the draw's write is the slot's last
                rec = record(mv.z)
            else:  # draw_fn may be costly: only at the draws
                rec = lax.cond(is_draw, record, lambda _: zero_rec, mv.z)
            idx = jnp.clip((t + thin - first) // thin, 0, n_draws - 1)  # the draw's write is last
            buf = jax.tree.map(lambda b, r: lax.dynamic_update_index_in_dim(b, r, idx, 0), buf, rec)
            out = (mv.u, mv.drift_norm, mv.noise_norm, mv.accept_prob, mv.diverging)
            return (mv.z, mv.u, mv.g, buf, bad | mv.diverging), out

        def noise_of(t):
            return layout.noise(key, t, core.noise)

        def run_block(carry, t0, length):
            ts = t0 + jnp.arange(length, dtype=jnp.int32)
            if block == 1:
                return lax.scan(lambda c, t: one_step(c, (noise_of(t), t)), carry, ts)
            xi = jax.vmap(noise_of)(ts)  # one call for `length` steps
            return lax.scan(one_step, carry, (xi, ts))

        carry = (z, state.potential_energy, g, buf, state.diverging)
        n_blocks, tail = divmod(n_steps, block)
        if block == 1:  # one flat scan, the noise drawn inside the step
            carry, outs = run_block(carry, jnp.int32(0), n_steps)
            tail = 0
        else:
            carry, outs = lax.scan(
                lambda c, t0: run_block(c, t0, block),
                carry,
                jnp.arange(n_blocks, dtype=jnp.int32) * block,
            )
            outs = [o.reshape(n_blocks * block) for o in outs]
        if tail:
            carry, tail_outs = run_block(carry, jnp.int32(n_blocks * block), tail)
            outs = [jnp.concatenate([o, p]) for o, p in zip(outs, tail_outs)]
        z, u_last, g, (kept, dist), bad = carry
        if draw_fn is None:
            dist = jax.vmap(distance)(kept)
        u, drift, noise, acc, div = outs
        last = SGLDState(
            i=jnp.full((), n_steps, jnp.int32),
            z=layout.unflatten(z),
            potential_energy=u_last,
            z_grad=layout.unflatten(g),
            drift_norm=drift[-1],
            noise_norm=noise[-1],
            accept_prob=acc[-1],
            diverging=div[-1],
            rng_key=key,
        )
        return SGLDResult(
            draws=jax.vmap(layout.unflatten)(kept) if draw_fn is None else kept,
            potential=u,
            drift_norm=drift,
            noise_norm=noise,
            accept_prob=acc,
            draw_potential=u[first - 1 :: thin],
            draw_distance=dist.astype(u.dtype),
            init_potential=state.potential_energy,
            finite=~bad & jnp.isfinite(u).all() if record_potential else ~bad,
            last_state=last,
        )

    return jax.vmap(run_one, in_axes=(0, 0 if per_chain_init else None))(keys, init_position)
