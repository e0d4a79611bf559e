"""One cell of the claims x readings matrix per claim: the measured value with its 95% CI and
the verdict of the one rule of :mod:`.claims` (a P*, the Bayesian P*_aG, a law's exponents, the
order of the P*, the first-order transition, the coverage bounds and the crossover's coverage).
Each cell is ``{value, reproduced, outcome, verdict}``."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..config import TRANSITION_RUN
from ..theory import theory_of
from .claims import EXPONENT_TOL, judge, order_of, relative_band, verdict_text
from .crossing import bayesian_interval
from .paper import PAPER_CLAIMS, PAPER_MEASURED
from .profile_verdict import flagged_probes, flagged_windows, from_record, other_flags
from .reading_sources import (
    BRANCHES,
    PROFILES,
    TRANSITIONS,
    crossover_interval,
    load_json,
    pstars,
)

__all__ = [
    "COVERAGE",
    "CROSSOVER_COVERAGE",
    "bayes_cell",
    "coverage_cell",
    "crossover_coverage_cell",
    "first_order_cell",
    "g4",
    "judged_cell",
    "law_cell",
    "order_cell",
    "profile_cell",
    "pstar_cell",
    "transition_cell",
    "verdict_cell",
]

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


def verdict_cell(
    value: str, rep: bool | None = None, unknown: str = "not measured"
) -> dict[str, Any]:
    """A cell whose verdict is given: reproduced (True), not (False) or ``unknown`` (None)."""
    word = {True: "reproduced", False: "not reproduced", None: unknown}[rep]
    outcome = {True: "reproduced", False: "off", None: unknown}[rep]
    return {"value": value, "reproduced": rep, "outcome": outcome, "verdict": word}


def judged_cell(value: str, j: dict | None) -> dict[str, Any]:
    """A cell judged by :func:`.claims.judge` (``j``; None: not measured)."""
    if j is None:
        return verdict_cell(value)
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


def pstar_cell(d: Path, r: str, k: str) -> dict:
    """Reading ``r``'s width-10,000 ``k`` CI against the paper's number (band: +- P_TOL); a
    point below the grid on every seed is the interval (0, the grid's first P]."""
    c, how = pstars(d, r)[k]
    ok = c and c.get("estimate") is not None
    band = relative_band(PAPER_MEASURED[k])
    if not ok and c and c.get("side") == "below" and c.get("edge") and not c.get("n"):
        j = judge(0.0, c["edge"], PAPER_MEASURED[k], band)
        return judged_cell(f"< {g4(c['edge'])} (every seed below the grid){how}", j)
    return judged_cell(
        _ci(c) + how, judge(c["lo"], c["hi"], PAPER_MEASURED[k], band) if ok else None
    )


def bayes_cell(d: Path, r: str) -> dict:
    """The Bayesian P*_aG (the free-energy profile, else branch free energies, else a
    ``copyhead transition`` result) against the paper's 300, with the poorly mixing runs
    counted."""
    if r in PROFILES and (pr := load_json(d, PROFILES[r])):
        return profile_cell(pr)
    res = load_json(d, BRANCHES[r]) if r in BRANCHES else None
    if res is None and r in TRANSITIONS and (tr := load_json(d, TRANSITIONS[r])):
        return transition_cell(tr)
    if res is None:
        return verdict_cell(f"Bayesian P*_aG ({r}): not measured this session")
    b, band = bayesian_interval(res), relative_band(PAPER_MEASURED["P_aG"])
    j = judge(b["lo"], b["hi"], PAPER_MEASURED["P_aG"], band) if b.get("lo") else None
    bad = (
        f"; {len(b['flagged'])}/{b['n_runs']} runs {TRANSITION_RUN.bar()} (named in results.md)"
        if b["flagged"]
        else ""
    )
    iv = f"[{g4(b['lo'])}, {g4(b['hi'])}]" if b.get("lo") else "[open]"
    return judged_cell(f"{g4(b['P_star'])} {iv} ({res['n_seeds']} seeds){bad}", j)


def profile_cell(tr: dict) -> dict:
    """The Bayesian P*_aG cell from a free-energy profile result (``copyhead transition``'s
    default method): first order or crossover and the interval of the package's rule
    (:func:`.profile_verdict.from_record`: seeds, replicas, the dividing surface, interpolation),
    with the flagged probes counted (a window not mixed, windows overlapping little; their
    errors already widened)."""
    s = from_record(tr)[1]
    band = relative_band(PAPER_MEASURED["P_aG"])
    lines = tr.get("flagged", [])
    n_win, n_other = len(flagged_windows(lines)), len(other_flags(lines))
    other = f", {n_other} other flag(s)" if n_other else ""
    bad = (
        f"; {len(flagged_probes(lines))} probe(s) flagged ({n_win} window(s) not mixed{other}), "
        "errors widened"
        if lines
        else ""
    )
    seeds = "1 seed: no seed spread in the interval" if s["n"] == 1 else f"{s['n']} seeds"
    width = f"{int(tr['width']):,}" if math.isfinite(tr["width"]) else "inf"
    text = (
        f"{g4(s['P_star'])} [{g4(s['lo'])}, {g4(s['hi'])}] ({s['kind']}, {seeds}, "
        f"free-energy profile, width {width}){bad}"
    )
    return judged_cell(text, judge(s["lo"], s["hi"], PAPER_MEASURED["P_aG"], band))


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
    return judged_cell(text, judge(s["lo"], s["hi"], PAPER_MEASURED["P_aG"], band))


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
        _law_part((load_json(d, f"scaling-{ax}_{r}.json") or {}).get("fits") or {}, k, ax)
        for ax in ("L", "V")
    ]
    out = [p[1] for p in parts]  # each axis's judge outcome
    rep = False if "off" in out else True if all(o == "reproduced" for o in out) else None
    return verdict_cell(
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
    return verdict_cell(o or "not located", None if o is None else o == "ordered")


def first_order_cell(d: Path, r: str) -> dict:
    """Whether the two softmax starts stayed distinct minima somewhere (metastability)."""
    c = pstars(d, r)["coexistence"][0]
    if c is None:
        return verdict_cell("not measured")
    if not c.get("n"):
        return verdict_cell(
            "one minimum per P at the grid's resolution (no metastability seen)", False
        )
    since = f" from {_ci(c)}" if c.get("estimate") else " (metastability)"
    return verdict_cell(f"the two softmax starts stay distinct{since}", True)


def coverage_cell(d: Path, r: str) -> dict:
    """The MAP mean-attention coverage against the paper's bounds where attention is on."""
    cov = load_json(d, f"coverage_{r}.json")
    if cov is None:
        return verdict_cell("not measured")
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
    return verdict_cell("; ".join(parts) or "none", all(ok) if ok else None)


def crossover_coverage_cell(d: Path, r: str) -> dict:
    """The linear crossover's MAP mean-attention coverage (range over its P, seeds' error at
    each end) against the paper's range, judged by the one rule with the paper's range as the
    band (its source: the paper's ablation table) around its midpoint."""
    cov, main = load_json(d, f"coverage_{r}.json"), load_json(d, f"main_{r}.json")
    iv = crossover_interval(cov, main) if cov and main else None
    if iv is None:
        return verdict_cell("not measured" if not cov else "no crossover point on the grid")
    band = CROSSOVER_COVERAGE
    j = judge(iv["lo"], iv["hi"], 0.5 * (band[0] + band[1]), band, relative=False)
    text = (
        f"{iv['lo']:.2%}-{iv['hi']:.2%} over P {iv['P'][0]:g}-{iv['P'][1]:g} (mean "
        f"{iv['mean']:.1%}, {iv['n_seeds']} seeds)"
    )
    return judged_cell(text, j)
