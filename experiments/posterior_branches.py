r"""Free energy of each softmax branch and the Bayesian P*_aG (issue 12, items 3-4) by constrained,
Laplace-referenced TI on collapsed-HMC rungs (:mod:`copyhead_jax.bayes.branch_ti`); method and
results: docs/reports/posterior_branches.md.

    python -m experiments.posterior_branches [--tiny] [--preset plain|paper] [--out docs/reports]
    python -m experiments.posterior_branches --preset paper --only 0 &  # one process per group
    python -m experiments.posterior_branches --tables docs/reports/results/posterior_branches.json
    python -m experiments posterior-branches --cluster tcp://HOST:8786   # groups on Dask workers

Each group of P (one compiled program, padded to its largest P) writes a committed JSON record
``OUT/results/records/posterior_branches[_tiny]/group-KEY.json`` (KEY: a hash of its inputs), so
a fresh checkout re-assembles the result and adds seeds without rerunning a chain. Writes
``OUT/results/posterior_branches[_paper].json`` and ``OUT/figures/posterior_branches_PRESET.png``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from copyhead_jax import branch_batch as BB
from copyhead_jax.compare import crossing as CX
from copyhead_jax.compare import paper
from copyhead_jax.fanout import GroupFailure, failures, map_groups
from copyhead_jax.storage import jsonable, write_json
from copyhead_jax.sweep import sweep_inputs
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.points import transition_points
from copyhead_jax.transition_ti import BRANCHES

from .common import group_record, save_figure
from .configs.posterior import QUICK, TINY
from .posterior import branch_config, cache_key, fit_only

INIT = {"pool": "zero", "copy": "copy"}

PLAIN = dict(
    mc=QUICK, n_seeds=3, a_thr=1.0, a_alt=(0.5, 1.5),
    # the reference MAP sweeps: posterior.py's 3-seed TI and copy-start sweeps, plus copy starts
    sweeps=dict(pool=[[8, 12, 16, 20, 22, 24, 26, 28, 32]],
                copy=[[22, 24, 26, 28, 32], [24, 48], [40, 64], [52, 56, 60]]),
    # one compiled program per group; [52, 56], [60]: a finer grid inside the bracket (48, 64)
    groups=[[22, 24, 28, 32], [40, 48], [64], [52, 56], [60]],
    ts=[0.0, 0.1, 0.25, 0.45, 0.7, 1.0],
    # 2 chains per rung, the first quarter of the kept iterations dropped: ~25 CPU-min
    n_chains=2, n_ref=4000, discard=0.25,
    hmc=dict(n_iter=360, thin=2, step_size=0.35, n_adapt=100),
    # seeds 3-9 where the crossing is bracketed, from 10-seed sweeps (seeds 0-2: same data);
    # the pooling start jumps to copying above P ~ 34, so its references lie at P <= 32
    blocks=[dict(seeds=list(range(3, 10)), n_seeds_total=10, groups=[[40, 48], [52, 56]],
                 sweeps=dict(pool=[[24, 28, 32, 40, 48, 52, 56]], copy=[[40, 48, 52, 56]]))],
)  # fmt: skip
# Paper preset: every EK P* is L = 25 times the plain one, so the plain crossing 49.3 predicts
# ~1,233: P = 1,200, 1,300 (25 x 48, 25 x 52). A run costs ~33x a plain one. Pool-start MAPs
# exist up to ~830; the copy-start sweep holds the copy references at 1,200 and 1,300.
_PAPER_SWEEPS = dict(pool=[[560, 600, 640, 700, 800]],
                     copy=[[560, 600, 640, 700, 800, 1200, 1300]])  # fmt: skip
PAPER = dict(
    PLAIN, preset="paper", n_seeds=2,
    sweeps=_PAPER_SWEEPS, groups=[[1200], [1300]],
    # seeds 2-3 (groups 100, 101: a 4-seed sweep's data), then from 10-seed sweeps seeds 4-5
    # (groups 200, 201), 6 (300, 301), 7 (400, 401), 8-9 (500, 501)
    blocks=[dict(seeds=[2, 3], n_seeds_total=4, groups=[[1200], [1300]], sweeps=_PAPER_SWEEPS),
            *(dict(seeds=s, n_seeds_total=10, groups=[[1200], [1300]],
                   sweeps=dict(pool=[[700, 800]], copy=[[1200, 1300]]))
              for s in ([4, 5], [6], [7], [8, 9]))],
)  # fmt: skip
#: the ``--cluster`` option's help (also ``python -m experiments posterior-branches``)
CLUSTER_HELP = (
    "run the groups without a record on a Dask cluster: a scheduler address "
    "tcp://host:port, or local:N (N local worker processes); same records as without"
)
CONFIGS = {"plain": PLAIN, "paper": PAPER}
SMOKE = dict(  # seconds, not physics: the TINY engine has no copy minimum, so its threshold
    # splits the pooling fits (aG 0.01 at P = 4, 0.04 at P = 8) to exercise both branches
    mc=TINY, n_seeds=2, a_thr=0.03, a_alt=(0.02, 0.05), discard=0.25,
    sweeps=dict(pool=[[2, 4, 8]], copy=[[4, 8]]), groups=[[4, 8]], ts=[0.0, 0.5, 1.0],
    n_chains=2, n_ref=500, hmc=dict(n_iter=40, thin=2, step_size=0.35, n_adapt=20),
    blocks=[dict(seeds=[2], n_seeds_total=3, groups=[[8]], sweeps=dict(pool=[[4, 8]],
                                                                       copy=[[4, 8]]))],
)  # fmt: skip


def log(msg: str) -> None:
    print(f"[branches {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def check_only(only: int | None, groups) -> None:
    """A driver's ``--only``: None or one of its group indices ``groups`` (else ValueError)."""
    if only is not None and only not in list(groups):
        raise ValueError(f"only must be one of the group indices {list(groups)}, got {only}")


