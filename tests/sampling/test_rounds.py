"""sampling/rounds.py, samplers that stop when they have enough: chains continued round after
round equal one run of the summed length; a target met early stops early with the reached ESS
reported; a cap hit is flagged; a run killed between rounds resumes bit for bit; the target and
the reached values are saved; per-run statistics use each run's own draws."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli.sample import print_posterior, sampler_config
from copyhead_jax.results import PosteriorResult
from copyhead_jax.sampling import run_sampler
from copyhead_jax.sampling.collapsed_hmc import CollapsedHMC
from copyhead_jax.sampling.full_sgld import FullSGLD
from copyhead_jax.sampling.hmc import hmc_chains
from copyhead_jax.sampling.rounds import JUDGED, by_length, merge, met, reached
from copyhead_jax.sampling.stats import ess, split_rhat

#: two P of one seed, reduced engine (exact fits), one chunk of both runs: one compiled first
#: round and one compiled next round per sampler config
RED = ch.TINY.replace(model=dict(engine="reduced"), sweep=dict(P=(4, 8), n_seeds=1))
#: short collapsed HMC in rounds of 20 draws; the cap is 4 rounds (80 draws)
HMC = ch.HMCConfig(n_iter=80, n_warmup=20, n_adapt=30, n_chains=2, round_iter=20, ess_target=1e6)


@pytest.fixture(scope="module")
def red_sweep():
    return ch.run_sweep(RED, progress=False, keep_params=True)


@pytest.fixture(scope="module")
def capped(red_sweep):
    """A target no run meets: every run draws the cap."""
    return run_sampler(red_sweep, HMC, progress=False)


def test_continued_hmc_chains_equal_one_run():
    """Two calls of ``hmc_chains`` (the second from the first's states, draws numbered on) give
    the positions, record indices, acceptances and energies of one call of the summed length,
    bit for bit: every transition draws from ``fold_in(key, i)`` with the state's own count."""

    def pot(w):
        return 0.5 * jnp.sum(w**2 * jnp.arange(1, 6)) + 0.1 * jnp.sum(w**4)

    keys = jax.random.split(jax.random.key(0), 3)
    w0 = jnp.zeros((3, 5))
    kw = dict(thin=2, step_size=0.3, n_adapt=30, adapt_mass=True)

    def rec(s, j):
        return s.position, j

    full = hmc_chains(keys, pot, w0, rec, n_iter=40, **kw)
    a = hmc_chains(keys, pot, w0, rec, n_iter=20, **kw)
    b = hmc_chains(None, pot, w0, rec, n_iter=20, state=a.state, first_draw=10, **kw)
    for f in ("accept", "energy", "outside"):
        np.testing.assert_array_equal(
            np.concatenate([getattr(a, f), getattr(b, f)], 1), getattr(full, f), err_msg=f
        )
    for x, y, z in zip(a.records, b.records, full.records):
        np.testing.assert_array_equal(np.concatenate([x, y], 1), z)
    np.testing.assert_array_equal(b.step_size, full.step_size)


def test_reached_and_met_use_the_one_ess_and_rhat():
    """``reached`` is the smallest ESS and largest split R-hat of U and both order parameters
    over the finite chains (stats.py's, recomputed here per run); ``met`` needs every chain
    finite and both bars."""
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(3, 4, 50, 7))
    draws[1, :, :, 3] += np.arange(50) / 10  # a trend in cG: R-hat far above 1
    finite = np.ones((3, 4), bool)
    finite[2, 1] = False
    e, r = reached(draws, finite)
    for i in range(3):
        x = np.moveaxis(draws[i][finite[i]][..., JUDGED], -1, 0)
        assert e[i] == min(float(ess(q)) for q in x)
        assert r[i] == max(float(split_rhat(q)) for q in x)
    mc = ch.HMCConfig(ess_target=100, rhat_target=1.05)
    want = (e >= 100) & (r <= 1.05) & finite.all(1)
    np.testing.assert_array_equal(met(e, r, finite, mc), want)
    assert not want[1] and not want[2]  # the trend, and the non-finite chain
    assert not met(np.nan, 1.0, np.ones(2, bool), mc)


