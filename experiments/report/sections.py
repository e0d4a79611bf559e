"""The sections of ``results.md``, one function per artefact: each returns its markdown and
appends what disagrees beyond the reporting thresholds (``copyhead_jax.compare``) to ``dis``
and what was out of reach to ``reach``."""

from __future__ import annotations

import os

import copyhead_jax as ch
from copyhead_jax.compare import GROWTH_TOL, disagrees, rel_err
from copyhead_jax.compare.claims import grid_band, judge, verdict_text
from copyhead_jax.compare.paper import PAPER_MEASURED
from copyhead_jax.compare.warning import signal_of

from .. import posterior_column
from .tables import ci_text, measured_text, num, pct, reach_text, table, width_name

MAIN_HEAD = ["mechanism", "theoretical scaling", "theory P* (EK)", "theory P* (finite width)",
             "measured P* [bracket]", "rel. err. vs EK", "rel. err. vs finite", "order",
             "loss pattern (per sequence)", "posterior: early warning, P* "
             "(docs/reports/posterior.md; SGLD where run)"]  # fmt: skip


def warning_text(ew: dict | None) -> str:
    """One early-warning result (:func:`copyhead_jax.compare.early_warning`) in words."""
    ci = (ew or {}).get("var_ratio_ci")
    if not ci:
        return f"n/a ({(ew or {}).get('reason') or 'no posterior'})"
    lo, hi = (ew.get("window") or (0.5, 0.9))[:2]
    return (f"Var x{num(ew['var_ratio'])} [{num(ci[0])}, {num(ci[1])}] from {lo:g} to {hi:g} P* "
            f"({ew['n_seeds']} seeds): {signal_of(ci)} (threshold x{GROWTH_TOL:g})")  # fmt: skip


def section_main(res: dict, preset: str, dis: list, reach: list, post: dict | None = None) -> str:
    """The main table; ``post``: the preset's posterior result (``posterior_column.load``),
    whose early-warning verdicts and transition points fill the last column where run."""
    e = res["header"]["engine"]
    rows = []
    for r in res["table"]:
        key, ew = r["key"], r.get("early_warning") or {}
        rows.append([f"{r['attention']}: {r['mechanism']}", r["scaling_law"], num(r["theory_ek"]),
                     num(r["theory_finite"]), r["measured_text"], pct(r["rel_err_ek"]),
                     pct(r["rel_err_finite"]),
                     f"{r['order_theory']}; measured: {r['order_measured'] or 'n/a'}",
                     r.get("loss_pattern") or "n/a",
                     posterior_column.cell(post, key) or warning_text(ew)])  # fmt: skip
        for which, err, t in (("EK", r["rel_err_ek"], r["theory_ek"]), ("finite-width",
                              r["rel_err_finite"], r["theory_finite"])):  # fmt: skip
            if disagrees(err):
                dis.append(f"**{preset}, {key}**: measured {num(r['measured'])} vs {which} "
                           f"theory {num(t)} ({pct(err)}).")  # fmt: skip
        if not r["bracketed"]:
            reach.append(f"{preset}, main, {key}: measured {r['measured_text']} (theory "
                         f"EK {num(r['theory_ek'])}, finite width "
                         f"{num(r['theory_finite'])}).")  # fmt: skip
        # the paper: a signal before the linear transitions, none before the softmax jump
        want = "signal" if key in ("P_c1", "P_cG") else "no signal"
        for name, v in (("SGLD", ew), ("posterior", posterior_column.verdict(post, key))):
            if (signal_of(v.get("var_ratio_ci")) if v else "undetermined") not in (
                want, "undetermined"):  # fmt: skip
                dis.append(f"**{preset}, early warning before {key} ({name})**: "
                           f"{warning_text(v)} (paper: {want}).")  # fmt: skip
    m, ek, post_ek = res["measured"], res["theory_ek_points"], res["theory_ek_points_post"]
    sj, sp = m.get("P_aG_single", {}), ek.get("spinodals") or (None, None)
    extra = [
        f"- Single-start jump of a_G (pooling-branch start only): {measured_text(sj)}; theory "
        f"upper spinodal (EK) {num(sp[1])} ({pct(rel_err(sj.get('P_star'), sp[1]))}).",
        f"- psi = 1/2 (secondary marker of the crossover): measured "
        f"{measured_text(m.get('P_cG_half'))}; EK {num(ek.get('P_cG_half'))}.",
        f"- Coexistence window from the two starts: [{measured_text(res['window']['lower'])}, "
        f"{measured_text(res['window']['upper'])}]; EK spinodals {num(sp[0])} .. {num(sp[1])}.",
        f"- Posterior (SGLD) EK points: P_c1 {num(post_ek.get('P_c1'))}, P_cG "
        f"{num(post_ek.get('P_cG'))}, P_aG {num(post_ek.get('P_aG'))} (the Occam term D moves "
        "every P* up).",
        *_crossing_bound(m.get("P_aG") or {}, res["window"]["lower"], ek),
        _stationarity(res["curves"]),
        *_continuation(res),
        f"- Reach on this CPU (largest P whose run fits the per-run budget): linear "
        f"{reach_text(res['reach']['linear_P_cap'])}, softmax "
        f"{reach_text(res['reach']['softmax_P_cap'])}; sweep compute "
        f"{res['sweep_seconds']:.0f} s (runs reused from the cache included).",
    ]
    for k, pm in PAPER_MEASURED.items() if preset == "paper" else ():
        if ek.get(k) is not None and disagrees(rel_err(pm, ek[k])):
            dis.append(f"**paper's table vs this theory (paper preset), {k}**: the paper reports "
                       f"P ~ {pm:g}, the EK theory of docs/theory.md gives {num(ek[k])} "
                       f"({pct(rel_err(pm, ek[k]))}).")  # fmt: skip
    return (f"### {preset} preset (L = {e['task']['L']}, V = {e['task']['V']}, width "
            f"{e['model']['width']}, {e['sweep']['n_seeds']} seed(s))\n\n"
            f"{table(MAIN_HEAD, rows)}\n\n" + "\n".join(extra)
            + f"\n\n![main {preset}]({res['figure']})\n")  # fmt: skip


