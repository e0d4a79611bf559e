"""The page ``docs/reports/conventions.md``: which reading of the paper's conventions reproduces
which claim (the data: ``python -m experiments.conventions``)."""

from __future__ import annotations

import json
from pathlib import Path

from copyhead_jax.compare import PAPER_MEASURED, claims_matrix
from copyhead_jax.compare import readings as RD

from . import claims
from .tables import table

KEYS = ("P_c1", "P_cG", "P_aG")


def located(cell: dict, key: str) -> tuple[dict | None, str]:
    """The CI of ``key`` and how it was located: the U crossing, else the one minimum's jump."""
    for k, how in ((key, ""), (f"{key}_jump", " (jump of one minimum)")):
        c = cell.get(k)
        if c and c.get("n"):
            return c, how
    return None, ""


def widths_table(data: dict) -> str:
    """Measured P* [95% CI over seeds widened by the grid's error; ``*``: seeds only, an older
    result] at widths 10,000 and infinity beside the EK theory."""
    one = lambda x: "-" if x is None else f"{x:,.1f}"  # noqa: E731
    rows = []
    for r in RD.READINGS:
        th = data[r]["theory"]
        for k in KEYS:
            ms = [located(data[r]["measured"][w], k) for w in ("10000", "inf")]
            rows.append(
                [
                    f"`{r}`",
                    k,
                    one(th["map"][k]),
                    one(th["post"][k]),
                    *(
                        "not located"
                        if c is None
                        else f"{one(c['estimate'])} "
                        f"[{one(c['lo'])}, {one(c['hi'])}]{'' if 'grid_lo' in c else '*'}"
                        f"{how}"
                        for c, how in ms
                    ),
                    f"{PAPER_MEASURED[k]:g}",
                ]
            )
    return table(
        ["reading", "P*", "EK MAP", "EK posterior", "N = 10,000", "N = inf", "paper"], rows
    )


COEXISTENCE_HEAD = [
    "reading",
    "L",
    "EK first order",
    "EK spinodals",
    "EK P*_aG",
    "measured: seeds with distinct starts (max over P)",
    "measured window (lower .. upper edge)",
    "largest c_G gap",
    "measured P*_aG (U crossing)",
    "single-start jump",
]


def coexistence_table(results: Path) -> str:
    """The softmax coexistence window versus L (``scaling-L_{reading}.json``): the EK spinodals
    and whether the two starts (pooling, copy) stayed distinct minima at N = 10,000."""
    rows = []
    for r in RD.READINGS:
        path = Path(results) / f"scaling-L_{r}.json"
        for row in json.loads(path.read_text())["rows"] if path.exists() else ():
            th, m, co = row["theory_ek"], row.get("measured") or {}, row.get("coexistence")
            fo = th.get("first_order")
            pa, js = m.get("P_aG") or {}, m.get("P_aG_single") or {}
            if co is None:  # older results: a U crossing needs both minima at two P
                meas = [
                    "seen (a U crossing was located)" if pa.get("P_star") else "not recorded",
                    "-",
                    "-",
                ]
            else:
                meas = [
                    f"{max(co['distinct_fraction'] or [0.0]):.0%} of {row.get('n_seeds')}",
                    f"{RD.g4(co.get('lower'))} .. {RD.g4(co.get('upper'))}"
                    if co["seen"]
                    else "none seen",
                    RD.g4(co.get("max_gap")),
                ]
            rows.append(
                [
                    f"`{r}`",
                    row["value"],
                    "yes" if fo else "no",
                    f"[{RD.g4(th.get('spinodal_lo'))}, {RD.g4(th.get('spinodal_hi'))}]"
                    if fo
                    else "-",
                    RD.g4(th.get("P_aG") or th.get("P_aG_crossover")),
                    *meas,
                    RD.g4(pa.get("P_star")),
                    RD.g4(js.get("P_star")),
                ]
            )
    return table(COEXISTENCE_HEAD, rows)


def ek_window_text(data: dict) -> str:
    """Per reading, the smallest L from which the EK softmax transition is first order."""
    lines = []
    for r in RD.READINGS:
        rows = data.get(r, {}).get("ek_window")
        if not rows:
            continue
        first = [x["L"] for x in rows if x["first_order"]]
        below = ", ".join(str(x["L"]) for x in rows if first and x["L"] < min(first))
        onset = (
            f"first order from L = {min(first)} on (not at L = {below})"
            if first
            else f"no first-order transition at L = {rows[0]['L']}-{rows[-1]['L']}"
        )
        w = [
            f"L = {x['L']}: [{x['spinodals'][0]:.4g}, {x['spinodals'][1]:.4g}]"
            for x in rows
            if x["first_order"] and x["spinodals"]
        ][:3]
        lines.append(f"- `{r}` (EK, MAP): {onset}" + (f"; spinodals {', '.join(w)}" if w else ""))
    return "\n".join(lines)


def render(data: dict, results: Path) -> str:
    """The page, from ``conventions.json``'s ``data`` and the result JSON in ``results``."""
    return (
        "\n\n".join(
            [
                "# Conventions as an axis: which reading reproduces which claim",
                "_Generated by `python -m experiments.conventions "
                "--publish` (the `paper-chi-lik` sweeps "
                "take ~17 CPU-min, cached; `--render` rewrites this page from the committed JSON; "
                "`paper` and `plain` come from `python -m experiments all`'s committed JSON, the "
                "`paper-chi-lik` scaling, coverage and main artefacts from `python -m "
                "experiments.reading`); do not edit by hand. "
                "Readings: docs/theory.md §2b. CIs: 95% "
                "bootstrap over seeds widened by the grid's error of "
                "the located P* (docs/theory.md §6; "
                "both parts and the brackets in "
                "`results/conventions.json`); an interval marked `*` or "
                "'seeds only' comes from a result summarised before "
                "the grid's error was part of it "
                "(rerun its artefact to widen it)._",
                "## Claims x readings (width 10,000, exact MAP unless the row says otherwise)",
                claims.render(claims_matrix(results)).rstrip(),
                "## P* per reading and width",
                "The `paper-chi-lik` row at N = 10,000 is what `copyhead sweep --config "
                "docs/reports/configs/paper-map_chi-lik.toml` "
                "prints (`--preset paper-map --reading "
                "chi-lik` on this page's grid and 10 seeds: the same configs, so the same fits; ~8 "
                "CPU-min).",
                widths_table(data),
                "## Softmax coexistence window versus L (width 10,000, exact MAP)",
                "Per L, the EK theory's spinodals (the window where "
                "both minima exist) and, measured, "
                "the fraction of seeds whose pooling and copy starts "
                "stayed distinct minima at some P of "
                "the grid (`features.distinct_branches`), the window's edges, the largest c_G gap "
                "between the two starts, and the two P*: the U crossing (where both exist) and the "
                "single-start jump. Where no seed keeps two minima, the first-order jump is not "
                "resolved at this width and grid.",
                ek_window_text(data),
                coexistence_table(results),
            ]
        )
        + "\n"
    )
