"""The early-warning row of the claims x readings matrix: each reading's windows before P*_c1,
P*_cG and P*_aG (:func:`.warning.early_warning`, the criterion of docs/theory.md §13.9), with
route B's predicted growth beside each where ``python -m experiments.warning_theory`` computed
it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .reading_cells import verdict_cell
from .reading_sources import bayesian_point, load_json
from .warning import as_predicted, early_warning, signal_of

__all__ = ["WARNING_THEORY", "predicted_growth_of", "warning_cell", "warning_checks"]

#: the file of route B's predicted growth per reading and check (``python -m
#: experiments.warning_theory``; docs/theory.md §13.9)
WARNING_THEORY = "early_warning_theory.json"


def warning_checks(d: Path, r: str) -> list[dict[str, Any]]:
    """Reading ``r``'s early-warning checks: ``name``, the measured ``result``
    (:func:`early_warning`), the paper's verdict ``want``, the ``attention`` and ``order``
    measured and the window's ``P_star``. Before P*_c1 and P*_cG in windows at the MAP P* and
    the posterior's own crossover; before P*_aG at the MAP and at the Bayesian P* (when
    measured). Empty when the reading has no posterior file."""
    post = load_json(d, f"posterior_{r}.json")
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
    row = ((load_json(d, WARNING_THEORY) or {}).get(r) or {}).get(check["name"]) or {}
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
        return verdict_cell("not measured")
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
    return verdict_cell("; ".join(parts), rep, "not resolved")
