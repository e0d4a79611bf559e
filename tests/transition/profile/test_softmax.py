"""The softmax landscape: the written-out a_G equals the package's, masked or not; umbrella
windows of a Gaussian have their exact moments; the CLI's --json is one JSON document."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.transition.profile.landscape import Landscape
from copyhead_jax.transition.profile.softmax import build_problem, order, order_reference, row_copy
from copyhead_jax.transition.profile.umbrella import UmbrellaSettings, run_windows


def _cfg(causal=False):
    return ch.preset("plain").replace(
        task=dict(L=4, V=3),
        train=dict(train_embeddings=False),
        model=dict(width=math.inf, attention="softmax", engine="reduced", causal=causal),
    )


def test_a_G_value_and_gradient_match_the_package():
    prob = build_problem(_cfg(), 0, 5, 6)  # 5 kept rows of 6: the mask matters
    x = 0.7 * jax.random.normal(jax.random.key(3), (prob.n,))
    a, g = jax.value_and_grad(lambda y: order(prob, y))(x)
    a_ref, g_ref = jax.value_and_grad(lambda y: order_reference(prob, y))(x)
    # float32 sums of ~60 softmax terms: agreement to a few ulps of O(1) values
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=2e-6)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=2e-6 * float(jnp.max(jnp.abs(g_ref))))
    # a_G = sqrt(L) (L pbar - 1) / (L - 1), pbar the mean of the per-row copy probabilities
    pbar = float(jnp.mean(row_copy(prob, x)))
    L = prob.L
    np.testing.assert_allclose(a, math.sqrt(L) * (L * pbar - 1) / (L - 1), atol=2e-6)


def test_causal_head_masks_its_attention():
    x = 0.7 * jax.random.normal(jax.random.key(3), (49,))
    free, causal = (build_problem(_cfg(c), 0, 5, 6) for c in (False, True))
    assert causal.head.causal and not free.head.causal
    # row 0 of a causal head reads only itself: its previous token (wrapped) gets nothing
    assert float(row_copy(causal, x)[0]) == 0.0 and float(row_copy(free, x)[0]) > 0.0
    assert float(order(causal, x)) != pytest.approx(float(order(free, x)))


@pytest.mark.parametrize("causal", [False, True])
def test_restrained_energy_in_one_pass_is_energy_plus_restraint(causal):
    """The landscape's restrained energy (one pass over the data and one backward without the
    mask; the sum of the two functions with it) has the value and gradient of ``energy`` plus
    the restraint on ``order`` (float64, 5 kept rows of 6, a restraint that dominates the
    gradient: kappa 40, a_G far from the centre)."""
    from copyhead_jax.objective import Objective
    from copyhead_jax.transition.profile.softmax import energy, landscape, profile_config

    with jax.enable_x64(True):
        prob = build_problem(_cfg(causal), 0, 5, 6)
        prob = jax.tree.map(lambda v: v.astype(jnp.float64) if v.dtype == jnp.float32 else v, prob)
        obj = Objective.from_config(profile_config(_cfg(causal)))
        ls = landscape(obj)
        x = 0.7 * jax.random.normal(jax.random.key(3), (prob.n,), jnp.float64)
        c, kappa = 1.5, 40.0

        def ref(y):
            return energy(prob, obj, y) + 0.5 * kappa * (order(prob, y) - c) ** 2

        (u, g), (u_ref, g_ref) = (
            jax.jit(jax.value_and_grad(f))(x) for f in (lambda y: ls.biased(prob, y, c, kappa), ref)
        )
        assert abs(float(order(prob, x)) - c) > 0.5  # the restraint is no small part
        np.testing.assert_allclose(u, u_ref, rtol=1e-12)
        np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * float(jnp.max(jnp.abs(g_ref))))


GAUSS = Landscape(energy=lambda p, x: 0.5 * jnp.sum(x**2), order=lambda p, x: x[0])


@pytest.mark.parametrize("causal", [False, True])
def test_a_draw_is_observed_in_one_pass_as_order_and_row_copy(causal):
    """The landscape's per-draw ``(a_G, p_a)`` from one mean attention equals ``order`` and
    ``row_copy`` each on its own (float64, 5 kept rows of 6)."""
    from copyhead_jax.objective import Objective
    from copyhead_jax.transition.profile.softmax import landscape, profile_config

    with jax.enable_x64(True):
        prob = build_problem(_cfg(causal), 0, 5, 6)
        prob = jax.tree.map(lambda v: v.astype(jnp.float64) if v.dtype == jnp.float32 else v, prob)
        ls = landscape(Objective.from_config(profile_config(_cfg(causal))))
        x = 0.7 * jax.random.normal(jax.random.key(3), (prob.n,), jnp.float64)
        a, p = jax.jit(lambda y: ls.observed(prob, y))(x)
        assert ls.observe is not None
        np.testing.assert_allclose(a, order(prob, x), rtol=1e-12)
        np.testing.assert_allclose(p, row_copy(prob, x), rtol=1e-12)
        # the default, without the one-pass hook, is the two functions themselves
        bare = Landscape(energy=ls.energy, order=ls.order, record=ls.record)
        a2, p2 = bare.observed(prob, x)
        assert float(a2) == float(order(prob, x)) and np.array_equal(p2, row_copy(prob, x))


def test_gaussian_windows_have_their_exact_moments_and_repeat():
    # U = |x|^2 / 2 in 3-d, a = x_0: window k is Gaussian in x_0 with precision 1 + kappa and
    # mean kappa c / (1 + kappa)
    s = UmbrellaSettings(n_chains=4, n_adapt=30, n_iter=400, thin=2)
    c = np.array([-1.0, 0.0, 2.0])
    x0, C = np.zeros((3, 3)), np.stack([np.eye(3)] * 3)
    dr = run_windows(jax.random.key(1), GAUSS, {}, x0, C, c, 4.0, s)
    again = run_windows(jax.random.key(1), GAUSS, {}, x0, C, c, 4.0, s)
    np.testing.assert_array_equal(dr.a, again.a)
    m = dr.a.mean(axis=(1, 2))
    se = dr.a.std(axis=(1, 2)) / np.sqrt(dr.ess())
    assert np.all(np.abs(m - 4.0 * c / 5.0) < 5 * se)  # 5 standard errors (ESS-based)
    np.testing.assert_allclose(dr.a.var(axis=(1, 2)), 1 / 5.0, rtol=0.2)  # ~800 ESS: 5% sd


def test_cli_json_is_one_document(tmp_path, capsys, monkeypatch):
    """``--json`` puts the result on stdout and nothing else; the EK points only label the
    result when the probes are given, so they are stubbed here (the theory's own tests cover
    them)."""
    import importlib

    search = importlib.import_module("copyhead_jax.transition.search")
    monkeypatch.setattr(search, "theory_points", lambda cfg: {"map": 5.5, "post": 11.5})
    argv = [
        *(
            "transition --preset plain --L 4 --V 3 --width inf --n-seeds 1 --probes "
            "10,14 --max-probes 2 --spacing 0.5 --window-chains 3 "
            "--window-iterations 16 --window-round-iter 8 --no-map --json --out"
        ).split(),
        str(tmp_path / "t"),
    ]  # the default target: rounds of 8 to 16
    assert main(argv) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)  # nothing but the JSON on stdout
    assert res["method"] == "profile" and [p["P"] for p in res["seeds"][0]["probes"]] == [10, 14]
    assert res["verdict"] in ("first order", "crossover", "undecided")
    assert "saved" in cap.err and (tmp_path / "t" / "profile.png").is_file()
    assert json.loads((tmp_path / "t" / "transition.json").read_text())["verdict"] == res["verdict"]
    assert res["source"] == "iid" and res["source_params"] is None
    assert res["theory_point"] == 11.5 and res["theory_point_kind"] == "post"
    um = res["settings"]["profile"]["umbrella"]
    assert um["ess_target"] == 50 and um["n_iter"] == 16 and um["round_iter"] == 8


def test_a_markov_source_places_its_probes_by_the_ansatz_map_and_says_so(monkeypatch):
    """For Markov tokens the theory has no posterior form; the probes' first placement is the
    MAP's point in the two-parameter ansatz (seconds, where the full space takes minutes), and
    the printed result names it as that."""
    import importlib

    import copyhead_jax as ch
    from copyhead_jax.cli.transition_text import theory_line

    beyond = importlib.import_module("copyhead_jax.theory.beyond")
    search = importlib.import_module("copyhead_jax.transition.search")
    seen = {}

    def fake(params, task, *, attention, P_range, n_P, space):
        seen.update(space=space, rho=task.rho)
        return {"P_aG": None, "P_aG_crossover": 25.5}

    monkeypatch.setattr(beyond, "beyond_points", fake)
    cfg = ch.preset("plain").replace(
        task=dict(L=6, V=3, source="markov", rho=0.5), model=dict(attention="softmax")
    )
    assert search.theory_points(cfg) == {"map": 25.5, "post": None}
    assert seen == {"space": "ansatz", "rho": 0.5}
    text = theory_line({"theory_point": 25.5, "theory_point_kind": "map (ansatz)"})
    assert "EK theory: MAP in the two-parameter ansatz 25.5" in text


def test_given_probes_over_the_memory_budget_are_refused_before_the_theory(monkeypatch):
    """With probes given, a search that could widen past the memory budget is refused before
    any work: before the EK theory places its point (minutes for Markov tokens), not after."""
    import importlib

    from copyhead_jax.transition.profile import SearchSettings, profile_transition

    run = importlib.import_module("copyhead_jax.transition.profile.run")

    def no_theory(cfg):
        raise AssertionError("the theory ran before the memory check")

    monkeypatch.setattr(run, "_theory_point", no_theory)
    cfg = _cfg().replace(task=dict(L=25, V=5), sweep=dict(memory_budget_gb=2.0))
    with pytest.raises(ValueError, match=r"profile at P = 1120 .* needs about"):
        profile_transition(cfg, settings=SearchSettings(probes=(180, 280)), progress=False)