# ---------------------------------------------------------------------------------------------
# References


def preset(c: dict) -> str:
    """The config's conventions: ``plain`` unless it names one (the plain configs' cache keys
    predate the switch and stay as they were)."""
    return c.get("preset", "plain")


def load_sweeps(c: dict, cache: Path, block: dict | None = None) -> dict:
    """``{branch: [SweepResult]}`` of the exact MAP sweeps (cached by ``fit_only``) of the
    first block of seeds, or of ``block``."""
    sw, nS = (c, c["n_seeds"]) if block is None else (block, block["n_seeds_total"])
    return {b: [fit_only(branch_config(c["mc"], preset(c), "softmax", P, INIT[b], nS), cache)
                for P in sw["sweeps"][b]] for b in BRANCHES}  # fmt: skip


def seed_blocks(c: dict) -> list[dict]:
    """The blocks of seeds: the first (seeds ``0..n_seeds-1`` on ``groups``), then ``blocks``;
    each with its seeds, groups and the seed count its configs are built with."""
    first = dict(seeds=list(range(c["n_seeds"])), n_seeds_total=c["n_seeds"], groups=c["groups"])
    return [first, *c.get("blocks", [])]


def references(c: dict, sweeps: dict, P_group, seeds=None):
    """``(index of P, P, seed, branch, BB.pick_reference(...) or None)`` for every run of a group
    (``seeds``: default the first block's), in ``run_group``'s order."""
    for ip, P in enumerate(P_group):
        for s in range(c["n_seeds"]) if seeds is None else seeds:
            for b in BRANCHES:
                yield ip, P, s, b, BB.pick_reference(sweeps[b], b, P, s, c["a_thr"])


