"""``python -m experiments.conventions``: which reading of the paper reproduces which claim.

The paper's summary leaves its conventions open (docs/theory.md §2b). This artefact sets its
claims against three readings, each measured the same way where measured here (exact float64
MAP, reduced engine, quenched embeddings, 10 seeds, docs/theory.md §2c):

* ``paper`` and ``plain``: the committed ``main_{preset}.json`` and ``scaling-{L,V}_{preset}.json``
  of ``python -m experiments all`` (widths 10,000 and infinity);
* ``paper-chi-lik`` (chi in the likelihood only): swept here, widths 10,000 and infinity, on one
  grid that holds its EK ``P*`` and the paper's values (runs cached in ``OUT/sweeps``).

Whether a measurement reproduces a claim is decided by one rule (docs/theory.md §5b,
``copyhead_jax.compare.claims``); the claims x readings matrix is ``experiments/claims.py``'s,
built from the committed JSON. ``--render`` rewrites the page from the committed
``conventions.json`` without sweeping.

``--out DIR`` (default ``results/experiments/conventions``); ``--publish`` writes
``docs/reports/conventions.md`` and ``docs/reports/results/conventions.json`` instead.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare.paper import PAPER_MEASURED
from copyhead_jax.compare.pstar import linear_points, softmax_points
from copyhead_jax.compare.stats import bootstrap_ci
from copyhead_jax.theory import TheoryParams, sensitivity, transition_points

from .claims import claims_matrix
from .claims import render as render_claims

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "docs" / "reports"
READINGS = ("paper", "plain", "paper-chi-lik")
#: the swept reading's grid: its EK P* are 19.0 / 388 / 230 (spinodals [221, 247]); 2 apart
#: around the softmax jump, where the two branches were seen to meet
GRID = (4, 8, 12, 16, 18, 20, 22, 24, 28, 32, 48, 64, 96, 128, 160, 192, 210, 220, 226, 230,
        234, 236, 238, 240, 242, 246, 250, 270, 300, 340, 370, 390, 410, 450, 500, 600,
        800)  # fmt: skip
WIDTHS = (10_000, math.inf)
KEYS = ("P_c1", "P_cG", "P_aG")
LAW_EXPONENTS = {  # the paper's laws as local exponents at L = 25 (d log P* / d log L, .. V)
    "P_c1": {"L": 0.0, "V": 2.0},
    "P_cG": {"L": 1.5, "V": 0.5},
    "P_aG": {"L": 1.0 + 2.0 / math.log(25), "V": 0.0},
}


def reading_config(name: str, width: float, attention: str, init: str | None = None):
    """The main job's engine (``paper-map``) under ``name``'s conventions at ``width``."""
    conv = ch.preset(name)
    cfg = ch.preset("paper-map").replace(
        posterior=dict(
            likelihood=conv.posterior.likelihood,
            chi_in_readout_prior=conv.posterior.chi_in_readout_prior,
            chi_in_noise=conv.posterior.chi_in_noise,
        ),
        model=dict(linear_scale=conv.model.linear_scale, width=width, attention=attention),
        sweep=dict(P=GRID, n_seeds=10),
    )
    if init is not None:  # softmax: kept on its branch (no continuation in P)
        cfg = cfg.replace(train=dict(init_attention=init, exact_continuation=False))
    return cfg


def swept(cfg, path: Path):
    """The sweep of ``cfg`` at ``path``: loaded when a finished one with this config is there."""
    if path.exists():
        res = ch.SweepResult.load(path)
        if res.config == cfg:
            return res
    return ch.run_sweep(cfg, out=path)


def measure_swept(name: str, out: Path) -> dict:
    """Per width: every P* per seed with its bootstrap CI (``P_aG`` by the U crossing, or, where
    the two starts never stay apart, by the one minimum's step ``P_aG_jump``)."""
    result = {}
    for width in WIDTHS:
        tag = "inf" if math.isinf(width) else str(int(width))
        d = out / "sweeps" / f"{name}_N{tag}"
        lin = swept(reading_config(name, width, "linear"), d / "sweep_linear.npz")
        pool = swept(reading_config(name, width, "softmax", "zero"), d / "sweep_softmax.npz")
        copy = swept(reading_config(name, width, "softmax", "copy"), d / "sweep_softmax_copy.npz")
        per = {**linear_points(lin), **softmax_points(pool, copy)}
        cell = {}
        for k, located in per.items():
            vals = [x.P_star if x.bracketed else None for x in located]
            cell[k] = {**bootstrap_ci(vals), "brackets": [x.bracket for x in located]}
        gap = np.asarray(copy["cG"]) - np.asarray(pool["cG"])
        cell["coexistence_seen"] = bool(np.nanmax(gap) > 0.1 * math.sqrt(pool.config.task.L))
        result[tag] = cell
    return result


def measure_committed(name: str) -> dict:
    """Per width: the committed ``main_{name}.json`` CIs (``python -m experiments all``)."""
    path = REPORTS / "results" / f"main_{name}.json"
    main = json.loads(path.read_text())
    result = {}
    for tag in ("10000", "inf"):
        rows = main["ci_table"] if tag == "10000" else main["widths"][tag]["ci_table"]
        result[tag] = {r["key"]: r["measured"] for r in rows if r["key"] in KEYS}
        result[tag]["coexistence_seen"] = any(
            r["key"] == "window_lo" and r["measured"]["n"] > 0 for r in rows
        )
    return result


def committed_exponents(name: str) -> dict:
    """Measured exponents in L and V (``scaling-{L,V}_{name}.json``), where measured."""
    out = {}
    for axis in ("L", "V"):
        path = REPORTS / "results" / f"scaling-{axis}_{name}.json"
        fits = json.loads(path.read_text())["fits"] if path.exists() else {}
        for k in KEYS:
            m = fits.get(k, {}).get("measured", {})
            if m.get("exponent") is not None:
                out.setdefault(k, {})[axis] = {"exponent": m["exponent"], "ci": m.get("ci")}
    return out


def theory(name: str) -> dict:
    """EK P* (MAP and posterior) and the local exponents in L and V (MAP) of ``name``."""
    params = TheoryParams.from_config(ch.preset(name))
    pts = {o: transition_points(params, "both", o) for o in ("map", "post")}
    slopes = sensitivity(params, objectives=("map",))["map"]["slopes"]
    return {
        "map": {k: pts["map"][k] for k in KEYS},
        "post": {k: pts["post"][k] for k in KEYS},
        "first_order": pts["map"]["first_order"],
        "spinodals": pts["map"]["spinodals"],
        "exponents": {k: {a: slopes[a][k] for a in ("L", "V")} for k in KEYS},
    }


def located(cell: dict, key: str) -> tuple[dict | None, str]:
    """The CI of ``key`` and how it was located: the U crossing, else the one minimum's jump."""
    for k, how in ((key, ""), (f"{key}_jump", " (jump of one minimum)")):
        c = cell.get(k)
        if c and c.get("n"):
            return c, how
    return None, ""


def _ci(c) -> str:
    return "not located" if c is None else f"{c['estimate']:,.1f} [{c['lo']:,.1f}, {c['hi']:,.1f}]"


def widths_table(data: dict) -> str:
    """Measured P* [95% CI over seeds] at widths 10,000 and infinity beside the EK theory."""
    lines = ["| reading | P* | EK MAP | EK posterior | N = 10,000 | N = inf | paper |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in READINGS:
        th = data[r]["theory"]
        for k in KEYS:
            ms = [located(data[r]["measured"][w], k) for w in ("10000", "inf")]
            f = lambda x: "-" if x is None else f"{x:,.1f}"
            lines.append(f"| `{r}` | {k} | {f(th['map'][k])} | {f(th['post'][k])} | "
                         + " | ".join(_ci(c) + how for c, how in ms)
                         + f" | {PAPER_MEASURED[k]:g} |")  # fmt: skip
    return "\n".join(lines)


def coexistence_table(results: Path = REPORTS / "results") -> str:
    """The softmax coexistence window versus L (``scaling-L_{reading}.json``): the EK spinodals
    and whether the two starts (pooling, copy) stayed distinct minima at N = 10,000."""
    lines = ["| reading | L | EK first order | EK spinodals | EK P*_aG | measured: seeds with "
             "distinct starts (max over P) | measured window (lower .. upper edge) | largest "
             "c_G gap | measured P*_aG (U crossing) | single-start jump |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    g = lambda x: "-" if x is None else f"{x:,.4g}"  # noqa: E731
    for r in READINGS:
        path = results / f"scaling-L_{r}.json"
        if not path.exists():
            continue
        for row in json.loads(path.read_text())["rows"]:
            th, m = row["theory_ek"], row.get("measured") or {}
            co = row.get("coexistence")
            fo = th.get("first_order")
            sp = f"[{g(th.get('spinodal_lo'))}, {g(th.get('spinodal_hi'))}]" if fo else "-"
            pa, js = m.get("P_aG") or {}, m.get("P_aG_single") or {}
            if co is None:  # older results: a U crossing needs both minima at two P
                meas = ["seen (a U crossing was located)" if pa.get("P_star") else
                        "not recorded", "-", "-"]  # fmt: skip
            else:
                frac = max(co["distinct_fraction"] or [0.0])
                meas = [f"{frac:.0%} of {row.get('n_seeds')}", f"{g(co.get('lower'))} .. "
                        f"{g(co.get('upper'))}" if co["seen"] else "none seen",
                        g(co.get("max_gap"))]  # fmt: skip
            lines.append(f"| `{r}` | {row['value']} | {'yes' if fo else 'no'} | {sp} | "
                         f"{g(th.get('P_aG') or th.get('P_aG_crossover'))} | "
                         + " | ".join(meas) + f" | {g(pa.get('P_star'))} | "
                         f"{g(js.get('P_star'))} |")  # fmt: skip
    return "\n".join(lines)


#: the L at which each reading's EK softmax transition is traced (paper, plain: first order
#: from L = 9; paper-chi-lik: from L = 16, its window 0.2% wide there, measured at L = 13..25)
EK_L = {"paper": (8, 9), "plain": (8, 9), "paper-chi-lik": (12, 14, 15, 16, 20, 25, 32)}


def ek_window(name: str, L_values) -> list[dict]:
    """The EK (MAP) softmax transition of ``name`` at each L: first order or not, spinodals."""
    params = TheoryParams.from_config(ch.preset(name))
    out = []
    for L in L_values:
        t = transition_points(params.replace(L=int(L)), "softmax", "map")
        out.append({"L": int(L), "first_order": bool(t["first_order"]),
                    "spinodals": t.get("spinodals"), "P_aG": t.get("P_aG")})  # fmt: skip
    return out


def ek_window_text(data: dict) -> str:
    """Per reading, the smallest L from which the EK softmax transition is first order."""
    lines = []
    for r in READINGS:
        rows = data.get(r, {}).get("ek_window")
        if not rows:
            continue
        first = [x["L"] for x in rows if x["first_order"]]
        onset = (f"first order from L = {min(first)} on (not at L = "
                 f"{', '.join(str(x['L']) for x in rows if x['L'] < min(first))})" if first
                 else f"no first-order transition at L = {rows[0]['L']}-{rows[-1]['L']}")
        w = [f"L = {x['L']}: [{x['spinodals'][0]:.4g}, {x['spinodals'][1]:.4g}]"
             for x in rows if x["first_order"] and x["spinodals"]][:3]  # fmt: skip
        lines.append(f"- `{r}` (EK, MAP): {onset}" + (f"; spinodals {', '.join(w)}" if w else ""))
    return "\n".join(lines)


def render(data: dict) -> str:
    """The report page."""
    return "\n\n".join([
        "# Conventions as an axis: which reading reproduces which claim",
        "_Generated by `python -m experiments.conventions --publish` (the `paper-chi-lik` sweeps "
        "take ~17 CPU-min, cached; `--render` rewrites this page from the committed JSON; "
        "`paper` and `plain` come from `python -m experiments all`'s committed JSON, the "
        "`paper-chi-lik` scaling, coverage and main artefacts from `python -m "
        "experiments.reading`); do not edit by hand. Readings: docs/theory.md §2b. CIs: 95% "
        "bootstrap over seeds; the grid's step is the other error of a located P* (brackets in "
        "`results/conventions.json`)._",
        "## Claims x readings (width 10,000, exact MAP unless the row says otherwise)",
        render_claims(claims_matrix(REPORTS / "results")).rstrip(),
        "## P* per reading and width",
        widths_table(data),
        "## Softmax coexistence window versus L (width 10,000, exact MAP)",
        "Per L, the EK theory's spinodals (the window where both minima exist) and, measured, "
        "the fraction of seeds whose pooling and copy starts stayed distinct minima at some P of "
        "the grid (`features.distinct_branches`), the window's edges, the largest c_G gap "
        "between the two starts, and the two P*: the U crossing (where both exist) and the "
        "single-start jump. Where no seed keeps two minima, the first-order jump is not "
        "resolved at this width and grid.",
        ek_window_text(data),
        coexistence_table(),
    ]) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m experiments.conventions", description=__doc__)
    p.add_argument("--out", default="results/experiments/conventions", help="output folder")
    p.add_argument("--publish", action="store_true", help="write into docs/reports/")
    p.add_argument("--render", action="store_true",
                   help="rewrite the page from docs/reports/results/conventions.json (no sweep)")
    a = p.parse_args(argv)
    out = Path(a.out)
    if a.render:
        jpath = REPORTS / "results" / "conventions.json"
        data = json.loads(jpath.read_text())
        if any("ek_window" not in data[r] for r in READINGS):  # theory only: ~1 s per L
            for r in READINGS:
                data[r]["ek_window"] = ek_window(r, EK_L[r])
            jpath.write_text(json.dumps(data, indent=1, default=float) + "\n")
        (REPORTS / "conventions.md").write_text(render(data))
        print(f"wrote {REPORTS / 'conventions.md'}")
        return
    ch.check_output_folder("--out", out)
    data = {}
    for r in READINGS:
        meas = measure_swept(r, out) if r == "paper-chi-lik" else measure_committed(r)
        data[r] = {"measured": meas, "exponents_measured": committed_exponents(r),
                   "theory": theory(r), "ek_window": ek_window(r, EK_L[r])}  # fmt: skip
    page = render(data)
    print(page)
    jpath = (REPORTS / "results" if a.publish else out) / "conventions.json"
    jpath.parent.mkdir(parents=True, exist_ok=True)
    jpath.write_text(json.dumps(data, indent=1, default=float) + "\n")
    md = (REPORTS if a.publish else out) / "conventions.md"
    md.write_text(page)
    print(f"wrote {jpath} and {md}")


if __name__ == "__main__":
    main()
