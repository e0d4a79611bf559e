"""The posterior artefact's lambda-hat figure: devinterp's default (``llc_dv``,
:func:`copyhead_jax.llc_runs.devinterp_sweep`) beside the posterior's own."""

from __future__ import annotations

from copyhead_jax import posterior_plot as PP
from copyhead_jax import style as st


def figure(res: dict):
    """:func:`copyhead_jax.posterior_plot.devinterp_figure` of the linear block and the softmax
    pooling and (high-P) copy starts that have a devinterp LLC; None if none has."""
    soft = res["softmax"]
    blocks = (("linear", res["linear"], st.BLUE, "o"),
              ("softmax, pooling start", soft["pool"], st.ORANGE, "s"),
              ("softmax, copy start", soft.get("copy_high"), st.VERMILLION, "v"))  # fmt: skip
    blocks = [x for x in blocks if x[1] is not None and x[1].get("llc_dv")]
    return PP.devinterp_figure(blocks, res["theory"]["map"], res["preset"]) if blocks else None
