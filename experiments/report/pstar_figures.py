"""``which_pstar.png`` and ``which_curves.png`` of a markov or causal result (the figures:
:mod:`copyhead_jax.plots.pstar`)."""

from __future__ import annotations

from pathlib import Path

from copyhead_jax.plots import beyond_curves_figure, beyond_pstar_figure


def beyond_figures(res: dict, dest: Path, which: str) -> list[Path]:
    """``which_pstar.png`` and ``which_curves.png`` of a markov or causal result in ``dest``."""
    from ..common import save_figure

    draws = (("pstar", beyond_pstar_figure), ("curves", beyond_curves_figure))
    return [save_figure(draw(res), Path(dest) / f"{which}_{name}.png") for name, draw in draws]
