r"""Free energy of each softmax branch and the Bayesian P*_aG (issue 12, items 3-4) by constrained,
Laplace-referenced TI on collapsed-HMC rungs (:mod:`copyhead_jax.bayes.branch_ti`); method and
results: docs/reports/posterior_branches.md.

    python -m experiments posterior-branches --preset plain [--tiny] [--out docs/reports]
    python -m experiments posterior-branches --cluster tcp://HOST:8786   # groups on Dask workers
    python -m experiments.posterior_branches --tables docs/reports/results/posterior_branches.json

Settings: ``posterior_branches`` of ``configs/MODE.py`` per preset (the default mode: the
plain and paper configs; ``--tiny``: a plain-preset smoke run; other modes: none), on the
reduced engine of ``configs/posterior.py`` that it names (``mc``). Each group of P (one
compiled program, padded to its largest P) writes a committed JSON record
``OUT/results/records/posterior_branches[_tiny]/group-KEY.json`` (KEY: a hash of its inputs), so
a fresh checkout re-assembles the result and adds seeds without rerunning a chain. Writes
``OUT/results/posterior_branches[_tiny][_paper].json`` and
``OUT/figures/posterior_branches[_tiny]_PRESET.png``.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

from copyhead_jax import branch_batch as BB
from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.compare import crossing as CX
from copyhead_jax.compare import paper
from copyhead_jax.fanout import GroupFailure, failures, map_groups
from copyhead_jax.storage import jsonable, write_json
from copyhead_jax.sweep import sweep_inputs
from copyhead_jax.transition_ti import BRANCHES

from .common import MODE_FLAGS, group_record, mode_config, save_figure
from .configs.posterior import CONFIGS as ENGINES
from .posterior import branch_config, cache_key, ek_points, fit_only, fmt

INIT = {"pool": "zero", "copy": "copy"}


def log(msg: str) -> None:
    print(f"[branches {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


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


# ---------------------------------------------------------------------------------------------
# References


def preset(c: dict) -> str:
    """The config's conventions: ``plain`` unless it names one."""
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


def group_data(c: dict, P_group, nS: int):
    """``(cfg, row)``: the softmax config of a group of ``nS`` seeds and ``row(ip, s)``, the
    data (train, mask) of its run at ``P_group[ip]``, seed ``s``, padded to the largest P."""
    cfg = branch_config(c["mc"], preset(c), "softmax", P_group, None, nS)
    inp = sweep_inputs(cfg, None, max(P_group))
    train, mask = np.asarray(inp.train), np.asarray(inp.mask)
    return cfg, lambda ip, s: (train[ip * nS + s], mask[ip * nS + s])


def run_group(c: dict, sweeps: dict, P_group, key, seeds=None, n_seeds_total=None) -> dict:
    """Every (P, seed, branch) of ``P_group`` with a reference: F, its parts, chain health
    (``seeds`` of a config of ``n_seeds_total`` seeds; default the first block)."""
    cfg, row = group_data(c, P_group, n_seeds_total or c["n_seeds"])
    runs, arrs, data = [], [], []
    for ip, P, s, b, ref in references(c, sweeps, P_group, seeds):
        if ref is None:
            log(f"P={P} seed={s} {b}: no MAP of that branch at any P; skipped")
            continue
        res, i, ref_P = ref
        runs.append(dict(P=int(P), seed=s, branch=b, ref_P=ref_P))
        arrs.append(BB.head_arrays(res, i, s))
        data.append(row(ip, s))
    trains, masks = (list(x) for x in zip(*data)) if data else ([], [])
    return BB.free_energies(cfg, runs, arrs, trains, masks, key, c, label=P_group, log=log)


def assemble(c: dict, groups: list[dict], sweeps: dict) -> dict:
    """The result of a config's groups: :func:`copyhead_jax.compare.crossing.branch_tables`
    of their runs, the MAP U crossing of the first block's sweeps, the EK theory."""
    runs = [r for g in groups for r in g["runs"]]
    blocks = seed_blocks(c)
    # groups may be added later; a P holds the seeds of every block that measures it
    P_all = sorted({int(p) for bl in blocks for grp in bl["groups"] for p in grp})
    nS = max(bl["n_seeds_total"] for bl in blocks)
    tables = BT.branch_tables(runs, P_all, nS, c["a_thr"], c["a_alt"])
    # MAP U crossing on the same sweeps, where a seed's two starts are distinct minima
    pr, cr = sweeps["pool"][0], sweeps["copy"][0]
    common, _, map_u = CX.start_crossing(pr.P, pr, cr.P, cr)
    th = ek_points(branch_config(c["mc"], preset(c), "softmax", [1]), ("P_aG", "spinodals"))
    return {
        "P": P_all, "n_seeds": len({r["seed"] for r in runs}),  # measured (the tables: nS)
        **{k: c[k] for k in ("a_thr", "ts", "n_chains", "hmc", "n_ref")}, **tables,
        "map_U_crossing": map_u, "map_U_P": common, "theory": th, "preset": preset(c),
        "map_U_crossing_main": f"docs/reports/results/main_{preset(c)}.json measured.P_aG (10 "
        "seeds, exact MAP, width 10,000)", "paper_P_aG": paper.PAPER_MEASURED["P_aG"],
        "runs": runs, "cpu_s": sum(g["cpu_s"] for g in groups),
        "wall_s": sum(g["wall_s"] for g in groups),
    }  # fmt: skip


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


