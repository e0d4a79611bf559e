"""Artefact 3 (scaling): the transition points versus L at fixed V (``scaling-L``) and versus V
at fixed L (``scaling-V``): EK theory, finite-width theory and measurement (each P* located and
refined as in the main artefact, on a grid placed around the theory's value and widened when the
feature is not bracketed), power-law exponents fitted to each and compared with the paper's laws
``P*_c1 ~ V^2``, ``P*_cG ~ L^{3/2} V^{1/2}``, ``P*_aG ~ L ln^2 L``; phase diagrams in (L, P) and
(V, P) with the theory boundaries and the measured points.

A P* whose grid would need runs longer than ``max_run_s`` is reported as out of reach.
Output: ``results/scaling-{L,V}_{preset}.json``, ``figures/scaling-{L,V}_{preset}.png``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jax

from copyhead_jax.compare import branches as B
from copyhead_jax.compare import fit_laws, grids_around, integer_grid, phase_panel, theory_row
from copyhead_jax.plots import scaling_figure
from copyhead_jax.sweep import FINITE_DENSE

from . import common as C
from . import features as F
from .common import finite_width


def measure_point(spec: C.Spec, axis: str, value: int, th: dict[str, Any]) -> dict[str, Any]:
    s = spec.settings
    which = tuple(s["measure"])
    lin, pool, copy = F.branch_runs(spec, **{axis: int(value)})
    g_lin, g_soft = grids_around(th, which, s["n_grid"], s.get("spread"))
    C.log(
        f"{spec.artefact} {spec.preset}: {axis}={value} (caps: linear {lin.P_cap}, "
        f"softmax {pool.P_cap})"
    )
    C.measure(lin, g_lin, spec)
    C.measure(pool, g_soft, spec)
    C.measure(copy, g_soft, spec)
    feats = [f for f in F.features(lin, pool, copy, which) if len(f.runs[0].P) >= 2]
    found = C.adaptive(feats, spec, rounds=s["rounds"], n_new=s["n_new"]) if feats else {}
    out: dict[str, Any] = {"value": int(value), "measured": {}, "reach": {}}
    if "P_aG" in which:
        out["coexistence"] = B.coexistence(pool, copy)
    if "P_aG" in which and found.get(B.SINGLE) is not None:
        out["measured"][B.SINGLE] = found[B.SINGLE].to_dict()
    for k in B.KEYS:
        if k not in which:
            out["measured"][k] = None
            continue
        L_ = found.get(k)
        runs = lin if k != "P_aG" else pool
        need = (th.get(k) or th.get("P_aG_crossover") or 0) * 1.5
        out["reach"][k] = {"P_cap": runs.P_cap, "in_reach": bool(need <= runs.P_cap)}
        out["measured"][k] = None if L_ is None else L_.to_dict()
    if s.get("finite", True):
        fin = {}
        for runs, att, grid, f in ((lin, "linear", g_lin, 3), (pool, "softmax", g_soft, 2)):
            if len(runs.P):
                P_fin = integer_grid(max(1, grid.min() / f), grid.max() * f, FINITE_DENSE)
                fin.update(finite_width(spec, runs, att, P_fin)["summary"])
        # a finite-width P* counts only where its grid was built to cover it (a key not measured
        # here would be the edge of a grid around another transition, not a located point)
        covered = set(which) | ({"spinodal_lo", "spinodal_hi"} if "P_aG" in which else set())
        out["theory_finite"] = {
            k: (fin.get(k) or {}).get("mean") if k in covered else None
            for k in ("P_c1", "P_cG", "P_aG", "spinodal_lo", "spinodal_hi")
        }
    out["n_seeds"] = lin.cfg.sweep.n_seeds
    out["sweep_seconds"] = lin.wall_seconds() + pool.wall_seconds() + copy.wall_seconds()
    return out


def from_main(spec: C.Spec, out_dir: Path) -> dict[str, Any] | None:
    """The main artefact's measurement at the preset's (L, V), if it is in ``out_dir``."""
    path = out_dir / "results" / f"main_{spec.preset}.json"
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    if res.get("header", {}).get("mode") != spec.mode:
        return None
    meas = {k: res["measured"].get(k) for k in (*B.KEYS, B.SINGLE)}
    fin = {
        k: (
            res["theory_finite"]["linear"].get(k) or res["theory_finite"]["softmax"].get(k) or {}
        ).get("mean")
        for k in ("P_c1", "P_cG", "P_aG", "spinodal_lo", "spinodal_hi")
    }
    return {
        "measured": meas,
        "theory_finite": fin,
        "from_main": True,
        "n_seeds": res["header"]["engine"]["sweep"]["n_seeds"],
        "reach": {k: {"P_cap": None, "in_reach": True} for k in B.KEYS},
    }


def main(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    from copyhead_jax.theory import scaling_table

    t0 = time.time()
    out_dir = Path(out_dir)
    axis = {"scaling-L": "L", "scaling-V": "V"}[spec.artefact]
    s = spec.settings
    values = [int(v) for v in s["values"]]
    base = {"L": spec.engine.task.L, "V": spec.engine.task.V}
    th0 = spec.theory_params()
    kw = {"L_values" if axis == "L" else "V_values": values}
    table = C.cached(
        spec.cache_dir,
        "scaling-table",
        [th0.to_dict(), axis, values],
        lambda: scaling_table(th0, **kw),
    )
    rows = []
    for i, v in enumerate(values):
        # each value has its own shapes, so no compiled program carries over; one process holding
        # them all ran out of memory maps (LLVM "Unable to allocate section memory" in scaling-V
        # of `all --jobs 1`, after ~40 min)
        jax.clear_caches()
        th = theory_row(table, i)
        got = from_main(spec, out_dir) if v == base[axis] else None
        row = got if got is not None else measure_point(spec, axis, v, th)
        row.update(value=v, theory_ek=th)
        rows.append(row)
    # phase diagrams on a dense axis, with the theory's boundaries
    th_rows = [r["theory_ek"] for r in rows]
    pdg = C.cached(
        spec.cache_dir,
        "phase-panel",
        [th0.to_dict(), axis, values],
        lambda: phase_panel(th0, axis, values, th_rows),
    )
    res = {
        "axis": axis,
        "values": values,
        "fixed": {k: v for k, v in base.items() if k != axis},
        "rows": rows,
        "fits": fit_laws(values, rows, axis, base),
        "phase": pdg,
    }
    return C.save_artefact(spec, res, scaling_figure, out_dir, t0)
