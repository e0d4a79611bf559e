"""Power laws of the transition points: every ``P*`` (EK theory, finite-width theory, measured)
fitted against ``L`` or ``V`` beside the paper's law over the same range (its effective
exponent). Rows are result dicts, one per value of the axis (``theory_ek``, ``theory_finite``,
``measured``: a located point's dict)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..theory.scaling import fit_power_law
from .branches import KEYS, SINGLE, THEORY_KEY
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
