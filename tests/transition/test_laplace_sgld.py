"""``copyhead_jax.transition.laplace_sgld``: the Laplace-referenced TI quadrature on exact Gaussian
draws (closed-form log Z ratio), and the one-program tempered chains on a tiny random reduced head
(the reference rung samples N(0, I); U* is the quenched U)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.fit import quenched_energy
from copyhead_jax.models import head_class
from copyhead_jax.objective import Objective
from copyhead_jax.transition import laplace_sgld as LT


def test_branch_free_energy_gaussian_closed_form():
    """U = U* + a|w|^2/2 in n dims against the reference U* + |w|^2/2: log Z1/Z0 = -(n/2) log a.
    Exact draws on each rung (w ~ N(0, I / (1 + t (a - 1)))): the estimate is within 4 MCSE
    plus the (Euler-Maclaurin corrected) quadrature error, ~1e-3 here."""
    n, a, U_star, hl = 10, 3.0, 7.0, 1.25
    ts = np.linspace(0, 1, 7)
    rng = np.random.default_rng(1)
    draws = np.zeros((ts.size, 2, 2000, len(LT.TEMPERED_FIELDS)))
    for k, t in enumerate(ts):
        w = rng.standard_normal((2, 2000, n)) / math.sqrt(1 + t * (a - 1))
        hw = 0.5 * np.sum(w**2, -1)
        draws[k, ..., 0] = U_star + a * hw - 2.0  # D
        draws[k, ..., 1] = 2.0  # prior part (D + prior = U)
        draws[k, ..., 2] = hw
    fe = LT.branch_free_energy(ts, draws, np.ones((ts.size, 2), bool), U_star, hl)
    truth = -(n / 2) * math.log(a)
    assert abs(fe["log_Z_ratio"] - truth) < 4 * fe["mcse"] + 5e-3
    assert fe["F"] == pytest.approx(U_star + hl - fe["log_Z_ratio"])


@pytest.mark.heavy  # the old whitened-SGLD TI path (kept for its table); ~12 s idle
def test_tempered_chains_tiny_head():
    """One program over 2 runs x 2 temperatures: the reference rung (0, 0, 1) samples N(0, I)
    (stationary variance 1/(1 - eta/2) under SGLD), and U* is the quenched U at the start."""
    cfg = ch.TINY.replace(task=dict(L=6, V=3), model=dict(engine="reduced", attention="softmax"))
    D, V, n_seq = 9, 3, 5
    keys = jax.random.split(jax.random.key(0), 5)
    heads = [
        head_class("softmax")(
            W_E=jax.random.normal(keys[0], (2, D, V)),
            b=jax.random.normal(keys[1], (2, D, 6)),
            W_G=0.3 * jax.random.normal(keys[2], (2, D, D)),
            W_O_hat=jax.random.normal(keys[3], (2, V, D)),
            chi=cfg.posterior.chi,
        )
    ][0]
    tokens = jax.random.randint(keys[4], (2, n_seq, 6), 0, V)
    mask = jnp.ones((2, n_seq), jnp.float32)
    n = D * D + V * D
    theta = jnp.concatenate([heads.W_G.reshape(2, -1), heads.W_O_hat.reshape(2, -1)], 1)
    C = jnp.broadcast_to(0.3 * jnp.eye(n), (2, n, n))
    coef = jnp.asarray(np.stack([LT.ti_coefficients([0.0, 1.0], None)] * 2))
    ck = jax.random.split(jax.random.key(1), 2 * 2 * 2).reshape(2, 2, 2)
    eta = 0.1
    draws, finite, U_star = LT.tempered_chains(
        cfg, 600, 100, 5, 2, eta, ck, heads, tokens, mask, theta, C, coef
    )
    assert bool(np.all(finite))
    hw = np.asarray(draws)[:, 0, ..., LT.TEMPERED_FIELDS.index("half_w2")]
    target = 0.5 * n / (1 - eta / 2)  # E|w|^2/2 under SGLD on a unit Gaussian
    # 2 chains x 100 draws x 2 runs of a sum of n = 108 squares: relative sd ~ 1e-2
    assert abs(hw.mean() / target - 1) < 0.05
    obj = Objective.from_config(cfg)
    one = jax.tree.map(lambda x: x[0], heads)
    U0 = quenched_energy(one, tokens[0], mask[0], obj)
    assert float(U_star[0, 0]) == pytest.approx(float(U0), rel=1e-5)
