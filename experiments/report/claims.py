"""The claims x readings matrix (:func:`copyhead_jax.compare.readings.claims_matrix`) as
markdown, its rule first."""

from __future__ import annotations

from typing import Any

from copyhead_jax.compare import EXPONENT_TOL, P_TOL

from .tables import table

RULE = (
    "A claimed number is **reproduced** when the whole measured 95% CI lies inside its tolerance "
    f"band, **not reproduced** when the whole CI lies outside it, and **not resolved** otherwise "
    f"(a CI across the band's edge, or too wide to tell: a wide CI never reproduces a claim). "
    f"Bands: a reported P* +-{P_TOL:.0%} of it (the reports' disagreement threshold; the paper's "
    f"P grid is not published); a law's exponent +-{EXPONENT_TOL} (L ln^2 L: its effective "
    "exponent over the fitted range). X% (or X for exponents) is the distance from the claimed "
    "number to the nearest end of the CI. Bounds (coverage) are judged by the bound itself; a "
    "claimed range (the crossover's coverage) is its own band, which the measured range over the "
    "crossover's P (each end widened by its seeds' 95% error) must lie inside; the "
    "early warning by `copyhead_jax.compare.early_warning` (docs/theory.md §9.10). 'Not "
    "reproduced under the readings tried' only where every reading judged is off "
    "(`copyhead_jax.compare.claims`, docs/theory.md §5b)."
)


def render(m: dict[str, Any]) -> str:
    """The matrix as a markdown table, the rule first."""
    rows = [
        [
            row["claim"],
            *(
                f"{row['cells'][r]['value']}: **{row['cells'][r]['verdict']}**"
                for r in m["readings"]
            ),
            row["overall"],
        ]
        for row in m["rows"]
    ]
    head = ["claim", *(f"`{r}`" for r in m["readings"]), "across readings"]
    return f"{RULE}\n\n{table(head, rows)}\n"