def _crossing_bound(cross: dict, lower: dict, ek: dict) -> list[str]:
    """When U of the two starts does not cross where both stay distinct, the crossing lies
    between the lower coexistence edge and the first distinct P: say so with numbers."""
    edge = (cross.get("detail") or {}).get("edge")
    if cross.get("bracketed") or cross.get("side") != "below" or edge is None:
        return []
    if not lower or not lower.get("bracketed"):
        return []
    lo, t = lower["bracket"][0], ek.get("P_aG")
    return [f"- P_aG (U crossing): the copy start is already lower in U at the first P where "
            f"both starts stay distinct ({num(edge)}), and the copy branch does not survive below "
            f"the lower coexistence edge {measured_text(lower)}: the crossing lies in "
            f"[{num(lo)}, {num(edge)}] (EK {num(t)}, {pct(rel_err(lo, t))} .. "
            f"{pct(rel_err(edge, t))})."]  # fmt: skip


def _continuation(res: dict) -> list[str]:
    """The linear continuation in P: runs whose own (prior-draw) start was not the lowest
    minimum reached, and the largest seed-mean U gap."""
    c = res["curves"]["linear"]
    moved = c.get("seeds_moved")
    if moved is None:
        return []
    n = res["header"]["engine"]["sweep"]["n_seeds"]
    gap = [a - b for a, b in zip(c["U_own_start"], c["U"]) if a is not None and b is not None]
    where = ", ".join(f"{p}: {m}" for p, m in zip(c["P"], moved) if m) or "none"
    return [f"- Linear continuation in P (`exact_continuation`): runs where a neighbouring P's "
            f"fit led to a lower minimum than the run's own prior-draw start, {sum(moved)} of "
            f"{len(moved) * n} (seeds per P: {where}); largest seed-mean U gap "
            f"{num(max(gap) if gap else 0.0)}."]  # fmt: skip


def _stationarity(curves: dict) -> str:
    """How stationary the fits are: the exact solver's gradient and Hessian, or Adam's."""
    exact = "min_eig" in curves["linear"]
    parts = []
    for k in ("linear", "pool", "copy"):
        c = curves[k]
        if exact:
            g, e, ok = ([x for x in c.get(n, []) if x is not None]
                        for n in ("rel_grad", "min_eig", "converged"))  # fmt: skip
            if g:
                parts.append(f"{k}: max rel. |grad U| {num(max(g))}, converged fraction (min "
                             f"over P) {num(min(ok))}, smallest Hessian eigenvalue (seed mean, "
                             f"min over P) {num(min(e))}")  # fmt: skip
        else:
            g, ep = ([x for x in c.get(n, []) if x is not None]
                     for n in ("grad_norm_span", "stop_epoch"))  # fmt: skip
            if g:
                parts.append(f"{k}: max |grad U|_span {num(max(g))}, stop epochs "
                             f"{num(min(ep))}-{num(max(ep))}")  # fmt: skip
    if exact:
        return "- Exact MAP (solver 'exact'): " + "; ".join(parts)
    return ("- Stationarity of the Adam runs (mean over seeds per P, max over P): "
            + "; ".join(parts))  # fmt: skip


