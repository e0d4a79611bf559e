"""Route B's limits and its Bayesian point: the zero-spread limit is the EK posterior potential,
the point found is a root of the basins' free-energy difference, the command's JSON."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.cli.theory import main
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.bayes.rows import row_draws
from copyhead_jax.theory.bayes.solve import VariationalSettings, basins, make_draws, transition
from copyhead_jax.theory.bayes.variational import free_energy_terms
from copyhead_jax.theory.potentials import softmax_potential

L, V, ROWS = 8, 3, 2048


@pytest.mark.parametrize("preset", ["plain", "paper", "paper-chi-lik"])
def test_zero_spread_limit_is_the_ek_posterior_potential(preset):
    # With every spread -> 0 the measure is a point mass on the ansatz: F_q - KL is the EK action
    # with the readout's Occam term, V_soft(beta) + D of docs/theory.md §4 (closed form). At
    # rho = e^-40 the logit noise is ~4e-18, so the two agree to float64 rounding (1e-9 rel.).
    p = TheoryParams.preset(preset, L=L, V=V)
    with jax.enable_x64(True):
        d = row_draws(jax.random.PRNGKey(0), L=L, V=V, n=512, dtype=jnp.float64)
        for beta, P in ((0.4, 30.0), (3.0, 80.0)):
            t = free_energy_terms(beta, jnp.full((5,), -40.0), P, p, d)
            ours = float(t.F) - float(t.KL)
            ek = float(softmax_potential(beta, P=P, params=p, objective="post"))
            assert abs(ours - ek) <= 1e-9 * abs(ek), (beta, P, ours, ek)


@pytest.fixture(scope="module")
def plain_transition():
    p = TheoryParams.preset("plain", L=L, V=V)
    return p, transition(p, VariationalSettings(n_rows=ROWS, seed=0))


def test_bayesian_point_is_where_the_two_basins_weigh_the_same(plain_transition):
    # First order at L = 8, V = 3: at P* both basins exist with equal F (|dF| < 1e-5 nats, the
    # solver's stopping rule is 1e-6); 2% below P* the pooling basin is the lower, 2% above the
    # copy basin (dF decreases through 0: the copy basin gains with P).
    p, r = plain_transition
    assert r["first_order"] and r["converged"]
    d = make_draws(p, VariationalSettings(n_rows=ROWS, seed=0))
    at = basins(r["P_star"], p, d)
    assert at["both"] and abs(at["dF"]) < 1e-5
    assert at["copy"]["aG"] - at["pool"]["aG"] > 0.25 * math.sqrt(L)
    x0 = np.stack([at["pool"]["x"], at["copy"]["x"]])
    lo, hi = (basins(f * r["P_star"], p, d, x0=x0) for f in (0.98, 1.02))
    for s in (lo, hi):
        assert s["both"]
    assert lo["dF"] > 0 > hi["dF"]
    # the EK points lie below: the readout's Occam term alone does not move P* this far
    assert r["P_star"] > r["ek"]["post"] >= r["ek"]["map"]


def test_points_command_prints_clean_json(plain_transition, capsys):
    p, r = plain_transition
    argv = ["points", "--objective", "bayes", "--preset", "plain", "--L", str(L), "--V", str(V)]
    argv += ["--attention", "softmax", "--replicas", "1", "--n-rows", str(ROWS), "--json"]
    res = main(argv)
    out = json.loads(capsys.readouterr().out)  # nothing but one JSON document on stdout
    assert out["inputs"]["L"] == L and out["inputs"]["objective"] == "bayes"
    assert set(out) >= {
        "P_aG_bayes",
        "replicas",
        "replica_interval",
        "first_order",
        "ek_map",
        "ek_post",
        "coexistence_seen",
        "runs",
    }
    # the command reports the API's number (same seed, same draws: deterministic)
    np.testing.assert_allclose(out["P_aG_bayes"], r["P_star"], rtol=1e-12)
    assert out["replicas"] == [res["P_aG_bayes"]] and out["replica_interval"] is None
