"""The claims x readings matrix: every claim of the paper against every reading of its
conventions tried (docs/theory.md §2b), from a folder of artefact result JSON.

Each cell is the measured value with its 95% CI and the verdict of the one rule of
:mod:`.claims`; :func:`.claims.across_readings` says which readings reproduce a claim. Files read
per reading ``r`` (a missing file leaves its cells "not measured"): ``main_r.json`` (else
``conventions.json``), ``scaling-{L,V}_r.json``, ``coverage_r.json``, ``posterior_r.json``, the
branch free energies ``posterior_branches*.json`` and, for ``paper-chi-lik``, the
``copyhead transition`` result ``transition_paper-chi-lik.json``.
"""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..config import TRANSITION_RUN, preset
from ..theory import TheoryParams, sensitivity, theory_of, transition_points
from .claims import (
    EXPONENT_TOL,
    P_TOL,
    across_readings,
    judge,
    order_of,
    relative_band,
    verdict_text,
)
from .crossing import bayesian_interval
from .paper import PAPER_CLAIMS, PAPER_LAWS, PAPER_MEASURED
from .warning import as_predicted, early_warning, signal_of

__all__ = [
    "BRANCHES",
    "COVERAGE",
    "CROSSOVER_COVERAGE",
    "KEYS",
    "READINGS",
    "SWEPT",
    "claims_matrix",
    "crossover_coverage_cell",
    "crossover_interval",
    "ek_window",
    "g4",
    "measured_exponents",
    "measured_from_main",
    "predicted_growth_of",
    "pstars",
    "reading_theory",
    "transition_cell",
    "warning_cell",
    "warning_checks",
    "WARNING_THEORY",
]

KEYS = ("P_c1", "P_cG", "P_aG")
READINGS = ("paper", "plain", "paper-chi-lik")
SWEPT = ("paper-chi-lik",)  # readings whose 10-seed P* are experiments.conventions' sweeps
BRANCHES = {"plain": "posterior_branches.json", "paper": "posterior_branches_paper.json"}
#: readings whose Bayesian P*_aG is a ``copyhead transition --out`` result (its transition.json)
TRANSITIONS = {"paper-chi-lik": "transition_paper-chi-lik.json"}
NAMES = {
    "P_c1": "P*_c1 ~ 23 (linear pooling onset)",
    "P_cG": "P*_cG ~ 322 (linear copy crossover)",
    "P_aG": "P*_aG ~ 300 (softmax copy transition, MAP)",
}
#: the paper's coverage bounds (``'> 99.8% ...'`` -> 0.998): softmax everywhere, linear outside
#: the crossover (where attention is on: the pooling and copying regimes)
COVERAGE = {
    att: float(re.search(r"> ([\d.]+)%", PAPER_CLAIMS[claim]).group(1)) / 100.0
    for att, claim in (("softmax", "softmax"), ("linear", "linear, outside the crossover"))
}
#: the paper's coverage range in the linear crossover (``'82.4% - 91.0%'`` -> (0.824, 0.910)):
#: the one coverage number that tells the readings apart
CROSSOVER_COVERAGE = tuple(
    float(x) / 100.0 for x in re.findall(r"([\d.]+)%", PAPER_CLAIMS["linear, crossover (SGLD)"])
)


def g4(x, none: str = "-") -> str:
    """Four significant digits with thousands separators."""
    return none if x is None else f"{x:,.4g}"


def _load(d: Path, name: str) -> dict | None:
    p = Path(d) / name
    return json.loads(p.read_text()) if p.exists() else None


def _cell(value: str, rep: bool | None = None, unknown: str = "not measured") -> dict[str, Any]:
    word = {True: "reproduced", False: "not reproduced", None: unknown}[rep]
    outcome = {True: "reproduced", False: "off", None: unknown}[rep]
    return {"value": value, "reproduced": rep, "outcome": outcome, "verdict": word}


def _judged(value: str, j: dict | None) -> dict[str, Any]:
    if j is None:
        return _cell(value)
    return {
        "value": value,
        "reproduced": j["reproduced"],
        "outcome": j["outcome"],
        "verdict": verdict_text(j),
    }