def section_coverage(res: dict, preset: str, dis: list[str]) -> str:
    fit = "MAP" if res["header"]["engine"]["train"].get("solver") == "exact" else "Adam"
    two = lambda d: f"{num(d['min'])} / {num(d['mean'])}"  # noqa: E731
    rows = []
    for r in res["table"]:
        a, g = r["adam_mean_A"], r["sgld"]
        rows.append([r["attention"], r["regime"], f"{r['P_range'][0]}-{r['P_range'][1]}", two(a),
                     two(r["adam_per_sample"]), two(g) if g["n"] else "n/a",
                     f"{r['boundary']}: {pct(r['boundary_err_ek'])} / "
                     f"{pct(r['boundary_err_finite'])}", r["paper"]])  # fmt: skip
        claim = 0.998 if r["attention"] == "softmax" else 0.985
        if r["attention"] == "softmax" or not r["regime"].startswith("crossover"):
            if a["min"] is not None and a["min"] < claim:
                dis.append(f"**{preset}, coverage, {r['attention']} {r['regime']}**: MAP mean-A "
                           f"coverage down to {num(a['min'])} (paper: > {claim:.1%}).")  # fmt: skip
    a1 = ", ".join(f"{x['attention']} P={x['P']}: per-sample {x['per_sample']:.2f} (mean-A "
                   f"{x['mean_A']:.2f})" for x in res["a1_failures"]) or "none"  # fmt: skip
    head = ["attention", "regime (EK)", "P", f"{fit} mean-A min / mean",
            f"{fit} per-sample min / mean", "SGLD min / mean", "boundary err. vs EK / finite",
            "paper"]  # fmt: skip
    return (f"### {preset} preset\n\n{table(head, rows)}\n\nApproximation A1 (token-independent "
            f"logits) fails where the per-sample coverage is below {res['a1_threshold']}: {a1}."
            f"\n\n![coverage {preset}]({res['figure']})\n")  # fmt: skip


def _exponent(d: dict) -> str:
    if d["exponent"] is None:
        return "n/a"
    ci = d.get("ci")
    ci = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{d['exponent']:.2f}{ci} (n={d['n']})"


def section_scaling(res: dict, preset: str, dis: list[str], reach: list[str]) -> str:
    axis, art = res["axis"], res["header"]["artefact"]
    fits = []
    for k, fit in res["fits"].items():
        fits.append([k, fit["paper_law"], f"{fit['paper_exponent']:.2f}", *(_exponent(fit[w])
                     for w in ("theory_ek", "theory_finite", "measured"))])  # fmt: skip
        pe, me, law = fit["paper_exponent"], fit["measured"], fit["paper_law"]
        ci = me.get("ci")
        if me["exponent"] is not None and (abs(me["exponent"] - pe) > 0.3 if ci is None
                                           else not ci[0] <= pe <= ci[1]):  # fmt: skip
            dis.append(f"**{preset}, {k} versus {axis}**: measured exponent {me['exponent']:.2f}"
                       f"{'' if ci is None else f' [{ci[0]:.2f}, {ci[1]:.2f}]'} vs the paper's "
                       f"{law} ({pe:.2f} over this range).")  # fmt: skip
        te = fit["theory_ek"]["exponent"]
        if te is not None and abs(te - pe) > 0.3:
            dis.append(f"**{preset}, {k} versus {axis}, theory vs paper**: EK exponent {te:.2f} "
                       f"vs the paper's {law} ({pe:.2f} over this range).")  # fmt: skip
    pts = []
    for r in res["rows"]:
        n = r.get("n_seeds")
        cells = [f"{r['value']}" + (f" ({n} seeds)" if n else "")]
        for k in ("P_c1", "P_cG", "P_aG", "P_aG_single"):
            tk = "spinodal_hi" if k == "P_aG_single" else k
            m = r["measured"].get(k)
            cells.append(f"{num(r['theory_ek'].get(tk))} / "
                         f"{num((r.get('theory_finite') or {}).get(tk))} / "
                         f"{measured_text(m) if m else 'not measured'}")  # fmt: skip
            if m is not None and not m.get("bracketed") and k != "P_aG_single":
                cap = r.get("reach", {}).get(k, {}).get("P_cap")
                reach.append(f"{preset}, {art}, {axis}={r['value']}, {k}: {measured_text(m)}; "
                             f"theory {num(r['theory_ek'].get(k))}; largest P in reach: "
                             f"{reach_text(cap)}.")  # fmt: skip
        pts.append(cells)
    head = [axis, *(f"{k}: EK / finite / measured" for k in ("P_c1", "P_cG", "P_aG")),
            "single-start jump: EK / finite upper spinodal / measured"]  # fmt: skip
    fit_head = ["P*", "paper law", "paper exponent (this range)", "EK exponent [95% CI]",
                "finite-width exponent", "measured exponent [95% CI]"]  # fmt: skip
    fixed = ", ".join(f"{k} = {v}" for k, v in res["fixed"].items())
    return (f"### {preset} preset, P* versus {axis} ({fixed})\n\n{table(fit_head, fits)}\n\n"
            f"{table(head, pts)}\n\n![{art} {preset}]({res['figure']})\n")  # fmt: skip


