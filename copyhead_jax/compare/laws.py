"""Power laws of the transition points: every ``P*`` (EK theory, finite-width theory, measured)
fitted against ``L`` or ``V`` beside the paper's law over the same range (its effective
exponent). Rows are result dicts, one per value of the axis (``theory_ek``, ``theory_finite``,
``measured``: a located point's dict). Also the scaling study's grids placed around the
theory's ``P*`` (:func:`grids_around`) and its phase panels (:func:`phase_panel`), and the joint
law in ``L`` and ``V`` of measured points with 95% intervals (:func:`measured_law`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..theory.bayes.law import joint_fit
from ..theory.scaling import fit_law, fit_power_law, phase_diagram, scaling_table
from .branches import KEYS, SINGLE, THEORY_KEY
from .locate import integer_grid
from .paper import PAPER_LAWS


def theory_row(table: dict, i: int) -> dict[str, Any]:
    """Row ``i`` of a ``scaling_table``: every theory ``P*`` (None where not finite)."""
    row = {}
    for k in ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodal_lo", "spinodal_hi", "P_aG_crossover"):
        if k in table:
            v = float(np.asarray(table[k]).ravel()[i])
            row[k] = v if np.isfinite(v) else None
    fo = np.asarray(table.get("first_order", np.ones(1, bool))).ravel()
    row["first_order"] = bool(fo[i]) if fo.size > i else None
    return row


#: the theory points drawn as boundaries of a phase panel
BOUNDARIES = ("P_c1", "P_cG", "P_aG", "spinodal_lo", "spinodal_hi")


def grids_around(th: dict[str, Any], which, n: int, spread: dict | None = None):
    """Coarse integer grids around the theory's P* (``th``: a :func:`theory_row`): linear,
    about ``n`` points over [P*/f, f P*] for each linear P* in ``which`` (``f = spread[key]``,
    default 3; the union of them), softmax over [P_s-/f, f P_s+] (``f = spread['P_aG']``,
    default 1.5; around the crossover if not first order)."""
    spread = spread or {}
    lin = [np.zeros(0, int)]
    for k in ("P_c1", "P_cG"):
        if k in which and th.get(k):
            f = float(spread.get(k, 3.0))
            lin.append(integer_grid(th[k] / f, th[k] * f, n))
    soft = np.zeros(0, int)
    if "P_aG" in which:
        a = th.get("P_aG") or th.get("P_aG_crossover")
        f = float(spread.get("P_aG", 1.5))
        s_lo = min(x for x in (th.get("spinodal_lo"), a) if x) / f
        s_hi = max(x for x in (th.get("spinodal_hi"), a) if x) * f
        soft = integer_grid(s_lo, s_hi, n)
    return np.unique(np.concatenate(lin)).astype(int), soft


def phase_panel(params, axis: str, values, rows: list[dict], n_P: int = 60) -> dict[str, Any]:
    """The EK phase diagrams of both attentions (linear ``psi``, softmax ``aG``) over every
    integer ``axis`` value from ``min(values)`` to ``max(values)`` and ``n_P`` log-spaced P from
    a quarter of the lowest P*_c1 or P*_aG of the theory ``rows`` (:func:`theory_row`) to four
    times the highest P*_cG or upper spinodal, with the theory's :data:`BOUNDARIES` per value."""
    dense = list(range(min(values), max(values) + 1))
    lo = min(min(x for x in (r.get("P_c1"), r.get("P_aG")) if x) for r in rows)
    hi = max(max(x for x in (r.get("P_cG"), r.get("spinodal_hi")) if x) for r in rows)
    P, kw = np.geomspace(lo / 4.0, hi * 4.0, n_P), {f"{axis}_values": dense}
    out: dict[str, Any] = {}
    for a, order in (("linear", "psi"), ("softmax", "aG")):
        d = phase_diagram(params, P, attention=a, **kw)
        out[a] = {k: d[k] for k in ("P", "values", order)}
    table = scaling_table(params, **kw)
    out["boundary_values"] = dense
    out["boundaries"] = {
        k: [theory_row(table, i).get(k) for i in range(len(dense))] for k in BOUNDARIES
    }
    return out


