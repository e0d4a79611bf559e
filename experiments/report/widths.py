"""The per-width P* tables: every P* by exact MAP with its 95% bootstrap CI over seeds at each
width, for ``results.md`` (:func:`section_ci`, :func:`section_width`) and the README's block
(:func:`readme_table`); disagreements beyond the reporting thresholds go to ``dis``."""

from __future__ import annotations

from copyhead_jax.compare import disagrees, judge, rel_err, relative_band, verdict_text
from copyhead_jax.plots import solver_kind, width_name

from .tables import ci_text, num, pct, table


def _ci_rows(res: dict) -> tuple[list[str], dict[str, dict[str, dict]]]:
    """The main width's and width infinity's CI rows by key (the other widths, 128 and 1,024,
    are the width table's, :func:`section_width`)."""
    widths = list(res.get("widths") or {})
    widths = [w for w in widths if w in (res.get("width"), "inf")] or widths
    return widths, {w: {r["key"]: r for r in res["widths"][w]["ci_table"]} for w in widths}


def main_measured(mains) -> list[dict]:
    """Every measured interval of main results ``mains`` (each width's ``ci_table``)."""
    return [
        r["measured"]
        for m in mains
        if m
        for w in (m.get("widths") or {}).values()
        for r in w["ci_table"]
    ]


def interval_kind(measured) -> str:
    """What the ``measured`` intervals hold: the seeds' bootstrap widened by the grid's error
    (docs/theory.md §6), or, for results summarised before that, the seeds' scatter only."""
    rows = [m for m in measured if m and m.get("estimate") is not None]
    if rows and all("grid_lo" in m for m in rows):
        return "bootstrap CI over seeds widened by the grid's error, docs/theory.md §6"
    return (
        "bootstrap CI over seeds only: these results predate the grid's error in the "
        "interval (docs/theory.md §6), so identical seeds give a zero-width interval; "
        "`python -m experiments main` widens them"
    )


def _ci_table(res: dict, labels: dict[str, str], corner: str, col: str, paper: tuple) -> str:
    """One row per measured key of ``labels`` (key -> label): EK theory, finite theory and
    measured at each width (``col``: header with ``{what}``, ``{N}``), ``paper``: (head, cell)."""
    widths, by = _ci_rows(res)
    head = [
        corner,
        "EK theory",
        *(
            col.format(what=x, N=width_name(w))
            for w in widths
            for x in ("finite theory", "measured")
        ),
        paper[0],
    ]
    rows = [
        [
            label,
            num(by[widths[0]][k]["theory_ek"], 4),
            *(ci_text(by[w][k][x]) for w in widths for x in ("theory_finite", "measured")),
            paper[1](by[widths[0]][k]["paper"]),
        ]
        for k, label in labels.items()
        if k in by[widths[0]]
    ]
    return table(head, rows)


