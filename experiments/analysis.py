"""The main artefact's analysis: EK and finite-width theory next to the measurements, the P*
table, seed summaries, SGLD early-warning growth; :func:`run_main` runs the whole artefact and
:func:`load_or_run` reuses its JSON (coverage does)."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from copyhead_jax.compare import branches as B
from copyhead_jax.compare import (
    ci_table,
    integer_grid,
    loss_patterns,
    measured_orders,
    per_seed_points,
    per_seed_values,
    pstar_table,
)
from copyhead_jax.compare import early_warning as warn
from copyhead_jax.config import reading_of
from copyhead_jax.plots import main_figure
from copyhead_jax.storage import jsonable
from copyhead_jax.sweep import FINITE_DENSE, finite_action_gap

from . import common as C
from .features import collect

#: what the curves hold per P (seed mean and sd); the exact solver's own diagnostics last
RUN_KEYS = ("c1", "cG", "r", "psi", "coverage", "sample_coverage", "train_loss", "test_loss")
RUN_KEYS += ("copy_accuracy", "U", "grad_norm", "grad_norm_span", "stop_epoch")
RUN_KEYS += ("rel_grad", "converged", "min_eig")  # the exact solver: |grad|/|U|, converged, min eig


def post_summary(post: dict | None) -> dict | None:
    """SGLD moments averaged over the sampled seeds (``[nP]`` per key)."""
    if post is None:
        return None
    with B.quiet_nan():
        return {k: (np.nanmean(v, axis=1) if np.ndim(v) == 2 else v) for k, v in post.items()}


def early_warning(post: dict | None, field: str, P_star: float | None) -> dict[str, Any]:
    """:func:`copyhead_jax.compare.early_warning` (the one definition) of the SGLD variance of
    ``field`` in the window placed at ``P_star``."""
    if post is None:
        return {
            "signal": "undetermined",
            "verdict": "undetermined",
            "var_ratio": None,
            "reason": "no posterior",
        }
    return {"field": field, **warn(post["P"], post[f"{field}_var"], P_star)}


def analyse(spec: C.Spec, m: dict[str, Any]) -> dict[str, Any]:
    """Theory (EK, finite width), tables and curves from the measurements ``m`` of
    :func:`collect`."""
    s = spec.settings
    lin, pool, copy, found = m["lin"], m["pool"], m["copy"], m["found"]
    th = spec.theory_params()
    C.log(f"main {spec.preset}: theory")
    cd = spec.cache_dir
    ek_pts = C.ek_points(th, "map", cd)
    ek_post = C.ek_points(th, "post", cd)
    P_th = np.geomspace(s["theory_P"][0], s["theory_P"][1], 120)
    ek = {a: C.ek_curves(th, P_th, a, ("map", "post"), cd) for a in ("linear", "softmax")}
    lo, hi = max(1.0, s["theory_P"][0]), s["theory_P"][1]
    P_fin = integer_grid(lo, hi, FINITE_DENSE)
    fin_lin = C.finite_width(spec, lin, "linear", P_fin)
    fin_soft = C.finite_width(spec, pool, "softmax", P_fin)
    ft = fin_soft["curve"]
    window = {"lower": B.copy_fallback(pool, copy), "upper": B.window_top(pool, copy)}
    post_lin, post_soft = m.get("post_lin"), m.get("post_soft")
    ek_map = dict(ek_pts)
    mp = {k: v.P_star for k, v in found.items()}
    ref = lambda k: mp.get(k) if mp.get(k) is not None else ek_map.get(k)
    ew = {
        "P_c1": early_warning(post_lin, "r", ref("P_c1")),
        "P_cG": early_warning(post_lin, "cG", ref("P_cG")),
        "P_aG": early_warning(post_soft, "cG", ref("P_aG") or ek_map.get("P_aG_crossover")),
    }
    lin_s, pool_s, copy_s = (r.seed_stats(RUN_KEYS) for r in (lin, pool, copy))
    with B.quiet_nan():  # linear psi: 0 where the fit sits at G = 0 (B.linear_psi)
        psi = B.linear_psi(lin)
        lin_s["psi"], lin_s["psi_sd"] = np.nanmean(psi, axis=1), np.nanstd(psi, axis=1)
    L, V = spec.engine.task.L, spec.engine.task.V
    table = pstar_table(
        ek_map,
        {"linear": fin_lin, "softmax": fin_soft},
        found,
        ew,
        loss_patterns(lin_s, pool_s, found, L=L, V=V),
        measured_orders(found, window),
    )
    fl = fin_lin["curve"]
    with B.quiet_nan():
        finite_linear = {
            "P": fl["P"],
            **{k: np.nanmean(fl[k], 1) for k in ("c1", "cG", "psi", "r")},
        }
        finite_softmax = {
            "P": ft["P"],
            "aG": np.nanmean(ft["aG"], 1),
            "dS_per_seq": finite_action_gap(ft),  # the theory of branches' dU_per_seq
            "n_min_max": ft["n_min"].max(1),
        }
    curves = {
        "linear": lin_s,
        "pool": pool_s,
        "copy": copy_s,
        "branches": B.branch_gap(pool, copy),
        "finite_linear": finite_linear,
        "finite_softmax": finite_softmax,
        "sgld_linear": post_summary(post_lin),
        "sgld_softmax": post_summary(post_soft),
    }
    keep = ("P", "c1", "cG", "psi", "aG", "mse", "n_min", "minima_aG", "minima_valid")
    ek_small = {
        a: {o: {k: v for k, v in c.items() if k in keep} for o, c in ek[a].items()} for a in ek
    }
    return {
        "theory_ek_points": ek_map,
        "theory_ek_points_post": ek_post,
        "theory_ek_curves": ek_small,
        "theory_finite": {"linear": fin_lin["summary"], "softmax": fin_soft["summary"]},
        "measured": {k: v.to_dict() for k, v in found.items()},
        "measured_located": found,
        "window": {k: v.to_dict() for k, v in window.items()},
        "early_warning": ew,
        "table": table,
        "curves": curves,
        "reach": {"linear_P_cap": lin.P_cap, "softmax_P_cap": pool.P_cap},
        "sweep_seconds": lin.wall_seconds() + pool.wall_seconds() + copy.wall_seconds(),
    }


def width_label(width) -> str:
    return "inf" if math.isinf(float(width)) else str(int(width))


def width_spec(spec: C.Spec, width) -> C.Spec:
    """``spec`` at another width (same seeds, data and grids; the reduced engine's Gram)."""
    return dataclasses.replace(spec, engine=spec.engine.replace(model=dict(width=width)))


def measure_width(spec: C.Spec) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure and analyse the main artefact at ``spec``'s width: (result, measurements)."""
    m = collect(spec)
    res = analyse(spec, m)
    lower = B.copy_fallback(m["pool"], m["copy"])
    located = per_seed_points(m["lin"], m["found"], lower)
    res["per_seed"] = per_seed_values(located)
    fl, fs = res["theory_finite"]["linear"], res["theory_finite"]["softmax"]
    pooled = {**res["measured"], "window_lo_pooled": res["window"]["lower"]}
    res["ci_table"] = ci_table(
        located,
        {"summary": fl},
        {"summary": fs},
        res["theory_ek_points"],
        pooled,
        # the paper's numbers are in its conventions
        paper_conventions=reading_of(spec.engine) == "paper",
    )
    res["width"] = width_label(spec.engine.model.width)
    return res, m


#: what of an extra width's result goes into the JSON (the curves of the main width suffice for
#: the figure; the extra width keeps its order parameters per P)
WIDTH_KEEP = ("width", "table", "ci_table", "per_seed", "measured", "theory_finite", "window")


def run_main(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    """Run (or reload) every measurement, compare with the theory, write JSON and PNG; with
    ``settings['extra_widths']`` the same again at each extra width (``res['widths']``)."""
    t0 = time.time()
    out_dir = Path(out_dir)
    res, _ = measure_width(spec)
    widths = {res["width"]: {k: res[k] for k in WIDTH_KEEP}}
    res["widths"] = widths
    extra = spec.settings.get("extra_widths", [])
    if extra:  # the main width's result first (the extra widths take as long again)
        C.save_artefact(spec, dict(res), main_figure, out_dir, t0, drop=("measured_located",))
    for w in extra:
        C.log(f"main {spec.preset}: width {width_label(w)}")
        rw, _ = measure_width(width_spec(spec, w))
        rw["curves_small"] = {
            k: {q: rw["curves"][k][q] for q in ("P", "c1", "cG", "r", "psi", "U")}
            for k in ("linear", "pool", "copy")
        }
        widths[rw["width"]] = {k: rw[k] for k in (*WIDTH_KEEP, "curves_small")}
        res["sweep_seconds"] += rw["sweep_seconds"]
    C.save_artefact(spec, res, main_figure, out_dir, t0, drop=("measured_located",))
    return res


def load_or_run(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    """The main artefact's result in ``out_dir`` if it was made with ``spec``'s configuration,
    else run it (its runs are cached, so a rerun only redoes the analysis)."""
    import json

    path = Path(out_dir) / "results" / f"main_{spec.preset}.json"
    if path.exists():
        res = json.loads(path.read_text())
        h = res.get("header", {})
        same = (
            h.get("mode") == spec.mode
            and h.get("engine") == spec.engine.to_dict()
            and h.get("settings") == jsonable(spec.settings)
        )
        if same:
            return res
    return run_main(spec, out_dir)
