"""Artefact 4 (hysteresis): first-order evidence. Near P*_aG, softmax runs started on the pooling
branch (zero logits) and on the copy branch (logits ``init_copy_logit * G*``) end in different
minima inside a window of P; the measured window is compared with the theory's spinodals (EK and
finite width). Linear attention, started from the prior and from the copy pattern, shows none.

Reuses the main artefact's runs (same configs, same cache) and refines the two window edges.
Output: ``results/hysteresis_{preset}.json``, ``figures/hysteresis_{preset}.png``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from copyhead_jax.compare import branches as B
from copyhead_jax.compare import integer_grid, rel_err
from copyhead_jax.config import single_start
from copyhead_jax.plots import hysteresis_figure
from copyhead_jax.sweep import FINITE_DENSE, Feature, Runs

from . import common as C
from . import features as F
from .common import finite_width


def window_features(pool: Runs, copy: Runs) -> list[Feature]:
    return [
        Feature("lower", lambda: B.copy_fallback(pool, copy), [pool, copy]),
        Feature("upper", lambda: B.window_top(pool, copy), [pool, copy]),
        Feature("single", lambda: B.single_jump(pool), [pool]),
        Feature("window", lambda: B.window_interior(pool, copy), [pool, copy]),
    ]


def main(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    t0 = time.time()
    out_dir = Path(out_dir)
    s = spec.settings
    ms = C.sibling_spec(spec, "main")
    m = F.collect(ms)
    lin, pool, copy = m["lin"], m["pool"], m["copy"]
    C.log(f"hysteresis {spec.preset}: refining the coexistence window")
    found = C.adaptive(window_features(pool, copy), spec, rounds=s["rounds"], n_new=s["n_new"])
    # linear: the same runs started from the copy pattern
    # (single start: the copy-started fits themselves, not continued to the lowest minimum)
    copy_start = lin.cfg.replace(train=dict(init_attention="copy"))
    copy_start = copy_start.replace(solver=single_start(copy_start.solver))
    lin_copy = Runs(copy_start, "linear-copy", lin.P_cap)
    C.measure(lin_copy, [p for p in s["P_linear_copy"] if p in lin], spec)
    gap = B.linear_hysteresis_gap(lin, lin_copy)
    th = spec.theory_params()
    ek_pts = C.ek_points(th, "map", spec.cache_dir)
    P_th = np.geomspace(ms.settings["theory_P"][0], ms.settings["theory_P"][1], 120)
    # main's curves (same grid, same objectives: the same cached result, not a second solve)
    ek_soft = C.ek_curves(th, P_th, "softmax", ("map", "post"), spec.cache_dir)["map"]
    ek_lin = C.ek_curves(th, P_th, "linear", ("map", "post"), spec.cache_dir)["map"]
    lo, hi = max(1.0, ms.settings["theory_P"][0]), ms.settings["theory_P"][1]
    fin = finite_width(ms, pool, "softmax", integer_grid(lo, hi, FINITE_DENSE))
    fs = fin["summary"]
    bg = B.branch_gap(pool, copy)
    P = bg["P"]
    with B.quiet_nan():
        softmax = {
            "P": P,
            "aG_pool": np.nanmean(pool.masked("cG", P), 1),
            "aG_pool_sd": np.nanstd(pool.masked("cG", P), 1),
            "aG_copy": np.nanmean(copy.masked("cG", P), 1),
            "aG_copy_sd": np.nanstd(copy.masked("cG", P), 1),
            "dU_per_seq": bg["dU_per_seq"],
            "distinct": bg["distinct"],
            "grad_norm_span_pool": np.nanmax(pool.masked("grad_norm_span", P), 1),
            "grad_norm_span_copy": np.nanmax(copy.masked("grad_norm_span", P), 1),
        }
    w_lo, w_hi = found["lower"], found["upper"]
    sp = ek_pts.get("spinodals")
    fin_sp = [fs.get("spinodal_lo", {}).get("mean"), fs.get("spinodal_hi", {}).get("mean")]
    n_min_lin = int(np.max(ek_lin["n_min"]))
    res = {
        # Adam wall time of every run used here, cached ones included (main's runs too)
        "sweep_seconds": pool.wall_seconds() + copy.wall_seconds() + lin_copy.wall_seconds(),
        "measured_window": {"lower": w_lo.P_star, "upper": w_hi.P_star},
        "measured_window_located": {"lower": w_lo.to_dict(), "upper": w_hi.to_dict()},
        "single_start_jump": found["single"].to_dict(),
        "theory_ek_spinodals": sp,
        "theory_ek_P_aG": ek_pts.get("P_aG"),
        "theory_finite_spinodals": fin_sp,
        "theory_finite_P_aG": fs.get("P_aG", {}).get("mean"),
        "rel_err": {
            "lower_vs_ek": rel_err(w_lo.P_star, sp[0] if sp else None),
            "upper_vs_ek": rel_err(w_hi.P_star, sp[1] if sp else None),
            "lower_vs_finite": rel_err(w_lo.P_star, fin_sp[0]),
            "upper_vs_finite": rel_err(w_hi.P_star, fin_sp[1]),
            "single_vs_ek_upper_spinodal": rel_err(found["single"].P_star, sp[1] if sp else None),
        },
        "softmax": softmax,
        "linear": None
        if gap is None
        else {
            "P": gap["P"],
            "max_abs_dcG": gap["max_abs_dcG"],
            "max_abs_dcG_same_branch": gap["max_abs_dcG_same_branch"],
            "anti_copy_landings": [[int(gap["P"][i]), s] for i, s in gap["anti_copy_landings"]],
            "dcG": gap["dcG"],
            "dU_per_seq": gap["dU_per_seq"],
            "cG_prior": np.nanmean(lin.masked("cG", gap["P"]), 1),
            "cG_copy": np.nanmean(lin_copy.masked("cG", gap["P"]), 1),
            "theory_ek_max_local_minima": n_min_lin,
            # the EK metastable linear branch (slot 1 where two minima exist): anti-copy cG < 0
            "theory_ek_second_minimum": {
                "P": ek_lin["P"],
                "cG": np.where(
                    np.asarray(ek_lin["minima_valid"])[:, 1],
                    np.asarray(ek_lin["minima_cG"])[:, 1],
                    np.nan,
                ),
            },
        },
        "theory_ek_softmax": {k: ek_soft[k] for k in ("P", "aG", "minima_aG", "minima_valid")},
        "theory_ek_linear": {k: ek_lin[k] for k in ("P", "cG", "n_min")},
    }
    return C.save_artefact(spec, res, hysteresis_figure, out_dir, t0)
