"""``copyhead llc`` until enough: each chain set drawn in rounds by the samplers' one round loop
(sampling/rounds.py) stops in the first round whose draws meet the target on L_n and both order
parameters, holds the fixed-length chain's draws up to there, leaves out seeds without a
centre, resumes a killed run bit for bit, and states the target and the reached values in its
output. The fast tests run the round plumbing on a stand-in chain program (i.i.d. normals keyed
on the step: continued rounds equal one run by construction, so any difference is the
plumbing's); the slow ones run the real SGLD chains."""

import dataclasses
import json
import sys

import jax
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.cli import main
from copyhead_jax.cli.llc import llc_settings
from copyhead_jax.cli.main import build_parser
from copyhead_jax.sampling.llc_chains import OBSERVED, chain_set
from copyhead_jax.sampling.llc_runs import LLCSettings, llc_runs
from copyhead_jax.sampling.rounds import met, reached

pytestmark = pytest.mark.filterwarnings("ignore")

#: rounds of 10 draws per chain (40 steps, thin 4) after 40 steps of burn-in, at most 8 rounds
FAKE_ST = LLCSettings(
    n_steps=360, burn_in=40, thin=4, n_chains=2, round_steps=40, ess_target=40.0, rhat_target=1.1
)


def _fake_chains(calls=None, nan_seed=None):
    """A stand-in for the chains' program of ``chain_set`` (NumPy, nothing compiled): the draw
    of seed ``s`` at step ``t`` is ``N(0, I_3)`` per chain from the generator seeded ``(s, t)``
    (``nan_seed``: that seed's draws NaN); the carry is the steps taken and the centre's values.
    ``calls`` collects the ``n_steps`` of each call."""

    def run(keys, *args, cfg, st, n_steps, burn_in):
        carry = args[8] if len(args) > 8 else None
        if calls is not None:
            calls.append(n_steps)
        S = keys.shape[0]
        t0 = np.zeros(S, np.int32) if carry is None else np.asarray(carry[0])
        k = np.arange(1, (n_steps - burn_in) // st.thin + 1)
        draws = np.stack(
            [
                np.stack(
                    [
                        np.random.default_rng([s, int(t0[s] + burn_in + st.thin * j)]).normal(
                            size=(st.n_chains, 3)
                        )
                        for j in k
                    ],
                    1,
                )
                for s in range(S)
            ]
        )
        if nan_seed is not None:
            draws[nan_seed] = np.nan
        L0, eta, lam = np.zeros(S), np.full(S, 0.01), np.full(S, 3.0)
        fin = np.ones((S, st.n_chains), bool)
        return (draws, L0, eta, lam, fin), (t0 + n_steps, eta, lam, L0)

    return run


def _args(n_seeds=2):
    keys = jax.random.split(jax.random.key(0), n_seeds)
    return (keys, *([None] * 5), 1.0, 100.0, 0.0)


def _meets(draws, ok, st):
    fin = np.isfinite(draws).all(axis=(-2, -1))
    return bool((met(*reached(draws, fin, OBSERVED), fin, st) | ~ok).all())


def test_a_chain_set_stops_in_the_first_round_that_meets_the_target():
    """The set of two seeds stops after round k, the first whose draws meet the target for
    every seed (round k - 1's do not), below the cap; its draws are the fixed-length program's
    first k rounds; a seed without a centre (NaN draws, not ok) does not hold the set, one with
    a centre and the same NaN draws does (the set runs to the cap)."""
    calls = []
    ok = np.array([True, True])
    got = chain_set(_args(), FAKE_ST, ok, None, None, _fake_chains(calls))
    R, cap = FAKE_ST.round_draws, FAKE_ST.n_rounds
    n = int(got["n_draws"][0])
    k = n // R
    assert n == k * R and 2 <= k < cap, (k, cap)  # stopped early, after more than one round
    assert _meets(got["draws"], ok, FAKE_ST)
    assert not _meets(got["draws"][:, :, : (k - 1) * R], ok, FAKE_ST)
    assert calls == [40 + 40] + [40] * (k - 1)  # burn-in + a round, then one round each
    fixed = dataclasses.replace(FAKE_ST, ess_target=0.0, n_steps=40 + k * 40)
    ref = chain_set(_args(), fixed, ok, None, None, _fake_chains())
    np.testing.assert_array_equal(got["draws"], ref["draws"])
    assert got["step"].shape == (2,) and got["lambda_max"].shape == (2,)  # the first round's
    # a seed with NaN draws: left out without a centre, holding the set to the cap with one
    nan = _fake_chains(nan_seed=1)
    alone = chain_set(_args(), FAKE_ST, np.array([True, False]), None, None, nan)
    assert alone["n_draws"][0] == n  # seed 0's draws decide, as above
    held = chain_set(_args(), FAKE_ST, ok, None, None, nan)
    assert held["n_draws"][0] == cap * R


def test_a_chain_set_killed_between_rounds_resumes_bit_for_bit(tmp_path):
    """Killed in its third round, the chain set resumes from the snapshot of two rounds, draws
    only the rounds it lacked and returns the uninterrupted arrays."""
    ok = np.array([True, True])
    whole = chain_set(_args(), FAKE_ST, ok, None, None, _fake_chains())
    k = int(whole["n_draws"][0]) // FAKE_ST.round_draws
    assert k >= 3
    calls, fake = [], _fake_chains()

    def dies(*a, **kw):
        calls.append(kw["n_steps"])
        if calls.count(40) == 2:  # the third round
            raise KeyboardInterrupt
        return fake(*a, **kw)

    snap = (tmp_path / "set.partial.npz", "fp")
    with pytest.raises(KeyboardInterrupt):
        chain_set(_args(), FAKE_ST, ok, snap, None, dies)
    assert snap[0].is_file()
    calls.clear()
    again = chain_set(_args(), FAKE_ST, ok, snap, None, _fake_chains(calls))
    assert calls.count(40) == k - 2  # the rounds after the two saved ones
    for key in whole:
        np.testing.assert_array_equal(again[key], whole[key], err_msg=key)


def test_llc_takes_the_target_flags_of_sample_with_their_defaults():
    """``copyhead llc`` and ``copyhead sample`` share --ess-target, --rhat-target and
    --round-steps; left out, llc's are ``SGLDConfig``'s defaults (0: the fixed length)."""
    parser = build_parser()
    args = parser.parse_args(["llc", "s.npz"])
    st, sg = llc_settings(args), ch.SGLDConfig()
    assert (
        (st.ess_target, st.rhat_target, st.round_steps)
        == (sg.ess_target, sg.rhat_target, sg.round_steps)
        == (0.0, 1.01, 500)
    )
    args = parser.parse_args(
        ["llc", "s.npz", "--ess-target", "300", "--rhat-target", "1.05", "--round-steps", "100"]
    )
    st = llc_settings(args)
    assert (st.ess_target, st.rhat_target, st.round_steps) == (300.0, 1.05, 100)
    assert (st.round_draws, st.n_rounds) == (20, 15)  # 100 // thin 5; 300 draws in rounds
    sample = parser.parse_args(
        ["sample", "s.npz", "--ess-target", "300", "--rhat-target", "1.05", "--round-steps", "100"]
    )
    assert (sample.ess_target, sample.rhat_target, sample.round_steps) == (300.0, 1.05, 100)
    with pytest.raises(ValueError, match="round_steps must be a multiple of thin"):
        LLCSettings(ess_target=100.0, round_steps=12)


# --- the real chains (slow: four compiled chain programs) -----------------------------------

#: rounds of 10 draws per chain (80 steps), at most 10; a target of ESS 10 at R-hat 1.1
ST = LLCSettings(
    n_steps=840, burn_in=40, thin=8, n_chains=2, round_steps=80, ess_target=10.0, rhat_target=1.1
)
CLI = (
    "--steps 840 --burn-in 40 --thin 8 --chains 2 --round-steps 80 "
    "--ess-target 10 --rhat-target 1.1"
).split()


@pytest.fixture(scope="module")
def sweep():
    cfg = ch.TINY.replace(
        task=dict(L=4, V=2),
        model=dict(engine="reduced", attention="linear", width=16),
        sweep=dict(P=(6,), n_seeds=2),
    )
    return ch.run_sweep(cfg, keep_params=True, progress=False)


@pytest.fixture(scope="module")
def until(sweep):
    return llc_runs(sweep, settings=ST, estimators=("beta1",))


@pytest.mark.slow
def test_real_chains_stop_when_enough_and_equal_the_fixed_length_run(sweep, until):
    """The SGLD chain set stops after round k < cap with every seed meeting the target; the
    fixed-length run of k rounds gives the same numbers bit for bit (the same chains), the one
    of k - 1 rounds misses the target."""
    a = until.arrays
    n = a["beta1_n_draws"][0]
    assert (n == n[0]).all()
    k = int(n[0]) // ST.round_draws
    assert 3 <= k < ST.n_rounds and a["beta1_target_met"].all(), a
    assert (a["beta1_ess_reached"] >= ST.ess_target).all()
    assert (a["beta1_rhat_reached"] <= ST.rhat_target).all()
    fixed = llc_runs(
        sweep,
        settings=dataclasses.replace(ST, ess_target=0.0, n_steps=ST.burn_in + k * ST.round_steps),
        estimators=("beta1",),
    )
    for key in (
        "beta1",
        "beta1_mcse",
        "beta1_ess",
        "beta1_rhat",
        "beta1_ess_reached",
        "beta1_rhat_reached",
        "beta1_eta",
        "beta1_lambda_max",
        "E_star",
    ):
        np.testing.assert_array_equal(fixed.arrays[key], a[key], err_msg=key)
    short = llc_runs(
        sweep,
        settings=dataclasses.replace(
            ST, ess_target=0.0, n_steps=ST.burn_in + (k - 1) * ST.round_steps
        ),
        estimators=("beta1",),
    ).arrays
    assert not met(
        short["beta1_ess_reached"][0], short["beta1_rhat_reached"][0], np.ones((2, 1), bool), ST
    ).all()


@pytest.mark.slow
def test_real_chains_resume_and_the_json_states_target_and_reached(
    sweep, until, tmp_path, monkeypatch, capsys
):
    """Killed in its third round, ``llc_runs`` resumes from the chain set's snapshot and gives
    the uninterrupted numbers; the command's JSON holds the target, the settings and, per run,
    the reached ESS and R-hat, the draws and whether the target was met."""
    llc_mod = sys.modules["copyhead_jax.sampling.llc_chains"]
    real = llc_mod.sample_rounds

    def dies(st, start, more, *a, **k):  # the third round never ends
        def more_once(carry, n):
            if n >= 2 * st.round_draws:
                raise KeyboardInterrupt
            return more(carry, n)

        return real(st, start, more_once, *a, **k)

    ckpt = tmp_path / "ck"
    monkeypatch.setattr(llc_mod, "sample_rounds", dies)
    with pytest.raises(KeyboardInterrupt):
        llc_runs(sweep, settings=ST, estimators=("beta1",), ckpt_dir=ckpt)
    assert list(ckpt.glob("*.partial.npz"))
    monkeypatch.setattr(llc_mod, "sample_rounds", real)
    again = llc_runs(sweep, settings=ST, estimators=("beta1",), ckpt_dir=ckpt)
    for key, v in until.arrays.items():
        np.testing.assert_array_equal(again.arrays[key], v, err_msg=key)
    path = sweep.save(tmp_path / "sweep_linear.npz")
    assert main(["llc", str(path), *CLI, "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out.splitlines()[0])
    assert out["target"] == {"ess": 10.0, "rhat": 1.1, "round_draws": 10, "cap_draws": 100}
    assert out["settings"]["ess_target"] == 10.0 and out["settings"]["round_steps"] == 80
    for e in ("beta1", "devinterp", "wbic"):
        for k in ("ess_reached", "rhat_reached", "n_draws", "target_met"):
            assert all(x is not None for x in out[f"{e}_{k}"][0]), (e, k)
    assert out["beta1_n_draws"] == until.arrays["beta1_n_draws"].tolist()
    assert main(["llc", str(path), *CLI, "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "stop when enough: ESS >= 10 and R-hat <= 1.1" in table and "met" in table
