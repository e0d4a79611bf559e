r"""The Bayesian transition of any configuration (docs/theory.md §9.9): ``transition(cfg)``.

Softmax: per seed, the exact MAP of both branches (pool start ``init_attention='zero'``, copy start
``'copy'``) on a grid around the theory's point; the first probe at the theory's posterior
$P^*_{a_G}$ (else the seed's MAP $U$ crossing); then :func:`.root.next_probe` widens until
$F_{\rm copy}-F_{\rm pool}$ (:mod:`.branch_group`) changes sign and refines the bracket, placed by
the slope each probe measures; the root by log-P interpolation with its error budget, a tempered-SMC
copy weight at the bracket's ends as the cross-check, and the seed mean with its interval. A later
seed measures one probe at the earlier seeds' mean root and places its root with the slope of their
brackets (the seeds' roots differ by far less than ``SEED_SPAN``, where that slope holds;
``anchored=False``: two probes a factor ``SEED_SPAN`` either side, bracketing it). The SMC
cross-check runs at the brackets' ends (an anchored seed has none: the bracketing seeds' checks hold
for its root, a fraction of a per cent away) and reuses the TI's whitening. The seeds' records
become the result in :mod:`.ti_result`.
Linear: the posterior crossover $\psi=\tfrac12$ from collapsed-HMC posterior means of $\psi$
(:func:`~copyhead_jax.sampling.run.run_sampler`) on an exact-MAP sweep.

Every (seed, P) group and SMC cross-check is kept on the run harness as it finishes: a JSON
record in ``OUT/groups/`` tagged with the run's key (:func:`~.store.run_key`: the config, the
settings, the grid, the threshold and the seed; :func:`~copyhead_jax.runner.checkpointed_record`),
written atomically, so a killed run resumes with identical numbers; a record of another run is
recomputed, a damaged one set aside (named in a warning) and recomputed. One writer per folder
(:func:`~copyhead_jax.runner.claim`); the records are removed once ``transition.json`` is saved.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_int, check_output_folder, check_P_grid
from ..compare.locate import locate_crossing, locate_level
from ..config import TRANSITION_RUN, Config, exact_settings
from ..data import nested_mask
from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective
from ..runner import available_bytes, checkpointed_record, claim, refuse_if_over
from ..runner.eta import announce
from ..sweep import run_sweep
from .branch_group import BRANCHES, SIDE, free_energies, smc_weight
from .plan import REFINE_RATIO, first_probes, pad_of, seed_probes
from .root import (
    bracket_slope,
    crossing,
    pooled_slope,
)
from .store import json_default, kept_sweep, run_key, write_checkpoint
from .ti_cost import SMALLER, ti_estimate
from .ti_result import assemble, smc_cross_check
from .ti_settings import TISettings, group_bytes

INIT = {"pool": "zero", "copy": "copy"}
#: what a kept (seed, P) group and SMC cross-check must hold to be reused (else recomputed)
GROUP_KEYS = ("P", "seed", "dF", "se", "sys")
SMC_KEYS = ("P", "seed", "w_copy", "collapsed")
#: the kinds of their records, and the folder of ``out`` that keeps them until the result is saved
GROUP_KIND, SMC_KIND = "copyhead_jax.TransitionGroup", "copyhead_jax.TransitionSMC"
GROUPS = "groups"


def transition_config(cfg: Config, n_seeds: int | None = None) -> Config:
    """``cfg`` on the engine the Bayesian transition needs: reduced (exact width reduction),
    quenched embeddings, exact float64 MAP."""
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a copyhead_jax Config, got {type(cfg).__name__}")
    if cfg.model.causal:  # the branch heads and chains here are built without the mask
        raise ValueError("the Bayesian transition does not take the causal mask (causal=True)")
    sw = {} if n_seeds is None else {"n_seeds": check_int("n_seeds", n_seeds, lo=1, hi=1000)}
    exact = dataclasses.replace(exact_settings(cfg.train.solver), continuation=False)
    return cfg.replace(
        model=dict(engine="reduced"), sweep=sw, train=dict(solver=exact, train_embeddings=False)
    )


def _log(progress: bool, msg: str) -> None:
    if progress:
        logging.getLogger(__name__).info(msg)


def theory_points(cfg: Config, space: str = "ansatz") -> dict:
    """The EK theory's MAP and posterior points of ``cfg`` (``None`` where it has none), which
    place the first probes. ``space``: for a non-i.i.d. source (no posterior form), the
    attention matrices the MAP is minimised over (docs/theory.md §12): the two-parameter
    ``ansatz`` (default: exact at ``rho = 0``, a minute at L = 15 where the ``full`` space
    takes ~8 and may find no point), or ``full``."""
    from ..theory import TheoryParams
    from ..theory.points import transition_points

    p = TheoryParams.from_config(cfg)
    att, cls = cfg.model.attention, head_class(cfg.model.attention)
    # a two-branch head without a window: where the global minimiser crosses over
    point = lambda r: (
        r.get(cls.transition_key)
        or (  # noqa: E731
            r.get("P_aG_crossover") if cls.two_branches else None
        )
    )
    if cfg.task.source != "iid":  # §12: the MAP's P* from full minimisers (no posterior form)
        from ..theory.beyond import beyond_points

        r = beyond_points(p, cfg.task, attention=att, P_range=(1.0, 3e4), n_P=41, space=space)
        return {"map": point(r), "post": None}
    return {o: point(transition_points(p, att, o)) for o in ("map", "post")}


def map_grid(P0: float, n: int = 12, span: float = 2.5) -> tuple[int, ...]:
    """Integer log grid over ``[P0 / span, P0 span]`` (at least 2)."""
    g = np.geomspace(max(2.0, P0 / span), max(4.0, P0 * span), n)
    return tuple(sorted({max(2, int(round(p))) for p in g}))


def _check_group_memory(cfg: Config, settings: TISettings, P_top: int) -> None:
    """Refuse a transition whose group at ``P <= 4 P_top`` (a branch probe may reach 4x the
    grid's top) does not fit (:func:`~.ti_settings.group_bytes`)."""
    need = group_bytes(settings, L=cfg.task.L, V=cfg.task.V, P_pad=4 * P_top)
    refuse_if_over(
        need,
        available_bytes(cfg),
        f"a transition group at P <= {4 * P_top}",
        "use fewer --chains, --rungs or --iterations, or a larger "
        "memory_budget_gb (CLI --memory-budget-gb)",
    )


def _estimate(cfg: Config, settings: TISettings, th: dict, grid, **kw) -> None:
    """Announce what the groups will cost (:mod:`.ti_cost`), at the padded rows of a first probe
    at the theory's point, else at the MAP grid's middle (the MAP crossing is not known yet)."""
    P, where = th["post"] or th["map"], "the EK theory's point"
    if not P:
        P, where = float(np.exp(np.mean(np.log(grid)))), "the MAP grid's middle"
    rows = pad_of(max(2, int(round(P))), max(grid), cfg.task.L)
    n = cfg.sweep.n_seeds
    announce(
        lambda: ti_estimate(cfg, settings, n_seeds=n, rows=rows, where=where, **kw),
        __name__,
        SMALLER,
    )


def transition(
    cfg: Config,
    *,
    n_seeds: int | None = None,
    out: str | Path | None = None,
    progress: bool = True,
    settings: TISettings | None = None,
    a_thr: float | None = None,
    P_grid=None,
    cross_check: bool = True,
    seed: int = 0,
    theory: bool = True,
    sampler=None,
    anchored: bool = True,
    record: dict | None = None,
) -> dict:
    """The Bayesian transition point of ``cfg`` (softmax: ``P*_aG``, linear: posterior
    ``psi = 1/2``) per seed and over seeds, with intervals and a cross-check (module docstring).

    ``out``: a folder for checkpoints (resumed), the MAP sweeps, ``transition.json``.
    ``settings``: the TI/SMC Monte-Carlo sizes; ``a_thr``: the branch threshold on ``a_G``
    (default: the mid-value of the MAP ``a_G``); ``P_grid``: the MAP grid (default: around the
    theory's point); ``theory=False`` skips the EK points (then ``P_grid`` is needed);
    ``sampler``: the linear head's ``HMCConfig`` (default ``REDUCED_HMC_LINEAR``);
    ``anchored``: a later seed measures one probe at the earlier seeds' mean root and places
    its root with the slope of their brackets (``root.anchored_root``; a second
    probe only when the root lies farther than ``SEED_SPAN``), else every seed is bracketed.
    ``record``: keys the result carries as written (the command's run fingerprint).
    Returns a JSON-ready dict."""
    cfg = transition_config(cfg, n_seeds)
    settings = TISettings() if settings is None else settings
    if not isinstance(settings, TISettings):
        raise ValueError(f"settings must be a TISettings, got {type(settings).__name__}")
    seed = check_int("seed", seed, lo=0, hi=2**31 - 1)
    out = None if out is None else check_output_folder("out", out)
    if not theory and P_grid is None:
        raise ValueError("P_grid is needed when theory=False (the grid is centred on the theory)")
    given = None if P_grid is None else check_P_grid("P_grid", P_grid)
    if given is not None and len(given) < 2:
        raise ValueError(f"P_grid must hold at least 2 values, got {given}")
    two = head_class(cfg.model.attention).two_branches
    if two:  # before any work, the theory included: the given grid's top, else the least top
        # a grid the theory places can have (map_grid's floor); the placed grid's after it
        _check_group_memory(cfg, settings, max(given) if given else max(map_grid(0.0)))
    th = theory_points(cfg) if theory else {"map": None, "post": None}
    P0 = th["post"] or th["map"] or 16.0
    grid = map_grid(P0) if given is None else given
    P_pad = P_top = max(grid)
    if two and given is None:  # the grid the theory placed
        _check_group_memory(cfg, settings, P_pad)
    if two and progress:  # what it will cost, before any work (one line on stderr)
        _estimate(cfg, settings, th, grid, anchored=anchored, cross_check=cross_check)
    # one writer per folder; the groups' records removed and the lock released once the result
    # is written (or the lock at exit, or by exit_now: the records stay to resume from)
    gdir = None if out is None or not two else out / GROUPS
    held = claim(None if out is None else out / "transition.json", ckpt=gdir)
    if not two:
        from .linear import linear_transition

        res = linear_transition(
            cfg, grid, th, out=out, progress=progress, seed=seed, sampler=sampler
        )
        res.update(record or {})
        held.finish(None if out is None else lambda: write_checkpoint(out / "transition.json", res))
        return res
    t0 = time.time()
    sweeps = {}
    for b in BRANCHES:
        c = cfg.replace(sweep=dict(P=grid), train=dict(init_attention=INIT[b]))
        path = None if out is None else out / f"map_{b}.npz"
        _log(progress, f"exact MAP, {b} start, P = {list(grid)}, {cfg.sweep.n_seeds} seed(s)")
        sweeps[b] = kept_sweep(path, c) or run_sweep(c, keep_params=True, out=path, progress=False)
        if path is not None:  # the file's weights, as a resumed run reads them
            sweeps[b] = kept_sweep(path, c) or sweeps[b]
    aG = {b: np.asarray(sweeps[b]["cG"], float) for b in BRANCHES}  # [nP, nS]
    U = {b: np.asarray(sweeps[b]["U"], float) for b in BRANCHES}
    if a_thr is None:
        a_thr = 0.5 * (
            float(np.nanmax(np.r_[aG["copy"].ravel(), aG["pool"].ravel()]))
            + float(np.nanmin(np.r_[aG["copy"].ravel(), aG["pool"].ravel()]))
        )
    a_thr = float(a_thr)
    key = run_key(cfg, settings, [list(grid), a_thr, seed, "anchored" if anchored else "seed-span"])
    ckpt = None if gdir is None else (gdir, key)
    obj = Objective.from_config(cfg)
    nS = cfg.sweep.n_seeds
    Pg = np.asarray(grid, float)
    per_seed, whitened = [], {}
    for s in range(nS):
        distinct = (aG["copy"][:, s] >= a_thr) & (aG["pool"][:, s] < a_thr)
        # the pool MAP stops being the lower one (U_pool - U_copy rises through 0)
        mu = locate_crossing(Pg, U["pool"][:, s], U["copy"][:, s], valid=distinct).P_star
        low = np.minimum(U["copy"][:, s], U["pool"][:, s])
        glob = np.where(U["copy"][:, s] <= low, aG["copy"][:, s], aG["pool"][:, s])
        start = mu or locate_level(Pg, glob, a_thr).P_star
        # seed 0: one first probe (the theory's posterior point, else the MAP crossing), the
        # slope each probe measures placing the next; a later seed: one probe at the earlier
        # seeds' mean root when their brackets measured the slope of d (else two either side)
        anchor = pooled_slope([p.get("bracket_slope") for p in per_seed]) if anchored else None
        probes = first_probes(
            [p["crossing"]["log_P"] for p in per_seed],
            th["post"] or start or P0,
            anchored=anchor is not None,
        )
        groups, anchored_cr = seed_probes(
            lambda P: _group(
                cfg,
                sweeps,
                aG,
                s,
                P,
                pad_of(P, P_top, cfg.task.L),
                a_thr,
                settings,
                obj,
                seed,
                ckpt,
                progress,
                whitened,
            ),
            probes,
            anchor,
        )
        per_seed.append(
            _seed_result(
                cfg,
                sweeps,
                aG,
                s,
                groups,
                mu,
                a_thr,
                settings,
                obj,
                seed,
                ckpt,
                P_top,
                progress,
                cross_check,
                whitened,
                anchored_cr,
            )
        )
        whitened.clear()
    res = assemble(cfg, per_seed, th, a_thr, settings, grid, time.time() - t0)
    res.update(record or {})
    held.finish(None if out is None else lambda: write_checkpoint(out / "transition.json", res))
    return res


def _heads(cfg, sweeps, aG, s, P, a_thr):
    """The pool and copy references of seed ``s`` near ``P``: each branch's MAP at the grid P
    nearest (in log P) whose a_G lies in the branch's region, from either start."""
    grid = np.asarray(sweeps["pool"].P, float)
    refs = []
    for b in BRANCHES:
        cands = []
        for src in (b, *[x for x in BRANCHES if x != b]):
            a = aG[src][:, s]
            inside = a >= a_thr if SIDE[b] > 0 else a < a_thr
            cands += [
                (src != b, abs(math.log(grid[i] / P)), i, src) for i in np.flatnonzero(inside)
            ]
        if not cands:
            return None, b
        _, _, i, src = min(cands, key=lambda c: c[:3])  # own start first, then nearest P
        refs.append((src, i))
    arr = {
        k: np.stack([np.asarray(sweeps[src][f"params/{k}"][i, s]) for src, i in refs])
        for k in ("W_E", "b", "W_G", "W_O_hat")
    }
    ref_P = [int(grid[i]) for _, i in refs]
    heads = head_class(cfg.model.attention).from_config(
        cfg, **{k: jnp.asarray(v, jnp.float32) for k, v in arr.items()}
    )
    return heads, ref_P


def _data(cfg, s, P, P_pad):
    inp = sweep_inputs(cfg.replace(sweep=dict(P=(P_pad,))), None, P_pad)
    return inp.train[s], nested_mask(P, P_pad)


def _kept(ckpt: tuple[Path, str] | None, name: str, kind: str, required, compute):
    """``(record, loaded)``: ``compute()`` kept as ``name`` in the run's checkpoint folder,
    tagged with the run's key (``ckpt``: ``(folder, key)``; ``None``: not kept)."""
    folder, key = (None, None) if ckpt is None else ckpt
    path = None if folder is None else folder / name
    fp = None if key is None else f"{key}-{name}"
    return checkpointed_record(path, kind, fp, compute, required=required, default=json_default)


def _group(
    cfg, sweeps, aG, s, P, P_pad, a_thr, settings, obj, seed, ckpt, progress, whitened
) -> dict:
    g, loaded = _kept(
        ckpt,
        f"seed{s}-P{P}.json",
        GROUP_KIND,
        GROUP_KEYS,
        lambda: _group_free_energies(
            cfg, sweeps, aG, s, P, P_pad, a_thr, settings, obj, seed, progress, whitened
        ),
    )
    if loaded:
        _log(progress, f"seed {s} P={P}: kept, F_copy - F_pool = {g['dF']:+.3f}")
    return g


def _group_free_energies(
    cfg, sweeps, aG, s, P, P_pad, a_thr, settings, obj, seed, progress, whitened
) -> dict:
    t0 = time.time()
    heads, ref = _heads(cfg, sweeps, aG, s, P, a_thr)
    if heads is None:
        g = {
            "P": P,
            "seed": s,
            "dF": math.nan,
            "se": math.nan,
            "sys": math.nan,
            "note": f"no MAP of the {ref} branch at any grid P",
        }
    else:
        train, mask = _data(cfg, s, P, P_pad)
        key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), s), P)
        fe = free_energies(key, heads, train, mask, a_thr, settings, obj)
        whitened[P] = fe.pop("_C")  # for the SMC cross-check at this P
        dF = fe["copy"]["F"] - fe["pool"]["F"]
        sl = [fe[b].get("dU_dP") for b in ("copy", "pool")]
        g = {
            "P": P,
            "seed": s,
            "dF": dF,
            "se": math.hypot(fe["copy"]["mcse"], fe["pool"]["mcse"]),
            "slope": None if None in sl else P * (sl[0] - sl[1]),
            "sys": abs(fe["copy"]["quad_corr"]) + abs(fe["pool"]["quad_corr"]),
            "ref_P": ref,
            "P_pad": P_pad,
            "branches": fe,
            "seconds": time.time() - t0,
        }
    _log(
        progress,
        f"seed {s} P={P}: F_copy - F_pool = {g['dF']:+.3f} +- {g['se']:.3f} "
        f"({time.time() - t0:.0f} s)",
    )
    return g