def section_hysteresis(res: dict, preset: str, dis: list[str]) -> str:
    sp, fs, err = res["theory_ek_spinodals"], res["theory_finite_spinodals"], res["rel_err"]
    rows = [[name, measured_text(res["measured_window_located"][side]),
             num(sp[i] if sp else None), num(fs[i]), pct(err[f"{side}_vs_ek"]),
             pct(err[f"{side}_vs_finite"])]
            for i, side, name in ((0, "lower", "lower edge (copy start survives)"),
                                  (1, "upper", "upper edge (pooling start jumps)"))]  # fmt: skip
    for k, e in err.items():
        if disagrees(e) and k != "single_vs_ek_upper_spinodal":
            dis.append(f"**{preset}, hysteresis {k}**: {pct(e)}.")
    lin, lin_txt = res.get("linear"), "not measured"
    if lin:
        per = ", ".join(f"{p}: {d:.2f}" for p, d in zip(lin["P"], lin["dcG"]))
        sec = lin.get("theory_ek_second_minimum") or {}
        sP = [p for p, c in zip(sec.get("P", []), sec.get("cG", [])) if c is not None]
        meta = (f"the EK linear potential has a second, metastable minimum (anti-copy, cG < 0) "
                f"for P >= {num(min(sP))} on its grid" if sP
                else "the EK linear potential has one minimum")  # fmt: skip
        same, anti = lin.get("max_abs_dcG_same_branch"), lin.get("anti_copy_landings")
        lin_txt = (f"|cG(prior start) - cG(copy start)| per P (seed mean): {per}; max "
                   f"{lin['max_abs_dcG']:.3g}; runs where the prior start ended on the anti-copy "
                   f"branch (P, seed): {anti or 'none'}; max gap on the same branch "
                   f"{num(same)}; {meta}")  # fmt: skip
        if same is not None and same > 0.1:
            dis.append(f"**{preset}, linear hysteresis**: the prior and copy starts differ by up "
                       f"to {same:.3g} in cG on the same branch (theory: no hysteresis of the "
                       "copy transition).")  # fmt: skip
        if anti:
            dis.append(f"**{preset}, linear metastability**: prior starts ended on the anti-copy "
                       f"branch (cG < 0) at (P, seed) = {anti}; {meta}. 'Linear attention shows "
                       "no hysteresis' holds for the copy transition only.")  # fmt: skip
    head = ["", "measured P [bracket]", "EK spinodal", "finite-width spinodal", "vs EK",
            "vs finite"]  # fmt: skip
    return (f"### {preset} preset\n\n{table(head, rows)}\n\nSingle-start jump: "
            f"{measured_text(res['single_start_jump'])}. Linear attention: {lin_txt}.\n\n"
            f"![hysteresis {preset}]({res['figure']})\n")  # fmt: skip


def environment_text(results: list[dict]) -> str:
    if not results:
        return ""
    env = results[0]["header"]["environment"]
    v = ", ".join(f"{k} {x}" for k, x in env["versions"].items() if x)
    return (f"- Hardware: {env['platform']} ({env['machine']}), {os.cpu_count()} CPU cores "
            f"visible, JAX backend `{env['backend']}`; runtimes are those of the run that wrote "
            "each JSON (the whole suite's cold time, and the load it ran under: "
            f"`experiments/README.md`).\n- Python {env['python']}; {v}.\n")  # fmt: skip