def run_group(c: dict, sweeps: dict, P_group, key, seeds=None, n_seeds_total=None) -> dict:
    """Every (P, seed, branch) of ``P_group`` with a reference: F, its parts, chain health
    (``seeds`` of a config of ``n_seeds_total`` seeds; default the first block)."""
    mc = c["mc"]
    nS = n_seeds_total or c["n_seeds"]
    cfg = branch_config(mc, preset(c), "softmax", P_group, None, nS)
    Pm = max(P_group)
    inp = sweep_inputs(cfg, None, Pm)
    runs, arrs, trains, masks = [], [], [], []
    for ip, P, s, b, ref in references(c, sweeps, P_group, seeds):
        if ref is None:
            log(f"P={P} seed={s} {b}: no MAP of that branch at any P; skipped")
            continue
        res, i, ref_P = ref
        runs.append(dict(P=int(P), seed=s, branch=b, ref_P=ref_P))
        arrs.append(BB.head_arrays(res, i, s))
        trains.append(np.asarray(inp.train)[ip * nS + s])
        masks.append(np.asarray(inp.mask)[ip * nS + s])
    return BB.free_energies(cfg, runs, arrs, trains, masks, key, c, label=P_group, log=log)


# ---------------------------------------------------------------------------------------------
# Assembly


def assemble(c: dict, groups: list[dict], sweeps: dict) -> dict:
    runs = [r for g in groups for r in g["runs"]]
    blocks = seed_blocks(c)
    # groups may be added later; a P holds the seeds of every block that measures it
    P_all = sorted({int(p) for bl in blocks for grp in bl["groups"] for p in grp})
    nS = max(bl["n_seeds_total"] for bl in blocks)
    F = {b: CX.run_table(runs, P_all, nS, "F", b) for b in BRANCHES}
    se = {b: CX.run_table(runs, P_all, nS, "mcse", b) for b in BRANCHES}
    Pa = np.asarray(P_all, float)
    dF = F["copy"] - F["pool"]
    dse = np.hypot(se["copy"], se["pool"])
    w = CX.copy_weight(F["copy"], F["pool"])
    with CX.quiet():
        w_mean = np.nanmean(w, 1)
    # F_copy - F_pool < 0 above the crossing: crossing(P, F_a, F_b) with a = pool
    cross = CX.crossing(Pa, F["pool"], F["copy"])
    # MAP U crossing on the same sweeps, where a seed's two starts are distinct minima
    pr, cr = sweeps["pool"][0], sweeps["copy"][0]
    common = [int(p) for p in pr.P if p in cr.P]
    ip = [int(np.flatnonzero(pr.P == p)[0]) for p in common]
    ic = [int(np.flatnonzero(cr.P == p)[0]) for p in common]
    distinct = np.abs(cr["cG"][ic] - pr["cG"][ip]) > 0.5
    map_u = CX.crossing(np.asarray(common, float), pr["U"][ip], cr["U"][ic], distinct)
    alt = {}
    for a in c["a_alt"]:
        Fp, Fc, moved, bound = CX.threshold_shift(runs, P_all, nS, c["a_thr"], a)
        wa = CX.copy_weight(Fc, Fp)
        with CX.quiet():
            alt[str(a)] = {"dF": Fc - Fp, "w_copy": wa, "w_copy_mean": np.nanmean(wa, 1),
                           "moved_fraction": moved, "F_lower_bound": bound,
                           "crossing": CX.crossing(Pa, Fp, Fc)}  # fmt: skip
    params = TheoryParams.from_config(branch_config(c["mc"], preset(c), "softmax", [1]))
    th = {o: {k: transition_points(params, "both", o).get(k) for k in ("P_aG", "spinodals")}
          for o in ("map", "post")}  # fmt: skip
    health = {}
    for b in BRANCHES:
        rs = [r for r in runs if r["branch"] == b]
        health[b] = {
            "rhat_max": CX.run_table(rs, P_all, nS, "rhat_max", b),
            "ess_min": CX.run_table(rs, P_all, nS, "ess_min", b),
            "quad_corr": CX.run_table(rs, P_all, nS, "quad_corr", b),
            "p_ref": CX.run_table(rs, P_all, nS, "p_ref", b),
            "ref_P": CX.run_table(rs, P_all, nS, "ref_P", b),
        }
    return {
        "P": P_all, "n_seeds": len({r["seed"] for r in runs}),  # measured (the tables: nS)
        "a_thr": c["a_thr"], "ts": c["ts"], "n_chains": c["n_chains"],
        "hmc": c["hmc"], "n_ref": c["n_ref"], "F_pool": F["pool"], "F_copy": F["copy"],
        "mcse_pool": se["pool"], "mcse_copy": se["copy"], "dF": dF, "dF_mcse": dse,
        "w_copy": w, "w_copy_mean": w_mean, "crossing_F": cross,
        "weight_window": CX.weight_window(Pa, w_mean),
        "weight_window_per_seed": [CX.weight_window(Pa, w[:, s]) for s in range(nS)],
        "map_U_crossing": map_u, "map_U_P": common, "threshold_sensitivity": alt,
        "theory": th, "preset": preset(c), "map_U_crossing_main": f"docs/reports/results/main_"
        f"{preset(c)}.json measured.P_aG (10 seeds, exact MAP, width 10,000)",
        "paper_P_aG": paper.PAPER_MEASURED["P_aG"], "health": health, "runs": runs,
        "cpu_s": sum(g["cpu_s"] for g in groups), "wall_s": sum(g["wall_s"] for g in groups),
    }  # fmt: skip


