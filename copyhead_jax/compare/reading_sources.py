"""What each reading of the paper's conventions measured and what its EK theory says, read from
a folder of artefact result JSON (the inputs of the claims x readings matrix, :mod:`.readings`).

Files read per reading ``r`` (a missing file reads as nothing measured): ``main_r.json`` (else
``conventions.json``), ``scaling-{L,V}_r.json``, ``coverage_r.json`` with ``main_r.json``'s
curves, the branch free energies ``posterior_branches*.json`` and, for ``paper-chi-lik``, the
``copyhead transition`` result ``transition_paper-chi-lik.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..config import preset
from ..theory import TheoryParams, sensitivity, transition_points
from .crossing import bayesian_interval
from .profile_verdict import from_record

__all__ = [
    "BRANCHES",
    "KEYS",
    "PROFILES",
    "READINGS",
    "SWEPT",
    "TRANSITIONS",
    "bayesian_point",
    "crossover_interval",
    "ek_window",
    "load_json",
    "measured_exponents",
    "measured_from_main",
    "pstars",
    "reading_theory",
]

KEYS = ("P_c1", "P_cG", "P_aG")
READINGS = ("paper", "plain", "paper-chi-lik")
SWEPT = ("paper-chi-lik",)  # readings whose 10-seed P* are experiments.conventions' sweeps
BRANCHES = {"plain": "posterior_branches.json", "paper": "posterior_branches_paper.json"}
#: readings whose Bayesian P*_aG is a ``copyhead transition --out`` result (its transition.json)
TRANSITIONS = {"paper-chi-lik": "transition_paper-chi-lik.json"}
#: readings whose Bayesian P*_aG is measured by the posterior's free-energy profile (the
#: default ``copyhead transition``); preferred over the branch free energies above
PROFILES = {
    "plain": "transition_profile_L25_V5.json",
    "paper": "transition_profile_paper.json",
    "paper-chi-lik": "transition_profile_paper-chi-lik.json",
}


def load_json(d: Path, name: str) -> dict | None:
    """The JSON file ``name`` in ``d``; None where there is none."""
    p = Path(d) / name
    return json.loads(p.read_text()) if p.exists() else None


def pstars(d: Path, reading: str) -> dict[str, tuple[dict | None, str]]:
    """Width-10,000 P* CIs of ``reading`` with how each was located: ``main_r.json``, or for
    a reading swept by ``experiments.conventions`` (10 seeds; its main artefact has 3, for the
    coverage ablation) that sweep."""
    conv = (load_json(d, "conventions.json") or {}).get(reading) or {}
    main = None if reading in SWEPT else load_json(d, f"main_{reading}.json")
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
        fits = (load_json(d, f"scaling-{axis}_{reading}.json") or {}).get("fits", {})
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


def crossover_interval(cov: dict, main: dict) -> dict[str, Any] | None:
    """The measured coverage of the linear crossover (EK copy fraction psi in [0.1, 0.9]): the
    range of the seeds' mean MAP coverage over the main sweep's P inside the crossover's span
    (the coverage study's crossover P; the two artefacts' grids need not share points), each
    end widened by its seeds' 95% error (1.96 sd / sqrt(n)); ``{'lo', 'hi', 'mean', 'P',
    'n_seeds'}``, None without main P in the span. The paper's range is one over its crossover
    P too, so range meets range."""
    reg = cov.get("linear_regimes") or {}
    cross = [
        float(P)
        for P, g in zip(reg.get("P", []), reg.get("regime", []))
        if g.startswith("crossover")
    ]
    lin, h = main["curves"]["linear"], main["header"]
    n = (h.get("settings") or {}).get("n_seeds") or h["engine"]["sweep"]["n_seeds"]
    if not cross:
        return None
    rows = [
        (float(P), m, s)
        for P, m, s in zip(lin["P"], lin["coverage"], lin["coverage_sd"])
        if min(cross) <= float(P) <= max(cross) and m is not None and np.isfinite(m)
    ]
    if not rows:
        return None
    Ps, m, s = np.array(rows, float).T
    err = 1.96 * np.nan_to_num(s) / np.sqrt(n)
    return {
        "lo": float((m - err).min()),
        "hi": float((m + err).max()),
        "mean": float(m.mean()),
        "P": [float(Ps.min()), float(Ps.max())],
        "n_seeds": int(n),
    }


def bayesian_point(d: Path, r: str) -> float | None:
    """Reading ``r``'s Bayesian P*_aG: the free-energy profile's, else the branch free energies'
    crossing, else a ``copyhead transition`` result's (None: none measured)."""
    if r in PROFILES and (pr := load_json(d, PROFILES[r])):
        return from_record(pr)[1]["P_star"]
    if r in BRANCHES and (br := load_json(d, BRANCHES[r])):
        return bayesian_interval(br)["P_star"]
    if r in TRANSITIONS and (tr := load_json(d, TRANSITIONS[r])):
        return tr["summary"]["P_star"]
    return None
