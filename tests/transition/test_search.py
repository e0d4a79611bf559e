"""transition/search.py and the ``copyhead transition`` command: later seeds anchored on one
probe, P*_aG against a brute-force importance-sampling evidence ratio, resume, batched groups,
bad input, signals."""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import signal
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import marginal_energy, marginal_whitening, with_WG
from copyhead_jax.transition import TISettings, a_G, crossing
from tests.helpers import interrupt

# --- the command on a tiny configuration ------------------------------------------------------

TINY_CFG = ch.PLAIN.replace(
    task=dict(L=4, V=3),
    model=dict(width=math.inf, attention="softmax", engine="reduced"),
    train=dict(train_embeddings=False),
)
GRID = (8, 11, 16, 23, 32, 45, 64)
SETTINGS = TISettings(
    ts=(0.0, 0.1, 0.3, 0.6, 1.0), n_chains=4, n_iter=400, n_adapt=60, n_ref=4000, smc_particles=64
)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("transition")
    res = ch.transition(
        TINY_CFG,
        method="ti",
        n_seeds=1,
        out=out,
        progress=False,
        settings=SETTINGS,
        P_grid=GRID,
        theory=False,
    )
    return out, res


def test_later_seeds_anchor_on_one_probe_and_bracket_when_their_root_is_far(monkeypatch, tmp_path):
    """The seed loop on a known d (each group's TI replaced by d_s(P) = -30 log(P / root_s)): seed 0
    brackets its root; seed 1 (root 3% from the mean) is placed from one probe at the mean root
    with seed 0's slope, its true root inside its error budget; seed 2 (root 20% away) needs a
    second probe, placed past the anchored root, and brackets in two. The figure draws the
    borrowed slope to the root, the printout names the one probe, and ``--seeds-probe bracket``
    reaches ``anchored=False``."""
    from copyhead_jax.transition import search as pt
    from copyhead_jax.transition import seed_probes

    roots, calls = [36.0, 37.1, 43.0], []

    def known_d(measure, probes, anchor=None):  # seed_probes on d_s instead of the TI
        s = len(calls)
        calls.append(anchor)
        d = lambda P: {
            "P": P,
            "seed": s,
            "dF": -30 * math.log(P / roots[s]),
            "se": 0.05,
            "sys": 0.0,
        }  # noqa: E731
        return seed_probes(d, probes, anchor)

    monkeypatch.setattr(pt, "seed_probes", known_d)
    res = ch.transition(
        TINY_CFG,
        method="ti",
        n_seeds=3,
        progress=False,
        settings=SETTINGS,
        P_grid=GRID,
        theory=False,
        cross_check=False,
    )
    probes = [[p["P"] for p in sd["probes"]] for sd in res["seeds"]]
    cr = [sd["crossing"] for sd in res["seeds"]]
    assert calls[0] is None and calls[1][0] == pytest.approx(-30.0)  # seed 0's secant slope
    assert cr[0]["bracket"] and len(probes[1]) == 1 and cr[1]["anchor"]["n_slopes"] == 1
    assert probes[1] == [round(math.exp(cr[0]["log_P"]))]
    assert len(probes[2]) == 2 and cr[2]["bracket"] and cr[2]["anchor"] is None
    for c, r in zip(cr, roots, strict=True):
        err = 3 * c["err_mc"] + c["err_sys"]
        assert abs(c["log_P"] - math.log(r)) <= err, (c, r)
    from copyhead_jax.plots import transition_figure

    ax = transition_figure(res).axes[0]  # the anchored seed's slope line ends on d = 0 at P*
    (line,) = [x for x in ax.get_lines() if x.get_label().startswith("one probe")]
    assert line.get_xdata()[-1] == pytest.approx(cr[1]["P_star"])
    assert abs(line.get_ydata()[-1]) < 1e-9
    from copyhead_jax.cli.transition import format_result

    text = format_result(res).splitlines()
    assert "bracket [" in text[1] and "one probe at" in text[2] and "bracket [" in text[3]
    seen = {}

    def fake(cfg, **kw):
        seen.update(kw)
        return res

    monkeypatch.setattr(pt, "transition", fake)
    monkeypatch.chdir(tmp_path)  # the command's default folder, results/..., goes here
    for flag, want in (([], True), (["--seeds-probe", "bracket"], False)):
        assert (
            main([*"transition --method ti --preset plain --L 4 --V 3 --width inf".split(), *flag])
            == 0
        )
        assert seen["anchored"] is want