def _smc_group(cfg, sweeps, aG, s, P, P_pad, a_thr, settings, obj, seed, ckpt, progress, whitened):
    heads, _ = _heads(cfg, sweeps, aG, s, P, a_thr)
    if heads is None:
        return None

    def compute() -> dict:
        return _smc_weight(heads, cfg, s, P, P_pad, a_thr, settings, obj, seed, progress, whitened)

    return _kept(ckpt, f"seed{s}-P{P}-smc.json", SMC_KIND, SMC_KEYS, compute)[0]


def _smc_weight(heads, cfg, s, P, P_pad, a_thr, settings, obj, seed, progress, whitened) -> dict:
    t0 = time.time()
    train, mask = _data(cfg, s, P, P_pad)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed + 1), s), P)
    from .branch_group import ti_programs  # the whitening program shared with the TI

    C64 = whitened.get(P)  # the TI's whitening of this group, else computed again
    if C64 is None:
        with jax.enable_x64(True):
            h64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), heads)
            C64 = np.asarray(
                ti_programs(obj, settings)[0](h64, train, jnp.asarray(mask, jnp.float64))
            )
    g = smc_weight(key, heads, train, mask, a_thr, C64, settings, obj)
    g.update(P=P, seed=s, seconds=time.time() - t0)
    _log(progress, f"seed {s} P={P}: SMC w_copy = {g['w_copy']:.3f} ({g['seconds']:.0f} s)")
    return g


