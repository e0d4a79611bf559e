"""Umbrella windows that stop when they have enough (umbrella.py, ``ess_target``): on Gaussian
windows, whose moments are exact, a target met early stops early with unbiased moments; a cap
hit is flagged by the profile and widens its errors; a run killed between rounds resumes bit for
bit and a finished window set is read back; windows of different lengths are judged on their
own draws; the target and reached values reach the JSON."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax.transition.profile.landscape import Landscape
from copyhead_jax.transition.profile.run import profile_json
from copyhead_jax.transition.profile.umbrella import UmbrellaSettings, run_windows, window_target
from copyhead_jax.transition.profile.windows import Profile, ProfileSettings, analyse
from copyhead_jax.transition.store import json_default

#: U = |x|^2 / 2 in 3-d, a = x_0: window k is Gaussian in a with precision 1 + kappa and mean
#: kappa c_k / (1 + kappa)
GAUSS = Landscape(energy=lambda p, x: 0.5 * jnp.sum(x**2), order=lambda p, x: x[0])
KAPPA = 4.0
PROF = ProfileSettings(a_lo=-1.0, a_hi=1.0, spacing=0.5, kappa_factor=1.0)
C = PROF.centers  # 5 windows; kappa of PROF is 4
X0, W = np.zeros((5, 3)), np.stack([np.eye(3)] * 5)
#: rounds of 40 iterations (20 draws), at most 10 rounds (200 draws)
BASE = UmbrellaSettings(n_chains=4, n_adapt=30, n_iter=400, thin=2, round_iter=40)


def windows(s, key=1, ckpt_dir=None, on_round=None):
    return run_windows(jax.random.key(key), GAUSS, {}, X0, W, C, PROF.kappa, s, ckpt_dir, on_round)


def test_target_met_early_stops_early_with_exact_moments():
    """ESS >= 60 on a and U: every window stops before the cap, in whole rounds, with the
    reached ESS and R-hat recomputed from its own draws within the target; the means of a lie
    within 5 ESS-based standard errors of kappa c / (1 + kappa) (stopping is not a bias)."""
    assert PROF.kappa == KAPPA
    s = dataclasses.replace(BASE, ess_target=60.0, rhat_target=1.1)
    dr = windows(s)
    n = dr.lengths()
    assert np.all(n < s.n_rounds * s.round_draws) and np.all(n % s.round_draws == 0)
    t = window_target(dr, s)
    assert t["met"].all() and np.all(t["ess_min"] >= 60) and np.all(t["rhat_max"] <= 1.1)
    m = np.array([dr.of(dr.a, k).mean() for k in range(5)])
    se = np.array([dr.of(dr.a, k).std() for k in range(5)]) / np.sqrt(dr.ess())
    assert np.all(np.abs(m - KAPPA * C / (1 + KAPPA)) < 5 * se)


def test_cap_hit_is_flagged_and_widens(tmp_path):
    """A target no window meets: every window draws the cap; the profile names each window in
    ``flagged`` and its errors are the replicas' sd (wider than the same draws' se, unflagged);
    the JSON carries the target, each window's draws and ``target_met``."""
    s = dataclasses.replace(BASE, ess_target=1e6, n_iter=120)
    dr = windows(s)
    np.testing.assert_array_equal(dr.lengths(), 60)
    prof_s = dataclasses.replace(PROF, umbrella=s)
    got = analyse(dr, prof_s, C)
    lines = [f for f in got["flagged"] if "not met at the cap of 60 draws" in f]
    assert len(lines) == 5
    plain = analyse(dr, dataclasses.replace(PROF, umbrella=dataclasses.replace(s, ess_target=0)), C)
    assert not plain["flagged"]  # the same draws judged without a target: se, not sd
    ok = np.isfinite(plain["F_se"]) & np.isfinite(got["F_se"])
    assert np.all(got["F_se"][ok] >= plain["F_se"][ok]) and np.any(
        got["F_se"][ok] > plain["F_se"][ok]
    )
    prof = Profile(**got, seconds={})
    js = json.loads(json.dumps(profile_json(prof), default=json_default))
    assert js["target"] == {"ess": 1e6, "rhat": 1.01, "round_draws": 20, "cap_draws": 60}
    assert js["windows"]["n_draws"] == [60] * 5 and js["windows"]["target_met"] == [False] * 5
    assert len(js["windows"]["ess_U"]) == 5