def _summaries(runs):
    for r in runs:
        r["rhat_max"] = float(np.nanmax(np.r_[r["rhat_g"], -np.inf]))
        r["ess_min"] = float(np.nanmin(np.r_[r["ess_g"], np.inf]))
    return runs


def draw(res: dict, main_P=None):
    """F_copy - F_pool and the copy weight against P (per seed and the seed mean, zoomed on the
    sampled P), and every P*_aG estimate on one log-P strip (most lie far from the sampled P)."""
    pre = res.get("preset", "plain")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from copyhead_jax import style as st

    P = np.asarray(res["P"], float)
    dF, se, w = (np.asarray(res[k], float) for k in ("dF", "dF_mcse", "w_copy"))
    nS = dF.shape[1]
    cross = res["crossing_F"]["P_star"]
    with matplotlib.rc_context(st.RC):
        fig, ax = plt.subplots(1, 3, figsize=(16, 5.4), layout="constrained",
                               gridspec_kw={"width_ratios": [1, 1, 1.1]})  # fmt: skip
        jit = 1 + 0.008 * (np.arange(nS) - (nS - 1) / 2) / max(1, nS - 1)
        with CX.quiet():
            for s in range(nS):
                lab = f"per seed ({nS} seeds; bars: MCSE)" if s == 0 else None
                ax[0].errorbar(P * jit[s], dF[:, s], yerr=se[:, s], fmt=".", ms=4, capsize=2,
                               color=st.GREY, alpha=0.7, label=lab)  # fmt: skip
                ax[1].plot(P * jit[s], w[:, s], ".", ms=5, color=st.GREY, alpha=0.7,
                           label=f"per seed ({nS} seeds)" if s == 0 else None)  # fmt: skip
            ax[0].plot(P, np.nanmean(dF, 1), "-o", color=st.BLACK, ms=5, label="seed mean")
            ax[1].plot(P, res["w_copy_mean"], "-o", color=st.BLACK, ms=5, label="seed mean")
        ax[0].axhline(0, color=st.BLACK, lw=0.5)
        ax[1].axhline(0.5, color=st.BLACK, lw=0.5)
        for a in ax[:2]:
            if cross:
                a.axvline(cross, color=st.VERMILLION, lw=1.2,
                          label=f"Bayesian $P^*_{{aG}}$ ($F$ crossing) = {cross:,.1f}")  # fmt: skip
            pad = (P.max() / P.min()) ** 0.08 if P.max() > P.min() else 1.1
            a.set_xlim(P.min() / pad, P.max() * pad)
            st.log_P_axis(a, P)
            a.set_xlabel(st.P_LABEL)
            st.legend(a)
        ax[0].set(ylabel="$F_{copy} - F_{pool}$ (nats)",
                  title="free-energy difference between the branches")  # fmt: skip
        ax[1].set(ylabel="$w_{copy} = 1/(1 + e^{F_{copy} - F_{pool}})$",
                  title="posterior weight of copying")  # fmt: skip
        # every estimate of P*_aG on one strip
        a = ax[2]
        th = res["theory"]
        ci = res["crossing_F"].get("per_seed_ci") or {}
        marks = [
            ("EK theory, MAP", th["map"]["P_aG"], st.GREY, "s"),
            ("EK theory, posterior", th["post"]["P_aG"], st.GREY, "D"),
            ("MAP $U$ crossing (these sweeps)", res["map_U_crossing"]["P_star"], st.BLUE, "o"),
            (f"MAP $U$ crossing (main_{pre}, 10 seeds)", main_P, st.GREEN, "o"),
            ("Bayesian ($F$ crossing)", cross, st.VERMILLION, "*"),
            ("paper", res.get("paper_P_aG") if pre == "paper" else None, st.PURPLE, "^"),
        ]
        marks = [m for m in marks if m[1]]
        for y, (lab, v, col, mk) in enumerate(marks):
            a.plot([v], [y], mk, color=col, ms=9, label=f"{lab}: {v:,.1f}")
            if lab.startswith("Bayesian") and ci.get("lo") is not None:
                a.plot([ci["lo"], ci["hi"]], [y, y], "-", color=col, lw=2)
        a.axvspan(P.min(), P.max(), color=st.ORANGE, alpha=0.15, lw=0, label="sampled P range")
        a.set_yticks(range(len(marks)), [m[0] for m in marks])
        a.set_ylim(-0.6, len(marks) - 0.4)
        a.invert_yaxis()
        st.log_P_axis(a, [m[1] for m in marks] + list(P))
        a.set(xlabel="$P^*_{aG}$ (sequences, log scale)", ylabel="estimate",
              title="$P^*_{aG}$: every estimate")  # fmt: skip
        st.legend(a, ncol=1)
        fig.suptitle(f"softmax branches ({pre}): thermodynamic integration of each branch")
    return fig


