"""Every measured P* per seed beside the theories and the paper: the seeds' points located on
their own runs, a 95% bootstrap CI over seeds per point (:func:`ci_table`), and the same table
across widths with an old width-128 disagreement split into its factors (:func:`width_result`).

Inputs are measurements already made (branch runs with ``P``/``masked``, located points, result
dicts); nothing here runs a sweep."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import locate as loc
from .branches import ONSET_TOL, linear_psi, quiet_nan
from .errors import rel_err
from .paper import PAPER_MEASURED
from .pstar import seeds_summary
from .stats import bootstrap_ci


def located_text(L_: loc.Located) -> str:
    if L_.P_star is not None and L_.bracketed:
        lo, hi = L_.bracket
        return f"{L_.P_star:.4g} [{lo:.4g}, {hi:.4g}]"
    if L_.side is not None:
        edge = L_.detail.get("edge")
        return f"{'<' if L_.side == 'below' else '>'} {edge:.4g} (outside the measured grid)"
    return f"none ({L_.detail.get('reason', 'not found')})"


#: the rows of the confidence-interval table: (key, attention, what, EK theory key)
CI_ROWS = (
    ("P_c1", "linear", "pooling onset (2nd order)", "P_c1"),
    ("P_cG", "linear", "copy crossover, max dpsi/dlog P", "P_cG"),
    ("P_cG_half", "linear", "copy crossover, psi = 1/2", "P_cG_half"),
    ("P_aG", "softmax", "copy transition, U crossing of the two branches", "P_aG"),
    ("P_aG_single", "softmax", "pooling-branch jump vs upper spinodal", "spinodal_hi"),
    (
        "window_lo",
        "softmax",
        "copy branch lost (window's lower edge) vs lower spinodal",
        "spinodal_lo",
    ),
)
#: the finite-width theory's point compared with each row
FINITE_OF = {"P_aG_single": "spinodal_hi", "window_lo": "spinodal_lo"}


def bracketed(L_: loc.Located | dict) -> float | None:
    d = L_ if isinstance(L_, dict) else L_.to_dict()
    return d.get("P_star") if d.get("bracketed") else None


def per_seed_points(lin, found: dict, window_lower: loc.Located | None) -> dict[str, list]:
    """Every measured ``P*`` located on each seed's own runs (:class:`.locate.Located`, or its
    ``to_dict`` from a stored per-seed detail; None: not looked for): the linear ones on ``lin``,
    the softmax ones from the per-seed details of ``found``. :func:`bracketed` of each is the
    seed's value."""
    nS = lin.cfg.sweep.n_seeds
    r, psi = lin.masked("r"), linear_psi(lin)
    with quiet_nan():
        scale = float(np.nanmax(np.abs(np.nanmean(r, axis=1))))
    out: dict[str, list] = {}
    if np.isfinite(scale) and scale > 0:
        out["P_c1"] = [loc.locate_onset(lin.P, r[:, s], tol=ONSET_TOL * scale) for s in range(nS)]
    else:
        out["P_c1"] = [None] * nS
    out["P_cG"] = [loc.locate_max_slope(lin.P, psi[:, s]) for s in range(nS)]
    out["P_cG_half"] = [loc.locate_level(lin.P, psi[:, s], 0.5) for s in range(nS)]
    for key, L_ in (
        ("P_aG", found.get("P_aG")),
        ("P_aG_single", found.get("P_aG_single")),
        ("window_lo", window_lower),
    ):
        per = (L_.detail.get("per_seed") if L_ is not None else None) or [None] * nS
        out[key] = list(per)
    return out


def per_seed_values(points: dict[str, list]) -> dict[str, list]:
    """The seeds' values of :func:`per_seed_points` (None: not bracketed)."""
    return {k: [None if x is None else bracketed(x) for x in v] for k, v in points.items()}


