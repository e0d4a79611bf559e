"""Theory figures: a result dict in, a matplotlib ``Figure`` out (Agg backend, no pyplot state)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .style import GREY, KEY_COLORS, P_LABEL, PALETTE, legend, styled

_MARKS = KEY_COLORS


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
            ax.axvline(v, color=_MARKS[k], ls=ls, lw=1, label=f"{k} = {v:,.4g}")
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


@styled
def plot_curve(curve: dict[str, Any], points: dict[str, Any] | None = None) -> Figure:
    """Order parameters, copy fraction / attention, and loss versus P (:func:`theory_curve`)."""
    P = np.asarray(curve["P"])
    fig = Figure(figsize=(13, 5), layout="constrained")
    axs = fig.subplots(1, 3)
    valid = np.asarray(curve["minima_valid"])
    if curve["attention"] == "linear":
        axs[0].plot(P, curve["c1"], label="$c_1$")
        axs[0].plot(P, curve["cG"], label="$c_G$")
        _metastable(axs[0], P, np.asarray(curve["minima_cG"]), valid)
        axs[0].set_ylabel("order parameters at the global minimum")
        axs[1].plot(P, curve["psi"], color=PALETTE[2], label="$\\psi$")
        axs[1].set_ylabel("copy fraction $\\psi$ (dimensionless)")
        keys = ("P_c1", "P_cG", "P_cG_half")
    else:
        axs[0].plot(P, curve["beta"], label="$\\beta$ (global minimum)")
        _metastable(axs[0], P, np.asarray(curve["minima_beta"]), valid)
        axs[0].set_ylabel("logit scale $\\beta$ (dimensionless)")
        axs[1].plot(P, curve["p"], color=PALETTE[3], label="$p = A_{a,a-1}$")
        axs[1].plot(
            P, np.asarray(curve["aG"]) / np.sqrt(curve["params"]["L"]), label="$a_G/\\sqrt{L}$"
        )
        axs[1].set_ylabel("attention on the previous token (0 to 1)")
        keys = ("P_aG",)
    axs[2].plot(P, curve["mse"], color="k", label="population loss")
    axs[2].set_ylabel("population loss per sequence")
    for ax in axs:
        ax.set_xscale("log")
        ax.set_xlabel(P_LABEL)
        _mark_points(ax, points, keys)
        legend(ax)
    p = curve["params"]
    fig.suptitle(
        f"{curve['attention']} attention, L={p['L']}, V={p['V']}, {p['likelihood']}, "
        f"{p['linear_scale']}, objective={curve['objective']}",
        fontsize=9,
    )
    return fig


@styled
def plot_landscape(data: dict[str, Any]) -> Figure:
    """``V_soft(beta)`` curves (the two wells) or ``V_lin`` contours (:func:`landscape`)."""
    P = np.asarray(data["P"])
    m = data["minima"]
    if data["attention"] == "softmax":
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.subplots()
        for i, p in enumerate(P):
            ax.plot(data["beta"], data["V"][i], color=_c(i), label=f"P = {p:.4g}")
            ok = m["minima_valid"][i]
            b = m["minima_beta"][i][ok]
            ax.plot(b, np.interp(b, data["beta"], data["V"][i]), "o", color=_c(i), ms=4)
        ax.plot([], [], "o", color=GREY, ms=4, label="local minima")
        ax.set_xlabel("logit scale $\\beta$ (logits $\\beta G^*$)")
        ax.set_ylabel("$V_{soft}(\\beta) - V_{soft}(0)$ (nats)")
        legend(ax)
        return fig
    n = len(P)
    fig = Figure(figsize=(3.6 * n, 3.4), layout="constrained")
    axs = np.atleast_1d(fig.subplots(1, n))
    for i, (ax, p) in enumerate(zip(axs, P)):
        V = data["V"][i]
        lv = np.quantile(V, np.linspace(0.0, 0.6, 16))
        ax.contour(data["c1"], data["cG"], V.T, levels=np.unique(lv), linewidths=0.7)
        ok = m["minima_valid"][i]
        for s in (1, -1):  # the Z2 partner of each minimum
            ax.plot(s * m["minima_c1"][i][ok], s * m["minima_cG"][i][ok], "k.", ms=6)
        ax.set_title(f"$P$ = {p:,.4g}", fontsize=9)
        ax.set_xlabel("$c_1$")
        ax.set_ylabel("$c_G$")
        keys = [Line2D([], [], color=GREY, lw=0.7), Line2D([], [], marker=".", color="k", ls="")]
        legend(ax, handles=keys, labels=["contours of $V_{lin}$", "minima, $\\pm$ partners"])
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
    ax.set_title(f"{other}={table[other][0]}, {p['likelihood']}, {p['linear_scale']}", fontsize=9)
    ax.plot([], [], "--", color=GREY, lw=0.8, label="fitted power law")
    legend(ax, ncol=1)
    return fig


@styled
def plot_phase_diagram(pd: dict[str, Any], table: dict[str, Any] | None = None) -> Figure:
    """Order parameter of the global minimiser over ``(L or V, P)`` (:func:`phase_diagram`)."""
    fig = Figure(figsize=(6, 4.2), layout="constrained")
    ax = fig.subplots()
    if pd["attention"] == "linear":
        z, lab = pd["psi"], "copy fraction $\\psi$"
    else:
        z, lab = pd["p"], "$p = A_{a,a-1}$"
    mesh = ax.pcolormesh(pd["P"], pd["values"], z, shading="nearest", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label=lab)
    if table is not None:
        keys = ("P_c1", "P_cG") if pd["attention"] == "linear" else ("P_aG",)
        for k in keys:
            y = np.asarray(table[k])
            y = y[:, 0] if pd["axis"] == "L" else y[0, :]
            ax.plot(y, table[pd["axis"]], color=_MARKS[k], lw=1.2, label=k)
        legend(ax)
    ax.set_xscale("log")
    ax.set_xlabel(P_LABEL)
    ax.set_ylabel(_AXIS[pd["axis"]])
    return fig


__all__ = ["plot_curve", "plot_landscape", "plot_phase_diagram", "plot_scaling"]