def _ci(c: dict | None) -> str:
    """``estimate [lo, hi] (n seeds)``; an interval summarised before the grid's error was part
    of it (no ``grid_lo``: the seeds' scatter only, docs/theory.md §6) says so."""
    if not c or c.get("estimate") is None:
        return "not located"
    only = "" if "grid_lo" in c else ", seeds only: no grid error"
    return f"{g4(c['estimate'])} [{g4(c['lo'])}, {g4(c['hi'])}] ({c.get('n', '?')} seeds{only})"


def pstars(d: Path, reading: str) -> dict[str, tuple[dict | None, str]]:
    """Width-10,000 P* CIs of ``reading`` with how each was located: ``main_r.json``, or for
    a reading swept by ``experiments.conventions`` (10 seeds; its main artefact has 3, for the
    coverage ablation) that sweep."""
    conv = (_load(d, "conventions.json") or {}).get(reading) or {}
    main = None if reading in SWEPT else _load(d, f"main_{reading}.json")
    if main:
        w = main["widths"][main["width"]] if main.get("widths") else main
        rows = {r["key"]: r["measured"] for r in w["ci_table"]}
        jump = ("P_aG_single", " (single-start jump: no coexistence seen)")
    else:
        rows = (conv.get("measured") or {}).get("10000") or {}
        jump = ("P_aG_jump", " (jump of one minimum: no coexistence seen)")
    out = {k: (rows.get(k), "") for k in ("P_c1", "P_cG", "P_aG")}
    if not (rows.get("P_aG") or {}).get("n"):
        out["P_aG"] = (rows.get(jump[0]), jump[1])
    out["coexistence"] = (rows.get("window_lo"), "")
    if not main and "coexistence_seen" in rows:
        out["coexistence"] = ({"n": int(bool(rows["coexistence_seen"]))}, "")
    return out


def measured_from_main(d: Path, reading: str) -> dict:
    """Per width (``10000``, ``inf``): the P* CIs of ``main_r.json`` in ``d`` and whether its
    two softmax starts stayed apart somewhere (the window's lower edge located on a seed)."""
    main = json.loads((Path(d) / f"main_{reading}.json").read_text())
    out = {}
    for tag in ("10000", "inf"):
        rows = main["ci_table"] if tag == "10000" else main["widths"][tag]["ci_table"]
        out[tag] = {r["key"]: r["measured"] for r in rows if r["key"] in KEYS}
        out[tag]["coexistence_seen"] = any(
            r["key"] == "window_lo" and r["measured"]["n"] > 0 for r in rows
        )
    return out


def measured_exponents(d: Path, reading: str) -> dict:
    """The measured exponents in L and V of ``scaling-{L,V}_r.json`` in ``d``, where measured:
    ``{key: {axis: {"exponent", "ci"}}}``."""
    out = {}
    for axis in ("L", "V"):
        fits = (_load(d, f"scaling-{axis}_{reading}.json") or {}).get("fits", {})
        for k in KEYS:
            m = fits.get(k, {}).get("measured", {})
            if m.get("exponent") is not None:
                out.setdefault(k, {})[axis] = {"exponent": m["exponent"], "ci": m.get("ci")}
    return out


def reading_theory(reading: str) -> dict:
    """EK P* (MAP and posterior) of the preset ``reading`` with its MAP transition's order and
    spinodals, and the local exponents in L and V of each MAP P*."""
    params = TheoryParams.from_config(preset(reading))
    pts = {o: transition_points(params, "both", o) for o in ("map", "post")}
    slopes = sensitivity(params, objectives=("map",))["map"]["slopes"]
    return {
        "map": {k: pts["map"][k] for k in KEYS},
        "post": {k: pts["post"][k] for k in KEYS},
        "first_order": pts["map"]["first_order"],
        "spinodals": pts["map"]["spinodals"],
        "exponents": {k: {a: slopes[a][k] for a in ("L", "V")} for k in KEYS},
    }


