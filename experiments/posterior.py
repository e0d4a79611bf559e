"""The posterior of the copy head on the reduced engine; method and
results: docs/reports/posterior.md.

    python -m experiments posterior [--tiny] [--preset P] [--publish | --out DIR]
    python -m experiments.report.studies posterior docs/reports/results/posterior_plain.json

Settings: ``posterior`` of ``configs/MODE.py`` per preset: ``mc``, the engine mode of
``configs/posterior.py`` (default mode: ``quick``; ``--tiny``: ``tiny``).

Per preset: MAP and collapsed-HMC posterior means, susceptibilities with MCSE and early-warning
verdicts (items 0-1), lambda-hat from the draws and devinterp's (item 2), and (plain) the
free energy of each softmax branch and its copy weight (items 3-4). Sweeps, posteriors, theory
and TI are cached in ``results/posterior/MC/``; writes ``OUT/results/posterior_PRESET.json``
and ``OUT/figures/posterior_NAME_PRESET.png``.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import crossing as CX
from copyhead_jax.compare import paper
from copyhead_jax.plots import result_figures
from copyhead_jax.results import PosteriorResult
from copyhead_jax.sampling import (
    LEAPFROG,
    TARGET_ACCEPT,
    LLCSettings,
    branch_summary,
    devinterp_sweep,
    merge_seeds,
    run_sampler,
    verdicts,
)
from copyhead_jax.sampling import summary as PS
from copyhead_jax.storage import write_json
from copyhead_jax.transition import laplace_sgld

from .common import MODE_FLAGS, cache_path, cached, cached_sweep, log, save_figure
from .configs.posterior import CONFIGS
from .posterior_runs import branch_config, grid_entries, grid_entry, sampler_settings, theory

#: devinterp's defaults (beta = 1/log n, gamma = 100; ``LLCSettings``): at gamma = 100 the
#: slowest direction relaxes in <= 70 steps on the plain grid, 1,500 kept steps are >= 20 of them
LLC = {k: v for k, v in dataclasses.asdict(LLCSettings()).items() if k != "seed"}


def fit_and_sample(mc: dict, cfg: ch.Config, cache: Path):
    """Exact MAP sweep (kept weights) and its collapsed-HMC posterior, cached by config."""
    t0 = time.time()
    res = cached_sweep(cfg, cache)
    if res.config.model.engine != "reduced":  # run_sampler: collapsed HMC for reduced sweeps
        raise ValueError("experiments.posterior samples reduced sweeps (collapsed HMC) only")
    sg = sampler_settings(mc)
    ppath = cache_path(cache, "post", [cfg.to_dict(), dataclasses.asdict(sg)], ".npz")
    # chunks of one P each where asked (run_sampler's default, two P values per chunk, pads
    # the smaller P to the larger: no cost saved when the two are far apart)
    chunk = cfg.sweep.n_seeds if mc.get("chunk_one_P") else 0
    post = (
        PosteriorResult.load(ppath)
        if ppath.exists()
        else run_sampler(res, sg, out=ppath, progress=False, chunk_runs=chunk)
    )
    log(
        f"{cfg.model.attention} init={cfg.train.init_attention} P={list(res.P)} "
        f"seeds={cfg.sweep.n_seeds}: {time.time() - t0:.0f} s"
    )
    return res, post


def branch(mc, preset, attention, spec, cache, init=None):
    """MAP sweep, posterior and summary of one grid entry, one cached sweep per block of
    seeds (:func:`seed_blocks`), merged along the seed axis: earlier blocks stay cached."""
    blocks = seed_blocks(mc, preset, attention, spec, init)
    if not blocks:
        return None
    pc = mc["presets"][preset]
    out = None
    for opts, cfg in blocks:
        r, p = fit_and_sample(opts, cfg, cache)
        part = branch_summary(r, p) | llc_devinterp(pc, r, cache)
        out = part if out is None else merge_seeds(out, part)
    return out


def seed_blocks(mc, preset, attention, spec, init=None) -> list:
    """``[(opts, cfg)]`` of :func:`fit_and_sample`, one per block of seeds of a grid entry:
    the entry's first ``n_seeds``, then the rest up to ``n_seeds_total`` as one block, or as
    the entry's ``blocks`` (sizes), e.g. to spread one P's seeds over two processes. Block
    ``[k, k + m)`` is sweep seed + k (the same data as a sweep of all seeds) and sampler
    seed + k (fresh chain noise); one block of the rest keeps the keys it always had."""
    P, nS = grid_entry(spec)
    if not P:
        return []
    pc = mc["presets"][preset]
    one_P = pc.get("chunk_one_P") or (isinstance(spec, dict) and spec.get("chunk_one_P"))
    opts = mc | {"chunk_one_P": bool(one_P)}
    cfg = branch_config(mc, preset, attention, P, init, nS)
    n0 = cfg.sweep.n_seeds
    total = (spec.get("n_seeds_total") if isinstance(spec, dict) else None) or pc.get(
        "n_seeds_total", n0
    )
    sizes = (spec.get("blocks") if isinstance(spec, dict) else None) or (
        [total - n0] if total > n0 else []
    )
    if sum(sizes) != max(total - n0, 0) or min(sizes, default=1) < 1:
        raise ValueError(
            f"blocks {sizes} must be positive and add up to n_seeds_total - n_seeds = {total - n0}"
        )
    out, k = [(opts, cfg)], n0
    sg = sampler_settings(mc)
    for m in sizes:
        more = cfg.replace(sweep=dict(seed=cfg.sweep.seed + k, n_seeds=m))
        out.append((opts | {"sampler": {**mc.get("sampler", {}), "seed": sg.seed + k}}, more))
        k += m
    return out


def llc_devinterp(pc: dict, res, cache: Path) -> dict:
    """``{"llc_dv": {"gamma=G": arrays [P, seed]}}``: devinterp's default estimator at each
    localisation of the preset's ``llc_devinterp`` (none: ``{}``), :func:`devinterp_sweep`
    cached by sweep. A sweep with a P above the spec's ``max_P`` gets none (its P read NaN)."""
    spec = pc.get("llc_devinterp")
    if not spec or max(res.P) > spec.get("max_P", np.inf):
        return {}
    out = {}
    for g in spec["gammas"]:
        st = LLC | spec.get("settings", {}) | {"gamma": float(g)}
        key = jax.random.key(int(res.config.sweep.seed) + 1000)

        def run(st=st, key=key):
            t0 = time.time()
            v = devinterp_sweep(res, key, LLCSettings(**st))
            return v | {"settings": st, "seconds": time.time() - t0, "n": "P (sequences)"}

        v = out[f"gamma={g:g}"] = cached(cache, "llc", [res.config.to_dict(), st], run)
        log(
            f"devinterp LLC gamma={g:g} {res.config.model.attention} P={list(res.P)}: "
            f"{v['seconds']:.0f} s"
        )
    return {"llc_dv": out}


