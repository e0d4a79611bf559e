"""The P* table of branch runs (linear runs; softmax runs started on the pooling and on the copy
branch): per mechanism the EK and finite-width theories' P*, the measured one with its bracket and
relative errors, the order of the transition as measured and the test loss across it
(docs/theory.md §5). Inputs are measurements and theory results already made: the located points
of :mod:`.branches`, seed-mean curves (``P`` and one array per field) and the finite-width
summaries (``{"summary": {key: {"mean": ...}}}``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import locate as loc
from .errors import rel_err
from .seeds import located_text

#: the table's rows: (attention, mechanism, key, the paper's scaling law, the theory's order)
ROWS = (
    ("linear", "pooling onset (c1)", "P_c1", "V^2", "2nd order (Z2 pitchfork)"),
    ("linear", "copy crossover (cG)", "P_cG", "L^{3/2} V^{1/2}", "crossover"),
    ("softmax", "copy transition (aG)", "P_aG", "L ln^2 L", "1st order"),
)


def _P(m: loc.Located | None) -> float | None:
    return None if m is None else m.P_star


def pstar_table(ek, finite: dict, found, early_warning, loss_text, orders) -> list[dict[str, Any]]:
    """One row per :data:`ROWS` entry. ``ek``: the EK points (``P_aG`` falls back to
    ``P_aG_crossover`` where the theory has no first-order transition); ``finite``: attention ->
    finite-width result (or None); ``found``: key -> located measured point; ``early_warning``,
    ``loss_text``, ``orders``: key -> what the row reports under those names."""
    rows = []
    for att, mech, key, law, order in ROWS:
        th = ek.get(key)
        if key == "P_aG" and th is None:
            th = ek.get("P_aG_crossover")
        m, fin = found.get(key), finite[att]
        fin_P = fin["summary"].get(key, {}).get("mean") if fin else None
        rows.append(
            {
                "attention": att,
                "mechanism": mech,
                "key": key,
                "scaling_law": law,
                "theory_ek": th,
                "theory_finite": fin_P,
                "measured": _P(m),
                "measured_text": located_text(m) if m else "n/a",
                "bracket": None if m is None else m.bracket,
                "bracketed": bool(m and m.bracketed),
                "rel_err_ek": rel_err(_P(m), th),
                "rel_err_finite": rel_err(_P(m), fin_P),
                "order_theory": order,
                "order_measured": orders.get(key),
                "loss_pattern": loss_text.get(key),
                "early_warning": early_warning.get(key),
            }
        )
    return rows


def loss_patterns(lin, pool, found, *, L: int, V: int) -> dict[str, str]:
    """The test loss across each transition, as text: the linear runs' at five ``P`` against the
    no-attention, pooling and copying values; the pooling start's jump at its bracketed
    ``P_aG_single``. ``lin``, ``pool``: seed-mean curves with ``train_loss`` and ``test_loss``."""
    out = {}
    P, lo = lin["P"], lin["test_loss"]
    if P.size:
        idx = sorted({0, *np.round(np.linspace(0, P.size - 1, 5)).astype(int).tolist()})
        steps = " -> ".join(f"{lo[i]:.1f} (P={P[i]})" for i in idx)
        out["P_c1"] = out["P_cG"] = (
            f"test loss {steps} [no attention L = {L}, pooling (1-1/V)(L-1) = "
            f"{(1 - 1 / V) * (L - 1):.1f}, copying 0]"
        )
    j = found.get("P_aG_single")
    if j is not None and j.bracketed:
        Pp, lp, lt = pool["P"], pool["train_loss"], pool["test_loss"]
        i0 = int(np.flatnonzero(Pp == j.bracket[0])[0])
        i1 = int(np.flatnonzero(Pp == j.bracket[1])[0])
        out["P_aG"] = (
            f"jump: train {lp[i0]:.1f} -> {lp[i1]:.1f}, test {lt[i0]:.1f} -> {lt[i1]:.1f} per "
            f"sequence between P = {Pp[i0]} and {Pp[i1]} (single start, seed mean); "
            f"{lt[0]:.1f} at P = {Pp[0]}"
        )
    return out


def measured_orders(found, window) -> dict[str, str | None]:
    """The order of each transition as measured, as text: the onset of ``r`` (``P_c1``), the
    largest slope of ``psi`` (``P_cG``, a smooth crossover), the jump of the pooling start's
    ``aG`` and the coexistence window (``window``: its ``lower`` and ``upper`` located edges)."""
    return {
        "P_c1": "continuous onset of r" if found["P_c1"].bracketed else None,
        "P_cG": (
            f"smooth: max dpsi/dlogP = {found['P_cG'].detail.get('slope_max', float('nan')):.2f}"
            if found["P_cG"].bracketed
            else None
        ),
        "P_aG": (
            f"jump of aG by {found['P_aG_single'].detail.get('jump', float('nan')):.2f} "
            f"(sharpness {found['P_aG_single'].detail.get('sharpness', float('nan')):.2f}); "
            f"coexistence window {located_text(window['lower'])} .. "
            f"{located_text(window['upper'])}"
        ),
    }


__all__ = ["ROWS", "loss_patterns", "measured_orders", "pstar_table"]