def ek_window(reading: str, L_values) -> list[dict]:
    """The EK (MAP) softmax transition of the preset ``reading`` at each L: first order or
    not, its spinodals and ``P_aG``."""
    params = TheoryParams.from_config(preset(reading))
    out = []
    for L in L_values:
        t = transition_points(params.replace(L=int(L)), "softmax", "map")
        out.append(
            {
                "L": int(L),
                "first_order": bool(t["first_order"]),
                "spinodals": t.get("spinodals"),
                "P_aG": t.get("P_aG"),
            }
        )
    return out


def pstar_cell(d: Path, r: str, k: str) -> dict:
    """Reading ``r``'s width-10,000 ``k`` CI against the paper's number (band: +- P_TOL); a
    point below the grid on every seed is the interval (0, the grid's first P]."""
    c, how = pstars(d, r)[k]
    ok = c and c.get("estimate") is not None
    band = relative_band(PAPER_MEASURED[k])
    if not ok and c and c.get("side") == "below" and c.get("edge") and not c.get("n"):
        j = judge(0.0, c["edge"], PAPER_MEASURED[k], band)
        return _judged(f"< {g4(c['edge'])} (every seed below the grid){how}", j)
    return _judged(_ci(c) + how, judge(c["lo"], c["hi"], PAPER_MEASURED[k], band) if ok else None)


def bayes_cell(d: Path, r: str) -> dict:
    """The Bayesian P*_aG (branch free energies, or a ``copyhead transition`` result) against
    the paper's 300, with the poorly mixing runs counted."""
    res = _load(d, BRANCHES[r]) if r in BRANCHES else None
    if res is None and r in TRANSITIONS and (tr := _load(d, TRANSITIONS[r])):
        return transition_cell(tr)
    if res is None:
        return _cell(f"Bayesian P*_aG ({r}): not measured this session")
    b, band = bayesian_interval(res), relative_band(PAPER_MEASURED["P_aG"])
    j = judge(b["lo"], b["hi"], PAPER_MEASURED["P_aG"], band) if b.get("lo") else None
    bad = (
        f"; {len(b['flagged'])}/{b['n_runs']} runs {TRANSITION_RUN.bar()} (named in results.md)"
        if b["flagged"]
        else ""
    )
    iv = f"[{g4(b['lo'])}, {g4(b['hi'])}]" if b.get("lo") else "[open]"
    return _judged(f"{g4(b['P_star'])} {iv} ({res['n_seeds']} seeds){bad}", j)


def transition_cell(tr: dict) -> dict:
    """The Bayesian P*_aG cell from a ``copyhead transition`` result: its interval (seeds, MC,
    quadrature, interpolation), the SMC cross-check and the flagged branch runs."""
    s, band = tr["summary"], relative_band(PAPER_MEASURED["P_aG"])
    n_runs = 2 * sum(len(x["probes"]) for x in tr["seeds"])
    bad = f"; {len(tr['flagged'])}/{n_runs} runs {TRANSITION_RUN.bar()}" if tr["flagged"] else ""
    smc = (tr.get("cross_check") or {}).get("P_star")
    cross = f", SMC {g4(smc)}" if smc else ""
    text = (
        f"{g4(s['P_star'])} [{g4(s['lo'])}, {g4(s['hi'])}] ({s['n']} seed(s), `copyhead "
        f"transition`{cross}){bad}"
    )
    return _judged(text, judge(s["lo"], s["hi"], PAPER_MEASURED["P_aG"], band))


def _law_part(fits: dict, k: str, ax: str) -> tuple[str, str]:
    """One axis of a law: the measured exponent against the law's over the fitted range."""
    key = k if (fits.get(k) or {}).get("measured", {}).get("ci") else "P_aG_single"
    f = fits.get(key if k == "P_aG" else k) or {}
    m, t = f.get("measured") or {}, f.get("paper_exponent")
    if m.get("exponent") is None or t is None:
        return f"{ax}: not measured", "not measured"
    lo, hi = m["ci"] if m.get("ci") else (m["exponent"], m["exponent"])
    j = judge(lo, hi, t, (t - EXPONENT_TOL, t + EXPONENT_TOL), relative=False)
    ci = f" [{lo:.2f}, {hi:.2f}]" if m.get("ci") else f" ({m.get('n')} points, no CI)"
    via = " (single-start jump)" if key == "P_aG_single" and k == "P_aG" else ""
    return f"{ax}: {m['exponent']:.2f}{ci}{via} vs {t:.2f}: {verdict_text(j)}", j["outcome"]


