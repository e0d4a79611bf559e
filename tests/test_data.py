"""The copy task: targets are the cyclic shift, datasets are nested across P."""

import jax
import jax.numpy as jnp
import numpy as np

from copyhead_jax.data import copy_targets, masked_mean, nested_mask, one_hot, seed_data
from copyhead_jax.observables import shift_operator


def test_targets_are_previous_token_with_periodic_boundary():
    t = jnp.array([2, 0, 1, 1, 3])
    y = copy_targets(one_hot(t, 4))
    assert np.array_equal(np.argmax(y, -1), [3, 2, 0, 1, 1])  # y^a = x^{a-1}, y^0 = x^{L-1}
    # Y = G* X with G*_{ab} = delta_{a-1,b}
    assert np.array_equal(shift_operator(5) @ one_hot(t, 4), y)


def test_tokens_uniform_one_hot():
    d = seed_data(jax.random.key(0), P_max=4000, n_test=1, L=5, V=4)
    x = one_hot(d.train, 4)
    assert np.all(np.asarray(x).sum(-1) == 1)
    freq = np.bincount(np.asarray(d.train).ravel(), minlength=4) / d.train.size
    # 20,000 draws: binomial sd of a frequency is sqrt(0.25 * 0.75 / 2e4) = 0.003; 5 sd
    assert np.all(np.abs(freq - 0.25) < 0.016)


def test_datasets_nested_across_P_and_test_set_separate():
    k = jax.random.key(3)
    big = seed_data(k, P_max=64, n_test=16, L=7, V=3)
    small = seed_data(k, P_max=8, n_test=16, L=7, V=3)
    assert np.array_equal(big.train[:8], small.train)  # a larger P adds data, never redraws
    assert np.array_equal(big.test, small.test)
    assert not np.array_equal(big.train[:16], big.test)
    m = nested_mask(5, 8)
    assert np.array_equal(m, [1, 1, 1, 1, 1, 0, 0, 0])
    x = jnp.arange(8.0)
    assert float(masked_mean(x, m)) == 2.0