def _is_delta_F(out: Path, P: int, a_thr: float, key, n_draws: int = 40_000, scale: float = 1.6):
    """F_copy - F_pool of seed 0 at P by importance sampling in the flat W^G: a mixture of
    Gaussians at every MAP (both starts) within a factor 2 of P, each with its whitening at
    this P's data widened by ``scale``. Returns (dF, its standard error)."""
    sw = {b: ch.SweepResult.load(out / f"map_{b}.npz") for b in ("pool", "copy")}
    cfg = sw["pool"].config
    obj = Objective.from_config(cfg)
    P_pad = max(GRID)
    inp = sweep_inputs(cfg.replace(sweep=dict(P=(P_pad,), n_seeds=1)), None, P_pad)
    train, mask = inp.train[0], (jnp.arange(P_pad) < P).astype(jnp.float32)
    cls = ch.head_class("softmax")
    comps = []
    for r in sw.values():
        for i, p in enumerate(r.P):
            if abs(math.log(p / P)) <= math.log(2.0):
                comps.append(
                    cls(
                        **{
                            k: jnp.asarray(r[f"params/{k}"][i, 0], jnp.float32)
                            for k in ("W_E", "b", "W_G", "W_O_hat")
                        },
                        chi=cfg.posterior.chi,
                    )
                )
    with jax.enable_x64(True):
        Cs = [
            np.asarray(
                marginal_whitening(
                    jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), h),
                    train,
                    jnp.asarray(mask, jnp.float64),
                    obj,
                )
            )
            * scale
            for h in comps
        ]
    xs = [np.asarray(h.W_G, np.float64).ravel() for h in comps]
    n, K = xs[0].size, len(comps)
    rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**30)))
    which = rng.integers(0, K, n_draws)
    z = rng.standard_normal((n_draws, n))
    x = np.stack([xs[k] + Cs[k] @ z[j] for j, k in enumerate(which)])
    logq = (
        logsumexp(
            np.stack(
                [
                    -0.5 * np.sum(np.linalg.solve(Cs[k], (x - xs[k]).T) ** 2, 0)
                    - np.linalg.slogdet(Cs[k])[1]
                    for k in range(K)
                ]
            ),
            0,
        )
        - math.log(K)
        - 0.5 * n * math.log(2 * math.pi)
    )
    h0 = comps[0]
    U = jax.jit(jax.vmap(lambda v: marginal_energy(with_WG(h0, v), train, mask, obj)))
    A = jax.jit(jax.vmap(lambda v: a_G(with_WG(h0, v), train, mask)))
    xf = jnp.asarray(x, jnp.float32)
    Um = np.concatenate(
        [np.asarray(U(xf[i : i + 4000]), np.float64) for i in range(0, n_draws, 4000)]
    )
    aG = np.concatenate([np.asarray(A(xf[i : i + 4000])) for i in range(0, n_draws, 4000)])
    lw = -Um - logq
    out_ = {}
    for name, sel in (("copy", aG >= a_thr), ("pool", aG < a_thr)):
        w = np.where(sel, np.exp(lw - lw.max()), 0.0)
        m = w.mean()
        out_[name] = (math.log(m) + lw.max(), w.std() / math.sqrt(n_draws) / m)
    return -out_["copy"][0] + out_["pool"][0], math.hypot(out_["copy"][1], out_["pool"][1])