def ci_table(
    per_seed: dict[str, list],
    fin_lin,
    fin_soft,
    ek: dict,
    pooled: dict | None = None,
    paper_conventions: bool = True,
) -> list[dict[str, Any]]:
    """One row per ``P*``: measured (exact MAP, per seed: :func:`per_seed_points`), summarised by
    :func:`.pstar.seeds_summary` (geometric mean over seeds, 95% bootstrap CI widened by the
    grid's error, both parts kept), and finite-width theory (per seed, same Grams and data,
    located by k-section: a bootstrap CI alone); the EK theory and the paper's reported value
    next to them."""
    rows = []
    for key, att, what, ek_key in CI_ROWS:
        fin = {"linear": fin_lin, "softmax": fin_soft}[att]  # the paper's two heads
        fk = FINITE_OF.get(key, key)
        fin_per = (fin["summary"].get(fk) or {}).get("per_seed") if fin else None
        meas = seeds_summary(per_seed.get(key) or [])
        p = (pooled or {}).get(key if key != "window_lo" else "window_lo_pooled") or {}
        if meas["estimate"] is None and p.get("side"):  # outside the grid: say on which side
            meas["side"] = p["side"]
            meas["edge"] = (p.get("detail") or {}).get("edge")
        th_fin = bootstrap_ci(fin_per or [])
        th = ek.get(ek_key)
        if key == "P_aG" and th is None:
            th = ek.get("P_aG_crossover")
        if key in ("P_aG_single", "window_lo") and ek.get("spinodals"):
            th = ek["spinodals"][1 if key == "P_aG_single" else 0]
        rows.append(
            {
                "key": key,
                "attention": att,
                "what": what,
                "theory_ek": th,
                "theory_finite": th_fin,
                "measured": meas,
                "paper": PAPER_MEASURED.get(key) if paper_conventions else None,
                "rel_err_ek": rel_err(meas["estimate"], th),
                "rel_err_finite": rel_err(meas["estimate"], th_fin["estimate"]),
            }
        )
    return rows


def _width_order(w: str) -> float:
    return math.inf if w == "inf" else float(w)


def _log_share(part: float | None, total: float | None) -> float | None:
    """``log(part) / log(total)`` (the share of a ratio ``total`` that the factor ``part`` is)."""
    if part is None or total is None or part <= 0 or total <= 0 or abs(math.log(total)) < 1e-12:
        return None
    return math.log(part) / math.log(total)


def width_result(main_res: dict[str, Any], reference: dict[str, Any] | None = None) -> dict:
    """The main artefact at every width it was measured at (``main_res['widths']``): each P*
    (measured by exact MAP and the finite-width theory, geometric mean over seeds [95% bootstrap
    CI]) against the EK theory, the order parameters versus ``P`` per width, and, for each P*
    an older measurement at width 128 disagreed on (``reference``: the old ``--quick`` numbers,
    full-width Adam), how much of that disagreement was finite width.

    The decomposition is multiplicative (``log`` shares add up to 1): ``old / EK = (old /
    MAP_128) * (MAP_128 / MAP_inf) * (MAP_inf / EK)``, i.e. protocol (Adam, 1-2 seeds, grid),
    finite width (exact MAP at width 128 against width infinity, same seeds and data) and what
    remains at infinite width (the largest width measured where infinity was not)."""
    widths = sorted(main_res.get("widths") or {}, key=_width_order)
    by = {w: {r["key"]: r for r in main_res["widths"][w]["ci_table"]} for w in widths}
    keys = [r["key"] for r in main_res["widths"][widths[0]]["ci_table"]] if widths else []
    ref = (reference or {}).get("measured") or {}
    rows = []
    for k in keys:
        r0 = by[widths[0]][k]
        ek = r0["theory_ek"]
        est = {w: by[w][k]["measured"].get("estimate") for w in widths}
        row: dict[str, Any] = {
            "key": k,
            "what": r0["what"],
            "theory_ek": ek,
            "measured": {w: by[w][k]["measured"] for w in widths},
            "theory_finite": {w: by[w][k]["theory_finite"] for w in widths},
            "rel_err_ek": {w: rel_err(est[w], ek) for w in widths},
        }
        old = ref.get(k)
        big = widths[-1]  # infinity, else the largest width measured
        if old is not None and ek and "128" in est and big != "128":
            m128, minf = est["128"], est[big]
            parts = {
                "protocol": None if m128 is None else old / m128,
                "finite_width": None if m128 is None or minf is None else m128 / minf,
                "infinite_width": None if minf is None else minf / ek,
            }
            row["reference_128"] = {
                "measured": old,
                "large_width": big,
                "rel_err_ek": rel_err(old, ek),
                "factors": parts,
                "log_share": {p: _log_share(v, old / ek) for p, v in parts.items()},
            }
        rows.append(row)
    curves: dict[str, dict] = {}
    for w in widths:
        src = main_res["curves"] if w == main_res.get("width") else None
        src = src or main_res["widths"][w].get("curves_small")
        if src:
            curves[w] = {
                b: {q: src[b][q] for q in ("P", "c1", "cG", "r", "psi", "U") if q in src[b]}
                for b in ("linear", "pool", "copy")
            }
    return {
        "preset": main_res["header"]["preset"],
        "widths": widths,
        "n_seeds": main_res["header"]["engine"]["sweep"]["n_seeds"],
        "rows": rows,
        "curves": curves,
        "reference_128": reference,
        "source": f"results/main_{main_res['header']['preset']}.json",
        "command": main_res["header"]["command"],
    }
