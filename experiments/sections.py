"""The sections of ``docs/reports/results.md``, one function per artefact: each renders its
markdown and appends what disagrees beyond the reporting thresholds (``copyhead_jax.compare``)
to ``dis`` and what was out of reach to ``reach``."""

from __future__ import annotations

import math
from typing import Any

import copyhead_jax as ch
from copyhead_jax.compare import GROWTH_TOL, disagrees, rel_err
from copyhead_jax.compare.claims import grid_band, judge, verdict_text
from copyhead_jax.compare.paper import PAPER_MEASURED
from copyhead_jax.compare.warning import signal_of

from . import posterior_column


def f(x, d=3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-2):
        return f"{x:.{d - 1}e}"
    return f"{x:.{d}g}"


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.0f}%"


def table(head: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def _measured_text(m: dict | None) -> str:
    if not m:
        return "not measured"
    if m.get("bracketed") and m.get("P_star") is not None:
        lo, hi = m["bracket"]
        return f"{f(m['P_star'])} [{f(lo)}, {f(hi)}]"
    if m.get("side"):
        e = m.get("detail", {}).get("edge")
        return f"{'<' if m['side'] == 'below' else '>'} {f(e)} (not bracketed)"
    return f"none ({m.get('detail', {}).get('reason', 'not found')})"


# ---------------------------------------------------------------------------------------------
# Sections


def _crossing_bound(cross: dict, lower: dict, ek: dict) -> list[str]:
    """When U of the two starts does not cross where both stay distinct, the crossing lies
    between the lower coexistence edge and the first distinct P: say so with numbers."""
    edge = (cross.get("detail") or {}).get("edge")
    if cross.get("bracketed") or cross.get("side") != "below" or edge is None:
        return []
    if not lower or not lower.get("bracketed"):
        return []
    lo = lower["bracket"][0]
    return [
        f"- P_aG (U crossing): the copy start is already lower in U at the first P where both "
        f"starts stay distinct ({f(edge)}), and the copy branch does not survive below the lower "
        f"coexistence edge {_measured_text(lower)}: the crossing lies in [{f(lo)}, {f(edge)}] "
        f"(EK {f(ek.get('P_aG'))}, {pct(rel_err(lo, ek.get('P_aG')))} .. "
        f"{pct(rel_err(edge, ek.get('P_aG')))})."
    ]


def warning_text(ew: dict | None) -> str:
    """One early-warning result (:func:`copyhead_jax.compare.early_warning`) in words."""
    ci = (ew or {}).get("var_ratio_ci")
    if not ci:
        return f"n/a ({(ew or {}).get('reason') or 'no posterior'})"
    lo, hi = (ew.get("window") or (0.5, 0.9))[:2]
    return (f"Var x{f(ew['var_ratio'])} [{f(ci[0])}, {f(ci[1])}] from {lo:g} to {hi:g} P* "
            f"({ew['n_seeds']} seeds): {signal_of(ci)} (threshold x{GROWTH_TOL:g})")  # fmt: skip


def section_main(
    res: dict, preset: str, dis: list[str], reach: list[str], post: dict | None = None
) -> str:
    """The main table; ``post``: the preset's posterior result (``posterior_column.load``),
    whose early-warning verdicts and transition points fill the last column where run."""
    h = res["header"]
    e = h["engine"]
    L, V = e["task"]["L"], e["task"]["V"]
    rows = []
    for r in res["table"]:
        ew = r.get("early_warning") or {}
        ew_txt = posterior_column.cell(post, r["key"]) or warning_text(ew)
        rows.append(
            [
                f"{r['attention']}: {r['mechanism']}",
                r["scaling_law"],
                f(r["theory_ek"]),
                f(r["theory_finite"]),
                r["measured_text"],
                pct(r["rel_err_ek"]),
                pct(r["rel_err_finite"]),
                f"{r['order_theory']}; measured: {r['order_measured'] or 'n/a'}",
                r.get("loss_pattern") or "n/a",
                ew_txt,
            ]
        )
        key = r["key"]
        for which, err in (("EK", r["rel_err_ek"]), ("finite-width", r["rel_err_finite"])):
            if disagrees(err):
                dis.append(
                    f"**{preset}, {key}**: measured {f(r['measured'])} vs {which} theory "
                    f"{f(r['theory_ek'] if which == 'EK' else r['theory_finite'])} "
                    f"({pct(err)})."
                )
        if not r["bracketed"]:
            reach.append(
                f"{preset}, main, {key}: measured {r['measured_text']} (theory EK "
                f"{f(r['theory_ek'])}, finite width {f(r['theory_finite'])})."
            )
        # the paper: a signal before the linear transitions, none before the softmax jump
        want = "signal" if key in ("P_c1", "P_cG") else "no signal"
        pv = posterior_column.verdict(post, key)
        for name, v in (("SGLD", ew), ("posterior", pv)):
            sig = signal_of(v.get("var_ratio_ci")) if v else "undetermined"
            if sig not in (want, "undetermined"):
                dis.append(f"**{preset}, early warning before {key} ({name})**: "
                           f"{warning_text(v)} (paper: {want}).")  # fmt: skip
    m = res["measured"]
    sj = m.get("P_aG_single", {})
    sp = res["theory_ek_points"].get("spinodals")
    extra = [
        f"- Single-start jump of a_G (pooling-branch start only): {_measured_text(sj)}; theory "
        f"upper spinodal (EK) {f(sp[1] if sp else None)} "
        f"({pct(rel_err(sj.get('P_star'), sp[1] if sp else None))}).",
        f"- psi = 1/2 (secondary marker of the crossover): measured "
        f"{_measured_text(m.get('P_cG_half'))}; EK {f(res['theory_ek_points'].get('P_cG_half'))}.",
        f"- Coexistence window from the two starts: "
        f"[{_measured_text(res['window']['lower'])}, {_measured_text(res['window']['upper'])}]; "
        f"EK spinodals {f(sp[0] if sp else None)} .. {f(sp[1] if sp else None)}.",
        f"- Posterior (SGLD) EK points: P_c1 {f(res['theory_ek_points_post'].get('P_c1'))}, "
        f"P_cG {f(res['theory_ek_points_post'].get('P_cG'))}, "
        f"P_aG {f(res['theory_ek_points_post'].get('P_aG'))} (the Occam term D moves every P* up).",
        *_crossing_bound(m.get("P_aG") or {}, res["window"]["lower"], res["theory_ek_points"]),
        _stationarity(res),
        *_continuation(res),
        f"- Reach on this CPU (largest P whose run fits the per-run budget): linear "
        f"{reach_text(res['reach']['linear_P_cap'])}, softmax "
        f"{reach_text(res['reach']['softmax_P_cap'])}; sweep compute "
        f"{res['sweep_seconds']:.0f} s (runs reused from the cache included).",
    ]
    if preset == "paper":
        for k, pm in PAPER_MEASURED.items():
            t = res["theory_ek_points"].get(k)
            if t is not None and disagrees(rel_err(pm, t)):
                dis.append(
                    f"**paper's table vs this theory (paper preset), {k}**: the paper "
                    f"reports P ~ {pm:g}, the EK theory of docs/theory.md gives {f(t)} "
                    f"({pct(rel_err(pm, t))})."
                )
    head = [
        "mechanism",
        "theoretical scaling",
        "theory P* (EK)",
        "theory P* (finite width)",
        "measured P* [bracket]",
        "rel. err. vs EK",
        "rel. err. vs finite",
        "order",
        "loss pattern (per sequence)",
        "posterior: early warning, P* (docs/reports/posterior.md; SGLD where run)",
    ]
    return (
        f"### {preset} preset (L = {L}, V = {V}, width {e['model']['width']}, "
        f"{e['sweep']['n_seeds']} seed(s))\n\n{table(head, rows)}\n\n"
        + "\n".join(extra)
        + f"\n\n![main {preset}]({res['figure']})\n"
    )


def _continuation(res: dict) -> list[str]:
    """The linear continuation in P: runs whose own (prior-draw) start was not the lowest
    minimum reached, and the largest seed-mean U gap."""
    c = res["curves"]["linear"]
    moved = c.get("seeds_moved")
    if moved is None:
        return []
    n = res["header"]["engine"]["sweep"]["n_seeds"]
    gap = [a - b for a, b in zip(c["U_own_start"], c["U"]) if a is not None and b is not None]
    hit = [(p, m) for p, m in zip(c["P"], moved) if m]
    where = ", ".join(f"{p}: {m}" for p, m in hit) or "none"
    return [
        f"- Linear continuation in P (`exact_continuation`): runs where a neighbouring P's fit "
        f"led to a lower minimum than the run's own prior-draw start, {sum(moved)} of "
        f"{len(moved) * n} (seeds per P: {where}); largest seed-mean U gap "
        f"{f(max(gap) if gap else 0.0)}."
    ]


def _stationarity(res: dict) -> str:
    if "min_eig" in res["curves"]["linear"]:
        parts = []
        for k in ("linear", "pool", "copy"):
            c = res["curves"][k]
            g = [x for x in c.get("rel_grad", []) if x is not None]
            e = [x for x in c.get("min_eig", []) if x is not None]
            ok = [x for x in c.get("converged", []) if x is not None]
            if g:
                parts.append(
                    f"{k}: max rel. |grad U| {f(max(g))}, converged fraction (min over P) "
                    f"{f(min(ok))}, smallest Hessian eigenvalue (seed mean, min over P) {f(min(e))}"
                )
        return "- Exact MAP (solver 'exact'): " + "; ".join(parts)
    parts = []
    for k in ("linear", "pool", "copy"):
        c = res["curves"][k]
        g = [x for x in c.get("grad_norm_span", []) if x is not None]
        ep = [x for x in c.get("stop_epoch", []) if x is not None]
        if g:
            parts.append(
                f"{k}: max |grad U|_span {f(max(g))}, stop epochs {f(min(ep))}-{f(max(ep))}"
            )
    return "- Stationarity of the Adam runs (mean over seeds per P, max over P): " + "; ".join(
        parts
    )


def section_coverage(res: dict, preset: str, dis: list[str]) -> str:
    rows = []
    for r in res["table"]:
        a, s, g = r["adam_mean_A"], r["adam_per_sample"], r["sgld"]
        rows.append(
            [
                r["attention"],
                r["regime"],
                f"{r['P_range'][0]}-{r['P_range'][1]}",
                f"{f(a['min'])} / {f(a['mean'])}",
                f"{f(s['min'])} / {f(s['mean'])}",
                f"{f(g['min'])} / {f(g['mean'])}" if g["n"] else "n/a",
                f"{r['boundary']}: {pct(r['boundary_err_ek'])} / {pct(r['boundary_err_finite'])}",
                r["paper"],
            ]
        )
        claim = 0.998 if r["attention"] == "softmax" else 0.985
        if r["attention"] == "softmax" or not r["regime"].startswith("crossover"):
            if a["min"] is not None and a["min"] < claim:
                dis.append(
                    f"**{preset}, coverage, {r['attention']} {r['regime']}**: MAP mean-A "
                    f"coverage down to {f(a['min'])} (paper: > {claim:.1%})."
                )
    fails = res["a1_failures"]
    fit = "MAP" if res["header"]["engine"]["train"].get("solver") == "exact" else "Adam"
    a1 = (
        "none"
        if not fails
        else ", ".join(
            f"{x['attention']} P={x['P']}: per-sample {x['per_sample']:.2f} "
            f"(mean-A {x['mean_A']:.2f})"
            for x in fails
        )
    )
    head = [
        "attention",
        "regime (EK)",
        "P",
        f"{fit} mean-A min / mean",
        f"{fit} per-sample min / mean",
        "SGLD min / mean",
        "boundary err. vs EK / finite",
        "paper",
    ]
    return (
        f"### {preset} preset\n\n{table(head, rows)}\n\nApproximation A1 (token-independent "
        f"logits) fails where the per-sample coverage is below {res['a1_threshold']}: {a1}.\n\n"
        f"![coverage {preset}]({res['figure']})\n"
    )


#: a reach cap above this is the cost model's answer to an unlimited per-run budget (the
#: default mode's ``max_run_s = 1e9``), not a measured limit
UNBOUNDED_P = 10**8


def reach_text(cap) -> str:
    """The largest ``P`` in reach, or what stands for it when no budget limits the runs."""
    if cap is None:
        return "not computed"
    return "no per-run budget" if cap > UNBOUNDED_P else f"{int(cap):,}"


def section_scaling(res: dict, preset: str, dis: list[str], reach: list[str]) -> str:
    axis = res["axis"]
    rows = []
    for k, fit in res["fits"].items():

        def ex(d):
            if d["exponent"] is None:
                return "n/a"
            ci = d.get("ci")
            return (
                f"{d['exponent']:.2f}"
                + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                + f" (n={d['n']})"
            )

        rows.append(
            [
                k,
                fit["paper_law"],
                f"{fit['paper_exponent']:.2f}",
                ex(fit["theory_ek"]),
                ex(fit["theory_finite"]),
                ex(fit["measured"]),
            ]
        )
        pe, me = fit["paper_exponent"], fit["measured"]
        if me["exponent"] is not None:
            ci = me.get("ci")
            off = (ci is not None and not ci[0] <= pe <= ci[1]) or (
                ci is None and abs(me["exponent"] - pe) > 0.3
            )
            if off:
                dis.append(
                    f"**{preset}, {k} versus {axis}**: measured exponent "
                    f"{me['exponent']:.2f}{'' if ci is None else f' [{ci[0]:.2f}, {ci[1]:.2f}]'} "
                    f"vs the paper's {fit['paper_law']} ({pe:.2f} over this range)."
                )
        te = fit["theory_ek"]["exponent"]
        if te is not None and abs(te - pe) > 0.3:
            dis.append(
                f"**{preset}, {k} versus {axis}, theory vs paper**: EK exponent {te:.2f} vs the "
                f"paper's {fit['paper_law']} ({pe:.2f} over this range)."
            )
    pts = []
    for r in res["rows"]:
        n = r.get("n_seeds")
        cells = [f"{r['value']}" + (f" ({n} seeds)" if n else "")]
        for k in ("P_c1", "P_cG", "P_aG", "P_aG_single"):
            tk = "spinodal_hi" if k == "P_aG_single" else k
            m = r["measured"].get(k)
            cells.append(
                f"{f(r['theory_ek'].get(tk))} / {f((r.get('theory_finite') or {}).get(tk))} / "
                f"{_measured_text(m) if m else 'not measured'}"
            )
            if m is not None and not m.get("bracketed") and k != "P_aG_single":
                rr = r.get("reach", {}).get(k, {})
                reach.append(
                    f"{preset}, {res['header']['artefact']}, {axis}={r['value']}, {k}: "
                    f"{_measured_text(m)}; theory {f(r['theory_ek'].get(k))}; largest P in "
                    f"reach: {reach_text(rr.get('P_cap'))}."
                )
        pts.append(cells)
    head = [axis] + [f"{k}: EK / finite / measured" for k in ("P_c1", "P_cG", "P_aG")]
    head.append("single-start jump: EK / finite upper spinodal / measured")
    fixed = ", ".join(f"{k} = {v}" for k, v in res["fixed"].items())
    return (
        f"### {preset} preset, P* versus {axis} ({fixed})\n\n"
        + table(
            [
                "P*",
                "paper law",
                "paper exponent (this range)",
                "EK exponent [95% CI]",
                "finite-width exponent",
                "measured exponent [95% CI]",
            ],
            rows,
        )
        + "\n\n"
        + table(head, pts)
        + f"\n\n![{res['header']['artefact']} {preset}]"
        f"({res['figure']})\n"
    )


def section_hysteresis(res: dict, preset: str, dis: list[str]) -> str:
    sp, fs = res["theory_ek_spinodals"], res["theory_finite_spinodals"]
    ml = res["measured_window_located"]
    rows = [
        [
            "lower edge (copy start survives)",
            _measured_text(ml["lower"]),
            f(sp[0] if sp else None),
            f(fs[0]),
            pct(res["rel_err"]["lower_vs_ek"]),
            pct(res["rel_err"]["lower_vs_finite"]),
        ],
        [
            "upper edge (pooling start jumps)",
            _measured_text(ml["upper"]),
            f(sp[1] if sp else None),
            f(fs[1]),
            pct(res["rel_err"]["upper_vs_ek"]),
            pct(res["rel_err"]["upper_vs_finite"]),
        ],
    ]
    for k, err in res["rel_err"].items():
        if disagrees(err) and k != "single_vs_ek_upper_spinodal":
            dis.append(f"**{preset}, hysteresis {k}**: {pct(err)}.")
    lin = res.get("linear")
    lin_txt = "not measured"
    if lin:
        per = ", ".join(f"{p}: {d:.2f}" for p, d in zip(lin["P"], lin["dcG"]))
        sec = lin.get("theory_ek_second_minimum") or {}
        sP = [p for p, c in zip(sec.get("P", []), sec.get("cG", [])) if c is not None]
        meta = (
            f"the EK linear potential has a second, metastable minimum (anti-copy, cG < 0) for "
            f"P >= {f(min(sP))} on its grid"
            if sP
            else "the EK linear potential has one minimum"
        )
        lin_txt = (
            f"|cG(prior start) - cG(copy start)| per P (seed mean): {per}; max "
            f"{lin['max_abs_dcG']:.3g}; runs where the prior start ended on the anti-copy branch "
            f"(P, seed): {lin.get('anti_copy_landings') or 'none'}; max gap on the same branch "
            f"{f(lin.get('max_abs_dcG_same_branch'))}; {meta}"
        )
        same = lin.get("max_abs_dcG_same_branch")
        if same is not None and same > 0.1:
            dis.append(
                f"**{preset}, linear hysteresis**: the prior and copy starts differ by up to "
                f"{same:.3g} in cG on the same branch (theory: no hysteresis of the copy "
                "transition)."
            )
        if lin.get("anti_copy_landings"):
            dis.append(
                f"**{preset}, linear metastability**: prior starts ended on the anti-copy branch "
                f"(cG < 0) at (P, seed) = {lin['anti_copy_landings']}; {meta}. 'Linear attention "
                "shows no hysteresis' holds for the copy transition only."
            )
    head = [
        "",
        "measured P [bracket]",
        "EK spinodal",
        "finite-width spinodal",
        "vs EK",
        "vs finite",
    ]
    return (
        f"### {preset} preset\n\n{table(head, rows)}\n\nSingle-start jump: "
        f"{_measured_text(res['single_start_jump'])}. Linear attention: {lin_txt}.\n\n"
        f"![hysteresis {preset}]({res['figure']})\n"
    )


def environment_text(results: list[dict]) -> str:
    if not results:
        return ""
    env = results[0]["header"]["environment"]
    import os

    v = ", ".join(f"{k} {x}" for k, x in env["versions"].items() if x)
    return (
        f"- Hardware: {env['platform']} ({env['machine']}), {os.cpu_count()} CPU cores visible, "
        f"JAX backend `{env['backend']}`; runtimes are those of the run that wrote each JSON (the "
        f"whole suite's cold time, and the load it ran under: `experiments/README.md`).\n"
        f"- Python {env['python']}; {v}.\n"
    )


# ---------------------------------------------------------------------------------------------
# Confidence intervals over seeds, per width (the default mode: widths 10,000 and inf)


def ci_text(ci: dict | None) -> str:
    """``estimate [lo, hi] (n/N)`` of a :func:`copyhead_jax.compare.bootstrap_ci` dict."""
    if ci and ci.get("estimate") is None and ci.get("side"):
        n_all = ci.get("n_missing", 0)
        rel = "<" if ci["side"] == "below" else ">"
        return f"{rel} {f(ci.get('edge'), 4)} (outside the grid, {n_all} seeds)"
    if not ci or ci.get("estimate") is None:
        n_all = (ci or {}).get("n_missing", 0)
        return f"not located on the grid (0/{n_all} seeds)" if n_all else "n/a"
    n, n_all = ci["n"], ci["n"] + ci["n_missing"]
    seeds = "" if n == n_all else f" ({n}/{n_all} seeds)"
    if n == 1:
        return f"{f(ci['estimate'], 4)}{seeds}"
    return f"{f(ci['estimate'], 4)} [{f(ci['lo'], 4)}, {f(ci['hi'], 4)}]{seeds}"


def width_name(w: str) -> str:
    return "inf" if w == "inf" else f"{int(w):,}"


def _ci_rows_by_key(res: dict) -> tuple[list[str], dict[str, dict[str, dict]]]:
    """The main width's and width infinity's CI rows by key (the other widths, 128 and 1,024,
    are the width table's, :func:`section_width`)."""
    widths = list(res.get("widths") or {})
    widths = [w for w in widths if w in (res.get("width"), "inf")] or widths
    by = {w: {r["key"]: r for r in res["widths"][w]["ci_table"]} for w in widths}
    return widths, by


def section_ci(res: dict, preset: str, dis: list[str]) -> str:
    """Every P* by exact MAP, per width: measured and finite-width theory as the geometric mean
    over seeds with a 95% bootstrap CI, against the EK theory and the paper."""
    if not res.get("widths"):
        return ""
    widths, by = _ci_rows_by_key(res)
    keys = [r["key"] for r in by[widths[0]].values()]
    head = ["P*", "EK theory"]
    for w in widths:
        head += [f"finite theory, N = {width_name(w)}", f"measured, N = {width_name(w)}"]
    head += ["paper"]
    rows = []
    for k in keys:
        r0 = by[widths[0]][k]
        row = [f"{k}: {r0['what']}", f(r0["theory_ek"], 4)]
        for w in widths:
            r = by[w][k]
            row += [ci_text(r["theory_finite"]), ci_text(r["measured"])]
            m = r["measured"]
            for which, ref in (("EK", r["theory_ek"]), ("finite-width", r["theory_finite"])):
                val = ref.get("estimate") if isinstance(ref, dict) else ref
                err = rel_err(m.get("estimate"), val)
                if disagrees(err):
                    dis.append(
                        f"**{preset}, {k}, width {width_name(w)} (exact MAP, {m['n']} seeds)**: "
                        f"measured {ci_text(m)} vs {which} theory {f(val)} ({pct(err)})."
                    )
        row.append(f(r0["paper"]))
        rows.append(row)
    claims = []
    grid = ch.preset("paper").sweep.P
    for k in keys:
        r0 = by[widths[0]][k]
        if not r0["paper"]:
            continue
        for w in widths:
            m = by[w][k]["measured"]
            j = judge(m.get("lo"), m.get("hi"), r0["paper"], grid_band(r0["paper"], grid))
            claims.append(
                f"- The paper's {k} ~ {f(r0['paper'])} at width {width_name(w)}, `{preset}` "
                f"reading: measured {ci_text(m)}: **{verdict_text(j)}** (the rule and every "
                "reading: the claims x readings matrix above)."
            )
    return (
        f"#### {preset} preset: every P* by exact MAP, geometric mean over seeds [95% bootstrap CI "
        f"over seeds]\n\nMeasured: each seed's P* located on its own runs (same locators as "
        f"above); finite theory: docs/theory.md §2b on each seed's Gram and training set, located "
        f"the same way. Seeds where a point is not bracketed by the grid are left out and "
        f"counted.\n\n"
        f"{table(head, rows)}\n\n" + "\n".join(claims) + "\n"
    )


def readme_table(mains: dict[str, dict]) -> str:
    """The reproduction table of docs/reports/README.md: per preset, EK theory / finite theory /
    measured [CI] at each width, and the paper's number (``mains``: preset -> main JSON)."""
    keys = ("P_c1", "P_cG", "P_aG", "P_aG_single", "window_lo")
    label = {
        "P_c1": "linear pooling onset P*_c1",
        "P_cG": "linear copy crossover P*_cG (max dpsi/dlog P)",
        "P_aG": "softmax copy transition P*_aG (U crossing of the two branches)",
        "P_aG_single": "softmax pooling-branch jump vs upper spinodal",
        "window_lo": "softmax copy branch lost vs lower spinodal",
    }
    blocks = []
    for preset, res in mains.items():
        if not res or not res.get("widths"):
            continue
        widths, by = _ci_rows_by_key(res)
        e = res["header"]["engine"]
        head = ["", "EK theory"]
        for w in widths:
            head += [f"N = {width_name(w)}: finite theory", f"N = {width_name(w)}: measured"]
        head.append("paper reports")
        rows = []
        for k in keys:
            if k not in by[widths[0]]:
                continue
            r0 = by[widths[0]][k]
            row = [label[k], f(r0["theory_ek"], 4)]
            for w in widths:
                r = by[w][k]
                row += [ci_text(r["theory_finite"]), ci_text(r["measured"])]
            row.append("~" + f(r0["paper"]) if r0["paper"] else "-")
            rows.append(row)
        blocks.append(
            f"**{preset} preset** (L = {e['task']['L']}, V = {e['task']['V']}, "
            f"{e['sweep']['n_seeds']} seeds, solver {e['train']['solver']}, engine "
            f"{e['model']['engine']}):\n\n{table(head, rows)}\n"
        )
    return "\n".join(blocks)


# ---------------------------------------------------------------------------------------------
# The width table


def _ratio_pct(x) -> str:
    return "n/a" if x is None else f"{100 * (x - 1):+.0f}%"


def section_width(res: dict, dis: list[str]) -> str:
    """The width table of one preset (``analysis.width_result``): every P* at each width,
    measured and finite theory, and the old width-128 disagreements split into protocol,
    finite width and what remains at infinite width."""
    widths, preset = res["widths"], res["preset"]
    head = ["P*", "EK theory"]
    head += [f"N = {width_name(w)}: measured" for w in widths]
    head += [f"N = {width_name(w)}: finite theory" for w in widths if w in ("128", "inf")]
    rows = []
    for r in res["rows"]:
        row = [f"{r['key']}: {r['what']}", f(r["theory_ek"], 4)]
        row += [ci_text(r["measured"][w]) for w in widths]
        row += [ci_text(r["theory_finite"][w]) for w in widths if w in ("128", "inf")]
        rows.append(row)
    ref = res.get("reference_128") or {}
    big = widths[-1]
    B = width_name(big)
    dec_head = [
        "P*",
        "old N = 128 (Adam) vs EK",
        *(f"exact MAP N = {width_name(w)} vs EK" for w in widths),
        "protocol: old / MAP_128",
        f"finite width: MAP_128 / MAP_{B}",
        f"left at N = {B}: MAP_{B} / EK",
        "share of the old log-error that was finite width",
    ]
    dec = []
    for r in res["rows"]:
        d = r.get("reference_128")
        if not d:
            continue
        fa, sh = d["factors"], d["log_share"]
        share = sh.get("finite_width")
        old_off = disagrees(d["rel_err_ek"])
        dec.append(
            [
                r["key"],
                f"{f(d['measured'], 4)} ({pct(d['rel_err_ek'])})",
                *(pct(r["rel_err_ek"].get(w)) for w in widths),
                _ratio_pct(fa.get("protocol")),
                _ratio_pct(fa.get("finite_width")),
                _ratio_pct(fa.get("infinite_width")),
                "n/a" if share is None else f"{100 * share:.0f}%" if old_off else "(agreed)",
            ]
        )
        e128 = r["rel_err_ek"].get("128")
        if disagrees(e128):
            dis.append(
                f"**{preset}, {r['key']}, width 128 (exact MAP, {res['n_seeds']} seeds)**: "
                f"measured {ci_text(r['measured']['128'])} vs EK theory {f(r['theory_ek'])} "
                f"({pct(e128)}); at width inf {pct(r['rel_err_ek'].get('inf'))}."
            )
    text = (
        f"### {preset} preset\n\nEvery P* by exact MAP at each width (same 10 seeds, data and "
        "grids; the reduced engine on each seed's realised embedding Gram at that width, the "
        "prior's Gram at infinity), geometric mean over seeds [95% bootstrap CI]; the finite "
        "theory (docs/theory.md §2b) on the same Grams and data.\n\n"
        f"{table(head, rows)}\n\n![width {preset}](figures/width_{preset}.png)\n"
    )
    if dec:
        text += (
            f"\nThe width-128 numbers this page reported before the default mode existed "
            f"(`--quick`: full-width muP Adam, {ref.get('n_seeds')} seed(s), commit "
            f"{ref.get('commit')}) against the EK theory, split multiplicatively: old / EK = "
            f"(old / MAP_128) x (MAP_128 / MAP_{B}) x (MAP_{B} / EK): the protocol (Adam "
            "instead of the exact MAP, fewer seeds, another grid), finite width (the exact MAP "
            f"at width 128 against width {B}, same seeds) and what is left at infinite "
            + ("width" if big == "inf" else f"width (here N = {B}: infinity was not measured)")
            + ". The last column is the "
            "finite-width factor's share of log(old / EK), for the old numbers that disagreed "
            "by more than the reporting threshold (shares "
            "of the three factors add up to 100%; a negative share means width 128 moved P* "
            "the other way).\n\n" + table(dec_head, dec) + "\n"
        )
    return text