@pytest.mark.heavy
def test_pstar_agrees_with_an_importance_sampling_evidence_ratio(tiny_run):
    """At the command's probes within a factor 1.5 of its bracket, F_copy - F_pool by
    importance sampling (no TI path, no HMC) agrees with the command's within 4 combined
    standard errors plus the TI's quadrature bound; the root of the IS differences over those
    probes (the IS may cross next to the command's bracket when the root lies near a probe)
    lies inside the command's 95% interval widened by 3 IS standard errors (propagated to
    log P)."""
    out, res = tiny_run
    seed0 = res["seeds"][0]
    cr = seed0["crossing"]
    assert cr["P_star"] is not None, seed0
    by_P = {g["P"]: g for g in seed0["probes"]}
    lo, hi = (int(p) for p in cr["bracket"])
    near = sorted(P for P in by_P if lo / 1.5 <= P <= 1.5 * hi)
    d_is, se_is = zip(*[_is_delta_F(out, P, res["a_thr"], jax.random.key(P)) for P in near])
    for P, d, se in zip(near, d_is, se_is, strict=True):
        g = by_P[P]
        assert abs(d - g["dF"]) <= 4 * math.hypot(se, g["se"]) + g["sys"], (P, d, se, g["dF"])
    Ps, d_is, se_is = list(near), list(d_is), list(se_is)
    for _ in range(3):  # no IS sign change among the probes: one IS point further out
        c = crossing(Ps, d_is, se_is)
        if c.P_star is not None:
            break
        P = round(max(Ps) * 1.15) if c.side == "above" else round(min(Ps) / 1.15)
        d, se = _is_delta_F(out, P, res["a_thr"], jax.random.key(P))
        Ps, d_is, se_is = Ps + [P], d_is + [d], se_is + [se]
    assert c.P_star is not None
    half = res["summary"]["half_width_log"] + 3 * c.err_mc
    assert abs(math.log(c.P_star) - math.log(res["P_star"])) <= half, (c, res["summary"])


@pytest.mark.heavy
def test_resume_gives_identical_numbers(tiny_run, tmp_path, monkeypatch, caplog):
    """The real TI killed (Ctrl-C) inside its second group: the rerun reads the first group
    back and computes the rest to the numbers of the run never interrupted."""
    from copyhead_jax.transition import search

    out, res = tiny_run
    copy = tmp_path / "again"
    copy.mkdir()
    for b in ("pool", "copy"):  # the MAP sweeps, as the killed run kept them
        shutil.copy(out / f"map_{b}.npz", copy / f"map_{b}.npz")
    real, calls = search.free_energies, []

    def killed_in_the_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    run = lambda: ch.transition(  # noqa: E731
        TINY_CFG,
        method="ti",
        n_seeds=1,
        out=copy,
        progress=True,
        settings=SETTINGS,
        P_grid=GRID,
        theory=False,
    )
    monkeypatch.setattr(search, "free_energies", killed_in_the_second)
    with pytest.raises(KeyboardInterrupt):
        run()
    assert len(list((copy / "groups").glob("*.json"))) == 1
    monkeypatch.setattr(search, "free_energies", real)
    caplog.set_level(logging.INFO, logger="copyhead_jax")
    again = run()
    assert again["P_star"] == res["P_star"] and again["interval"] == res["interval"]
    notes = [r.getMessage() for r in caplog.records if r.name.startswith("copyhead_jax.")]
    assert any(re.fullmatch(r"seed 0 P=\d+: kept, F_copy - F_pool = .*", m) for m in notes)
    assert [g["dF"] for g in again["seeds"][0]["probes"]] == [
        g["dF"] for g in res["seeds"][0]["probes"]
    ]


@pytest.fixture(scope="module")
def one_group():
    """The arguments the command hands one probe's branch free energies (TI and SMC replaced by
    stand-ins, so only the MAP grid runs): the real ones are then called on them directly."""
    from copyhead_jax.transition import search

    seen = []

    def free_energies(key, heads, train, mask, a_thr, settings, obj):
        seen.append((key, heads, train, mask, a_thr, obj))
        P = float(np.sum(mask))  # a root at P = 13: the grid below brackets it
        br = lambda F: {
            "F": F,
            "mcse": 0.1,
            "quad_corr": 0.0,
            "dU_dP": 0.5,
            "rhat_max": 1.0,
            "ess_min": 400.0,
        }
        return {"copy": br(-10 * math.log(P / 13)), "pool": br(0.0), "_C": None}

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(search, "free_energies", free_energies)
        ch.transition(
            TINY_CFG,
            method="ti",
            n_seeds=1,
            progress=False,
            P_grid=GRID[1:3],
            theory=False,
            settings=TISettings(smc_particles=0),
        )
    return seen[0]


def _settings(**kw) -> TISettings:
    return TISettings(
        **{
            "ts": (0.0, 0.5, 1.0),
            "n_chains": 2,
            "n_iter": 16,
            "n_adapt": 0,
            "n_ref": 200,
            "smc_particles": 8,
            "smc_max_steps": 4,
            **kw,
        }
    )