def law_cell(d: Path, r: str, k: str) -> dict:
    """A law holds when its exponents in L and V both reproduce the paper's."""
    parts = [
        _law_part((_load(d, f"scaling-{ax}_{r}.json") or {}).get("fits") or {}, k, ax)
        for ax in ("L", "V")
    ]
    out = [p[1] for p in parts]  # each axis's judge outcome
    rep = False if "off" in out else True if all(o == "reproduced" for o in out) else None
    return _cell(
        "; ".join(p[0] for p in parts),
        rep,
        "not resolved" if "not resolved" in out else "not measured",
    )


def order_cell(d: Path, r: str) -> dict:
    """Whether the CIs of P*_c1 < P*_aG < P*_cG are disjoint and in the paper's order."""
    p = pstars(d, r)
    iv = [
        (c["lo"], c["hi"]) if c and c.get("lo") is not None else None
        for c in (p[k][0] for k in ("P_c1", "P_aG", "P_cG"))
    ]
    o = order_of(iv)
    return _cell(o or "not located", None if o is None else o == "ordered")


def first_order_cell(d: Path, r: str) -> dict:
    """Whether the two softmax starts stayed distinct minima somewhere (metastability)."""
    c = pstars(d, r)["coexistence"][0]
    if c is None:
        return _cell("not measured")
    if not c.get("n"):
        return _cell("one minimum per P at the grid's resolution (no metastability seen)", False)
    since = f" from {_ci(c)}" if c.get("estimate") else " (metastability)"
    return _cell(f"the two softmax starts stay distinct{since}", True)


def coverage_cell(d: Path, r: str) -> dict:
    """The MAP mean-attention coverage against the paper's bounds where attention is on."""
    cov = _load(d, f"coverage_{r}.json")
    if cov is None:
        return _cell("not measured")
    parts, ok = [], []
    for row in cov["table"]:
        one = not theory_of(row["attention"]).two_branches
        if one and not row["regime"].startswith(("pooling", "copy")):
            continue  # the crossover: crossover_coverage_cell; below P_c1 attention is off
        lo = (row["adam_mean_A"] or {}).get("min")
        if lo is None:
            continue
        bound = COVERAGE[row["attention"]]
        ok.append(lo >= bound)
        parts.append(
            f"{row['attention']} {row['regime'].split(' (')[0]}: min {lo:.2%} (paper > {bound:.1%})"
        )
    return _cell("; ".join(parts) or "none", all(ok) if ok else None)


def crossover_interval(cov: dict, main: dict) -> dict[str, Any] | None:
    """The measured coverage of the linear crossover (EK copy fraction psi in [0.1, 0.9]): the
    range over its P of the seeds' mean MAP coverage, each end widened by its seeds' 95% error
    (1.96 sd / sqrt(n)); ``{'lo', 'hi', 'mean', 'P', 'n_seeds'}``, None without crossover
    points. The paper's range is one over its crossover P too, so range meets range."""
    reg = cov.get("linear_regimes") or {}
    cross = [
        float(P)
        for P, g in zip(reg.get("P", []), reg.get("regime", []))
        if g.startswith("crossover")
    ]
    lin, h = main["curves"]["linear"], main["header"]
    n = (h.get("settings") or {}).get("n_seeds") or h["engine"]["sweep"]["n_seeds"]
    rows = [
        (m, s)
        for P, m, s in zip(lin["P"], lin["coverage"], lin["coverage_sd"])
        if float(P) in cross and m is not None and np.isfinite(m)
    ]
    if not rows:
        return None
    m, s = np.array(rows, float).T
    err = 1.96 * np.nan_to_num(s) / np.sqrt(n)
    return {
        "lo": float((m - err).min()),
        "hi": float((m + err).max()),
        "mean": float(m.mean()),
        "P": [min(cross), max(cross)],
        "n_seeds": int(n),
    }


