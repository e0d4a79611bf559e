r"""Tempered SMC across the softmax coexistence window: the posterior weight
of each branch and the P where the weights are equal, from one population of particles free to
move its mass between the branches (:mod:`copyhead_jax.transition.smc`), set against the constrained
TI of ``posterior_branches`` (same references, regions and HMC kernel); method and results:
docs/reports/posterior_branches.md, "Tempered SMC across the window".

    python -m experiments posterior-smc --preset plain [--tiny] [--publish | --out DIR]
    python -m experiments.report.studies posterior-smc docs/reports/results/posterior_smc.json

Settings: ``posterior_smc`` of ``configs/MODE.py``, plain preset (the references are
posterior_branches': its mode ``branches``, its ``block`` of seeds, its ``a_thr`` threshold).

Each group is a committed record ``OUT/results/records/posterior_smc[_tiny]/group-KEY.json``;
writes ``OUT/results/posterior_smc[_tiny].json`` and its figure.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax

from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.plots import smc_figure as draw
from copyhead_jax.storage import jsonable, write_json
from copyhead_jax.transition import branch_runs as BB

from . import posterior_runs as PR
from .common import MODE_FLAGS, group_record, log, save_figure


def run_group(c: dict, b: dict, sweeps: dict, P_group, key) -> dict:
    """Both branches' references per (P, seed) of a group (``b``: the branches' config), SMC."""
    cfg = PR.group_config(b, P_group, c["n_seeds"])
    runs = BB.paired_runs(cfg, sweeps, P_group, range(c["n_seeds"]), c["a_thr"], log)
    return BB.smc_weights(cfg, *runs, key, c, label=P_group, log=log)


def assemble(c: dict, groups: list[dict], ti: dict) -> dict:
    """The groups' runs against the constrained TI's (``compare.crossing.smc_tables``)."""
    runs = [r for g in groups for r in g["runs"]]
    P_all = sorted({int(p) for grp in c["groups"] for p in grp})
    tables = BT.smc_tables(runs, P_all, c["n_seeds"], c["n_particles"], c["n_reps"], ti)
    return {
        "P": P_all,
        "n_seeds": c["n_seeds"],
        "config": {k: v for k, v in c.items() if k != "branches"},
        **tables,
        "runs": runs,
        "cpu_s": sum(g["cpu_s"] for g in groups),
        "wall_s": sum(g["wall_s"] for g in groups),
    }


def main(spec, out: str | Path, *, only: int | None = None) -> dict:
    """Run (or load) every group of ``spec.settings``, assemble, write (nothing where its mode
    has none for its preset); ``only``: run that group alone and stop (to spread the groups over
    processes; a later call without it assembles from the records)."""
    c, tiny, out_dir = spec.settings, spec.mode == "tiny", out
    if not c:
        log(f"no posterior_smc settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    s = PR.settings(c["branches"])
    b = PR.config(s, "plain")
    records = Path(out_dir) / "results" / "records" / ("posterior_smc" + "_tiny" * tiny)
    PR.check_only(only, range(len(c["groups"])))
    sweeps = PR.load_sweeps(b, PR.cache_dir(s), b["blocks"][c["block"]])
    groups = []
    for gi, grp in enumerate(c["groups"]):
        if only is not None and gi != only:
            continue
        key = PR.group_key(
            c,
            grp,
            gi,
            tiny,
            PR.group_refs(c, sweeps, grp),
            skip=("branches", "groups"),
            engine=b["mc"]["engine"],
        )
        run = functools.partial(run_group, c, b, sweeps, grp, jax.random.key(1500 + gi))
        g = group_record(records / f"group-{key}.json", run, group=gi, P_group=grp)
        log(f"P={grp}: {g['cpu_s']:.0f} CPU s, {g['wall_s']:.0f} s wall; record group-{key}")
        groups.append(g)
    if only is not None:
        return g
    name = "posterior_smc" + ("_tiny" if tiny else "")
    ti_name = "posterior_branches" + ("_tiny" if tiny else "")
    ti_path = Path(out_dir) / "results" / f"{ti_name}.json"
    tj = json.loads(ti_path.read_text()) if ti_path.exists() else {"runs": []}
    res = assemble(c, groups, {(r["P"], r["seed"], r["branch"]): r for r in tj["runs"]})
    res["command"] = f"python -m experiments posterior-smc{MODE_FLAGS[spec.mode]} --preset plain"
    ti_cross = None
    if ti_path.exists():
        ti_cross = tj["crossing_F"]["P_star"]
        res.update(BT.smc_against_ti(res, tj))
    res["ti_crossing_F"] = ti_cross
    save_figure(draw(res, ti_cross), Path(out_dir) / "figures" / f"{name}_plain.png")
    for r in res["runs"]:
        r.pop("aG_final", None)  # the raw particles stay in the records
    path = write_json(Path(out_dir) / "results" / f"{name}.json", jsonable(res))
    log(f"wrote {path}; {res['cpu_s']:.0f} CPU s")
    return res