def figure(res: dict, path: Path, main_P=None) -> None:
    save_figure(draw(res, main_P), path)


def group_refs(c: dict, sweeps: dict, grp, seeds=None) -> list:
    """The MAPs a group's chains start from: ``[P, seed, branch, the reference sweep's P grid,
    ref_P]`` per run (what ``run_group`` reads from ``sweeps``; a sweep added for other P leaves
    it, and so the group's cache key, unchanged)."""
    return [[int(P), s, b, [int(p) for p in ref[0].P], int(ref[2])]
            for _, P, s, b, ref in references(c, sweeps, grp, seeds)
            if ref is not None]  # fmt: skip


def group_key(c: dict, grp, gi: int, tiny: bool, refs: list) -> str:
    """Cache key of one group: everything its chains depend on (its references, not the other
    groups, nor the threshold-sensitivity and figure settings); ``gi`` seeds its keys."""
    skip = ("mc", "groups", "a_alt", "sweeps", "blocks")
    kept = {k: v for k, v in c.items() if k not in skip}
    return cache_key(kept, c["mc"]["engine"], grp, gi, tiny, refs)


def group_index(block: int, j: int) -> int:
    """The j-th group of a block: j in the first block (its keys as before blocks existed),
    100 block + j after it (a block's groups: their own keys and chains)."""
    return j if block == 0 else 100 * block + j


def compute_group(task: tuple) -> dict:
    """One group's chains from ``(c, sweeps, P_group, group index, seeds, n_seeds_total)``: a
    deterministic function of the task (its key is the group index's), wherever it runs."""
    c, sw, grp, gi, seeds, n_total = task
    return run_group(c, sw, grp, jax.random.key(1200 + gi), seeds, n_total)


def fan_out(todo: list, records: Path, cluster: str) -> None:
    """The groups of ``todo`` without a record, run on ``cluster`` (``map_groups``: an address
    ``tcp://host:port`` or ``local:N``); this process writes each record as the local run would
    (workers need no shared folder). A failed group is reported after the others are written."""
    missing = [t for t in todo if not (records / f"{t[0]}.json").exists()]
    log(f"{len(missing)} of {len(todo)} groups to run on {cluster}")
    # under ``-m`` this module is ``__main__``: workers import it by its name
    fn = importlib.import_module(__spec__.name).compute_group if __spec__ else compute_group
    out = map_groups(fn, [t[4] for t in missing], cluster=cluster,
                     progress=lambda d, n: log(f"cluster: {d}/{n} groups done"))  # fmt: skip
    for (name, bi, gi, grp, _), g in zip(missing, out, strict=True):
        if not isinstance(g, GroupFailure):
            group_record(records / f"{name}.json", lambda g=g: g, block=bi, group=gi, P_group=grp)
    bad = [f"group {missing[f.index][2]}: {f}" for f in failures(out)]
    if bad:
        raise RuntimeError(f"{len(bad)} group(s) failed on {cluster} (the others' records are "
                           f"written; rerun to retry): {'; '.join(bad)}")  # fmt: skip


