r"""Tempered SMC across the softmax coexistence window (issue 12, item 4): the posterior weight
of each branch and the P where the weights are equal, from one population of particles free to
move its mass between the branches (:mod:`copyhead_jax.bayes.smc`), set against the constrained
TI of ``posterior_branches`` (same references, regions and HMC kernel); method and results:
docs/reports/posterior_branches.md, "Tempered SMC across the window".

    python -m experiments.posterior_smc [--tiny] [--out docs/reports] [--only I]
    python -m experiments.posterior_smc --tables docs/reports/results/posterior_smc.json

Each group's raw results are a committed JSON record
``OUT/results/records/posterior_smc[_tiny]/group-KEY.json``; writes
``OUT/results/posterior_smc.json`` and ``OUT/figures/posterior_smc_plain.png``.
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
from copyhead_jax.storage import jsonable, write_json
from copyhead_jax.transition_ti import BRANCHES

from . import posterior_branches as PB
from .common import group_record, save_figure
from .posterior import fmt

#: the settings per mode: the references are posterior_branches' (its ``block`` of seeds, its
#: ``a_thr`` region threshold; ``configs/MODE.py``, plain preset)
PLAIN = dict(
    branches="paper", block=0,  # posterior_branches' 10-seed sweeps
    # P = 48, 52: the TI's bracketing points (10 seeds there); 49, 50: inside, where the TI
    # puts every seed's crossing (49.0-49.5). 62 CPU-min in all (measured)
    n_seeds=10, groups=[[48, 49], [50, 52]], a_thr=1.0,
    n_particles=128, n_pilot=64, n_reps=2, ess_target=0.5, n_moves=4, n_leap=5,
    step_size=0.3, max_steps=200,
)  # fmt: skip
SMOKE = dict(  # seconds, not physics: the TINY engine (posterior_branches' tiny references)
    branches="tiny", block=0, n_seeds=3, groups=[[4, 8]], a_thr=0.03,
    n_particles=24, n_pilot=12, n_reps=2, ess_target=0.5, n_moves=2, n_leap=3,
    step_size=0.3, max_steps=60,
)  # fmt: skip


def log(msg: str) -> None:
    print(f"[smc {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_inputs(c: dict, b: dict, sweeps: dict, P_group):
    """Per run (P, seed) of a group: both branches' reference weights, the run's data, and
    the config the data come from (``b``: the branches' config)."""
    cfg, row = PB.group_data(b, P_group, c["n_seeds"])
    refs: dict = {}
    for ip, P, s, br, ref in PB.references(c, sweeps, P_group):
        refs.setdefault((ip, P, s), {})[br] = ref
    runs, heads, trains, masks = [], {k: [] for k in BRANCHES}, [], []
    for (ip, P, s), r in refs.items():
        if any(x is None for x in r.values()):
            log(f"P={P} seed={s}: a branch has no MAP at any P; skipped")
            continue
        arr = {br: BB.head_arrays(x[0], x[1], s) for br, x in r.items()}
        if not all(np.array_equal(arr["pool"][k], arr["copy"][k]) for k in ("W_E", "b")):
            raise ValueError(f"seed {s}: the two branches' sweeps have different embeddings")
        runs.append(dict(P=int(P), seed=s, **{f"ref_P_{br}": int(r[br][2]) for br in BRANCHES}))
        for br in BRANCHES:
            heads[br].append(arr[br])
        train, mask = row(ip, s)
        trains.append(train)
        masks.append(mask)
    return cfg, runs, heads, trains, masks


def run_group(c: dict, b: dict, sweeps: dict, P_group, key) -> dict:
    cfg, runs, heads, trains, masks = run_inputs(c, b, sweeps, P_group)
    return BB.smc_weights(cfg, runs, heads, trains, masks, key, c, label=P_group, log=log)


def _ti_runs(path: Path) -> dict:
    if not path.exists():
        return {}
    return {(r["P"], r["seed"], r["branch"]): r for r in json.loads(path.read_text())["runs"]}


def assemble(c: dict, groups: list[dict], ti: dict) -> dict:
    """The groups' runs against the constrained TI's (``compare.crossing.smc_tables``)."""
    runs = [r for g in groups for r in g["runs"]]
    P_all = sorted({int(p) for grp in c["groups"] for p in grp})
    tables = BT.smc_tables(runs, P_all, c["n_seeds"], c["n_particles"], c["n_reps"], ti)
    return {"P": P_all, "n_seeds": c["n_seeds"],
            "config": {k: v for k, v in c.items() if k != "branches"}, **tables, "runs": runs,
            "cpu_s": sum(g["cpu_s"] for g in groups),
            "wall_s": sum(g["wall_s"] for g in groups)}  # fmt: skip


def draw(res: dict, ti_cross=None):
    """SMC's copy weight, its log-odds against the branch TI's, and the evidence gap, per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from copyhead_jax import style as st

    P = np.asarray(res["P"], float)
    w, wse, odds = (np.asarray(res[k], float) for k in ("w_copy", "w_copy_se", "log_odds_copy"))
    d = np.asarray(res["dlog_Z_smc_minus_ti"], float)
    clip = res["log_odds_clip"]
    with matplotlib.rc_context(st.RC):
        fig, ax = plt.subplots(1, 3, figsize=(16, 5.4), layout="constrained")
        nS = w.shape[1]
        for s in range(nS):
            dx = P + 0.04 * (s - nS / 2)
            first = s == 0
            ax[0].errorbar(dx, w[:, s], yerr=wse[:, s], fmt=".", ms=4, alpha=0.6, capsize=2,
                           color=st.GREY, label="SMC, per seed (bars: 2 populations)" if first
                           else None)  # fmt: skip
            cl = np.abs(odds[:, s]) >= clip - 1e-9
            ax[1].plot(dx[~cl], odds[~cl, s], "o", ms=3, color=st.BLACK, alpha=0.5)
            ax[1].plot(dx[cl], odds[cl, s], "o", ms=5, mfc="none", color=st.BLACK, alpha=0.5)
            ax[2].plot(dx, d[:, s], ".", color=st.GREY, alpha=0.7,
                       label="per seed" if first else None)  # fmt: skip
        ax[0].plot(P, res["w_copy_mean"], "-o", color=st.BLACK, ms=4, label="SMC, seed mean")
        ti = res.get("ti_log_odds")
        if ti:
            Pt, Lt = np.asarray(ti["P"], float), np.asarray(ti["values"], float)
            for s in range(Lt.shape[1]):
                ax[1].plot(Pt + 0.04 * (s - nS / 2), Lt[:, s], "x", color=st.VERMILLION, ms=4,
                           alpha=0.6)  # fmt: skip
            ax[1].plot([], [], "x", color=st.VERMILLION,
                       label="constrained TI: $F_{pool} - F_{copy}$")  # fmt: skip
        ax[1].plot([], [], "o", ms=3, color=st.BLACK, label="SMC: $\\log w_{copy}/(1 - w_{copy})$")
        ax[1].plot([], [], "o", ms=5, mfc="none", color=st.BLACK,
                   label=f"SMC, clipped at $\\pm${clip:.2f} (not resolved)")  # fmt: skip
        for a in ax[:2]:
            a.axhline(0.5 if a is ax[0] else 0.0, color=st.BLACK, lw=0.5)
            P_eq = res["weight_window"].get("P_equal")
            marks = ((P_eq, "SMC: $w = 1/2$", st.BLACK),
                     (ti_cross, "TI: $F_{copy} = F_{pool}$", st.VERMILLION))  # fmt: skip
            for v, lab, col in marks:
                if v:
                    a.axvline(v, color=col, ls="--", lw=1, label=f"{lab} at $P$ = {v:.2f}")
        ax[2].axhline(0, color=st.BLACK, lw=0.5)
        ax[0].set(ylabel="$w_{copy}$ (posterior weight of copying)",
                  title="posterior weight of copying (SMC)")  # fmt: skip
        ax[1].set(ylabel="log-odds of copying (nats)", title="SMC weights against the branch TI")
        ax[2].set(ylabel="$\\log Z_{SMC} - \\log(Z_{pool} + Z_{copy})_{TI}$ (nats)",
                  title="evidence: SMC against the branch TI")  # fmt: skip
        for a in ax:
            a.set_xlabel(st.P_LABEL)
            st.legend(a, ncol=1)
        fig.suptitle("softmax (plain preset): sequential Monte Carlo against thermodynamic "
                     "integration, per seed")  # fmt: skip
    return fig


def main(tiny: bool = False, out_dir: str | Path = "docs/reports", only: int | None = None) -> dict:
    """Run (or load) every group, assemble, write; ``only``: run that group alone and stop
    (to spread the groups over processes; a later plain call assembles from the cache)."""
    c = SMOKE if tiny else PLAIN
    s = PB.settings(c["branches"])
    b = PB.config(s, "plain")
    records = Path(out_dir) / "results" / "records" / ("posterior_smc" + "_tiny" * tiny)
    PB.check_only(only, range(len(c["groups"])))
    sweeps = PB.load_sweeps(b, PB.cache_dir(s), b["blocks"][c["block"]])
    groups = []
    for gi, grp in enumerate(c["groups"]):
        if only is not None and gi != only:
            continue
        key = PB.group_key(c, grp, gi, tiny, PB.group_refs(c, sweeps, grp),
                           skip=("branches", "groups"), engine=b["mc"]["engine"])  # fmt: skip
        run = functools.partial(run_group, c, b, sweeps, grp, jax.random.key(1500 + gi))
        g = group_record(records / f"group-{key}.json", run, group=gi, P_group=grp)
        log(f"P={grp}: {g['cpu_s']:.0f} CPU s, {g['wall_s']:.0f} s wall; record group-{key}")
        groups.append(g)
    if only is not None:
        return g
    name = "posterior_smc" + ("_tiny" if tiny else "")
    ti_name = "posterior_branches" + ("_tiny" if tiny else "")
    ti_path = Path(out_dir) / "results" / f"{ti_name}.json"
    res = assemble(c, groups, _ti_runs(ti_path))
    res["command"] = "python -m experiments.posterior_smc" + (" --tiny" if tiny else "")
    ti_cross = None
    if ti_path.exists():
        tj = json.loads(ti_path.read_text())
        ti_cross = tj["crossing_F"]["P_star"]
        near = [i for i, p in enumerate(tj["P"]) if min(res["P"]) - 9 <= p <= max(res["P"]) + 5]
        dF = np.asarray(tj["dF"], float)[near]
        res["ti_log_odds"] = {"P": [tj["P"][i] for i in near], "values": -dF}
        res["ti_crossing_per_seed"] = tj["crossing_F"]["per_seed"]
        # paired per seed: SMC's sign change of the log-odds minus the TI's of F
        d = (np.asarray(res["crossing_log_odds"]["per_seed"], float)
             - np.asarray(tj["crossing_F"]["per_seed"], float)[: res["n_seeds"]])  # fmt: skip
        d = d[np.isfinite(d)]
        res["crossing_minus_ti_per_seed"] = CX.t_interval(d) | {
            "sd": float(d.std(ddof=1)) if d.size > 1 else None
        }
    res["ti_crossing_F"] = ti_cross
    save_figure(draw(res, ti_cross), Path(out_dir) / "figures" / f"{name}_plain.png")
    for r in res["runs"]:
        r.pop("aG_final", None)  # the raw particles stay in the records
    path = write_json(Path(out_dir) / "results" / f"{name}.json", jsonable(res))
    log(f"wrote {path}; {res['cpu_s']:.0f} CPU s")
    return res


def tables(res: dict) -> str:
    """Per P: w_copy per seed (SMC ± its error over populations; TI), log Z (SMC - TI)."""
    w, wse, wti, d = (np.asarray(res[k], float) for k in
                      ("w_copy", "w_copy_se", "w_copy_ti", "dlog_Z_smc_minus_ti"))  # fmt: skip
    L = ["| P | w_copy per seed, SMC ± SE | seed mean | w_copy per seed, TI | "
         "log Z SMC - TI, seed mean ± sd (n) |", "|" + "---|" * 5]  # fmt: skip
    for i, p in enumerate(res["P"]):
        ok = np.isfinite(w[i])
        per = ", ".join(f"{w[i, s]:.2g}" + (f" ± {wse[i, s]:.1g}" if wse[i, s] > 1e-9 else "")
                        for s in range(w.shape[1]) if ok[s])  # fmt: skip
        ti = ", ".join(fmt(x, 2) for x in wti[i] if np.isfinite(x)) or "-"
        dd = d[i][np.isfinite(d[i])]
        ds = f"{dd.mean():+.2f} ± {dd.std(ddof=1):.2f} ({dd.size})" if dd.size > 1 else "-"
        L.append(f"| {p} | {per} | {fmt(res['w_copy_mean'][i], 2)} | {ti} | {ds} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-scale smoke run (TINY engine)")
    ap.add_argument("--out", default="docs/reports")
    ap.add_argument("--tables", metavar="JSON", help="print the markdown table of a result")
    ap.add_argument("--only", type=int, metavar="I", help="compute group I alone (cached)")
    a = ap.parse_args()
    if a.tables:
        print(tables(json.loads(Path(a.tables).read_text())))
    else:
        main(a.tiny, a.out, a.only)