def crossover_coverage_cell(d: Path, r: str) -> dict:
    """The linear crossover's MAP mean-attention coverage (range over its P, seeds' error at
    each end) against the paper's range, judged by the one rule with the paper's range as the
    band (its source: the paper's ablation table) around its midpoint."""
    cov, main = _load(d, f"coverage_{r}.json"), _load(d, f"main_{r}.json")
    iv = crossover_interval(cov, main) if cov and main else None
    if iv is None:
        return _cell("not measured" if not cov else "no crossover point on the grid")
    band = CROSSOVER_COVERAGE
    j = judge(iv["lo"], iv["hi"], 0.5 * (band[0] + band[1]), band, relative=False)
    text = (
        f"{iv['lo']:.2%}-{iv['hi']:.2%} over P {iv['P'][0]:g}-{iv['P'][1]:g} (mean "
        f"{iv['mean']:.1%}, {iv['n_seeds']} seeds)"
    )
    return _judged(text, j)


def bayesian_point(d: Path, r: str) -> float | None:
    """Reading ``r``'s Bayesian P*_aG: the branch free energies' crossing, else a ``copyhead
    transition`` result's (None: neither measured)."""
    if r in BRANCHES and (br := _load(d, BRANCHES[r])):
        return bayesian_interval(br)["P_star"]
    if r in TRANSITIONS and (tr := _load(d, TRANSITIONS[r])):
        return tr["summary"]["P_star"]
    return None


#: the file of route B's predicted growth per reading and check (``python -m
#: experiments.warning_theory``; docs/theory.md §13.9)
WARNING_THEORY = "early_warning_theory.json"


def warning_checks(d: Path, r: str) -> list[dict[str, Any]]:
    """Reading ``r``'s early-warning checks: ``name``, the measured ``result``
    (:func:`early_warning`), the paper's verdict ``want``, the ``attention`` and ``order``
    measured and the window's ``P_star``. Before P*_c1 and P*_cG in windows at the MAP P* and
    the posterior's own crossover; before P*_aG at the MAP and at the Bayesian P* (when
    measured). Empty when the reading has no posterior file."""
    post = _load(d, f"posterior_{r}.json")
    if post is None:
        return []
    pb = bayesian_point(d, r)
    lin_ew = (post.get("linear") or {}).get("early_warning") or {}

    def check(name, result, want, attention, order):
        return {
            "name": name,
            "result": result,
            "want": want,
            "attention": attention,
            "order": order,
            "P_star": (result or {}).get("P_star"),
        }

    checks = [
        check(
            f"{k} (MAP window)",
            (lin_ew.get(f"theory_map_{k}") or {}).get(obs),
            "signal",
            "linear",
            obs,
        )
        for k, obs in (("P_c1", "c1"), ("P_cG", "cG"))
    ]
    for name in ("posterior_P_cG", "posterior_P_cG_half"):  # the posterior's own crossover
        if (lin_ew.get(name) or {}).get("cG"):
            checks.append(
                check("P_cG (Bayesian window)", lin_ew[name]["cG"], "signal", "linear", "cG")
            )
            break
    soft = post.get("softmax") or {}
    pool = soft.get("pool") or {}
    sus = (pool.get("susceptibility") or {}).get("cG") or {}
    P = np.asarray(pool.get("P", []), float)
    var = np.asarray(sus.get("value", []), float).reshape(P.size, -1) / P[:, None]
    stored = (soft.get("early_warning") or {}).get("theory_map_P_aG")
    th = ((stored or {}).get("cG") or {}).get("P_star")  # the EK MAP P*_aG it was placed at
    checks.append(
        check(
            "P_aG (MAP window)",
            early_warning(P, var, th) if sus else None,
            "no signal",
            "softmax",
            "aG",
        )
    )
    if pb is not None and sus:
        checks.append(
            check("P_aG (Bayesian window)", early_warning(P, var, pb), "no signal", "softmax", "aG")
        )
    return checks


