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


#: a first-order posterior: two basins at P in [200, 420] that weigh the same at P = 250 (their
#: log-odds at their own barrier top), while the weight past the fixed search surface, inside a
#: broad copying basin, turns at P = 320
TOP_ROOT, FIXED_ROOT, BIMODAL = 250.0, 320.0, (200, 420)


def _first_order(monkeypatch):
    def basins(P, a_top):
        fixed = a_top > 1.0  # the search surface (mid-range, 1.78 here); the basins' top is 0.6
        d = -10 * math.log(P / (FIXED_ROOT if fixed else TOP_ROOT))
        two = BIMODAL[0] <= P <= BIMODAL[1] and not fixed
        w = 1 / (1 + math.exp(d))
        return Basins(two, 0.1, a_top, 2.0, 3.0 if two else -0.5, 0.1, w, 0.01, d, 0.1, 0.0)

    def measure_profile(key, ls, prob, s, start, *, weight=1.0, **kw):
        P = int(weight)
        prof = _profile(
            mean_a=0.1 + 1.9 / (1 + math.exp(10 * math.log(TOP_ROOT / P))),
            mean_a_se=0.01,
            basins=basins(P, 0.6),
            flagged=(),
            short=(),
            F_rep=np.zeros((6, 1)),
        )
        return prof, SimpleNamespace(draws=P, centers=np.zeros(27), a_min=None), None

    monkeypatch.setattr(run, "measure_profile", measure_profile)
    monkeypatch.setattr(run, "analyse", lambda P, *a, a_top, **k: {"basins": basins(P, a_top)})
    monkeypatch.setattr(run, "build_problem", lambda *a: None)
    monkeypatch.setattr(run, "landscape", lambda *a: None)
    monkeypatch.setattr(run, "check_profile_memory", lambda *a: None)


def test_once_a_probe_is_bimodal_the_search_refines_the_verdicts_own_root(monkeypatch):
    """After a bimodal probe the later probes are placed on the basins' log-odds at the
    verdict's dividing surface, so the verdict's bracket closes to ``refine_ratio`` around the
    P where the basins weigh the same; placed on the fixed surface they refine its root 28%
    higher and leave the verdict's P* interpolated across a wide bracket."""
    _first_order(monkeypatch)
    cfg = ch.preset("plain").replace(model=dict(attention="softmax"))
    got = {}
    for placement in ("basins", "fixed"):
        ss = SearchSettings(max_probes=9, placement=placement, reuse_hessians=False)
        r = run.seed_transition(cfg, 0, (180, 300), ss, jax.random.key(0), lambda m: None)
        got[placement] = r.verdict
    v = got["basins"]
    assert v.kind == "first order"
    lo, hi = v.crossing.bracket
    assert hi / lo <= 1.04 or hi - lo == 1
    assert abs(math.log(v.P_star / TOP_ROOT)) <= math.log(1.04)
    lo_f, hi_f = got["fixed"].crossing.bracket
    assert hi_f / lo_f > 1.15  # the verdict's root, interpolated across a bracket the probes left
