"""The exact width reduction against the EK theory (result dict in, Figure out): the copy
coefficient versus P per width, and the copy branch's relative gap to the theory versus the width
(docs/theory.md §2c; ``python -m experiments reduction``)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..models import head_class  # noqa: E402
from .style import BLACK, P_LABEL, PALETTE, RC, curve, legend, log_P_axis  # noqa: E402

__all__ = ["reduction_width_figure"]


def reduction_width_figure(width: dict):
    """Copy coefficient against P per width (two panels), and the copy branch's gap to the EK
    theory against N (third panel: finite widths as points, N = infinity as a dotted level)."""
    widths = [float(k[2:]) for k in width["linear"] if k.startswith("N=")]
    widths = [int(N) if N < math.inf else N for N in widths]
    with matplotlib.rc_context(RC):
        fig, axes = plt.subplots(1, 3, figsize=(15, 5.4), layout="constrained")
        for ax, att in zip(axes, ("linear", "softmax")):
            d = width[att]
            P = np.asarray(d["P"])
            ax.plot(P, d["EK_cG"], "--", color=BLACK, lw=1.5, label="EK theory (N = inf)")
            for i, N in enumerate(widths):
                ax.plot(
                    P,
                    d[f"N={N}"]["cG"],
                    "o-",
                    ms=3,
                    color=plt.cm.viridis(0.85 * i / 3),
                    label=f"exact MAP, N = {N:,.0f}" if N < math.inf else "exact MAP, N = inf",
                )
            log_P_axis(ax, P)
            ax.set_xlabel(P_LABEL)
            ax.set_ylabel(f"copy coefficient {head_class(att).order_labels[1]} (dimensionless)")
            ax.set_title(f"{att} attention (small default, plain, 2 seeds)")
            legend(ax)
        ax = axes[2]
        k = 0
        for att, mk in (("linear", "o"), ("softmax", "s")):
            d = width[att]
            P = np.asarray(d["P"])
            ek = np.asarray(d["EK_cG"])
            for j in np.flatnonzero(P >= 32):
                gap = [abs(d[f"N={N}"]["cG"][j] / ek[j] - 1) for N in widths]
                col = PALETTE[k % len(PALETTE)]
                k += 1
                curve(
                    ax,
                    widths[:-1],
                    gap[:-1],
                    "-",
                    marker=mk,
                    ms=4,
                    color=col,
                    label=f"{att}, $P$ = {P[j]}",
                )
                ax.axhline(gap[-1], color=col, ls=":", lw=1)
        if k:
            ax.plot(
                [], [], ":", color=BLACK, label="$N$ = inf (dotted level, same colour)", gid="key"
            )
        ax.set_xscale("log")
        ax.set_yscale("log" if k else "linear")  # k = 0: no P >= 32 on the grid (--tiny)
        ax.set_xticks(widths[:-1], [f"{N:,}" for N in widths[:-1]])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("width $N$")
        ax.set_ylabel("|copy coefficient / EK - 1| (relative gap)")
        ax.set_title("copy branch: gap to the EK theory")
        legend(ax, ncol=2)
    return fig
