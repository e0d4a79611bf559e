"""``which_pstar.png`` and ``which_curves.png`` of a markov or causal result (the figures:
:mod:`copyhead_jax.plots.pstar`)."""

from __future__ import annotations

from pathlib import Path

from copyhead_jax.plots import beyond_curves_figure, beyond_pstar_figure


def beyond_figures(res: dict, dest: Path, which: str) -> list[Path]:
    """``which_pstar.png`` and ``which_curves.png`` of a markov or causal result in ``dest``."""
    import matplotlib.pyplot as plt

    Path(dest).mkdir(parents=True, exist_ok=True)
    out = []
    for name, draw in (("pstar", beyond_pstar_figure), ("curves", beyond_curves_figure)):
        fig = draw(res)
        out.append(Path(dest) / f"{which}_{name}.png")
        fig.savefig(out[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return out