def test_merge_pads_and_by_length_cuts():
    """Chunks of 3 and 5 draws merge padded with NaN (False for booleans); ``by_length`` gives
    each run the statistic of its own draws, as if computed on it alone."""
    rng = np.random.default_rng(1)
    a = {
        "draws": rng.normal(size=(2, 2, 3, 7)),
        "finite": np.ones((2, 2), bool),
        "n_draws": np.full(2, 3),
    }
    b = {
        "draws": rng.normal(size=(1, 2, 5, 7)),
        "finite": np.ones((1, 2), bool),
        "n_draws": np.full(1, 5),
    }
    m = merge([a, b])
    assert m["draws"].shape == (3, 2, 5, 7)
    assert np.isnan(m["draws"][:2, :, 3:]).all() and np.isfinite(m["draws"][2]).all()
    np.testing.assert_array_equal(m["n_draws"], [3, 3, 5])
    arrays = {k: v[:, None] for k, v in m.items()}  # [P=3, seed=1, ...]

    def mean(x):
        return {"m": x["draws"][..., 0].mean((-2, -1))}

    got = by_length(mean, arrays, arrays["n_draws"])["m"][:, 0]
    want = [x[..., 0].mean() for x in (a["draws"][0], a["draws"][1], b["draws"][0])]
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_target_met_early_stops_early(red_sweep):
    """A target the chains reach (ESS 8, R-hat 1.2) stops both runs before the cap: draws used
    below it, a whole number of rounds, the reached ESS >= the target and R-hat <= its bar, each
    recomputed here from the saved draws with stats.py. The cap is 8 rounds: these chains meet
    the target within 80 draws (ESS 27-35, R-hat <= 1.05 at 80), but in which round depends on
    the float32 rounding of the energy, so a cap of 4 rounds can coincide with the round that
    meets it."""
    mc = dataclasses.replace(HMC, n_iter=160, ess_target=8.0, rhat_target=1.2)
    post = run_sampler(red_sweep, mc, progress=False)
    n = post["n_draws"]
    assert np.all(n < mc.n_rounds * mc.round_draws) and np.all(n % mc.round_draws == 0)
    assert post["target_met"].all() and np.all(post["ess_reached"] >= 8.0)
    assert np.all(post["rhat_reached"] <= 1.2)
    for i in range(len(RED.sweep.P)):
        x = np.moveaxis(post["draws"][i, 0, :, : n[i, 0]][..., JUDGED], -1, 0)
        assert post["ess_reached"][i, 0] == pytest.approx(min(ess(q) for q in x), rel=1e-12)
    assert post.meta["target"] == {"ess": 8.0, "rhat": 1.2, "round_draws": 20, "cap_draws": 160}


def test_cap_hit_is_flagged_and_saved(capped, tmp_path, capsys):
    """A target no run meets: every run draws the cap, ``target_met`` is False, the run is
    flagged and named in a warning; the file and the printed table keep the target and the
    reached values."""
    post = capped
    np.testing.assert_array_equal(post["n_draws"], HMC.n_rounds * HMC.round_draws)
    assert post["draws"].shape[3] == 80 and np.isfinite(post["draws"]).all()
    assert not post["target_met"].any() and post["flagged"].all()
    assert sum("target not met" in w for w in post.meta["warnings"]) == 2
    np.testing.assert_array_equal(post["draw_step"], np.arange(1, 81))
    post.save(tmp_path / "p.npz")
    back = PosteriorResult.load(tmp_path / "p.npz")
    for k in ("n_draws", "ess_reached", "rhat_reached", "target_met", "flagged"):
        np.testing.assert_array_equal(back[k], post[k])
    assert back.meta["target"]["ess"] == 1e6 and back.sampler.ess_target == 1e6
    print_posterior(back)
    out = capsys.readouterr().out
    assert "ESS >= 1000000.0 and R-hat <= 1.01" in out and "at most 80" in out
    table = out.split("# branch weight")[0]  # the per-P table, not the branch weights
    rows = [ln.split() for ln in table.splitlines() if ln.split()[0] in ("4", "8")]
    assert [r[-2:] for r in rows] == [["80", "0/1"], ["80", "0/1"]]
    for r, i in zip(rows, range(2)):  # R-hat and ESS columns: the worst of U, a1, aG
        assert float(r[7]) == pytest.approx(back["rhat_reached"][i, 0], abs=0.006)