def linear_block(mc: dict, preset: str, th: dict, cache: Path) -> dict:
    pc = mc["presets"][preset]
    parts = [
        branch(mc, preset, "linear", e, cache)
        for e in (pc["P_linear"], *grid_entries(pc.get("P_linear_high")))
    ]
    return PS.linear_summary(parts, th["points"])


def softmax_block(mc: dict, preset: str, th: dict, cache: Path) -> dict:
    pc = mc["presets"][preset]
    return PS.softmax_summary(
        branch(mc, preset, "softmax", pc["P_pool"], cache, "zero"),
        branch(mc, preset, "softmax", pc.get("P_copy"), cache, "copy"),
        branch(mc, preset, "softmax", pc.get("P_copy_high"), cache, "copy"),
        th["points"],
    )


def free_energy_block(mc: dict, soft: dict, cache: Path) -> None:
    """Item 3 on the 3-seed sweeps of the previous run (``ti``; cached): free energies,
    weights and crossings, into ``soft``."""
    ti = mc["presets"]["plain"]["ti"]
    nS = ti["n_seeds"]
    pr = cached_sweep(branch_config(mc, "plain", "softmax", ti["P_pool"], "zero", nS), cache)
    cr = cached_sweep(branch_config(mc, "plain", "softmax", ti["P_copy"], "copy", nS), cache)
    common, _, _, distinct = CX.distinct_starts(pr.P, pr, cr.P, cr)
    P_ti = [p for k, p in enumerate(common) if distinct[k].any()]  # per-seed masks below
    if not P_ti:
        soft["free_energy"] = None
        return
    fe = cached(
        cache,
        "ti",
        [pr.config.to_dict(), cr.config.to_dict(), P_ti, ti["sgld"]],
        lambda: laplace_sgld.free_energies(pr, cr, P_ti, ti["sgld"], jax.random.key(12)),
    )
    fe["n_seeds"], fe["sweeps"] = nS, "the 3-seed MAP sweeps of configs.posterior.TI"
    cross = soft["crossings"]
    cross.update(CX.ti_crossings(fe, distinct[[common.index(p) for p in fe["P"]]]))
    soft["free_energy"] = fe
    P_bayes = (cross.get("free_energy") or {}).get("P_star")
    soft["early_warning"]["posterior_P_aG"] = verdicts(soft["pool"], P_bayes) if P_bayes else None


