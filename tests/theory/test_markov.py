"""Exact Markov-chain data statistics against brute-force enumeration of every sequence."""

import itertools

import jax
import numpy as np
import pytest

from copyhead_jax import TaskConfig
from copyhead_jax.sources import dirichlet_transition, sample_task, sticky_transition
from copyhead_jax.theory.action import dataset_stats, ek_stats
from copyhead_jax.theory.markov import markov_stats, stationary_law


def brute_force_stats(T: np.ndarray, L: int):
    """``S4``, ``S2`` as sums over all ``V^L`` sequences weighted by their exact probability."""
    V = T.shape[0]
    pi = stationary_law(T)
    S4 = np.zeros((L, V, L, V))
    S2 = np.zeros((L, V))
    for seq in itertools.product(range(V), repeat=L):
        p = pi[seq[0]] * np.prod([T[u, v] for u, v in zip(seq, seq[1:])])
        X = np.eye(V)[list(seq)]
        S4 += p * np.einsum("bv,cw->bvcw", X, X)
        S2 += p * X
    return S4, S2


ASYM = np.array([[0.0, 0.7, 0.3], [0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])  # non-reversible, a zero


@pytest.mark.parametrize("T", [ASYM, sticky_transition(3, 0.6), dirichlet_transition(2, 0.5, 1)])
def test_markov_stats_equal_enumeration(T):
    with jax.enable_x64(True):
        L = 5
        S4, S2 = markov_stats(T, L)
        B4, B2 = brute_force_stats(T, L)
        # both float64 sums of <= 3^5 products: agreement to rounding
        np.testing.assert_allclose(np.asarray(S4), B4, atol=1e-14)
        np.testing.assert_allclose(np.asarray(S2), B2, atol=1e-14)
        assert np.asarray(S4).dtype == np.float64


def test_iid_chain_gives_todays_ek_stats_exactly():
    with jax.enable_x64(True):
        for V, L in [(5, 25), (3, 6)]:
            S4, S2 = markov_stats(np.full((V, V), 1.0 / V), L)
            E4, E2 = ek_stats(L, V)
            np.testing.assert_allclose(np.asarray(S4), np.asarray(E4), rtol=0, atol=1e-15)
            np.testing.assert_allclose(np.asarray(S2), np.asarray(E2), rtol=0, atol=1e-15)
            S4, _ = markov_stats(sticky_transition(V, 0.0), L)
            np.testing.assert_allclose(np.asarray(S4), np.asarray(E4), rtol=0, atol=1e-15)


def test_sampled_chain_matches_exact_stats():
    """The data the sweep draws have the exact statistics: each entry of S4 is a mean of 4,000
    Bernoulli variables, so 5 binomial sd of its exact value."""
    task = TaskConfig(L=4, V=3, source="markov", transition=ASYM.tolist())
    t = sample_task(jax.random.key(0), task, n=4000)
    with jax.enable_x64(True):
        emp = np.asarray(dataset_stats(t, 3).S4)
        S4 = np.asarray(markov_stats(ASYM, 4)[0])
    assert np.all(np.abs(emp - S4) <= 5 * np.sqrt(S4 * (1 - S4) / 4000) + 1e-12)