@pytest.mark.parametrize("batched", [True, False])
def test_each_run_stops_on_its_own(red_sweep, capped, batched, monkeypatch):
    """Two runs of one chunk, a target one meets rounds before the other (or that the other
    never meets): each stops in the round it meets it, else at the cap and not met (predicted
    from the capped run's draws: a run's chains do not depend on when the others stop), its
    draws those of the capped run bit for bit, NaN past them; with the runs batched (``vmap``)
    and mapped one after the other (a stopped run skipped)."""
    mc0 = HMC
    if not batched:  # every run and chain one after the other; another seed: a fresh program
        monkeypatch.setattr("copyhead_jax.sampling.chains.CPU_BATCH_BYTES", 0)
        mc0 = dataclasses.replace(HMC, seed=7)
        capped = run_sampler(red_sweep, mc0, progress=False)
    cap = capped["draws"][:, 0]  # [P, C, S, F], 4 rounds of 20
    rounds = np.arange(1, HMC.n_rounds + 1) * HMC.round_draws
    finite = np.ones(cap.shape[:2], bool)
    ess_at = np.array([reached(cap, finite, n_draws=np.full(2, n))[0] for n in rounds])

    def first_round(target):  # per run: the draws when it first meets ``target``, else the cap
        ok = ess_at >= target
        return np.where(ok.any(0), rounds[np.argmax(ok, 0)], rounds[-1])

    targets = [t for t in np.unique(ess_at) if len(set(first_round(t))) == 2]
    assert targets, f"no target separates the runs: ESS per round {ess_at}"
    mc = dataclasses.replace(mc0, ess_target=float(targets[0]), rhat_target=10.0)
    post = run_sampler(red_sweep, mc, progress=False)
    want = first_round(targets[0])
    np.testing.assert_array_equal(post["n_draws"][:, 0], want)
    for i, n in enumerate(want):
        for k in ("draws", "energy", "accept", "distance"):
            np.testing.assert_array_equal(post[k][i, 0, :, :n], capped[k][i, 0, :, :n], err_msg=k)
            assert np.isnan(post[k][i, 0, :, n:]).all(), k
    assert post["finite"].all()  # a run that drew the cap without meeting it is not met
    np.testing.assert_array_equal(post["target_met"][:, 0], (ess_at >= targets[0]).any(0))


def test_estimators_and_arviz_use_each_runs_own_draws(capped):
    """A run whose draws stop at 40 of 80 (NaN past them, ``n_draws`` 40, as when its chunk
    stopped earlier than another's): its mean, MCSE and ESS are those of its 40 draws, and its
    ArviZ selection holds exactly them."""
    from copyhead_jax.sampling import run_mean, to_arviz

    a = {k: np.array(v, copy=True) for k, v in capped.arrays.items()}
    a["n_draws"][0, 0] = 40
    for k in ("draws", "accept", "distance", "energy"):
        a[k][0, 0, :, 40:] = np.nan
    cut = PosteriorResult(capped.config, capped.sampler, a, dict(capped.meta), capped.fields)
    m, se, n_eff = run_mean(cut, "aG")
    x = np.asarray(capped["aG"][0, 0, :, :40], np.float64)
    assert m[0, 0] == pytest.approx(x.mean(), rel=1e-12)
    assert n_eff[0, 0] == pytest.approx(float(ess(x)), rel=1e-12)
    np.testing.assert_array_equal(m[1], run_mean(capped, "aG")[0][1])  # the full run untouched
    pytest.importorskip("arviz")
    run = to_arviz(cut, P=int(cut.P[0]), seed=0)
    post = run.posterior if hasattr(run, "posterior") else run["posterior"]
    np.testing.assert_array_equal(post["aG"].values, capped["aG"][0, 0, :, :40])