def group_refs(c: dict, sweeps: dict, grp, seeds=None) -> list:
    """The MAPs a group's chains start from: ``[P, seed, branch, the reference sweep's P grid,
    ref_P]`` per run (what ``run_group`` reads from ``sweeps``; a sweep added for other P leaves
    it, and so the group's cache key, unchanged)."""
    return [[int(P), s, b, [int(p) for p in ref[0].P], int(ref[2])]
            for _, P, s, b, ref in references(c, sweeps, grp, seeds)
            if ref is not None]  # fmt: skip


def group_key(c: dict, grp, gi: int, tiny: bool, refs: list, skip=("mc", "groups", "a_alt",
              "sweeps", "blocks"), engine=None) -> str:  # fmt: skip
    """Cache key of one group: everything its chains depend on (its references, not the other
    groups, nor the threshold-sensitivity and figure settings: ``skip``) and the engine config
    (default ``c``'s); ``gi`` seeds its keys."""
    kept = {k: v for k, v in c.items() if k not in skip}
    return cache_key(kept, c["mc"]["engine"] if engine is None else engine, grp, gi, tiny, refs)


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
    out = map_groups(compute_group, [t[4] for t in missing], cluster=cluster,
                     progress=lambda d, n: log(f"cluster: {d}/{n} groups done"))  # fmt: skip
    for (name, bi, gi, grp, _), g in zip(missing, out, strict=True):
        if not isinstance(g, GroupFailure):
            group_record(records / f"{name}.json", lambda g=g: g, block=bi, group=gi, P_group=grp)
    bad = [f"group {missing[f.index][2]}: {f}" for f in failures(out)]
    if bad:
        raise RuntimeError(f"{len(bad)} group(s) failed on {cluster} (the others' records are "
                           f"written; rerun to retry): {'; '.join(bad)}")  # fmt: skip


def main(spec, out: str | Path, *, cluster: str | None = None, only: int | None = None,
         skip_missing: bool = False) -> dict:  # fmt: skip
    """Run (or load) every group of ``spec``'s settings, assemble, write (nothing where its mode
    has none for its preset); ``only``: compute that group alone and stop (block b's j-th group
    has index j in the first block, 100 b + j after it; one process per group, then a call
    without it assembles); ``skip_missing``: assemble the groups that have records, run none;
    ``cluster``: run the groups without a record on a Dask cluster first (``fan_out``)."""
    if not spec.settings:
        log(f"no posterior_branches settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
    c, tiny = config(spec.settings, spec.preset), spec.mode == "tiny"
    blocks = seed_blocks(c)
    check_only(only, [group_index(bi, j) for bi, bl in enumerate(blocks)
                      for j in range(len(bl["groups"]))])  # fmt: skip
    cache = cache_dir(spec.settings)
    base = "posterior_branches" + "_tiny" * tiny
    records = Path(out) / "results" / "records" / base
    c0 = BB.cpu_seconds()
    sweeps = [load_sweeps(c, cache, None if bi == 0 else bl) for bi, bl in enumerate(blocks)]
    sweep_cpu = BB.cpu_seconds() - c0
    log(f"sweeps loaded/fitted: {sweep_cpu:.0f} CPU s")
    todo = []  # (record name, block, group index, P group, compute_group's task)
    for bi, bl in enumerate(blocks):
        seeds = None if bi == 0 else bl["seeds"]  # the first block: its keys as before
        for j, grp in enumerate(bl["groups"]):
            gi = group_index(bi, j)
            if only is not None and gi != only:
                continue
            name = f"group-{group_key(c, grp, gi, tiny, group_refs(c, sweeps[bi], grp, seeds))}"
            if skip_missing and not (records / f"{name}.json").exists():
                log(f"block {bi} P={grp} (group {gi}): no record; skipped")
                continue
            todo.append((name, bi, gi, grp, (c, sweeps[bi], grp, gi, seeds, bl["n_seeds_total"])))
    if cluster is not None:
        fan_out(todo, records, cluster)
    groups = []
    for name, bi, gi, grp, task in todo:
        g = group_record(records / f"{name}.json", functools.partial(compute_group, task),
                         block=bi, group=gi, P_group=grp)  # fmt: skip
        log(f"block {bi} P={grp}: {g['cpu_s']:.0f} CPU s; record {name}")
        groups.append(g)
    if only is not None:
        return {}
    res = assemble(c, groups, sweeps[0])
    res["command"] = (f"python -m experiments posterior-branches{MODE_FLAGS[spec.mode]} "
                      f"--preset {spec.preset}")  # fmt: skip
    res["sweep_cpu_s"] = sweep_cpu  # this invocation's (cached sweeps: ~0)
    mp = Path(out) / "results" / f"main_{preset(c)}.json"
    main_P = None
    if mp.exists() and not tiny:
        main_P = json.loads(mp.read_text())["measured"]["P_aG"]["P_star"]
    res["map_U_crossing_main_P_star"] = main_P
    save_figure(draw(res, main_P), Path(out) / "figures" / f"{base}_{preset(c)}.png")
    for r in res["runs"]:
        for k in ("aG_t1", "t1_below", "n_t1"):  # the t = 1 draws stay in the records
            r.pop(k, None)
    name = base + ("" if preset(c) == "plain" else f"_{preset(c)}")
    path = write_json(Path(out) / "results" / f"{name}.json", jsonable(res))
    log(f"wrote {path}; chains {res['cpu_s']:.0f} CPU s")
    return res


# ---------------------------------------------------------------------------------------------
# docs/reports/posterior_branches.md table


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
    ap.add_argument("--tables", metavar="JSON", required=True,
                    help="print the markdown table of a result (the run: python -m experiments "
                    "posterior-branches)")  # fmt: skip
    print(tables(json.loads(Path(ap.parse_args().tables).read_text())))
