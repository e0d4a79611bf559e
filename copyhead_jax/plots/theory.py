"""Theory figures: a result dict in, a matplotlib ``Figure`` out (Agg backend, no pyplot state)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..theory import theory_of
from .style import GREY, KEY_COLORS, P_LABEL, PALETTE, legend, star_label, styled

_MARKS = KEY_COLORS


def _words(name: str) -> str:
    """A config value for a title: ``per_position`` -> ``per-position``, ``inv_L`` ->
    ``$A = s/L$``."""
    scales = {"inv_L": "$A = s/L$", "inv_sqrt_L": "$A = s/\\sqrt{L}$", "none": "$A = s$"}
    return scales.get(name, name.replace("_", "-"))


def _c(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


_AXIS = {"L": "sequence length $L$", "V": "vocabulary size $V$"}


def _mark_points(ax, points: dict[str, Any] | None, keys) -> None:
    if not points:
        return
    for k in keys:
        v = points.get(k)
        if v:
            ls = ":" if k == "P_cG_half" else "--"
            ax.axvline(v, color=_MARKS[k], ls=ls, lw=1, label=f"{star_label(k)} = {v:,.4g}")
    sp = points.get("spinodals")
    if sp and "P_aG" in keys:
        ax.axvspan(
            sp[0],
            sp[1],
            color=_MARKS["P_aG"],
            alpha=0.1,
            lw=0,
            label="coexistence (between the spinodals)",
        )


def _metastable(ax, P, minima, valid):
    """Every local minimum other than the global one, as grey dots."""
    other = valid.copy()
    other[:, 0] = False
    Pm = np.broadcast_to(P[:, None], minima.shape)
    ax.plot(Pm[other], minima[other], ".", color=GREY, ms=3, label="metastable minima")


_SYMBOL = {"beta": "$\\beta$", "u": "$u$", "c1": "$c_1$", "cG": "$c_G$", "r": "$r$"}


@styled
def plot_curve(curve: dict[str, Any], points: dict[str, Any] | None = None) -> Figure:
    """Order parameters, the copy measure, and loss versus P (:func:`theory_curve`)."""
    kind = theory_of(curve["attention"])
    P = np.asarray(curve["P"])
    fig = Figure(figsize=(13, 5), layout="constrained")
    axs = fig.subplots(1, 3)
    valid = np.asarray(curve["minima_valid"])
    for name, lab in zip(kind.order_names, kind.order_labels):
        axs[0].plot(P, curve[name], label=lab)
    _metastable(axs[0], P, np.asarray(curve[f"minima_{kind.order_names[1]}"]), valid)
    axs[0].set_ylabel("order parameters at the global minimum")
    field, lab = kind.phase_field
    axs[1].plot(P, curve[field], color=PALETTE[2], label=lab)
    axs[1].set_ylabel(f"{lab} (dimensionless)")
    axs[2].plot(P, curve["mse"], color="k", label="population loss")
    axs[2].set_ylabel("population loss per sequence")
    for ax in axs:
        ax.set_xscale("log")
        ax.set_xlabel(P_LABEL)
        _mark_points(ax, points, kind.point_keys)
        legend(ax)
    p = curve["params"]
    fig.suptitle(
        f"{curve['attention']} attention, $L$={p['L']}, $V$={p['V']}, {_words(p['likelihood'])}, "
        f"{_words(p['linear_scale'])}, objective={curve['objective']}",
        fontsize=9,
    )
    return fig


@styled
def plot_landscape(data: dict[str, Any]) -> Figure:
    """The reduced potential: curves of a one-coordinate ansatz (softmax: the two wells of
    ``V(beta)``) or contours of a two-coordinate one (:func:`landscape`)."""
    kind = theory_of(data["attention"])
    P = np.asarray(data["P"])
    m = data["minima"]
    if len(kind.coords) == 1:
        x = kind.coords[0]
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.subplots()
        for i, p in enumerate(P):
            ax.plot(data[x], data["V"][i], color=_c(i), label=f"P = {p:.4g}")
            ok = m["minima_valid"][i]
            b = m[f"minima_{x}"][i][ok]
            ax.plot(b, np.interp(b, data[x], data["V"][i]), "o", color=_c(i), ms=4)
        ax.plot([], [], "o", color=GREY, ms=4, label="local minima")
        ax.set_xlabel(f"coordinate {_SYMBOL.get(x, x)} of the ansatz")
        ax.set_ylabel(f"$V({_SYMBOL.get(x, x).strip('$')}) - V(0)$ (nats)")
        legend(ax)
        return fig
    a, b = kind.landscape_axes
    n = len(P)
    fig = Figure(figsize=(3.6 * n, 3.4), layout="constrained")
    axs = np.atleast_1d(fig.subplots(1, n))
    for i, (ax, p) in enumerate(zip(axs, P)):
        V = data["V"][i]
        lv = np.quantile(V, np.linspace(0.0, 0.6, 16))
        ax.contour(data[a], data[b], V.T, levels=np.unique(lv), linewidths=0.7)
        ok = m["minima_valid"][i]
        for s in (1, -1) if kind.gauge_fix else (1,):  # the Z2 partner of each minimum
            ax.plot(s * m[f"minima_{a}"][i][ok], s * m[f"minima_{b}"][i][ok], "k.", ms=6)
        ax.set_title(f"$P$ = {p:,.4g}", fontsize=9)
        ax.set_xlabel(_SYMBOL.get(a, a))
        ax.set_ylabel(_SYMBOL.get(b, b))
        keys = [Line2D([], [], color=GREY, lw=0.7), Line2D([], [], marker=".", color="k", ls="")]
        mins = "minima, $\\pm$ partners" if kind.gauge_fix else "local minima"
        legend(ax, handles=keys, labels=["contours of $V$", mins])
    return fig


@styled
def plot_scaling(table: dict[str, Any], fits: dict[str, Any]) -> Figure:
    """``P*`` versus ``L`` or ``V`` (log-log) with the fitted power laws (:func:`scaling_table`)."""
    axis = "L" if len(table["L"]) >= len(table["V"]) else "V"
    x = np.asarray(table[axis], float)
    keys = [k for k in ("P_c1", "P_cG", "P_cG_half", "P_aG") if k in table]
    fig = Figure(figsize=(6, 4.2), layout="constrained")
    ax = fig.subplots()
    for i, k in enumerate(keys):
        y = np.asarray(table[k], float)
        y = y[:, 0] if axis == "L" else y[0, :]
        f = fits[k][axis][0]
        lab = k
        if f["exponent"] is not None:
            lab += f": {axis}^{f['exponent']:.3f}"
            if f["ci"] is not None:
                lab += f" [{f['ci'][0]:.3f}, {f['ci'][1]:.3f}]"
            ax.plot(x, f["prefactor"] * x ** f["exponent"], color=_c(i), lw=0.8, ls="--")
        ax.plot(x, y, "o", color=_c(i), ms=3, label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(_AXIS[axis])
    ax.set_ylabel("$P^*$ (sequences)")
    other = "V" if axis == "L" else "L"
    p = table["params"]
    ax.set_title(
        f"{other}={table[other][0]}, {_words(p['likelihood'])}, {_words(p['linear_scale'])}",
        fontsize=9,
    )
    ax.plot([], [], "--", color=GREY, lw=0.8, label="fitted power law")
    legend(ax, ncol=1)
    return fig


@styled
def plot_phase_diagram(pd: dict[str, Any], table: dict[str, Any] | None = None) -> Figure:
    """Order parameter of the global minimiser over ``(L or V, P)`` (:func:`phase_diagram`)."""
    fig = Figure(figsize=(6, 4.2), layout="constrained")
    ax = fig.subplots()
    kind = theory_of(pd["attention"])
    field, lab = kind.phase_field
    mesh = ax.pcolormesh(pd["P"], pd["values"], pd[field], shading="nearest", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label=lab)
    if table is not None:
        for k in (k for k in kind.point_keys if k in table and k != "P_cG_half"):
            y = np.asarray(table[k])
            y = y[:, 0] if pd["axis"] == "L" else y[0, :]
            ax.plot(y, table[pd["axis"]], color=_MARKS[k], lw=1.2, label=k)
        legend(ax)
    ax.set_xscale("log")
    ax.set_xlabel(P_LABEL)
    ax.set_ylabel(_AXIS[pd["axis"]])
    return fig


__all__ = ["plot_curve", "plot_landscape", "plot_phase_diagram", "plot_scaling"]