def test_cli_flags_set_the_target(red_sweep):
    """``--ess-target``, ``--rhat-target`` and ``--round-iter`` reach the HMC config, and
    ``--round-steps`` is refused for it (an SGLD flag)."""
    from copyhead_jax.cli.main import build_parser

    p = build_parser()
    args = p.parse_args(
        ["sample", "x.npz", "--ess-target", "400", "--rhat-target", "1.02", "--round-iter", "250"]
    )
    mc = sampler_config(args, red_sweep)
    assert (mc.ess_target, mc.rhat_target, mc.round_iter) == (400.0, 1.02, 250)
    args = p.parse_args(["sample", "x.npz", "--round-steps", "100"])
    with pytest.raises(ValueError, match="--round-steps is a flag of --sampler sgld"):
        sampler_config(args, red_sweep)


def _killed_in_second_round(monkeypatch, program, run):
    """``run()`` with ``program.more`` (a sampler's later rounds) raising Ctrl-C on its second
    call; ``program.more`` restored afterwards."""
    calls, more = [], program.more

    def dying(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return more(self, *a, **k)

    monkeypatch.setattr(program, "more", dying)
    with pytest.raises(KeyboardInterrupt):
        run()
    monkeypatch.setattr(program, "more", more)


def test_kill_between_rounds_resumes_bit_for_bit(red_sweep, capped, tmp_path, monkeypatch):
    """Killed during its third round, a run resumes from the second round's snapshot and saves
    the draws, energies and acceptances of the uninterrupted run bit for bit."""
    out = tmp_path / "post.npz"
    _killed_in_second_round(
        monkeypatch, CollapsedHMC, lambda: run_sampler(red_sweep, HMC, out=out, progress=False)
    )
    assert list((tmp_path / "post.npz.chunks").glob("*.partial.npz"))  # the snapshot
    started = []
    start = CollapsedHMC.start
    monkeypatch.setattr(CollapsedHMC, "start", lambda *a, **k: started.append(1) or start(*a, **k))
    res = run_sampler(red_sweep, HMC, out=out, progress=False)
    assert not started  # resumed, not redone
    for k in ("draws", "energy", "accept", "distance", "finite", "n_draws"):
        np.testing.assert_array_equal(res[k], capped[k], err_msg=k)
        np.testing.assert_array_equal(PosteriorResult.load(out)[k], capped[k], err_msg=k)


#: full engine: SGLD on every weight in rounds of 20 steps (2 draws), at most 3 rounds
FULL = ch.TINY.replace(solver=dict(max_epochs=60), sweep=dict(P=(2, 8), n_seeds=1))
SGLD = ch.SGLDConfig(
    step_size=1e-5, n_steps=80, burn_in=20, thin=5, n_chains=2, ess_target=1e6, round_steps=20
)


def test_sgld_rounds_cap_and_resume(tmp_path, monkeypatch):
    """SGLD in rounds: a target no run meets draws the cap (3 rounds of 4 draws, after the
    burn-in), is flagged; the draw steps continue past the burn-in; killed in its last round,
    the run resumes bit for bit."""
    sweep = ch.run_sweep(FULL, progress=False, keep_params=True)
    ref = run_sampler(sweep, SGLD, progress=False)
    assert SGLD.n_rounds == 3 and SGLD.round_draws == 4
    np.testing.assert_array_equal(ref["n_draws"], 12)
    np.testing.assert_array_equal(ref["draw_step"], 20 + 5 * np.arange(1, 13))
    assert not ref["target_met"].any() and ref["flagged"].all()
    out = tmp_path / "post.npz"
    _killed_in_second_round(
        monkeypatch, FullSGLD, lambda: run_sampler(sweep, SGLD, out=out, progress=False)
    )
    res = run_sampler(sweep, SGLD, out=out, progress=False)
    for k in ("draws", "accept", "distance", "finite", "U0"):
        np.testing.assert_array_equal(res[k], ref[k], err_msg=k)
