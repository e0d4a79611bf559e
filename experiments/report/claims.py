"""The claims x readings matrix (:func:`copyhead_jax.compare.readings.claims_matrix`) as
markdown, its rule first."""

from __future__ import annotations

from typing import Any

from copyhead_jax.compare import EXPONENT_TOL

from .tables import table

RULE = (
    "A claimed number is **reproduced** when the measured 95% CI meets its tolerance band: for "
    "a reported P*, the reported value's neighbours on the paper's P grid (the paper could not "
    "resolve its P* more finely: 16-32 for 23, 300-400 for 322, 256-322 for 300); for a law's "
    f"exponent, the law's exponent +-{EXPONENT_TOL} (L ln^2 L: its effective exponent over the "
    "fitted range). X% (or X for exponents) is the distance from the claimed number to the "
    "nearest end of the CI. Bounds (coverage) are judged by the bound itself; the early warning "
    "by `copyhead_jax.compare.early_warning` (docs/theory.md §9.10). 'Not reproduced under the "
    "readings tried' only where no reading tried reproduces the claim (`copyhead_jax.compare."
    "claims`, docs/theory.md §5b)."
)


def render(m: dict[str, Any]) -> str:
    """The matrix as a markdown table, the rule first."""
    rows = [[row["claim"], *(f"{row['cells'][r]['value']}: **{row['cells'][r]['verdict']}**"
             for r in m["readings"]), row["overall"]] for row in m["rows"]]  # fmt: skip
    head = ["claim", *(f"`{r}`" for r in m["readings"]), "across readings"]
    return f"{RULE}\n\n{table(head, rows)}\n"