def predicted_growth_of(d: Path, r: str, check: dict) -> float | None:
    """Route B's growth for ``check`` from :data:`WARNING_THEORY` in ``d``; None where the file
    has none for this window (or one placed at another P*)."""
    row = ((_load(d, WARNING_THEORY) or {}).get(r) or {}).get(check["name"]) or {}
    P0, P1 = row.get("P_star"), check["P_star"]
    if P0 is None or P1 is None or abs(P0 - P1) > 1e-6 * abs(P1):
        return None
    return row.get("growth")


def warning_cell(d: Path, r: str) -> dict:
    """Early warning (:func:`early_warning`, criterion §13.9: growth above 1): a signal before
    P*_c1 and P*_cG, none before P*_aG, in windows placed at the MAP P* and, for P*_aG, at the
    Bayesian one; route B's predicted growth beside each where computed."""
    checks = warning_checks(d, r)
    if not checks:
        return _cell("not measured")
    parts, seen = [], []
    for c in checks:
        name, v = c["name"], c["result"]
        ci = (v or {}).get("var_ratio_ci")
        if not ci:
            why = (v or {}).get("reason")
            parts.append(f"{name}: undetermined" + (f" ({why})" if why else ""))
            continue
        s = signal_of(ci)
        seen.append(s == c["want"] if s != "inconclusive" else None)
        g = predicted_growth_of(d, r, c)
        th = "" if g is None else f" (route B x{g:.3g}: {as_predicted(ci, g)})"
        parts.append(f"{name}: x{v['var_ratio']:.3g} [{ci[0]:.3g}, {ci[1]:.3g}] {s}{th}")
    rep = False if False in seen else None if (None in seen or not seen) else True
    return _cell("; ".join(parts), rep, "not resolved")


def claims_matrix(results_dir: str | Path) -> dict[str, Any]:
    """Every claim x every reading (cells: value, verdict, reproduced) from ``results_dir``."""
    d = Path(results_dir)
    rows = [
        *(
            (f"{NAMES[k]}; +-{P_TOL:.0%}", partial(pstar_cell, k=k))
            for k in ("P_c1", "P_cG", "P_aG")
        ),
        (
            f"Bayesian P*_aG ~ 300 (F_copy = F_pool; interval: seeds, MC, quadrature, grid); "
            f"+-{P_TOL:.0%}",
            bayes_cell,
        ),
        *(
            (
                f"law P*_{k[2:]} ~ {name} (exponents over L in [10, 32], V in [2, 12]; "
                f"+-{EXPONENT_TOL})",
                partial(law_cell, k=k),
            )
            for k, (name, _) in PAPER_LAWS.items()
        ),
        ("order P*_c1 < P*_aG < P*_cG (CIs disjoint)", order_cell),
        ("softmax transition first order (coexisting branches)", first_order_cell),
        ("coverage of span{B1, B2} (MAP mean attention)", coverage_cell),
        (
            f"coverage in the linear crossover {CROSSOVER_COVERAGE[0]:.1%}-"
            f"{CROSSOVER_COVERAGE[1]:.1%} (paper: SGLD; here MAP "
            f"mean attention, psi in [0.1, 0.9]; "
            "band: the paper's range)",
            crossover_coverage_cell,
        ),
        (
            "early warning: Var grows before P*_c1, P*_cG, not before P*_aG (0.5-0.9 P*, signal: "
            "CI above x1, §13.9)",
            warning_cell,
        ),
    ]
    rows = [{"claim": claim, "cells": {r: cell(d, r) for r in READINGS}} for claim, cell in rows]
    for row in rows:
        row["overall"] = across_readings(
            {r: c["reproduced"] for r, c in row["cells"].items()},
            {r: c["outcome"] for r, c in row["cells"].items()},
        )
    return {"readings": list(READINGS), "rows": rows, "exponent_tol": EXPONENT_TOL, "p_tol": P_TOL}