def _seed_result(
    cfg,
    sweeps,
    aG,
    s,
    groups,
    mu,
    a_thr,
    settings,
    obj,
    seed,
    ckpt,
    P_top,
    progress,
    cross_check,
    whitened,
    anchored_cr=None,
) -> dict:
    Ps = sorted(groups)
    d, se = [groups[p]["dF"] for p in Ps], [groups[p]["se"] for p in Ps]
    cr = anchored_cr or crossing(
        Ps, d, se, [groups[p]["sys"] for p in Ps], [groups[p].get("slope") or math.nan for p in Ps]
    )
    br = cr.bracket
    # the secant slope a later seed may borrow: from a bracket refined to REFINE_RATIO only
    b_slope = bracket_slope(Ps, d, se) if br and br[1] / br[0] <= REFINE_RATIO else None
    smc = None
    # the SMC checks the sign of d at a bracket's ends; an anchored seed has none (at its one
    # probe, near the root, the particles' weights cannot resolve a d of a nat or two)
    if cross_check and settings.smc_particles and br:
        pts = [
            _smc_group(
                cfg,
                sweeps,
                aG,
                s,
                int(p),
                pad_of(int(p), P_top, cfg.task.L),
                a_thr,
                settings,
                obj,
                seed,
                ckpt,
                progress,
                whitened,
            )
            for p in br
        ]
        if all(pts):
            smc = smc_cross_check(s, br, pts, settings.smc_particles)
    flagged = [
        f"seed {s} P={p} {b}: R-hat {groups[p]['branches'][b]['rhat_max']:.3f}, "
        f"ESS {groups[p]['branches'][b]['ess_min']:.0f}"
        for p in Ps
        if "branches" in groups[p]
        for b in BRANCHES
        if not TRANSITION_RUN.mixed(
            groups[p]["branches"][b]["rhat_max"], groups[p]["branches"][b]["ess_min"]
        )
    ]
    flagged += smc["collapsed"] if smc else []
    return {
        "seed": s,
        "probes": [groups[p] for p in Ps],
        "crossing": cr.to_dict(),
        "map_U_crossing": mu,
        "smc": smc,
        "flagged": flagged,
        "bracket_slope": b_slope,
    }