def run_preset(mc: dict, preset: str, mode: str, out_dir: Path, cache: Path, command: str) -> dict:
    t0 = time.time()
    pc = mc["presets"][preset]
    grids = [pc.get(k) for k in ("P_linear", "P_linear_high", "P_pool", "P_copy", "P_copy_high")]
    th = cached(
        cache,
        f"theory-{preset}",
        [mc["engine"], pc["conventions"], grids],
        lambda: theory(mc, preset),
    )
    sg = sampler_settings(mc)
    res = {
        "mode": mode,
        "preset": preset,
        "config": mc["engine"] | {"preset": pc},
        "sampler": {
            "kind": "collapsed HMC (sampling.CollapsedHMC)",
            **dataclasses.asdict(sg),
            "hmc_iterations_kept": sg.n_iter,
            "burn_in": sg.n_warmup,
            "adapt_iterations": sg.n_adapt,
            "leapfrog": LEAPFROG,
            "target_accept": TARGET_ACCEPT,
        },
        "theory": th["points"],
        "paper": paper.PAPER_MEASURED,
    }
    res["linear"] = linear_block(mc, preset, th, cache)
    res["softmax"] = softmax_block(mc, preset, th, cache)
    if pc.get("ti"):
        free_energy_block(mc, res["softmax"], cache)
    res["runtime_s"] = time.time() - t0
    res["sampling_seconds"] = sum(
        b.get("wall_seconds") or 0
        for b in (
            res["linear"],
            *(res["softmax"].get(k) or {} for k in ("pool", "copy", "copy_high")),
        )
    )
    res["command"] = command
    figs = result_figures(res, th["curves"])
    for name, fig in figs.items():
        if fig is not None:
            save_figure(fig, out_dir / "figures" / f"posterior_{name}_{preset}.png")
    path = write_json(out_dir / "results" / f"posterior_{preset}.json", res)
    log(f"wrote {path} ({time.time() - t0:.0f} s)")
    return res


def main(spec, out: str | Path, command: str | None = None) -> dict:
    """The posterior of ``spec.preset`` on the engine mode ``spec.settings["mc"]`` of
    ``configs/posterior.py`` (nothing where the mode has no ``posterior`` settings);
    ``command`` is the command line recorded in the JSON (default: this script's)."""
    if not spec.settings:
        log(f"no posterior settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    mode = spec.settings["mc"]
    if command is None:
        command = f"python -m experiments posterior{MODE_FLAGS[spec.mode]} --preset {spec.preset}"
    cache = Path("results") / "posterior" / mode
    return run_preset(CONFIGS[mode], spec.preset, mode, Path(out), cache, command)
