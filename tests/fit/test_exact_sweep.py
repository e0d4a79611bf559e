"""fit/exact_sweep.py: the exact chunk's blockwise measurement equals ``observables.measure``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.models import head_template, init_reduced

N, L, V, P = 64, 6, 3, 12
RTOL = 1e-10  # float64: sums in another order agree to rounding


def _cfg(attention, preset):
    return ch.preset(preset).replace(
        task=dict(L=L, V=V),
        model=dict(attention=attention, width=N),
        train=dict(train_embeddings=False),
    )


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.max(np.abs(b)), 1e-300)
    assert np.max(np.abs(a - b)) <= rtol * scale, np.max(np.abs(a - b)) / scale


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_blocked_measure_matches_measure(attention):
    """The exact chunk's blockwise measurement equals ``observables.measure`` (same sums in
    another order: rounding, 1e-12); rows in skipped blocks are masked out anyway."""
    from copyhead_jax.fit import measure_blocked
    from copyhead_jax.fit.exact import BLOCK, blocks_of
    from copyhead_jax.observables import measure

    cfg = _cfg(attention, "plain").replace(model=dict(engine="reduced"))
    P_pad = 2 * BLOCK + 3
    with jax.enable_x64(True):
        t = sample_tokens(jax.random.key(1), n=P_pad, L=L, V=V)
        test = sample_tokens(jax.random.key(2), n=16, L=L, V=V)
        mask = jnp.zeros(P_pad, jnp.float64).at[: BLOCK + 5].set(1.0)
        h = init_reduced(jax.random.key(0), cfg, head_template(cfg))
        m1 = measure(h, t, mask, test)
        m2 = measure_blocked(h, t, mask, test, jnp.asarray(blocks_of(BLOCK + 5, P_pad)))
        for a, b in zip(jax.tree_util.tree_leaves(m1), jax.tree_util.tree_leaves(m2)):
            _close(b, a, rtol=1e-12)