def fit_laws(values, rows, axis: str, base: dict[str, int]) -> dict[str, Any]:
    """Power-law exponents of every P* versus ``axis``: EK theory, finite-width theory,
    measured, and the paper's law over the same range (its effective exponent)."""
    x = np.asarray(values, float)
    L = x if axis == "L" else np.full_like(x, base["L"])
    V = x if axis == "V" else np.full_like(x, base["V"])
    out = {}
    for k in (*KEYS, SINGLE):
        law_name, law = PAPER_LAWS["P_aG" if k == SINGLE else k]
        tk = THEORY_KEY[k]

        def ek_of(r, k=k, tk=tk):
            # no first-order transition at some (L, V): the softmax crossover stands in
            v = r["theory_ek"].get(tk)
            return v if v is not None or k != "P_aG" else r["theory_ek"].get("P_aG_crossover")

        def measured(r, k=k):
            m = r["measured"].get(k) or {}
            return m["P_star"] if m.get("bracketed") else np.nan

        ek = np.array([ek_of(r) or np.nan for r in rows], float)
        fin = np.array([(r.get("theory_finite") or {}).get(tk) or np.nan for r in rows], float)
        me = np.array([measured(r) for r in rows], float)
        out[k] = {
            "paper_law": law_name,
            "theory_key": tk,
            "paper_exponent": fit_power_law(x, law(L, V))["exponent"],
            "theory_ek": fit_power_law(x, ek),
            "theory_finite": fit_power_law(x, fin),
            "measured": fit_power_law(x, me),
            "measured_points": int(np.isfinite(me).sum()),
            "theory_uses_crossover": [
                bool(k == "P_aG" and r["theory_ek"].get(k) is None) for r in rows
            ],
        }
    return out


#: the normal quantile of a two-sided 95% interval: a measured interval's half-width in log P
#: over it is the standard deviation the bootstrap of :func:`measured_law` draws with
Z95 = 1.959963984540054


def measured_law(L, V, P, lo, hi, *, seed: int = 0, n_boot: int = 4000) -> dict[str, Any]:
    r"""The joint law $\log P^*=\log C+k_L\log L+k_V\log V$ of measured points with 95%
    intervals ``[lo, hi]``, beside the paper's $\ln^2L$ (one free constant, $R^2$ of
    $\log P^*$; and its own $k_L$, $k_V$ on the same points).

    Two intervals on each exponent: ``fit`` (Student t on the least-squares residuals, n - 3
    degrees of freedom: the scatter about the law) and ``bootstrap`` (the 2.5-97.5 percentiles
    of the exponents refitted to ``n_boot`` draws of every point, each drawn in $\log P$ from a
    normal split at the measured point whose halves put ``lo`` and ``hi`` at its 2.5% and
    97.5% quantiles: the measurements' own errors, independent between points). ``ci`` is the
    hull of the two. Also the power law in ``L`` at each ``V`` with three or more ``L``
    (Student t, n - 2 d.o.f.). ``seed`` seeds the bootstrap's NumPy generator."""
    L, V, P, lo, hi = (np.asarray(v, float) for v in (L, V, P, lo, hi))
    if not (np.all(lo <= P) and np.all(P <= hi) and np.all(lo > 0)):
        raise ValueError("measured_law: every point needs 0 < lo <= P <= hi")
    out: dict[str, Any] = {"fit": joint_fit(L, V, P)}
    s_lo = (np.log(P) - np.log(lo)) / Z95
    s_hi = (np.log(hi) - np.log(P)) / Z95
    z = np.random.default_rng(seed).standard_normal((n_boot, P.size))
    draws = np.exp(np.log(P) + z * np.where(z < 0, s_lo, s_hi))
    X = np.stack([np.ones_like(L), np.log(L), np.log(V)], axis=1)
    coef = np.linalg.lstsq(X, np.log(draws).T, rcond=None)[0]  # [3, n_boot]
    boot = {k: np.percentile(coef[i], [2.5, 97.5]).tolist() for k, i in (("k_L", 1), ("k_V", 2))}
    out["bootstrap"] = {
        "k_L_ci": boot["k_L"],
        "k_V_ci": boot["k_V"],
        "n_boot": n_boot,
        "seed": seed,
    }
    for k in ("k_L", "k_V"):
        fit_ci = out["fit"].get(f"{k}_ci") or boot[k]
        out[f"{k}_ci"] = [min(fit_ci[0], boot[k][0]), max(fit_ci[1], boot[k][1])]
    out["per_V"] = {
        int(v): fit_power_law(L[V == v], P[V == v])
        for v in np.unique(V)
        if np.unique(L[V == v]).size >= 3
    }
    shape = joint_fit(L, V, np.log(L) ** 2)  # the paper's law's own exponents on these points
    out["paper_law"] = {
        "law": "ln^2 L per sequence (L ln^2 L per position)",
        **fit_law(P, np.log(L) ** 2),
        "k_L": shape["k_L"],
        "k_V": shape["k_V"],
    }
    return out
