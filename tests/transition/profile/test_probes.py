"""The probes a seed's search places (``profile.run.seed_transition``), on synthetic profiles:
the search's own logic without sampling."""

import importlib
import math
from types import SimpleNamespace

import jax
import numpy as np
from scipy.optimize import brentq

import copyhead_jax as ch
from copyhead_jax.transition.profile import SearchSettings
from copyhead_jax.transition.profile.basins import Basins
from copyhead_jax.transition.profile.windows import Profile

run = importlib.import_module("copyhead_jax.transition.profile.run")

#: a unimodal posterior whose mean rises fastest at P = 240 while the weight past the search's
#: fixed dividing surface turns at P = 270 (a broad basin drifting right: the two part)
MEAN_MID, D_ROOT = 240.0, 270.0


def _mean(P):
    return 0.7 + 1.4 / (1 + math.exp(-6 * math.log(P / MEAN_MID)))


def _basins(P):
    d = -10 * math.log(P / D_ROOT)
    return Basins(False, 0.5, 1.5, 2.0, -0.5, 0.1, 1 / (1 + math.exp(d)), 0.01, d, 0.1, 0.0)


def _profile(**fields) -> Profile:
    """A :class:`Profile` holding only what the search and the verdict read."""
    prof = object.__new__(Profile)
    for k, v in fields.items():
        object.__setattr__(prof, k, v)
    return prof


def _stub(monkeypatch):
    def measure_profile(
        key, ls, prob, s, start, *, anchors=None, weight=1.0, ckpt_dir=None, log=None
    ):
        P = int(weight)
        prof = _profile(
            mean_a=_mean(P),
            mean_a_se=0.01,
            basins=_basins(P),
            flagged=(),
            short=(),
            F_rep=np.zeros((6, 1)),
        )
        return prof, SimpleNamespace(draws=P, centers=np.zeros(27), a_min=None), None

    monkeypatch.setattr(run, "measure_profile", measure_profile)
    monkeypatch.setattr(run, "analyse", lambda P, *a, **k: {"basins": _basins(P)})
    monkeypatch.setattr(run, "build_problem", lambda *a: None)
    monkeypatch.setattr(run, "landscape", lambda *a: None)
    monkeypatch.setattr(run, "check_profile_memory", lambda *a: None)


def test_a_crossovers_midway_point_is_bracketed_as_narrowly_as_the_search_asks(monkeypatch):
    """With no probe bimodal the verdict's P* is where the posterior mean passes midway; the
    search refines that bracket to ``refine_ratio`` too, not only the bracket of d's root
    (without it the midway point is interpolated across a bracket ~1.1x wide here)."""
    _stub(monkeypatch)
    cfg = ch.preset("plain").replace(model=dict(attention="softmax"))
    ss = SearchSettings(probes=(180, 280), max_probes=12, reuse_hessians=False)
    got = run.seed_transition(cfg, 0, (180, 280), ss, jax.random.key(0), lambda m: None)
    v = got.verdict
    assert v.kind == "crossover"
    lo, hi = v.crossing.bracket
    assert hi / lo <= ss.refine_ratio or hi - lo == 1
    assert lo <= v.P_star <= hi
    # the true midway point of these probes' ends (the lowest and highest stay 180 and 280)
    level = 0.5 * (_mean(180) + _mean(280))
    true = brentq(lambda P: _mean(P) - level, 180, 280)
    assert abs(math.log(v.P_star / true)) <= math.log(ss.refine_ratio)
    Ps = sorted(got.profiles)
    assert any(abs(math.log(P / D_ROOT)) < 0.05 for P in Ps)  # d's bracket was refined first
