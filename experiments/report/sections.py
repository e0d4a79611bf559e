"""The sections of ``results.md``, one function per artefact: each returns its markdown and
appends what disagrees beyond the reporting thresholds (``copyhead_jax.compare``) to ``dis``
and what was out of reach to ``reach``."""

from __future__ import annotations

import os

from copyhead_jax.compare import GROWTH_NULL, PAPER_MEASURED, disagrees, rel_err, signal_of
from copyhead_jax.compare import readings as RD
from copyhead_jax.models import head_class
from copyhead_jax.plots import solver_kind

from . import posterior_column
from .tables import measured_text, num, pct, reach_text, table

MAIN_HEAD = [
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


def warning_text(ew: dict | None) -> str:
    """One early-warning result (:func:`copyhead_jax.compare.early_warning`) in words."""
    ci = (ew or {}).get("var_ratio_ci")
    if not ci:
        return f"n/a ({(ew or {}).get('reason') or 'no posterior'})"
    lo, hi = (ew.get("window") or (0.5, 0.9))[:2]
    return (
        f"Var x{num(ew['var_ratio'])} [{num(ci[0])}, {num(ci[1])}] from {lo:g} to {hi:g} P* "
        f"({ew['n_seeds']} seeds): {signal_of(ci)} (threshold x{GROWTH_NULL:g})"
    )


def section_main(res: dict, preset: str, dis: list, reach: list, post: dict | None = None) -> str:
    """The main table; ``post``: the preset's posterior result (``posterior_column.load``),
    whose early-warning verdicts and transition points fill the last column where run."""
    e = res["header"]["engine"]
    rows = []
    for r in res["table"]:
        key, ew = r["key"], r.get("early_warning") or {}
        rows.append(
            [
                f"{r['attention']}: {r['mechanism']}",
                r["scaling_law"],
                num(r["theory_ek"]),
                num(r["theory_finite"]),
                r["measured_text"],
                pct(r["rel_err_ek"]),
                pct(r["rel_err_finite"]),
                f"{r['order_theory']}; measured: {r['order_measured'] or 'n/a'}",
                r.get("loss_pattern") or "n/a",
                posterior_column.cell(post, key) or warning_text(ew),
            ]
        )
        for which, err, t in (
            ("EK", r["rel_err_ek"], r["theory_ek"]),
            ("finite-width", r["rel_err_finite"], r["theory_finite"]),
        ):
            if disagrees(err):
                dis.append(
                    f"**{preset}, {key}**: measured {num(r['measured'])} vs {which} "
                    f"theory {num(t)} ({pct(err)})."
                )
        if not r["bracketed"]:
            reach.append(
                f"{preset}, main, {key}: measured {r['measured_text']} (theory "
                f"EK {num(r['theory_ek'])}, finite width "
                f"{num(r['theory_finite'])})."
            )
        # the paper: a signal before the linear transitions, none before the softmax jump
        want = "signal" if key in ("P_c1", "P_cG") else "no signal"
        for name, v in (("SGLD", ew), ("posterior", posterior_column.verdict(post, key))):
            if (signal_of(v.get("var_ratio_ci")) if v else "undetermined") not in (
                want,
                "undetermined",
            ):
                dis.append(
                    f"**{preset}, early warning before {key} ({name})**: "
                    f"{warning_text(v)} (paper: {want})."
                )
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
            dis.append(
                f"**paper's table vs this theory (paper preset), {k}**: the paper reports "
                f"P ~ {pm:g}, the EK theory of docs/theory.md gives {num(ek[k])} "
                f"({pct(rel_err(pm, ek[k]))})."
            )
    return (
        f"### {preset} preset (L = {e['task']['L']}, V = {e['task']['V']}, width "
        f"{e['model']['width']}, {e['sweep']['n_seeds']} seed(s))\n\n"
        f"{table(MAIN_HEAD, rows)}\n\n"
        + "\n".join(extra)
        + f"\n\n![main {preset}]({res['figure']})\n"
    )


def _crossing_bound(cross: dict, lower: dict, ek: dict) -> list[str]:
    """When U of the two starts does not cross where both stay distinct, the crossing lies
    between the lower coexistence edge and the first distinct P: say so with numbers."""
    edge = (cross.get("detail") or {}).get("edge")
    if cross.get("bracketed") or cross.get("side") != "below" or edge is None:
        return []
    if not lower or not lower.get("bracketed"):
        return []
    lo, t = lower["bracket"][0], ek.get("P_aG")
    return [
        f"- P_aG (U crossing): the copy start is already lower in U at the first P where "
        f"both starts stay distinct ({num(edge)}), and the copy branch does not survive below "
        f"the lower coexistence edge {measured_text(lower)}: the crossing lies in "
        f"[{num(lo)}, {num(edge)}] (EK {num(t)}, {pct(rel_err(lo, t))} .. "
        f"{pct(rel_err(edge, t))})."
    ]


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
    return [
        f"- Linear continuation in P (`ExactConfig.continuation`): runs where a neighbouring "
        f"P's fit led to a lower minimum than the run's own prior-draw start, {sum(moved)} of "
        f"{len(moved) * n} (seeds per P: {where}); largest seed-mean U gap "
        f"{num(max(gap) if gap else 0.0)}."
    ]


def _stationarity(curves: dict) -> str:
    """How stationary the fits are: the exact solver's gradient and Hessian, or Adam's."""
    exact = "min_eig" in curves["linear"]
    parts = []
    for k in ("linear", "pool", "copy"):
        c = curves[k]
        if exact:
            g, e, ok = (
                [x for x in c.get(n, []) if x is not None]
                for n in ("rel_grad", "min_eig", "converged")
            )
            if g:
                parts.append(
                    f"{k}: max rel. |grad U| {num(max(g))}, converged fraction (min "
                    f"over P) {num(min(ok))}, smallest Hessian eigenvalue (seed mean, "
                    f"min over P) {num(min(e))}"
                )
        else:
            g, ep = (
                [x for x in c.get(n, []) if x is not None] for n in ("grad_norm_span", "stop_epoch")
            )
            if g:
                parts.append(
                    f"{k}: max |grad U|_span {num(max(g))}, stop epochs "
                    f"{num(min(ep))}-{num(max(ep))}"
                )
    if exact:
        return "- Exact MAP (solver 'exact'): " + "; ".join(parts)
    return "- Stationarity of the Adam runs (mean over seeds per P, max over P): " + "; ".join(
        parts
    )


def section_coverage(res: dict, preset: str, dis: list[str]) -> str:
    fit = "MAP" if solver_kind(res) == "exact" else "Adam"
    two = lambda d: f"{num(d['min'])} / {num(d['mean'])}"  # noqa: E731
    rows = []
    for r in res["table"]:
        a, g = r["adam_mean_A"], r["sgld"]
        rows.append(
            [
                r["attention"],
                r["regime"],
                f"{r['P_range'][0]}-{r['P_range'][1]}",
                two(a),
                two(r["adam_per_sample"]),
                two(g) if g["n"] else "n/a",
                f"{r['boundary']}: {pct(r['boundary_err_ek'])} / {pct(r['boundary_err_finite'])}",
                r["paper"],
            ]
        )
        claim = RD.COVERAGE[r["attention"]]  # the paper's bound (its claims' text)
        if head_class(r["attention"]).two_branches or not r["regime"].startswith("crossover"):
            if a["min"] is not None and a["min"] < claim:
                dis.append(
                    f"**{preset}, coverage, {r['attention']} {r['regime']}**: MAP mean-A "
                    f"coverage down to {num(a['min'])} (paper: > {claim:.1%})."
                )
    a1 = (
        ", ".join(
            f"{x['attention']} P={x['P']}: per-sample {x['per_sample']:.2f} (mean-A "
            f"{x['mean_A']:.2f})"
            for x in res["a1_failures"]
        )
        or "none"
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
        f"logits) fails where the per-sample coverage is below {res['a1_threshold']}: {a1}."
        f"\n\n![coverage {preset}]({res['figure']})\n"
    )


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
        fits.append(
            [
                k,
                fit["paper_law"],
                f"{fit['paper_exponent']:.2f}",
                *(_exponent(fit[w]) for w in ("theory_ek", "theory_finite", "measured")),
            ]
        )
        pe, me, law = fit["paper_exponent"], fit["measured"], fit["paper_law"]
        ci = me.get("ci")
        if me["exponent"] is not None and (
            abs(me["exponent"] - pe) > 0.3 if ci is None else not ci[0] <= pe <= ci[1]
        ):
            dis.append(
                f"**{preset}, {k} versus {axis}**: measured exponent {me['exponent']:.2f}"
                f"{'' if ci is None else f' [{ci[0]:.2f}, {ci[1]:.2f}]'} vs the paper's "
                f"{law} ({pe:.2f} over this range)."
            )
        te = fit["theory_ek"]["exponent"]
        if te is not None and abs(te - pe) > 0.3:
            dis.append(
                f"**{preset}, {k} versus {axis}, theory vs paper**: EK exponent {te:.2f} "
                f"vs the paper's {law} ({pe:.2f} over this range)."
            )
    pts = []
    for r in res["rows"]:
        n = r.get("n_seeds")
        cells = [f"{r['value']}" + (f" ({n} seeds)" if n else "")]
        for k in ("P_c1", "P_cG", "P_aG", "P_aG_single"):
            tk = "spinodal_hi" if k == "P_aG_single" else k
            m = r["measured"].get(k)
            cells.append(
                f"{num(r['theory_ek'].get(tk))} / "
                f"{num((r.get('theory_finite') or {}).get(tk))} / "
                f"{measured_text(m) if m else 'not measured'}"
            )
            if m is not None and not m.get("bracketed") and k != "P_aG_single":
                cap = r.get("reach", {}).get(k, {}).get("P_cap")
                reach.append(
                    f"{preset}, {art}, {axis}={r['value']}, {k}: {measured_text(m)}; "
                    f"theory {num(r['theory_ek'].get(k))}; largest P in reach: "
                    f"{reach_text(cap)}."
                )
        pts.append(cells)
    head = [
        axis,
        *(f"{k}: EK / finite / measured" for k in ("P_c1", "P_cG", "P_aG")),
        "single-start jump: EK / finite upper spinodal / measured",
    ]
    fit_head = [
        "P*",
        "paper law",
        "paper exponent (this range)",
        "EK exponent [95% CI]",
        "finite-width exponent",
        "measured exponent [95% CI]",
    ]
    fixed = ", ".join(f"{k} = {v}" for k, v in res["fixed"].items())
    return (
        f"### {preset} preset, P* versus {axis} ({fixed})\n\n{table(fit_head, fits)}\n\n"
        f"{table(head, pts)}\n\n![{art} {preset}]({res['figure']})\n"
    )


def section_hysteresis(res: dict, preset: str, dis: list[str]) -> str:
    sp, fs, err = res["theory_ek_spinodals"], res["theory_finite_spinodals"], res["rel_err"]
    rows = [
        [
            name,
            measured_text(res["measured_window_located"][side]),
            num(sp[i] if sp else None),
            num(fs[i]),
            pct(err[f"{side}_vs_ek"]),
            pct(err[f"{side}_vs_finite"]),
        ]
        for i, side, name in (
            (0, "lower", "lower edge (copy start survives)"),
            (1, "upper", "upper edge (pooling start jumps)"),
        )
    ]
    for k, e in err.items():
        if disagrees(e) and k != "single_vs_ek_upper_spinodal":
            dis.append(f"**{preset}, hysteresis {k}**: {pct(e)}.")
    lin, lin_txt = res.get("linear"), "not measured"
    if lin:
        per = ", ".join(f"{p}: {d:.2f}" for p, d in zip(lin["P"], lin["dcG"]))
        sec = lin.get("theory_ek_second_minimum") or {}
        sP = [p for p, c in zip(sec.get("P", []), sec.get("cG", [])) if c is not None]
        meta = (
            f"the EK linear potential has a second, metastable minimum (anti-copy, cG < 0) "
            f"for P >= {num(min(sP))} on its grid"
            if sP
            else "the EK linear potential has one minimum"
        )
        same, anti = lin.get("max_abs_dcG_same_branch"), lin.get("anti_copy_landings")
        lin_txt = (
            f"|cG(prior start) - cG(copy start)| per P (seed mean): {per}; max "
            f"{lin['max_abs_dcG']:.3g}; runs where the prior start ended on the anti-copy "
            f"branch (P, seed): {anti or 'none'}; max gap on the same branch "
            f"{num(same)}; {meta}"
        )
        if same is not None and same > 0.1:
            dis.append(
                f"**{preset}, linear hysteresis**: the prior and copy starts differ by up "
                f"to {same:.3g} in cG on the same branch (theory: no hysteresis of the "
                "copy transition)."
            )
        if anti:
            dis.append(
                f"**{preset}, linear metastability**: prior starts ended on the anti-copy "
                f"branch (cG < 0) at (P, seed) = {anti}; {meta}. 'Linear attention shows "
                "no hysteresis' holds for the copy transition only."
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
        f"{measured_text(res['single_start_jump'])}. Linear attention: {lin_txt}.\n\n"
        f"![hysteresis {preset}]({res['figure']})\n"
    )


def environment_text(results: list[dict]) -> str:
    if not results:
        return ""
    env = results[0]["header"]["environment"]
    v = ", ".join(f"{k} {x}" for k, x in env["versions"].items() if x)
    return (
        f"- Hardware: {env['platform']} ({env['machine']}), {os.cpu_count()} CPU cores "
        f"visible, JAX backend `{env['backend']}`; runtimes are those of the run that wrote "
        "each JSON (the whole suite's cold time, and the load it ran under: "
        f"`experiments/README.md`).\n- Python {env['python']}; {v}.\n"
    )