def section_ci(res: dict, preset: str, dis: list[str]) -> str:
    """Every P* by exact MAP, per width: measured and finite-width theory as the geometric mean
    over seeds with a 95% bootstrap CI, against the EK theory and the paper."""
    if not res.get("widths"):
        return ""
    widths, by = _ci_rows(res)
    keys = list(by[widths[0]])
    labels = {k: f"{k}: {by[widths[0]][k]['what']}" for k in keys}
    claims = []
    for k in keys:
        for w in widths:
            r, m = by[w][k], by[w][k]["measured"]
            for which, ref in (("EK", r["theory_ek"]), ("finite-width", r["theory_finite"])):
                val = ref.get("estimate") if isinstance(ref, dict) else ref
                err = rel_err(m.get("estimate"), val)
                if disagrees(err):
                    dis.append(
                        f"**{preset}, {k}, width {width_name(w)} (exact MAP, {m['n']} "
                        f"seeds)**: measured {ci_text(m)} vs {which} theory {num(val)} "
                        f"({pct(err)})."
                    )
    for k in keys:
        paper = by[widths[0]][k]["paper"]
        for w in widths if paper else ():
            m = by[w][k]["measured"]
            j = judge(m.get("lo"), m.get("hi"), paper, relative_band(paper))
            claims.append(
                f"- The paper's {k} ~ {num(paper)} at width {width_name(w)}, `{preset}` "
                f"reading: measured {ci_text(m)}: **{verdict_text(j)}** (the rule and "
                "every reading: the claims x readings matrix above)."
            )
    tab = _ci_table(res, labels, "P*", "{what}, N = {N}", ("paper", num))
    return (
        f"#### {preset} preset: every P* by exact MAP, geometric mean over seeds [95% "
        f"{interval_kind(main_measured([res]))}]\n\nMeasured: each seed's P* located on its "
        "own runs (same locators as above); finite theory: docs/theory.md §2b on each seed's "
        "Gram and training set, located the same way. Seeds where a point is not bracketed by "
        f"the grid are left out and counted.\n\n{tab}\n\n" + "\n".join(claims) + "\n"
    )


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
        e = res["header"]["engine"]
        paper = ("paper reports", lambda x: "~" + num(x) if x else "-")
        blocks.append(
            f"**{preset} preset** (L = {e['task']['L']}, V = {e['task']['V']}, "
            f"{e['sweep']['n_seeds']} seeds, solver {solver_kind(res)}, engine "
            f"{e['model']['engine']}):\n\n"
            f"{_ci_table(res, README_LABELS, '', 'N = {N}: {what}', paper)}\n"
        )
    return "\n".join(blocks)


def _ratio(x) -> str:
    return "n/a" if x is None else f"{100 * (x - 1):+.0f}%"


def section_width(res: dict, dis: list[str]) -> str:
    """The width table of one preset (``analysis.width_result``): every P* at each width,
    measured and finite theory, and the old width-128 disagreements split into protocol,
    finite width and what remains at infinite width."""
    widths, preset = res["widths"], res["preset"]
    theory_w = [w for w in widths if w in ("128", "inf")]
    head = [
        "P*",
        "EK theory",
        *(f"N = {width_name(w)}: measured" for w in widths),
        *(f"N = {width_name(w)}: finite theory" for w in theory_w),
    ]
    rows = [
        [
            f"{r['key']}: {r['what']}",
            num(r["theory_ek"], 4),
            *(ci_text(r["measured"][w]) for w in widths),
            *(ci_text(r["theory_finite"][w]) for w in theory_w),
        ]
        for r in res["rows"]
    ]
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
        fa, share = d["factors"], d["log_share"].get("finite_width")
        dec.append(
            [
                r["key"],
                f"{num(d['measured'], 4)} ({pct(d['rel_err_ek'])})",
                *(pct(r["rel_err_ek"].get(w)) for w in widths),
                *(_ratio(fa.get(x)) for x in ("protocol", "finite_width", "infinite_width")),
                "n/a"
                if share is None
                else f"{100 * share:.0f}%"
                if disagrees(d["rel_err_ek"])
                else "(agreed)",
            ]
        )
        e128 = r["rel_err_ek"].get("128")
        if disagrees(e128):
            dis.append(
                f"**{preset}, {r['key']}, width 128 (exact MAP, {res['n_seeds']} seeds)**: "
                f"measured {ci_text(r['measured']['128'])} vs EK theory "
                f"{num(r['theory_ek'])} ({pct(e128)}); at width inf "
                f"{pct(r['rel_err_ek'].get('inf'))}."
            )
    text = (
        f"### {preset} preset\n\nEvery P* by exact MAP at each width (same 10 seeds, data and "
        "grids; the reduced engine on each seed's realised embedding Gram at that width, the "
        "prior's Gram at infinity), geometric mean over seeds [95% "
        f"{interval_kind(m for r in res['rows'] for m in r['measured'].values())}]; the "
        "finite theory (docs/theory.md §2b) on the same Grams and data.\n\n"
        f"{table(head, rows)}\n\n![width {preset}](figures/width_{preset}.png)\n"
    )
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