def test_kill_between_rounds_resumes_bit_for_bit(tmp_path, monkeypatch):
    """Killed in its third round, a window set resumes from the second round's snapshot and
    gives the uninterrupted draws bit for bit; a rerun reads the finished draws back."""
    s = dataclasses.replace(BASE, ess_target=1e6, n_iter=120)
    ref = windows(s)

    def die_after(n):
        def on_round(r, short):
            if r == n:
                raise KeyboardInterrupt

        return on_round

    with pytest.raises(KeyboardInterrupt):
        windows(s, ckpt_dir=tmp_path, on_round=die_after(2))  # two rounds saved
    assert len(list(tmp_path.glob("*.partial.npz"))) == 1
    done = []
    res = windows(s, ckpt_dir=tmp_path, on_round=lambda r, short: done.append((r, short.sum())))
    assert done == [(2, 5)]  # resumed after round 2 (no window met it), then the third and last
    for f in ("a", "U", "extra", "accept", "step", "finite", "n_draws"):
        np.testing.assert_array_equal(getattr(res, f), getattr(ref, f), err_msg=f)
    assert not list(tmp_path.glob("*.partial.npz")) and len(list(tmp_path.glob("*.npz"))) == 1
    again = windows(s, ckpt_dir=tmp_path, on_round=die_after(1))  # read back: no round runs
    np.testing.assert_array_equal(again.a, ref.a)


def test_windows_of_different_lengths_are_judged_on_their_own_draws():
    """Joined window sets of 20 and 40 draws: NaN past the shorter's draws, and its R-hat and
    ESS those of its own draws alone."""
    a = windows(dataclasses.replace(BASE, ess_target=1e6, n_iter=40))
    b = windows(dataclasses.replace(BASE, ess_target=1e6, n_iter=80), key=3)
    j = a.concat(b)
    np.testing.assert_array_equal(j.lengths(), [20] * 5 + [40] * 5)
    assert np.isnan(j.a[:5, :, 20:]).all() and np.isfinite(j.a[5:]).all()
    np.testing.assert_array_equal(j.ess()[:5], a.ess())
    np.testing.assert_array_equal(j.rhat("U")[5:], b.rhat("U"))
    r = j.reversed()
    np.testing.assert_array_equal(r.lengths(), [40] * 5 + [20] * 5)


def test_each_window_stops_in_the_round_it_meets_the_target():
    """Windows stop one by one: each window's draws end in the first round after which its own
    draws meet the target (not one round earlier), later rounds leave it NaN, the progress
    callback names the windows still short after each round, and what it drew is the start of
    the same chains run to the cap at a fixed length (float32 rounding)."""
    s = dataclasses.replace(BASE, ess_target=70.0, rhat_target=1.1)
    shorts = []
    dr = windows(s, on_round=lambda r, short: shorts.append((r, short.copy())))
    n = dr.lengths()
    assert len(set(n.tolist())) > 1, n  # the windows did stop in different rounds
    for r, short in shorts:  # after round r, short exactly the windows that drew on
        np.testing.assert_array_equal(short, n > r * s.round_draws)
    fixed = windows(dataclasses.replace(s, ess_target=0.0, n_iter=int(n.max()) * s.thin))
    for k in range(5):
        own = dr.of(dr.a, k)
        assert np.isnan(np.asarray(dr.a[k])[:, n[k] :]).all()
        np.testing.assert_allclose(own, np.asarray(fixed.a[k])[:, : n[k]], rtol=1e-4, atol=1e-5)
        t = window_target(dr, s)
        assert t["met"][k]
        if n[k] > s.round_draws:  # one round fewer would not have met it
            cut = dr._replace(n_draws=np.where(np.arange(5) == k, n - s.round_draws, n))
            assert not window_target(cut, s)["met"][k]
