r"""Free energy of each softmax branch and the Bayesian P*_aG by constrained,
Laplace-referenced TI on collapsed-HMC rungs (:mod:`copyhead_jax.transition.branch_ti`); method and
results: docs/reports/posterior_branches.md.

    python -m experiments posterior-branches --preset plain [--tiny] [--out docs/reports]
    python -m experiments posterior-branches --cluster tcp://HOST:8786   # groups on Dask workers
    python -m experiments.report.studies posterior-branches \
        docs/reports/results/posterior_branches.json

Settings: ``posterior_branches`` of ``configs/MODE.py`` per preset (default mode: plain and
paper; ``--tiny``: plain), on the reduced engine of ``configs/posterior.py`` it names (``mc``).
Each group of P (one compiled program) writes a committed record
``OUT/results/records/posterior_branches[_tiny]/group-KEY.json`` (KEY: a hash of its inputs):
a fresh checkout re-assembles and adds seeds without rerunning a chain. Writes
``OUT/results/posterior_branches[_tiny][_paper].json`` and its figure.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax

from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.compare import crossing as CX
from copyhead_jax.compare import paper
from copyhead_jax.plots import branch_figure as draw
from copyhead_jax.runner import GroupFailure, failures, map_groups
from copyhead_jax.storage import jsonable, write_json
from copyhead_jax.transition import branch_runs as BB

from .common import MODE_FLAGS, group_record, log, save_figure
from .posterior_runs import (
    branch_config,
    cache_dir,
    check_only,
    config,
    ek_points,
    group_config,
    group_key,
    group_refs,
    load_sweeps,
    preset,
    seeds_of,
)


def seed_blocks(c: dict) -> list[dict]:
    """The blocks of seeds: the first (seeds ``0..n_seeds-1`` on ``groups``), then ``blocks``;
    each with its seeds, groups and the seed count its configs are built with."""
    first = dict(seeds=list(range(c["n_seeds"])), n_seeds_total=c["n_seeds"], groups=c["groups"])
    return [first, *c.get("blocks", [])]


def run_group(c: dict, sweeps: dict, P_group, key, seeds=None, n_seeds_total=None) -> dict:
    """Every (P, seed, branch) of ``P_group`` with a reference: F, its parts, chain health
    (``seeds`` of a config of ``n_seeds_total`` seeds; default the first block)."""
    cfg = group_config(c, P_group, n_seeds_total or c["n_seeds"])
    runs = BB.branch_runs(cfg, sweeps, P_group, seeds_of(c, seeds), c["a_thr"], log)
    return BB.free_energies(cfg, *runs, key, c, label=P_group, log=log)


def assemble(c: dict, groups: list[dict], sweeps: dict) -> dict:
    """The result of a config's groups: :func:`copyhead_jax.compare.branch_tables.branch_tables`
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
        "P": P_all,
        "n_seeds": len({r["seed"] for r in runs}),  # measured (the tables: nS)
        **{k: c[k] for k in ("a_thr", "ts", "n_chains", "hmc", "n_ref")},
        **tables,
        "map_U_crossing": map_u,
        "map_U_P": common,
        "theory": th,
        "preset": preset(c),
        "map_U_crossing_main": f"docs/reports/results/main_{preset(c)}.json measured.P_aG (10 "
        "seeds, exact MAP, width 10,000)",
        "paper_P_aG": paper.PAPER_MEASURED["P_aG"],
        "runs": runs,
        "cpu_s": sum(g["cpu_s"] for g in groups),
        "wall_s": sum(g["wall_s"] for g in groups),
    }


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
    out = map_groups(
        compute_group,
        [t[4] for t in missing],
        cluster=cluster,
        progress=lambda d, n: log(f"cluster: {d}/{n} groups done"),
    )
    for (name, bi, gi, grp, _), g in zip(missing, out, strict=True):
        if not isinstance(g, GroupFailure):
            group_record(records / f"{name}.json", lambda g=g: g, block=bi, group=gi, P_group=grp)
    bad = [f"group {missing[f.index][2]}: {f}" for f in failures(out)]
    if bad:
        raise RuntimeError(
            f"{len(bad)} group(s) failed on {cluster} (the others' records are "
            f"written; rerun to retry): {'; '.join(bad)}"
        )


def main(
    spec,
    out: str | Path,
    *,
    cluster: str | None = None,
    only: int | None = None,
    skip_missing: bool = False,
) -> dict:
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
    check_only(
        only, [group_index(bi, j) for bi, bl in enumerate(blocks) for j in range(len(bl["groups"]))]
    )
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
        g = group_record(
            records / f"{name}.json",
            functools.partial(compute_group, task),
            block=bi,
            group=gi,
            P_group=grp,
        )
        log(f"block {bi} P={grp}: {g['cpu_s']:.0f} CPU s; record {name}")
        groups.append(g)
    if only is not None:
        return {}
    res = assemble(c, groups, sweeps[0])
    res["command"] = (
        f"python -m experiments posterior-branches{MODE_FLAGS[spec.mode]} --preset {spec.preset}"
    )
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
