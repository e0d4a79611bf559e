"""Figures of the posterior artefact (``experiments.posterior``): its result's blocks drawn by
:mod:`copyhead_jax.posterior_plot`; result dict in, Figures out."""

from __future__ import annotations

from copyhead_jax import posterior_plot as PP
from copyhead_jax import style as st

#: the softmax blocks of a result: key, name, colour, marker
SOFT = (("pool", "pooling start", st.ORANGE, "s"), ("copy", "copy start", st.PURPLE, "v"),
        ("copy_high", "copy start, high P", st.VERMILLION, "^"))  # fmt: skip


def figures(res: dict, curves: dict) -> dict:
    """``orderparams``, ``susceptibility``, ``llc`` and (with a TI result) ``free_energy``."""
    lin, soft, th, pre = res["linear"], res["softmax"], res["theory"], res["preset"]
    blocks = [(n, soft[k], c, m) for k, n, c, m in SOFT if soft.get(k) is not None]
    fe = soft.get("free_energy")
    mark = lambda k: (f"$P^*_{{{k[2:]}}}$", th["map"][k], st.KEY_COLORS[k])  # noqa: E731
    panels = [("linear attention", lin, "linear", (mark("P_c1"), mark("P_cG"))),
              ("softmax attention, pooling start", soft["pool"], "softmax", (mark("P_aG"),))]
    names = {"pool": "softmax, pooling start", "copy": "softmax, copy start",
             "copy_high": "softmax, copy start (high P)"}  # fmt: skip
    llc = [("linear", lin, st.BLUE, "o")] + [
        (names[k], soft[k], c, m) for k, _, c, m in SOFT if soft.get(k) is not None]
    figs = {"orderparams": PP.orderparams_figure(lin, blocks, curves, pre, fe),
            "susceptibility": PP.susceptibility_figure(panels, pre),
            "llc": PP.llc_figure(llc, pre)}  # fmt: skip
    if fe is not None:
        figs["free_energy"] = PP.free_energy_figure(fe, {o: th[o]["P_aG"] for o in ("map", "post")})
    return figs
