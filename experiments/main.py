"""Artefact 1 (main): order parameters, coverage and loss versus P at the preset's L, V, for both
attentions; theory (EK and finite-width) against Adam (MAP) and SGLD (posterior); every P* of
THEORY.md §5 located on the measurements by the same definition, refined adaptively near it.

Measured definitions (``copyhead_jax.locate``):

* ``P_c1``: onset of the row sum ``r`` of the linear attention matrix (second order).
* ``P_cG``: ``argmax dpsi/dlog P`` of the measured copy fraction; ``P_cG_half``: ``psi = 1/2``.
* ``P_aG``: where ``U`` of the runs started on the pooling branch (zero logits) and on the copy
  branch (``init_copy_logit * G*``) cross, at the ``P`` where the two stayed distinct.
* ``P_aG_single``: the jump of ``a_G`` of the pooling-branch starts alone (compared with the
  theory's upper spinodal, where the weak minimum disappears).

Output: ``results/main_{preset}.json`` and ``figures/main_{preset}.png`` under ``out_dir``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from copyhead_jax.compare import locate as loc

from . import common as C

# ---------------------------------------------------------------------------------------------
# Measurement


def branch_runs(spec: C.Spec, **task) -> tuple[C.Runs, C.Runs, C.Runs]:
    """Linear runs (the preset's initialisation) and softmax runs started on the pooling branch
    (zero logits) and on the copy branch, each with its reach cap."""
    s = spec.settings
    lin_cfg = spec.engine_for("linear", **task)
    soft = spec.engine_for("softmax", **task)
    pool_cfg = soft.replace(train=dict(init_attention="zero"))
    copy_cfg = soft.replace(train=dict(init_attention="copy"))
    n_seeds = s.get("n_seeds")
    if n_seeds:
        lin_cfg, pool_cfg, copy_cfg = (
            c.replace(sweep=dict(n_seeds=n_seeds)) for c in (lin_cfg, pool_cfg, copy_cfg)
        )
    cap = lambda c: C.reach_cap(c, s["max_run_s"], spec.cost)
    return (
        C.Runs(lin_cfg, "linear", cap(lin_cfg)),
        C.Runs(pool_cfg, "pool", cap(pool_cfg)),
        C.Runs(copy_cfg, "copy", cap(copy_cfg)),
    )


def distinct_branches(pool: C.Runs, copy: C.Runs, P) -> np.ndarray:
    """``[nP, n_seeds]``: the copy start kept a larger ``a_G`` than the pooling start, by at least
    half the largest such gap seen (and at least ``0.1 sqrt(L)``)."""
    gap = copy.masked("cG", P) - pool.masked("cG", P)
    if not np.isfinite(gap).any():
        return np.zeros(gap.shape, bool)
    g_max = np.nanmax(gap)
    thr = max(0.5 * g_max, 0.1 * math.sqrt(pool.cfg.task.L))
    return np.nan_to_num(gap, nan=-np.inf) > thr


def common_P(a: C.Runs, b: C.Runs) -> np.ndarray:
    return np.intersect1d(a.P, b.P)


def combine_seeds(kind: str, per: list[loc.Located]) -> loc.Located:
    """One ``Located`` from per-seed ones: the bracketed seeds' ``P*`` averaged in ``log P``, their
    brackets joined; unbracketed if no seed is (with the common side, if any)."""
    ok = [x for x in per if x.bracketed and x.P_star is not None]
    detail = {"per_seed": [x.to_dict() for x in per], "n_bracketed": len(ok)}
    if not ok:
        sides = {x.side for x in per}
        side = sides.pop() if len(sides) == 1 else None
        edge = per[0].detail.get("edge") if side else None
        return loc.Located(
            kind, None, None, False, side, {**detail, "edge": edge, "reason": "no seed bracketed"}
        )
    P_star = float(np.exp(np.mean([np.log(x.P_star) for x in ok])))
    bracket = (min(x.bracket[0] for x in ok), max(x.bracket[1] for x in ok))
    return loc.Located(kind, P_star, bracket, True, None, detail)


def crossing(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """``P*_aG``: per seed, where ``U`` of the pooling and copy starts cross (only at the ``P``
    where that seed's two runs stayed distinct); the seeds' estimates are averaged in ``log P``
    and their brackets joined."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("crossing", None, None, False, None, {"reason": "< 2 common P"})
    dist = distinct_branches(pool, copy, P)
    Up, Uc = pool.masked("U", P), copy.masked("U", P)
    per = [loc.locate_crossing(P, Up[:, s], Uc[:, s], valid=dist[:, s]) for s in range(Up.shape[1])]
    return combine_seeds("crossing", per)


def window_interior(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """The ``P`` range from the grid point below the first to the one above the last ``P`` where
    any seed's two starts stayed distinct: refining it puts runs inside every seed's window."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("window", None, None, False, None, {"reason": "< 2 common P"})
    idx = np.flatnonzero(distinct_branches(pool, copy, P).any(axis=1))
    if idx.size == 0:
        return loc.Located("window", None, None, False, None, {"reason": "never distinct"})
    lo, hi = P[max(idx[0] - 1, 0)], P[min(idx[-1] + 1, P.size - 1)]
    return loc.Located("window", float(np.sqrt(lo * hi)), (float(lo), float(hi)), True)


def _window_edge(pool: C.Runs, copy: C.Runs, direction: int) -> loc.Located:
    """Per seed, the step of "the two starts are distinct" (up: lower edge, down: upper edge)."""
    P = common_P(pool, copy)
    if P.size < 2:
        return loc.Located("jump", None, None, False, None, {"reason": "< 2 common P"})
    dist = distinct_branches(pool, copy, P).astype(float)
    edge = 0 if direction == 1 else -1
    per = []
    for s in range(dist.shape[1]):
        d = dist[:, s]
        if d.max() <= 0:
            per.append(loc.Located("jump", None, None, False, None, {"reason": "never distinct"}))
        elif d[edge] > 0:  # distinct at the edge of the grid: the window extends beyond it
            side = "below" if direction == 1 else "above"
            per.append(loc.Located("jump", None, None, False, side, {"edge": float(P[edge])}))
        else:
            per.append(loc.locate_jump(P, d, direction=direction))
    return combine_seeds("jump", per)


def copy_fallback(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """Lower edge of the measured coexistence window: the smallest ``P`` from which the copy
    start stays on the copy branch (the fraction of seeds with distinct branches jumps up)."""
    return _window_edge(pool, copy, 1)


def window_top(pool: C.Runs, copy: C.Runs) -> loc.Located:
    """Upper edge of the measured coexistence window: beyond it the pooling start has jumped to
    the copy branch (the fraction of seeds with distinct branches drops)."""
    return _window_edge(pool, copy, -1)


ONSET_TOL = 0.02  # r below 2% of its largest measured value counts as zero (no pooling)


def onset(lin: C.Runs) -> loc.Located:
    """Onset of the row sum ``r`` of the linear attention matrix (pooling, ``P*_c1``)."""
    r = lin.masked("r")
    with C.quiet_nan():
        scale = float(np.nanmax(np.abs(np.nanmean(r, axis=1))))
    if not np.isfinite(scale) or scale <= 0:
        return loc.Located("onset", None, None, False, None, {"reason": "r = 0 everywhere"})
    return loc.locate_onset(lin.P, r, tol=ONSET_TOL * scale)


def single_jump(pool: C.Runs) -> loc.Located:
    """The jump of ``a_G`` of the pooling-branch starts alone, per seed (seeds have their own
    data, so their jumps differ); a step below 10% of the full scale ``sqrt(L)`` of ``a_G`` is
    noise, not a copy transition."""
    jmin = 0.1 * math.sqrt(pool.cfg.task.L)
    aG = pool.masked("cG")
    per = [loc.locate_jump(pool.P, aG[:, s], min_jump=jmin) for s in range(aG.shape[1])]
    out = combine_seeds("jump", per)
    if out.bracketed:
        out.detail["jump"] = float(np.mean([x.detail["jump"] for x in per if x.bracketed]))
        out.detail["sharpness"] = float(np.mean([x.detail["sharpness"] for x in per
                                                 if x.bracketed]))  # fmt: skip
    return out


def features(lin: C.Runs, pool: C.Runs, copy: C.Runs, which=("P_c1", "P_cG", "P_aG")) -> list:
    F = C.Feature
    out = []
    if "P_c1" in which:
        out.append(F("P_c1", lambda: onset(lin), [lin]))
    if "P_cG" in which:
        out.append(F("P_cG", lambda: loc.locate_max_slope(lin.P, lin.masked("psi")), [lin]))
        out.append(F("P_cG_half", lambda: loc.locate_level(lin.P, lin.masked("psi"), 0.5), [lin]))
    if "P_aG" in which:
        out.append(F("P_aG", lambda: crossing(pool, copy), [pool, copy]))
        # the coexistence window's edges: refining them puts runs inside each seed's window
        out.append(F("window", lambda: window_interior(pool, copy), [pool, copy]))
        out.append(F("P_aG_single", lambda: single_jump(pool), [pool]))
    return out


def collect(spec: C.Spec) -> dict[str, Any]:
    """Every measurement of the main artefact (cached: a rerun only reloads)."""
    s = spec.settings
    lin, pool, copy = branch_runs(spec)
    C.log(f"main {spec.preset}: linear (cap P <= {lin.P_cap}), softmax (cap P <= {pool.P_cap})")
    C.measure(lin, s["P_linear"], spec)
    C.measure(pool, s["P_pool"], spec)
    C.measure(copy, s["P_copy"], spec)
    found = C.adaptive(features(lin, pool, copy), spec, rounds=s["rounds"], n_new=s["n_new"])
    out = {"lin": lin, "pool": pool, "copy": copy, "found": found}
    if spec.sgld is not None:
        C.log(f"main {spec.preset}: SGLD")
        out["post_lin"] = C.posterior(lin, s["sgld_linear"], spec)
        out["post_soft"] = C.posterior(pool, s["sgld_softmax"], spec)
    return out


# ---------------------------------------------------------------------------------------------
# Finite-width theory on the runs' own embeddings and data


FINITE_DENSE = 16  # finite-width theory: log-spaced P across the theory range (plus measured P)
FINITE_REFINE = 6  # and this many integers inside each bracket of its own P*, per seed


def finite_width(spec: C.Spec, runs: C.Runs, attention: str, P_grid) -> dict[str, Any]:
    """The finite-width theory (THEORY.md §2b) of each seed, on ``P_grid`` plus the measured
    ``P``, then refined near its own jump / steepest rise (integers); cached."""
    key = [
        runs.cfg.to_dict(),
        attention,
        np.asarray(P_grid).tolist(),
        runs.P.tolist(),
        C.code_version("engine"),
    ]
    return C.cached(
        spec.cache_dir,
        f"finite-{attention}",
        key,
        lambda: _finite_width(spec, runs, attention, P_grid),
    )


def _finite_width(spec: C.Spec, runs: C.Runs, attention: str, P_grid) -> dict[str, Any]:
    cfg = runs.cfg
    th = spec.theory_params(L=cfg.task.L, V=cfg.task.V)
    nS = cfg.sweep.n_seeds
    if cfg.train.train_embeddings:  # embeddings trained: each run has its own Gram (measured P)
        P = runs.P
        parts = []
        for p in P:
            toks = [C.seed_tokens(cfg, s, p) for s in range(nS)]
            grams = [C.run_gram(runs, p, s) for s in range(nS)]
            parts.append(C.finite_theory(th, attention, toks, grams, [p]))
        ft = {k: (np.concatenate([x[k] for x in parts]) if k != "P" else P) for k in parts[0]}
    else:
        P = np.union1d(np.asarray(P_grid, int), runs.P)
        P_max = int(P.max() * 2)
        toks = [C.seed_tokens(cfg, s, P_max) for s in range(nS)]
        grams = [C.seed_gram(cfg, s) for s in range(nS)]
        ft = C.finite_theory(th, attention, toks, grams, P)
        extra = []
        for s in range(nS):
            for L_ in _finite_points(ft, attention, s, cfg.task.L).values():
                if L_.bracketed:
                    extra.extend(loc.refine_grid(L_.bracket, n_new=FINITE_REFINE, existing=P))
        extra = np.setdiff1d(np.asarray(extra, int), P)
        if extra.size:
            ft = _merge_curves(ft, C.finite_theory(th, attention, toks, grams, extra))
    pts = [_finite_points(ft, attention, s, cfg.task.L) for s in range(nS)]
    return {"curve": ft, "points": pts, "summary": _summarise_points(pts)}


def _merge_curves(a: dict, b: dict) -> dict:
    """Two finite-theory results on disjoint ``P`` merged and sorted by ``P``."""
    P = np.concatenate([a["P"], b["P"]])
    order = np.argsort(P)
    return {k: (P[order] if k == "P" else np.concatenate([a[k], b[k]])[order]) for k in a}


def _finite_points(ft, attention: str, s: int, L: int) -> dict[str, loc.Located]:
    P = ft["P"]
    if attention == "linear":
        r = ft["r"][:, s]
        tol = 1e-6 * max(float(np.abs(r).max()), 1e-300)
        return {
            "P_c1": loc.locate_onset(P, r, tol=tol),
            "P_cG": loc.locate_max_slope(P, ft["psi"][:, s]),
            "P_cG_half": loc.locate_level(P, ft["psi"][:, s], 0.5),
        }
    out = {"P_aG": loc.locate_jump(P, ft["aG"][:, s])}
    two = ft["n_min"][:, s] >= 2
    if two.any():
        i, j = np.flatnonzero(two)[[0, -1]]
        lo = (float(P[i - 1]) if i > 0 else None, float(P[i]))
        hi = (float(P[j]), float(P[j + 1]) if j + 1 < P.size else None)
        out["spinodal_lo"] = loc.Located(
            "spinodal",
            math.sqrt(lo[0] * lo[1]) if lo[0] else None,
            lo if lo[0] else None,
            lo[0] is not None,
        )
        out["spinodal_hi"] = loc.Located(
            "spinodal",
            math.sqrt(hi[0] * hi[1]) if hi[1] else None,
            hi if hi[1] else None,
            hi[1] is not None,
        )
    return out


def _summarise_points(pts: list[dict[str, loc.Located]]) -> dict[str, Any]:
    out = {}
    for k in pts[0]:
        v = [p[k].P_star for p in pts if k in p and p[k].P_star is not None]
        out[k] = {
            "mean": float(np.mean(v)) if v else None,
            "sd": float(np.std(v)) if len(v) > 1 else None,
            "per_seed": [p[k].P_star if k in p else None for p in pts],
        }
    return out


# ---------------------------------------------------------------------------------------------
# Summaries


def seed_stats(runs: C.Runs, keys) -> dict[str, Any]:
    out: dict[str, Any] = {"P": runs.P}
    for k in keys:
        x = runs.masked(k)
        with C.quiet_nan():
            out[k] = np.nanmean(x, axis=1)
            out[k + "_sd"] = np.nanstd(x, axis=1)
    return out


RUN_KEYS = (
    "c1",
    "cG",
    "r",
    "psi",
    "coverage",
    "sample_coverage",
    "train_loss",
    "test_loss",
    "copy_accuracy",
    "U",
    "grad_norm",
    "grad_norm_span",
    "stop_epoch",
)


def post_summary(post: dict | None) -> dict | None:
    """SGLD moments averaged over the sampled seeds (``[nP]`` per key)."""
    if post is None:
        return None
    with C.quiet_nan():
        return {k: (np.nanmean(v, axis=1) if np.ndim(v) == 2 else v) for k, v in post.items()}


def early_warning(post: dict | None, field: str, P_star: float | None) -> dict[str, Any]:
    """Growth of the SGLD susceptibility ``var(field)`` on approach to ``P_star``: its value at
    the largest sampled ``P`` below ``P_star`` over its value at the smallest sampled ``P``."""
    if post is None or P_star is None:
        return {"growth": None, "reason": "no posterior or no P*"}
    P = post["P"]
    v = np.nanmean(post[f"{field}_var"], axis=1)
    below = np.flatnonzero((P < P_star) & np.isfinite(v))
    if below.size < 2:
        return {"growth": None, "reason": f"fewer than 2 sampled P below P* = {P_star:.4g}"}
    first, last = below[0], below[-1]
    return {
        "field": field,
        "P_first": int(P[first]),
        "P_last_below": int(P[last]),
        "var_first": float(v[first]),
        "var_last_below": float(v[last]),
        "growth": float(v[last] / v[first]) if v[first] > 0 else None,
        "max_growth_below": float(np.max(v[below]) / v[first]) if v[first] > 0 else None,
    }


def _P(located: loc.Located | None) -> float | None:
    return None if located is None else located.P_star


def _fmt_P(x, digits=3) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def located_text(L_: loc.Located) -> str:
    if L_.P_star is not None and L_.bracketed:
        lo, hi = L_.bracket
        return f"{L_.P_star:.4g} [{lo:.4g}, {hi:.4g}]"
    if L_.side is not None:
        edge = L_.detail.get("edge")
        return f"{'<' if L_.side == 'below' else '>'} {edge:.4g} (outside the measured grid)"
    return f"none ({L_.detail.get('reason', 'not found')})"


def build_table(ek, fin_lin, fin_soft, found, ew, loss_text, orders) -> list[dict[str, Any]]:
    rows = []
    spec_rows = [
        ("linear", "pooling onset (c1)", "P_c1", "V^2", "2nd order (Z2 pitchfork)", fin_lin),
        ("linear", "copy crossover (cG)", "P_cG", "L^{3/2} V^{1/2}", "crossover", fin_lin),
        ("softmax", "copy transition (aG)", "P_aG", "L ln^2 L", "1st order", fin_soft),
    ]
    for att, mech, key, law, order, fin in spec_rows:
        th = ek.get(key)
        if key == "P_aG" and th is None:
            th = ek.get("P_aG_crossover")
        m = found.get(key)
        fin_P = fin["summary"].get(key, {}).get("mean") if fin else None
        rows.append(
            {
                "attention": att,
                "mechanism": mech,
                "key": key,
                "scaling_law": law,
                "theory_ek": th,
                "theory_finite": fin_P,
                "measured": _P(m),
                "measured_text": located_text(m) if m else "n/a",
                "bracket": None if m is None else m.bracket,
                "bracketed": bool(m and m.bracketed),
                "rel_err_ek": C.rel_err(_P(m), th),
                "rel_err_finite": C.rel_err(_P(m), fin_P),
                "order_theory": order,
                "order_measured": orders.get(key),
                "loss_pattern": loss_text.get(key),
                "early_warning": ew.get(key),
            }
        )
    return rows


def loss_patterns(lin_s, pool_s, found, L: int, V: int) -> dict[str, str]:
    out = {}
    P, lo = lin_s["P"], lin_s["test_loss"]
    if P.size:
        idx = sorted({0, *np.round(np.linspace(0, P.size - 1, 5)).astype(int).tolist()})
        steps = " -> ".join(f"{lo[i]:.1f} (P={P[i]})" for i in idx)
        out["P_c1"] = out["P_cG"] = (
            f"test loss {steps} [no attention L = {L}, pooling (1-1/V)(L-1) = "
            f"{(1 - 1 / V) * (L - 1):.1f}, copying 0]"
        )
    j = found.get("P_aG_single")
    if j is not None and j.bracketed:
        Pp, lp, lt = pool_s["P"], pool_s["train_loss"], pool_s["test_loss"]
        i0 = int(np.flatnonzero(Pp == j.bracket[0])[0])
        i1 = int(np.flatnonzero(Pp == j.bracket[1])[0])
        out["P_aG"] = (
            f"jump: train {lp[i0]:.1f} -> {lp[i1]:.1f}, test {lt[i0]:.1f} -> {lt[i1]:.1f} per "
            f"sequence between P = {Pp[i0]} and {Pp[i1]} (single start, seed mean); "
            f"{lt[0]:.1f} at P = {Pp[0]}"
        )
    return out


def linear_hysteresis_gap(lin: C.Runs, lin_copy: C.Runs | None) -> dict[str, Any] | None:
    """Linear attention from the prior and from the copy pattern: the gap in ``cG`` per ``P``.

    The linear potential is Z2-symmetric and, in the copying regime, also has a metastable
    anti-copy minimum (``cG < 0`` at ``r > 0``); a prior start that lands there is counted
    separately, so ``max_abs_dcG_same_branch`` measures hysteresis of the copy transition itself.
    """
    if lin_copy is None:
        return None
    P = common_P(lin, lin_copy)
    if P.size == 0:
        return None
    a, b = lin.masked("cG", P), lin_copy.masked("cG", P)
    d = np.abs(a - b)
    anti = (a < 0) & (b > 0)
    dU = (lin.masked("U", P) - lin_copy.masked("U", P)) / P[:, None]
    with C.quiet_nan():
        same = np.where(anti, np.nan, d)
        return {
            "P": P,
            "max_abs_dcG": float(np.nanmax(d)),
            "max_abs_dcG_same_branch": float(np.nanmax(same)) if np.isfinite(same).any() else None,
            "anti_copy_landings": [[int(i), int(s)] for i, s in zip(*np.nonzero(anti))],  # P index
            "dcG": np.nanmean(d, 1),
            "dU_per_seq": np.nanmean(dU, 1),
        }


# ---------------------------------------------------------------------------------------------
# Figure


def figure(res: dict[str, Any]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 3, figsize=(15, 8.5), constrained_layout=True)
    ek, th = res["theory_ek_curves"], res["theory_ek_points"]
    cur = res["curves"]
    mp = {k: _P(v) for k, v in res["measured_located"].items()}

    def band(a, x, m, s, label, **kw):
        x, m = np.asarray(x, float), np.asarray(m, float)
        line = a.errorbar(
            x,
            m,
            yerr=None if s is None else np.asarray(s, float),
            ms=4,
            capsize=2,
            label=label,
            **kw,
        )
        return line

    def vlines(a, keys):
        for k, col in keys:
            if th.get(k):
                a.axvline(th[k], color=col, ls="--", lw=0.9)
            if mp.get(k):
                a.axvline(mp[k], color=col, ls="-", lw=0.9, alpha=0.7)

    # (0,0) linear order parameters
    a = ax[0, 0]
    e = ek["linear"]["map"]
    a.plot(e["P"], e["c1"], "--", color="tab:cyan", label="EK theory c1")
    a.plot(e["P"], e["cG"], "--", color="tab:blue", label="EK theory cG")
    f = cur["finite_linear"]
    a.plot(f["P"], f["c1"], ":", color="tab:cyan", label="finite-width theory c1")
    a.plot(f["P"], f["cG"], ":", color="tab:blue", label="finite-width theory cG")
    lin = cur["linear"]
    band(a, lin["P"], lin["c1"], lin["c1_sd"], "Adam c1", fmt="s", color="tab:cyan")
    band(a, lin["P"], lin["cG"], lin["cG_sd"], "Adam cG", fmt="o", color="tab:blue")
    if cur.get("sgld_linear"):
        pl = cur["sgld_linear"]
        band(
            a,
            pl["P"],
            pl["cG_mean"],
            np.sqrt(pl["cG_var"]),
            "SGLD cG",
            fmt="^",
            color="k",
            mfc="none",
        )
    vlines(a, (("P_c1", "tab:green"), ("P_cG", "tab:purple")))
    a.set_title("linear: order parameters (dashed: theory P*, solid: measured)")

    # (1,0) softmax aG
    a = ax[1, 0]
    e = ek["softmax"]["map"]
    a.plot(e["P"], e["aG"], "--", color="tab:red", label="EK theory aG (global)")
    mv = np.asarray(e["minima_valid"], bool)
    maG = np.where(mv, e["minima_aG"], np.nan)
    for k in range(1, maG.shape[1]):
        a.plot(e["P"], maG[:, k], ".", ms=1.5, color="tab:red", alpha=0.5)
    f = cur["finite_softmax"]
    a.plot(f["P"], f["aG"], ":", color="tab:red", label="finite-width theory aG")
    for name, fmt, col in (("pool", "o", "tab:orange"), ("copy", "v", "tab:brown")):
        c = cur[name]
        band(a, c["P"], c["cG"], c["cG_sd"], f"Adam aG ({name} start)", fmt=fmt, color=col)
    if cur.get("sgld_softmax"):
        ps = cur["sgld_softmax"]
        band(
            a,
            ps["P"],
            ps["cG_mean"],
            np.sqrt(ps["cG_var"]),
            "SGLD aG",
            fmt="^",
            color="k",
            mfc="none",
        )
    sp = th.get("spinodals")
    if sp:
        a.axvspan(sp[0], sp[1], color="tab:red", alpha=0.08, label="theory coexistence")
    vlines(a, (("P_aG", "tab:red"),))
    a.set_title("softmax: aG, both starts (shaded: theory spinodals)")

    # (0,1) losses
    a = ax[0, 1]
    for name, col, key in (("linear", "tab:blue", "linear"), ("softmax", "tab:red", "pool")):
        c = cur[key]
        band(
            a, c["P"], c["train_loss"], c["train_loss_sd"], f"Adam {name} train", fmt="o", color=col
        )
        band(
            a,
            c["P"],
            c["test_loss"],
            c["test_loss_sd"],
            f"Adam {name} test",
            fmt="x",
            color=col,
            alpha=0.5,
        )
        e = ek[name]["map"]
        a.plot(e["P"], e["mse"], "--", color=col, label=f"EK population MSE ({name})")
    a.set_title("loss per sequence")

    # (1,1) branch objective difference
    a = ax[1, 1]
    br = cur["branches"]
    if len(br["P"]):
        a.plot(br["P"], br["dU_per_seq"], "o-", color="tab:red", label="Adam: (U_pool - U_copy)/P")
        dist = np.asarray(br["distinct"], float) > 0
        a.plot(
            np.asarray(br["P"])[~dist],
            np.asarray(br["dU_per_seq"])[~dist],
            "x",
            color="gray",
            label="branches merged (excluded)",
        )
    f = cur["finite_softmax"]
    if "dS_per_seq" in f:
        a.plot(
            f["P"], f["dS_per_seq"], ":", color="tab:red", label="finite theory (S_weak-S_strong)/P"
        )
    a.axhline(0, color="k", lw=0.6)
    vlines(a, (("P_aG", "tab:red"),))
    a.set_title("softmax: objective gap between branches")

    # (0,2) susceptibility
    a = ax[0, 2]
    for key, fld, col, lab in (
        ("sgld_linear", "r", "tab:green", "linear var(r)"),
        ("sgld_linear", "cG", "tab:blue", "linear var(cG)"),
        ("sgld_softmax", "cG", "tab:red", "softmax var(aG)"),
    ):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p[f"{fld}_var"], "o-", color=col, label=lab)
    a.set_yscale("log")
    vlines(a, (("P_c1", "tab:green"), ("P_cG", "tab:purple"), ("P_aG", "tab:red")))
    a.set_title("SGLD susceptibility (early-warning signal)")

    # (1,2) coverage
    a = ax[1, 2]
    for key, col, lab in (("linear", "tab:blue", "linear"), ("pool", "tab:red", "softmax")):
        c = cur[key]
        band(a, c["P"], c["coverage"], c["coverage_sd"], f"Adam {lab} mean-A", fmt="o", color=col)
        a.plot(c["P"], c["sample_coverage"], "x:", color=col, label=f"Adam {lab} per-sample")
    for key, col, lab in (
        ("sgld_linear", "tab:blue", "linear"),
        ("sgld_softmax", "tab:red", "softmax"),
    ):
        p = cur.get(key)
        if p:
            a.plot(p["P"], p["coverage_mean"], "^--", color=col, mfc="none", label=f"SGLD {lab}")
    a.set_title("subspace coverage")
    for a in ax.flat:
        a.set_xscale("log")
        a.set_xlabel("P (training sequences)")
        a.legend(fontsize=6)
    e = res["header"]["engine"]
    fig.suptitle(
        f"main, {res['header']['preset']} preset, {res['header']['mode']}: L={e['task']['L']}, "
        f"V={e['task']['V']}, N={e['model']['width']}, seeds={e['sweep']['n_seeds']}"
    )
    return fig


# ---------------------------------------------------------------------------------------------
# Entry point


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
    P_th = C.P_grid_dense(s["theory_P"][0], s["theory_P"][1], 120)
    ek = {a: C.ek_curves(th, P_th, a, ("map", "post"), cd) for a in ("linear", "softmax")}
    lo, hi = max(1.0, s["theory_P"][0]), s["theory_P"][1]
    P_fin = C.integer_grid(lo, hi, FINITE_DENSE)
    fin_lin = finite_width(spec, lin, "linear", P_fin)
    fin_soft = finite_width(spec, pool, "softmax", P_fin)
    # finite theory: action gap between its weak and strong minima (the theory of U_pool-U_copy)
    ft = fin_soft["curve"]
    split = 0.5 * (np.nanmax(ft["aG"]) + np.nanmin(ft["aG"]))
    w, st = C.finite_branch_values(ft, split=split)
    with C.quiet_nan():
        dS = np.nanmean((w - st) / ft["P"][:, None], axis=1)
    # measured branch gap
    Pb = common_P(pool, copy)
    dist = distinct_branches(pool, copy, Pb)
    dU = (pool.masked("U", Pb) - copy.masked("U", Pb)) / Pb[:, None]
    with C.quiet_nan():
        branches = {"P": Pb, "dU_per_seq": np.nanmean(dU, 1), "distinct": dist.mean(1)}
    window = {"lower": copy_fallback(pool, copy), "upper": window_top(pool, copy)}
    post_lin, post_soft = m.get("post_lin"), m.get("post_soft")
    ek_map = dict(ek_pts)
    mp = {k: v.P_star for k, v in found.items()}
    ref = lambda k: mp.get(k) if mp.get(k) is not None else ek_map.get(k)
    ew = {
        "P_c1": early_warning(post_lin, "r", ref("P_c1")),
        "P_cG": early_warning(post_lin, "cG", ref("P_cG")),
        "P_aG": early_warning(post_soft, "cG", ref("P_aG") or ek_map.get("P_aG_crossover")),
    }
    lin_s, pool_s, copy_s = (seed_stats(r, RUN_KEYS) for r in (lin, pool, copy))
    orders = {
        "P_c1": "continuous onset of r" if found["P_c1"].bracketed else None,
        "P_cG": (
            f"smooth: max dpsi/dlogP = {found['P_cG'].detail.get('slope_max', float('nan')):.2f}"
            if found["P_cG"].bracketed
            else None
        ),
        "P_aG": (
            f"jump of aG by {found['P_aG_single'].detail.get('jump', float('nan')):.2f} "
            f"(sharpness {found['P_aG_single'].detail.get('sharpness', float('nan')):.2f}); "
            f"coexistence window {located_text(window['lower'])} .. "
            f"{located_text(window['upper'])}"
        ),
    }
    L, V = spec.engine.task.L, spec.engine.task.V
    table = build_table(
        ek_map, fin_lin, fin_soft, found, ew, loss_patterns(lin_s, pool_s, found, L, V), orders
    )
    fl = fin_lin["curve"]
    with C.quiet_nan():
        finite_linear = {
            "P": fl["P"],
            **{k: np.nanmean(fl[k], 1) for k in ("c1", "cG", "psi", "r")},
        }
        finite_softmax = {
            "P": ft["P"],
            "aG": np.nanmean(ft["aG"], 1),
            "dS_per_seq": dS,
            "n_min_max": ft["n_min"].max(1),
        }
    curves = {
        "linear": lin_s,
        "pool": pool_s,
        "copy": copy_s,
        "branches": branches,
        "finite_linear": finite_linear,
        "finite_softmax": finite_softmax,
        "sgld_linear": post_summary(post_lin),
        "sgld_softmax": post_summary(post_soft),
    }
    ek_small = {
        a: {
            o: {
                k: v
                for k, v in c.items()
                if k in ("P", "c1", "cG", "psi", "aG", "mse", "n_min", "minima_aG", "minima_valid")
            }
            for o, c in ek[a].items()
        }
        for a in ek
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


def main(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    """Run (or reload) every measurement, compare with the theory, write JSON and PNG."""
    t0 = time.time()
    out_dir = Path(out_dir)
    m = collect(spec)
    res = analyse(spec, m)
    C.save_artefact(spec, res, figure, out_dir, t0, drop=("measured_located",))
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
            and h.get("settings") == C.jsonable(spec.settings)
        )
        if same:
            return res
    return main(spec, out_dir)