def _ci_rows(res: dict) -> tuple[list[str], dict[str, dict[str, dict]]]:
    """The main width's and width infinity's CI rows by key (the other widths, 128 and 1,024,
    are the width table's, :func:`section_width`)."""
    widths = list(res.get("widths") or {})
    widths = [w for w in widths if w in (res.get("width"), "inf")] or widths
    return widths, {w: {r["key"]: r for r in res["widths"][w]["ci_table"]} for w in widths}


def _ci_cells(by: dict, widths: list[str], k: str) -> list[str]:
    return [ci_text(by[w][k][x]) for w in widths for x in ("theory_finite", "measured")]


def section_ci(res: dict, preset: str, dis: list[str]) -> str:
    """Every P* by exact MAP, per width: measured and finite-width theory as the geometric mean
    over seeds with a 95% bootstrap CI, against the EK theory and the paper."""
    if not res.get("widths"):
        return ""
    widths, by = _ci_rows(res)
    keys = list(by[widths[0]])
    head = ["P*", "EK theory"]
    for w in widths:
        head += [f"finite theory, N = {width_name(w)}", f"measured, N = {width_name(w)}"]
    rows, claims = [], []
    grid = ch.preset("paper").sweep.P
    for k in keys:
        r0 = by[widths[0]][k]
        rows.append([f"{k}: {r0['what']}", num(r0["theory_ek"], 4), *_ci_cells(by, widths, k),
                     num(r0["paper"])])  # fmt: skip
        for w in widths:
            r, m = by[w][k], by[w][k]["measured"]
            for which, ref in (("EK", r["theory_ek"]), ("finite-width", r["theory_finite"])):
                val = ref.get("estimate") if isinstance(ref, dict) else ref
                err = rel_err(m.get("estimate"), val)
                if disagrees(err):
                    dis.append(f"**{preset}, {k}, width {width_name(w)} (exact MAP, {m['n']} "
                               f"seeds)**: measured {ci_text(m)} vs {which} theory {num(val)} "
                               f"({pct(err)}).")  # fmt: skip
    for k in keys:
        paper = by[widths[0]][k]["paper"]
        for w in widths if paper else ():
            m = by[w][k]["measured"]
            j = judge(m.get("lo"), m.get("hi"), paper, grid_band(paper, grid))
            claims.append(f"- The paper's {k} ~ {num(paper)} at width {width_name(w)}, `{preset}` "
                          f"reading: measured {ci_text(m)}: **{verdict_text(j)}** (the rule and "
                          "every reading: the claims x readings matrix above).")  # fmt: skip
    return (f"#### {preset} preset: every P* by exact MAP, geometric mean over seeds [95% "
            "bootstrap CI over seeds]\n\nMeasured: each seed's P* located on its own runs (same "
            "locators as above); finite theory: docs/theory.md §2b on each seed's Gram and "
            "training set, located the same way. Seeds where a point is not bracketed by the grid "
            f"are left out and counted.\n\n{table([*head, 'paper'], rows)}\n\n"
            + "\n".join(claims) + "\n")  # fmt: skip


README_LABELS = {
    "P_c1": "linear pooling onset P*_c1",
    "P_cG": "linear copy crossover P*_cG (max dpsi/dlog P)",
    "P_aG": "softmax copy transition P*_aG (U crossing of the two branches)",
    "P_aG_single": "softmax pooling-branch jump vs upper spinodal",
    "window_lo": "softmax copy branch lost vs lower spinodal",
}


def readme_table(mains: dict[str, dict]) -> str:
    """The reproduction table of docs/reports/README.md: per preset, EK theory / finite theory /
    measured [CI] at each width, and the paper's number (``mains``: preset -> main JSON)."""
    blocks = []
    for preset, res in mains.items():
        if not res or not res.get("widths"):
            continue
        widths, by = _ci_rows(res)
        e = res["header"]["engine"]
        head = ["", "EK theory"]
        for w in widths:
            head += [f"N = {width_name(w)}: finite theory", f"N = {width_name(w)}: measured"]
        rows = [[label, num(by[widths[0]][k]["theory_ek"], 4), *_ci_cells(by, widths, k),
                 "~" + num(by[widths[0]][k]["paper"]) if by[widths[0]][k]["paper"] else "-"]
                for k, label in README_LABELS.items() if k in by[widths[0]]]  # fmt: skip
        blocks.append(f"**{preset} preset** (L = {e['task']['L']}, V = {e['task']['V']}, "
                      f"{e['sweep']['n_seeds']} seeds, solver {e['train']['solver']}, engine "
                      f"{e['model']['engine']}):\n\n"
                      f"{table([*head, 'paper reports'], rows)}\n")  # fmt: skip
    return "\n".join(blocks)


