"""What the posterior artefacts share (not an artefact): the reduced engine's configs of
``configs/posterior.py`` (their MAP sweeps, draws and results go to the one cache of
:mod:`experiments.common`) and the bookkeeping of ``posterior_branches``' groups of chains
(settings, references, group keys: :func:`cache_key` names the committed group records) that
``posterior_smc`` reuses."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import REDUCED_HMC
from copyhead_jax.storage import jsonable
from copyhead_jax.theory import TheoryParams, theory_curve, transition_points
from copyhead_jax.transition import BRANCHES
from copyhead_jax.transition import branch_runs as BB

from .common import cached_sweep, mode_config
from .configs.posterior import CONFIGS as ENGINES

#: the start of each branch's MAP sweeps
INIT = {"pool": "zero", "copy": "copy"}


# ---------------------------------------------------------------------------------------------
# The reduced engine's configs and caches (``results/posterior/MODE``)


def cache_key(*objs) -> str:
    """A short hash of ``objs`` (the cache files' names)."""
    return hashlib.sha256(json.dumps(jsonable(objs), sort_keys=True).encode()).hexdigest()[:12]


def branch_config(
    mc: dict, preset: str, attention: str, P, init: str | None = None, n_seeds: int | None = None
) -> ch.Config:
    """The engine config of one sweep: ``mc`` (a mode of ``configs/posterior.py``) with the
    preset's conventions, ``attention``, the grid ``P``, the start ``init``, ``n_seeds``."""
    pc = mc["presets"][preset]
    cfg = (
        ch.SMALL.replace(**mc["engine"])
        .replace(**pc["conventions"])
        .replace(
            model=dict(attention=attention),
            sweep=dict(P=tuple(int(p) for p in P), n_seeds=n_seeds or pc["n_seeds"]),
        )
    )
    return cfg if init is None else cfg.replace(train=dict(init_attention=init))


def sampler_settings(mc: dict) -> ch.HMCConfig:
    """The reduced engine's default protocol (collapsed HMC) with the config's overrides."""
    return dataclasses.replace(REDUCED_HMC, **mc.get("sampler", {}))


def ek_points(cfg: ch.Config, keys, objectives=("map", "post")) -> dict:
    """``{objective: {key: EK value}}`` of ``transition_points`` (both attentions) at ``cfg``."""
    params = TheoryParams.from_config(cfg)
    return {o: {k: transition_points(params, "both", o).get(k) for k in keys} for o in objectives}


# ---------------------------------------------------------------------------------------------
# posterior_branches' groups of chains (``posterior_smc`` starts from the same references)


def settings(mode: str, preset: str = "plain") -> dict:
    """The ``posterior_branches`` settings of ``configs/MODE.py`` for ``preset`` ({} if none)."""
    return mode_config(mode)["presets"][preset].get("posterior_branches", {})


def config(s: dict, preset: str) -> dict:
    """Settings ``s`` with their engine config ``mc`` (a mode of ``configs/posterior.py``) and,
    unless plain, the preset (the plain configs' cache keys predate the switch)."""
    return dict(s, mc=ENGINES[s["mc"]], **({} if preset == "plain" else {"preset": preset}))


def cache_dir(s: dict) -> Path:
    """The MAP sweeps' cache, shared with ``experiments.posterior`` (same engine mode)."""
    return Path("results") / "posterior" / s["mc"]


def check_only(only: int | None, groups) -> None:
    """A driver's ``only``: None or one of its group indices ``groups`` (else ValueError)."""
    if only is not None and only not in list(groups):
        raise ValueError(f"only must be one of the group indices {list(groups)}, got {only}")


def preset(c: dict) -> str:
    """The config's conventions: ``plain`` unless it names one."""
    return c.get("preset", "plain")


def load_sweeps(c: dict, cache: Path, block: dict | None = None) -> dict:
    """``{branch: [SweepResult]}`` of the exact MAP sweeps (``common.cached_sweep``) of the
    first block of seeds, or of ``block``."""
    sw, nS = (c, c["n_seeds"]) if block is None else (block, block["n_seeds_total"])
    return {
        b: [
            cached_sweep(branch_config(c["mc"], preset(c), "softmax", P, INIT[b], nS), cache)
            for P in sw["sweeps"][b]
        ]
        for b in BRANCHES
    }


def group_config(c: dict, P_group, nS: int):
    """The softmax config of a group's data (``nS`` seeds, padded to its largest P)."""
    return branch_config(c["mc"], preset(c), "softmax", P_group, None, nS)


def seeds_of(c: dict, seeds=None):
    """``seeds``, or the first block's (``range(n_seeds)``)."""
    return range(c["n_seeds"]) if seeds is None else seeds


def group_refs(c: dict, sweeps: dict, grp, seeds=None) -> list:
    """The MAPs a group's chains start from
    (:func:`~copyhead_jax.transition.branch_runs.reference_list`;
    a sweep added for other P leaves it, and so the group's cache key, unchanged)."""
    return BB.reference_list(sweeps, grp, seeds_of(c, seeds), c["a_thr"])


def group_key(
    c: dict,
    grp,
    gi: int,
    tiny: bool,
    refs: list,
    skip=("mc", "groups", "a_alt", "sweeps", "blocks"),
    engine=None,
) -> str:
    """Cache key of one group: everything its chains depend on (its references, not the other
    groups, nor the threshold-sensitivity and figure settings: ``skip``) and the engine config
    (default ``c``'s); ``gi`` seeds its keys."""
    kept = {k: v for k, v in c.items() if k not in skip}
    return cache_key(kept, c["mc"]["engine"] if engine is None else engine, grp, gi, tiny, refs)


def grid_entry(spec) -> tuple[list[int], int | None]:
    """A grid entry: a list of P (the preset's seeds) or ``dict(P=..., n_seeds=...)``."""
    if isinstance(spec, dict):
        return list(spec["P"]), spec.get("n_seeds")
    return list(spec or []), None


def grid_entries(spec) -> list:
    """``P_linear_high``: one grid entry or a list of ``dict`` entries (separate sweeps, e.g.
    far-apart P values that separate processes can fill in the cache)."""
    if isinstance(spec, (list, tuple)) and spec and isinstance(spec[0], dict):
        return list(spec)
    return [spec] if spec else []


def theory(mc: dict, preset: str) -> dict:
    cfg = branch_config(mc, preset, "linear", [1])
    params = TheoryParams.from_config(cfg)
    pts = ek_points(cfg, ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "notes"))
    pc = mc["presets"][preset]
    Ps = [
        p
        for k in ("P_linear", "P_linear_high", "P_pool", "P_copy", "P_copy_high")
        for e in grid_entries(pc.get(k))
        for p in grid_entry(e)[0]
    ]
    Pg = np.geomspace(0.5 * min(Ps), 2 * max(Ps), 24)
    curves = {"P": Pg}
    for o in ("map", "post"):
        lin, soft = theory_curve(params, Pg, "linear", o), theory_curve(params, Pg, "softmax", o)
        curves[o] = {"cG": lin["cG"], "c1": lin["c1"], "psi": lin["psi"], "aG": soft["aG"]}
    return {"points": pts, "curves": curves}