@pytest.mark.slow  # four compiled group programs (~30 s); the chains: test_collapsed_hmc.py
def test_a_batched_group_makes_the_same_chains_as_one_after_the_other(one_group):
    """``TISettings.batched`` (the accelerators' default) vmaps branches, rungs, chains and SMC
    particles instead of running them one after the other: the same chains up to float32
    rounding. Over 16 iterations the rounding cannot grow into a different trajectory, so both
    branch free energies and the SMC weight agree to 1e-4 relative."""
    from copyhead_jax.transition.branch_group import free_energies, smc_weight

    key, heads, train, mask, a_thr, obj = one_group
    fe = [
        free_energies(key, heads, train, mask, a_thr, _settings(batched=b), obj)
        for b in (False, True)
    ]
    for br in ("copy", "pool"):
        assert math.isfinite(fe[0][br]["F"])
        assert fe[1][br]["F"] == pytest.approx(fe[0][br]["F"], rel=1e-4)
    C64 = fe[0]["_C"]
    w = [
        smc_weight(key, heads, train, mask, a_thr, C64, _settings(batched=b), obj)["w_copy"]
        for b in (False, True)
    ]
    np.testing.assert_allclose(w[1], w[0], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # two compiled group programs; the mass adaptation: test_hmc.py
def test_adapted_mass_reaches_a_groups_rung_chains(one_group):
    """``TISettings.adapt_mass`` reaches the rungs' HMC: with >= MASS_MIN_ADAPT warm-up
    iterations the chains differ from the unit-mass ones (same keys), and F stays finite."""
    from copyhead_jax.transition.branch_group import free_energies

    key, heads, train, mask, a_thr, obj = one_group
    F = [
        free_energies(
            key,
            heads,
            train,
            mask,
            a_thr,
            _settings(n_adapt=24, smc_particles=0, adapt_mass=m),
            obj,
        )["copy"]["F"]
        for m in (False, True)
    ]
    assert all(math.isfinite(f) for f in F) and F[0] != F[1]


@pytest.mark.slow  # compiles the rounds' two programs; fast sibling: test_rung_rounds.py
def test_a_groups_rungs_in_rounds_stop_on_their_own_and_report_target_and_reached(one_group):
    """With a target no rung can meet, the rungs drawn in rounds are the fixed-length rungs:
    the same F up to float32 rounding (another compiled program: 1e-6 relative, ~10 float32
    ulps, where a different chain would differ at the MCSE), every rung at the cap and unmet.
    With a reachable one each rung stops in a whole round at or before the cap, those that
    stopped having met it; the output
    states the target and, per rung, the draws, the reached ESS and R-hat and whether it was
    met (the t = 0 rung, exact draws: None)."""
    from copyhead_jax.transition.branch_group import free_energies

    key, heads, train, mask, a_thr, obj = one_group
    base = dict(n_iter=64, round_iter=16, smc_particles=0)
    fixed = free_energies(key, heads, train, mask, a_thr, _settings(**base), obj)
    capped = free_energies(key, heads, train, mask, a_thr, _settings(**base, ess_target=1e6), obj)
    for br in ("copy", "pool"):
        assert capped[br]["F"] == pytest.approx(fixed[br]["F"], rel=1e-6)
        assert capped[br]["mcse"] == pytest.approx(fixed[br]["mcse"], rel=1e-4)
        assert abs(capped[br]["F"] - fixed[br]["F"]) < 1e-3 * fixed[br]["mcse"]
        assert capped[br]["n_draws"] == fixed[br]["n_draws"] == [None, 32, 32]
        assert capped[br]["target_met"] == [None, False, False]
        assert fixed[br]["target"] is None and "target_met" not in fixed[br]
        assert capped[br]["target"] == {"ess": 1e6, "rhat": 1.05, "round_draws": 8, "cap_draws": 32}
    s = _settings(**base, ess_target=8.0, rhat_target=1.5)
    got = free_energies(key, heads, train, mask, a_thr, s, obj)
    n = [k for br in ("copy", "pool") for k in got[br]["n_draws"][1:]]
    met = [m for br in ("copy", "pool") for m in got[br]["target_met"][1:]]
    assert all(k % 8 == 0 and 8 <= k <= 32 for k in n), n
    assert all(m for k, m in zip(n, met) if k < 32), (n, met)  # stopped early: met it
    assert min(n) < 32, n  # some rung stopped before the cap
    for br in ("copy", "pool"):
        fe = got[br]
        for k, e, r, m in zip(
            fe["n_draws"][1:], fe["ess_reached"][1:], fe["rhat_reached"][1:], fe["target_met"][1:]
        ):
            assert m == (e >= 8.0 and r <= 1.5), (k, e, r, m)
        assert math.isfinite(fe["F"])


@pytest.mark.slow  # the fast siblings above call one group directly
def test_batched_groups_make_the_same_chains_as_one_after_the_other():
    """``TISettings.batched`` (the accelerators' default) vmaps branches, rungs, chains and SMC
    particles instead of running them one after the other: the same chains up to float32
    rounding. Over 16 iterations the rounding cannot grow into a different trajectory, so every
    probe's F_copy - F_pool, the root and the SMC weights agree to 1e-4 relative."""
    runs = [
        ch.transition(
            TINY_CFG,
            method="ti",
            n_seeds=1,
            progress=False,
            P_grid=GRID[2:6],
            theory=False,
            settings=TISettings(
                ts=(0.0, 0.5, 1.0),
                n_chains=2,
                n_iter=16,
                n_adapt=0,
                n_ref=200,
                smc_particles=8,
                smc_max_steps=4,
                batched=b,
            ),
        )
        for b in (False, True)
    ]
    (one, both) = [[(g["P"], g["dF"]) for g in r["seeds"][0]["probes"]] for r in runs]
    assert [p for p, _ in one] == [p for p, _ in both] and len(one) >= 2
    np.testing.assert_allclose([d for _, d in both], [d for _, d in one], rtol=1e-4)
    assert runs[1]["P_star"] == pytest.approx(runs[0]["P_star"], rel=1e-4)
    w = [r["seeds"][0]["smc"]["w_copy"] for r in runs]
    np.testing.assert_allclose(w[1], w[0], rtol=1e-4, atol=1e-6)
    assert runs[1]["settings"]["batched"] is True and runs[0]["settings"]["batched"] is False
    # a fresh run's groups and cross-checks are part of its wall time
    assert all(0 < r["group_seconds"] <= r["wall_seconds"] for r in runs)


@pytest.mark.slow  # the fast sibling above calls one group directly
def test_adapted_mass_reaches_the_rungs_chains():
    """``TISettings.adapt_mass`` reaches the rungs' HMC: with >= MASS_MIN_ADAPT warm-up
    iterations the chains differ from the unit-mass ones (same keys), and F stays finite."""
    runs = [
        ch.transition(
            TINY_CFG,
            method="ti",
            n_seeds=1,
            progress=False,
            P_grid=GRID[2:6],
            theory=False,
            settings=TISettings(
                ts=(0.0, 0.5, 1.0),
                n_chains=2,
                n_iter=16,
                n_adapt=24,
                n_ref=200,
                smc_particles=0,
                adapt_mass=m,
            ),
        )
        for m in (False, True)
    ]
    first = [r["seeds"][0]["probes"][0] for r in runs]
    assert first[0]["P"] == first[1]["P"] and first[0]["dF"] != first[1]["dF"]
    assert all(math.isfinite(g["dF"]) for g in first)
    assert runs[1]["settings"]["adapt_mass"] is True


def test_cli_rung_schedule_reaches_the_settings():
    import argparse

    from copyhead_jax.cli.transition import add_transition_subparser, settings_from_args
    from copyhead_jax.transition import rung_ts

    p = argparse.ArgumentParser()
    add_transition_subparser(p.add_subparsers())
    for flags, want in (([], rung_ts(7)), (["--rung-schedule", "near-0"], rung_ts(7, "near-0"))):
        a = p.parse_args(["transition", "--rungs", "7", *flags])
        assert settings_from_args(a).ts == want and not settings_from_args(a).adapt_mass
    assert settings_from_args(p.parse_args(["transition", "--adapt-mass"])).adapt_mass
    assert settings_from_args(p.parse_args(["transition"])).exact_t0
    chains = settings_from_args(p.parse_args(["transition", "--t0", "chains"]))
    assert not chains.exact_t0 and chains.chain_ts == chains.ts


# --- bad input --------------------------------------------------------------------------------


def _one_line_error(capsys, rc, pattern):
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    import re

    assert re.search(pattern, err), err


@pytest.mark.bad_input
def test_bad_api_input_is_refused_before_work():
    with pytest.raises(ValueError, match="n_seeds must be"):
        ch.transition(TINY_CFG, method="ti", n_seeds=0)
    with pytest.raises(ValueError, match="settings must be a TISettings"):
        ch.transition(TINY_CFG, method="ti", settings={"n_iter": 3}, P_grid=GRID, theory=False)
    with pytest.raises(ValueError, match="TISettings.ts must rise"):
        TISettings(ts=(0.0, 0.5))
    with pytest.raises(ValueError, match="P_grid is needed"):
        ch.transition(TINY_CFG, method="ti", theory=False)
    with pytest.raises(ValueError, match="cfg must be a copyhead_jax Config"):
        ch.transition({"L": 4})
    big = TINY_CFG.replace(sweep=dict(memory_budget_gb=1e-6))
    with pytest.raises(ValueError, match="needs about .* [GM]iB of memory"):
        ch.transition(big, method="ti", P_grid=GRID, theory=False)


@pytest.mark.bad_input
def test_a_too_big_group_is_refused_before_the_theory(monkeypatch):
    """The group's memory check runs before the theory (which may be the Markov minimisers,
    minutes): with a grid given, at its top; without one, at the least top a theory-placed grid
    has, so a budget no group fits is refused without computing the theory."""
    from copyhead_jax.transition import search

    def no_theory(cfg):
        raise AssertionError("the theory ran before the memory check")

    monkeypatch.setattr(search, "theory_points", no_theory)
    big = TINY_CFG.replace(sweep=dict(memory_budget_gb=1e-6))
    for grid in (GRID, None):
        with pytest.raises(ValueError, match="transition group at P <= .* needs about"):
            ch.transition(big, method="ti", P_grid=grid)


def test_bad_cli_input_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    base = "transition --method ti --preset plain --L 4 --V 3 --width inf --P 8,16 --quiet".split()
    _one_line_error(
        capsys, main(base + ["--out", str(tmp_path / "file")]), "--out .*file.* not a folder"
    )
    _one_line_error(
        capsys, main(base + ["--out", str(tmp_path / "file" / "x")]), "--out .* not writable"
    )
    _one_line_error(capsys, main(base + ["--rungs", "1"]), "--rungs must be")
    _one_line_error(capsys, main(base + ["--chains", "0"]), "--chains must be")
    _one_line_error(capsys, main(base + ["--a-thr", "-1"]), "--a-thr must be")
    _one_line_error(capsys, main(base + ["--n-seeds", "0"]), "--n-seeds must be")
    _one_line_error(capsys, main([*base[:-3], "--P", "8", "--quiet"]), "--P must hold")
    _one_line_error(
        capsys,
        main(base + ["--memory-budget-gb", "1e-6"]),
        "needs about .* [GM]iB of memory.*--memory-budget-gb",
    )
    _one_line_error(capsys, main(base + ["--memory-budget-gb", "-1"]), "--memory-budget-gb must be")
    assert not any((tmp_path / "file").parent.glob("*.lock"))


# --- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sig, rc", [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.heavy)]
)
def test_signals_end_the_transition_cleanly(sig, rc, tmp_path):
    argv = (
        "transition --method ti --preset plain --L 4 --V 3 --width inf "
        "--n-seeds 1 --P 8,16,32 --iterations 100000 --out o --quiet"
    ).split()
    # answered within seconds even inside one compiled group (minutes with --iterations 100000):
    # SIGNAL_GRACE_S is 2 s, the rest is room for a loaded machine
    got, err = interrupt(argv, sig, tmp_path, wait_s=2.0, start_s=300, answer_s=30)
    assert got == rc, err
    assert "Traceback" not in err and "copyhead: interrupted" in err
    # the lock is taken once the output folder exists: from then on the folder is the kept work
    assert ("resume" in err) == (tmp_path / "o").is_dir(), err
    assert not list(tmp_path.rglob("*.lock"))
    for g in tmp_path.rglob("groups/*.json"):  # whatever was kept is whole
        assert json.loads(g.read_text())["record"]["seed"] == 0


def test_building_the_cli_parser_initialises_no_jax_backend():
    # TISettings' batched default asks JAX for its backend; the parser of every command must not
    # (on a GPU machine that would grab device memory for `copyhead --help`)
    import subprocess
    import sys

    code = (
        "import copyhead_jax.cli as c; from jax._src import xla_bridge as xb; "
        "c.build_parser(); print(bool(xb._backends))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