def _ratio(x) -> str:
    return "n/a" if x is None else f"{100 * (x - 1):+.0f}%"


def section_width(res: dict, dis: list[str]) -> str:
    """The width table of one preset (``analysis.width_result``): every P* at each width,
    measured and finite theory, and the old width-128 disagreements split into protocol,
    finite width and what remains at infinite width."""
    widths, preset = res["widths"], res["preset"]
    theory_w = [w for w in widths if w in ("128", "inf")]
    head = ["P*", "EK theory", *(f"N = {width_name(w)}: measured" for w in widths),
            *(f"N = {width_name(w)}: finite theory" for w in theory_w)]  # fmt: skip
    rows = [[f"{r['key']}: {r['what']}", num(r["theory_ek"], 4),
             *(ci_text(r["measured"][w]) for w in widths),
             *(ci_text(r["theory_finite"][w]) for w in theory_w)] for r in res["rows"]]  # fmt: skip
    big = widths[-1]
    B = width_name(big)
    dec_head = ["P*", "old N = 128 (Adam) vs EK",
                *(f"exact MAP N = {width_name(w)} vs EK" for w in widths),
                "protocol: old / MAP_128", f"finite width: MAP_128 / MAP_{B}",
                f"left at N = {B}: MAP_{B} / EK",
                "share of the old log-error that was finite width"]  # fmt: skip
    dec = []
    for r in res["rows"]:
        d = r.get("reference_128")
        if not d:
            continue
        fa, share = d["factors"], d["log_share"].get("finite_width")
        dec.append([r["key"], f"{num(d['measured'], 4)} ({pct(d['rel_err_ek'])})",
                    *(pct(r["rel_err_ek"].get(w)) for w in widths),
                    *(_ratio(fa.get(x)) for x in ("protocol", "finite_width", "infinite_width")),
                    "n/a" if share is None else f"{100 * share:.0f}%"
                    if disagrees(d["rel_err_ek"]) else "(agreed)"])  # fmt: skip
        e128 = r["rel_err_ek"].get("128")
        if disagrees(e128):
            dis.append(f"**{preset}, {r['key']}, width 128 (exact MAP, {res['n_seeds']} seeds)**: "
                       f"measured {ci_text(r['measured']['128'])} vs EK theory "
                       f"{num(r['theory_ek'])} ({pct(e128)}); at width inf "
                       f"{pct(r['rel_err_ek'].get('inf'))}.")  # fmt: skip
    text = (f"### {preset} preset\n\nEvery P* by exact MAP at each width (same 10 seeds, data and "
            "grids; the reduced engine on each seed's realised embedding Gram at that width, the "
            "prior's Gram at infinity), geometric mean over seeds [95% bootstrap CI]; the finite "
            "theory (docs/theory.md §2b) on the same Grams and data.\n\n"
            f"{table(head, rows)}\n\n![width {preset}](figures/width_{preset}.png)\n")  # fmt: skip
    if not dec:
        return text
    ref = res.get("reference_128") or {}
    left = "width" if big == "inf" else f"width (here N = {B}: infinity was not measured)"
    return text + (
        f"\nThe width-128 numbers this page reported before the default mode existed (`--quick`: "
        f"full-width muP Adam, {ref.get('n_seeds')} seed(s), commit {ref.get('commit')}) against "
        f"the EK theory, split multiplicatively: old / EK = (old / MAP_128) x (MAP_128 / MAP_{B}) "
        f"x (MAP_{B} / EK): the protocol (Adam instead of the exact MAP, fewer seeds, another "
        f"grid), finite width (the exact MAP at width 128 against width {B}, same seeds) and what "
        f"is left at infinite {left}. The last column is the finite-width factor's share of "
        "log(old / EK), for the old numbers that disagreed by more than the reporting threshold "
        "(shares of the three factors add up to 100%; a negative share means width 128 moved P* "
        f"the other way).\n\n{table(dec_head, dec)}\n"
    )