def main(tiny: bool = False, out_dir: str | Path = "docs/reports", which: str = "plain",
         only: int | None = None, skip_missing: bool = False,
         cluster: str | None = None) -> dict:  # fmt: skip
    """Run (or load) every group, assemble, write; ``which``: ``plain`` or ``paper`` (the
    preset's config); ``only``: compute that group alone and stop (block b's j-th group has
    index j in the first block, 100 b + j after it; one process per group, then a plain call
    assembles); ``skip_missing``: assemble the groups that have records, run none; ``cluster``: run
    the groups without a record on a Dask cluster (``fan_out``), then assemble as without."""
    if which not in CONFIGS:
        raise ValueError(f"which must be one of {sorted(CONFIGS)}, got {which!r}")
    if tiny and which != "plain":
        raise ValueError(f"tiny runs SMOKE, a plain-preset config: which must be 'plain', got "
                         f"{which!r}")  # fmt: skip
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
    c = SMOKE if tiny else CONFIGS[which]
    blocks = seed_blocks(c)
    check_only(only, [group_index(bi, j) for bi, bl in enumerate(blocks)
                         for j in range(len(bl["groups"]))])  # fmt: skip
    cache = Path("results") / "posterior" / ("tiny" if tiny else "quick")
    records = Path(out_dir) / "results" / "records" / ("posterior_branches" + "_tiny" * tiny)
    c0 = BB.cpu_seconds()
    sweeps = load_sweeps(c, cache)
    block_sweeps = [load_sweeps(c, cache, bl) for bl in c.get("blocks", [])]
    sweep_cpu = BB.cpu_seconds() - c0
    log(f"sweeps loaded/fitted: {sweep_cpu:.0f} CPU s")
    todo = []  # (record name, block, group index, P group, compute_group's task)
    for bi, bl in enumerate(blocks):
        sw = sweeps if bi == 0 else block_sweeps[bi - 1]
        seeds = None if bi == 0 else bl["seeds"]  # the first block: its keys as before
        for j, grp in enumerate(bl["groups"]):
            gi = group_index(bi, j)
            if only is not None and gi != only:
                continue
            refs = group_refs(c, sw, grp, seeds)
            name = f"group-{group_key(c, grp, gi, tiny, refs)}"
            if skip_missing and not (records / f"{name}.json").exists():
                log(f"block {bi} P={grp} (group {gi}): no record; skipped")
                continue
            todo.append((name, bi, gi, grp, (c, sw, grp, gi, seeds, bl["n_seeds_total"])))
    if cluster is not None:
        fan_out(todo, records, cluster)
    groups = []
    for name, bi, gi, grp, task in todo:
        g = group_record(records / f"{name}.json", functools.partial(compute_group, task),
                         block=bi, group=gi, P_group=grp)  # fmt: skip
        log(f"block {bi} P={grp}: {g['cpu_s']:.0f} CPU s; record {name}")
        _summaries(g["runs"])
        groups.append(g)
    if only is not None:
        return {}
    res = assemble(c, groups, sweeps)
    res["command"] = "python -m experiments.posterior_branches" + (
        " --tiny" if tiny else f" --preset {which}" if which != "plain" else ""
    )
    res["sweep_cpu_s"] = sweep_cpu  # this invocation's (cached sweeps: ~0)
    base = "posterior_branches" + ("_tiny" if tiny else "")
    name = base + ("" if preset(c) == "plain" else f"_{preset(c)}")
    main_P = None
    mp = Path(out_dir) / "results" / f"main_{preset(c)}.json"
    if mp.exists() and not tiny:
        main_P = json.loads(mp.read_text())["measured"]["P_aG"]["P_star"]
    res["map_U_crossing_main_P_star"] = main_P
    figure(res, Path(out_dir) / "figures" / f"{base}_{preset(c)}.png", main_P)
    for r in res["runs"]:
        for k in ("aG_t1", "t1_below", "n_t1"):  # the t = 1 draws stay in the records
            r.pop(k, None)
    path = write_json(Path(out_dir) / "results" / f"{name}.json", jsonable(res))
    log(f"wrote {path}; chains {res['cpu_s']:.0f} CPU s")
    return res


