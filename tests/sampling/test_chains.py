"""sampling/chains.py, the one chain loop: on a kernel whose every transition is known exactly
(warm-up doubles the position, a step adds the chain's increment), the loop's records, traces,
counts, arguments and progress are checked to the bit; vmap and lax.map give the same chains."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.sampling.chains import Kernel, run_chains, total_steps


class Toy(NamedTuple):
    i: jax.Array
    position: jax.Array
    rng_key: jax.Array


def toy_kernel(n_warmup: int) -> Kernel:
    """``init``: ``x + shift``; ``warmup``: doubles; ``step``: adds ``inc`` (integers, exact)."""

    def init(key, x, shift, inc):
        return Toy(jnp.zeros((), jnp.int32), x + shift, key)

    def warmup(s, shift, inc):
        return s._replace(i=s.i + 1, position=2 * s.position)

    def step(s, shift, inc):
        return s._replace(i=s.i + 1, position=s.position + inc)

    return Kernel(init, step, warmup if n_warmup else None, n_warmup)


@pytest.mark.parametrize("batched", [True, False])
def test_warmup_burn_in_blocks_records_and_trace(batched):
    """Chain ``c`` from ``x_c`` with shared ``shift`` and its own ``inc_c``: after ``W`` warm-up
    doublings, ``B`` burn-in steps and block ``j`` of ``thin`` steps the position is
    ``(x_c + shift) 2^W + inc_c (B + (j + 1) thin)``; the trace holds every transition's."""
    W, B, thin, S = 3, 2, 4, 5
    x = jnp.asarray([1, 5, -2], jnp.int32)
    inc = jnp.asarray([1, 10, 100], jnp.int32)
    keys = jax.random.split(jax.random.key(0), 3)
    kernel = toy_kernel(W)
    got = []

    def progress(done, total):
        got.append((done, total))

    c = run_chains(
        kernel,
        keys,
        x,
        n_draws=S,
        thin=thin,
        burn_in=B,
        args=(jnp.int32(7),),
        chain_args=(inc,),
        trace=lambda s: (s.i, s.position),
        record=lambda s, j, shift, inc: (s.position, j),
        batched=batched,
        progress=progress,
    )
    start = (np.asarray(x) + 7) * 2**W
    j = np.arange(S)
    want = start[:, None] + np.asarray(inc)[:, None] * (B + (j + 1) * thin)
    pos, idx = c.records
    np.testing.assert_array_equal(pos, want)
    np.testing.assert_array_equal(idx, np.broadcast_to(j, (3, S)))
    T = total_steps(kernel, n_draws=S, thin=thin, burn_in=B)
    assert T == W + B + S * thin
    i, tr = c.trace
    np.testing.assert_array_equal(i, np.broadcast_to(np.arange(1, T + 1), (3, T)))
    np.testing.assert_array_equal(tr[:, W + B + thin - 1 :: thin], want)  # a draw ends a block
    np.testing.assert_array_equal(
        tr[:, :W], (np.asarray(x) + 7)[:, None] * 2 ** np.arange(1, W + 1)
    )
    np.testing.assert_array_equal(c.init.position, np.asarray(x) + 7)
    np.testing.assert_array_equal(c.state.i, T)
    jax.effects_barrier()
    dones = sorted({d for d, _ in got})
    assert {t for _, t in got} == {T} and dones[-1] == T
    assert dones == sorted(set(range(1, W + B + 1)) | {W + B + (k + 1) * thin for k in range(S)})


def test_default_record_and_no_warmup():
    """No warm-up, no trace: the records are the positions after each block."""
    c = run_chains(
        toy_kernel(0),
        jax.random.split(jax.random.key(1), 2),
        jnp.asarray([0, 1]),
        n_draws=3,
        thin=2,
        args=(jnp.int32(0),),
        chain_args=(jnp.asarray([1, 2]),),
    )
    np.testing.assert_array_equal(c.records, [[2, 4, 6], [5, 9, 13]])
    assert c.trace is None


def test_a_warmup_count_needs_a_warmup_transition():
    k = toy_kernel(0)._replace(n_warmup=2)
    with pytest.raises(ValueError, match="kernel.n_warmup = 2 needs a kernel.warmup"):
        run_chains(
            k,
            jax.random.split(jax.random.key(0), 1),
            jnp.zeros(1, jnp.int32),
            n_draws=1,
            args=(0, 0),
        )