# ---------------------------------------------------------------------------------------------
# docs/reports/posterior_branches.md table


def fmt(x, nd=3):
    """``x`` to ``nd`` significant digits; ``-`` for None or non-finite."""
    return "-" if x is None or not np.isfinite(x) else f"{x:.{nd}g}"


def tables(res: dict) -> str:
    P = res["P"]
    dF, se, w = (np.asarray(res[k], float) for k in ("dF", "dF_mcse", "w_copy"))
    hp, hc = res["health"]["pool"], res["health"]["copy"]
    L = ["| P | F_copy - F_pool per seed (± MCSE) | seed mean ± sd | w_copy per seed | "
         "w_copy mean | max R-hat pool / copy | min ESS pool / copy | P_ref(R) pool / copy |"
         " Euler-Maclaurin term max |", "|" + "---|" * 9]  # fmt: skip
    for i, p in enumerate(P):
        ok = np.isfinite(dF[i])
        per = ", ".join(f"{dF[i, s]:.2f} ± {se[i, s]:.2f}" for s in range(dF.shape[1])
                        if ok[s])  # fmt: skip
        ms = (f"{dF[i, ok].mean():.2f} ± {dF[i, ok].std(ddof=1):.2f}" if ok.sum() > 1 else
              fmt(dF[i, ok].mean() if ok.any() else None))  # fmt: skip
        ws = ", ".join(fmt(x, 2) for x in w[i] if np.isfinite(x))
        with CX.quiet():
            qc = np.nanmax(np.abs(np.r_[np.asarray(hp["quad_corr"][i], float),
                                        np.asarray(hc["quad_corr"][i], float)]))  # fmt: skip
            h = lambda d, k: np.asarray(d[k][i], float)  # noqa: E731  (JSON: None = missing seed)
            L.append(
                f"| {p} | {per} | {ms} | {ws} | {fmt(res['w_copy_mean'][i], 2)} |"
                f" {fmt(np.nanmax(h(hp, 'rhat_max')))} / {fmt(np.nanmax(h(hc, 'rhat_max')))} |"
                f" {fmt(np.nanmin(h(hp, 'ess_min')))} / {fmt(np.nanmin(h(hc, 'ess_min')))} |"
                f" {fmt(np.nanmin(h(hp, 'p_ref')), 2)} / {fmt(np.nanmin(h(hc, 'p_ref')), 2)} |"
                f" {fmt(qc, 2)} |"
            )
    iv = CX.interval_text(CX.bayesian_interval(res))
    L.append(f"\nBayesian P*_aG (docs/theory.md §9.11): {iv}")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-scale smoke run (TINY engine)")
    ap.add_argument("--out", default="docs/reports")
    ap.add_argument(
        "--preset",
        choices=tuple(CONFIGS),
        default="plain",
        help="the conventions' config (paper: P = 1,200 and 1,300, 10 seeds)",
    )
    ap.add_argument("--only", type=int, metavar="I", help="compute group I alone (cached)")
    ap.add_argument("--skip-missing", action="store_true",
                    help="assemble the groups with records, run none")  # fmt: skip
    ap.add_argument("--tables", metavar="JSON", help="print the markdown table of a result")
    ap.add_argument("--cluster", metavar="ADDRESS", help=CLUSTER_HELP)
    a = ap.parse_args()
    if a.tables:
        print(tables(json.loads(Path(a.tables).read_text())))
    else:
        main(a.tiny, a.out, a.preset, a.only, a.skip_missing, a.cluster)
