"""One look for every figure: a colour-blind-safe palette, readable sizes, legends off the data,
log-P ticks that never collide, and :func:`figure_problems`, the checks a reviewer would make.

The palette is Okabe & Ito's (2008), safe for the common colour-vision deficiencies; viridis for
colour maps. Roles, in every figure: linear attention blue, softmax vermillion; a transition
point keeps one colour wherever it is marked (:data:`KEY_COLORS`).
"""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402

from ..models import HEADS  # noqa: E402

# Okabe & Ito (2008), "Color Universal Design"
BLACK = "#000000"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#8C8C8C"
PALETTE = (BLUE, VERMILLION, GREEN, ORANGE, SKY, PURPLE, BLACK, YELLOW)

COLORS = {name: cls.plot_style["color"] for name, cls in HEADS.items()}  # each head's colour
KEY_COLORS = {  # P_aG black: vermillion is the softmax data's
    "P_c1": GREEN,
    "P_cG": PURPLE,
    "P_cG_half": SKY,
    "P_aG": BLACK,
    "P_aG_single": ORANGE,
    "window_lo": GREY,
}
LEGEND_PT = 8  # the smallest legend text that stays readable at column width
P_LABEL = "training set size $P$ (sequences)"
A_G_LABEL = "copy logit $a_G$ (dimensionless)"
#: legend names of the transition points whose name is not their key's tail (``P_cG`` -> cG)
STAR_NAMES = {"P_cG_half": "cG,1/2", "P_aG_single": "aG,\\ one\\ start",
              "window_lo": "window,\\ low", "spinodal_lo": "spinodal,\\ lower",
              "spinodal_hi": "spinodal,\\ upper"}  # fmt: skip

RC = {
    "axes.prop_cycle": cycler(color=PALETTE),
    "image.cmap": "viridis",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": LEGEND_PT,
    "legend.title_fontsize": LEGEND_PT,
    "figure.titlesize": 11,
    "savefig.dpi": 110,
}
NOT_MEASURED = "not measured"


def styled(draw):
    """Run a figure-drawing function under :data:`RC` (sizes and palette are read when the
    artists are made, so the figure keeps them after the context ends)."""

    @functools.wraps(draw)
    def wrapper(*a, **kw):
        with matplotlib.rc_context(RC):
            return draw(*a, **kw)

    return wrapper


def legend(ax, *, ncol: int | None = None, handles=None, labels=None, gap_pt: float = 36.0):
    """The axes' legend below it, clear of the tick labels and the x label, so that it never
    covers data (constrained layout makes room)."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if ncol is None:
        ncol = 1 if len(handles) <= 3 else 2
    anchor = offset_copy(ax.transAxes, fig=ax.figure, y=-gap_pt, units="points")
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=anchor, ncol=ncol, fontsize=LEGEND_PT,
                     frameon=False, handlelength=2.2, columnspacing=1.2)  # fmt: skip


def num(v: float) -> str:
    """A P or P* for a label: thousands separated from 100 up, three significant digits below."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def star_label(name: str) -> str:
    """A transition point's key as a legend's symbol: ``P_cG`` -> ``$P^*_{cG}$``."""
    return f"$P^*_{{{STAR_NAMES.get(name, name[2:])}}}$"


def not_measured(ax, what: str = "") -> None:
    """Write "not measured" inside an axes that has no data (an empty panel says why)."""
    text = NOT_MEASURED + (f":\n{what}" if what else "")
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=GREY,
            fontsize=10)  # fmt: skip


def _spread(P: np.ndarray, n: int = 6) -> list[float]:
    """At most ~``n`` of the values ``P``, spread evenly in log P, first and last kept."""
    P = np.unique(np.asarray(P, float))
    if len(P) <= 1:
        return list(P)
    gap = np.log(P[-1] / P[0]) / n
    keep = [P[0]]
    for p in P[1:-1]:
        if np.log(p / keep[-1]) >= gap and np.log(P[-1] / p) >= gap:
            keep.append(p)
    return [*keep, P[-1]]


def log_P_axis(ax, P, axis: str = "x") -> None:
    """Log scale for a P axis; under two decades, ticks at a spread of the measured P (the
    default would label minor ticks too, and they collide)."""
    P = np.asarray(P, float).ravel()
    P = P[np.isfinite(P) & (P > 0)]
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    if len(P) and P.max() / P.min() < 100:
        a.set_major_locator(FixedLocator(_spread(P)))
        a.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:.3g}"))
        a.set_minor_formatter(NullFormatter())


def log_P_at_data(ax, P=None) -> None:
    """:func:`log_P_axis` ticked at the P of the axes' markers (or at ``P``) within the current
    limits, which it keeps."""
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    xs = [
        np.asarray(ln.get_xdata(), float)
        for ln in ax.lines
        if ln.get_transform() == ax.transData and ln.get_marker() not in (None, "None", "")
    ]
    if P is not None:
        xs = [np.asarray(P, float)]
    x = np.concatenate([v.ravel() for v in xs]) if xs else np.array([lo, hi])
    x = x[(x >= lo) & (x <= hi)]
    log_P_axis(ax, x if len(x) else [lo, hi])
    ax.set_xlim(lo, hi)


# ---------------------------------------------------------------------------------------------
# The reviewer's checks


def _has_data(ax) -> bool:
    for ln in ax.lines:
        x, y = (np.asarray(v, float) for v in ln.get_data())
        if np.isfinite(x).any() and np.isfinite(y).any():
            return True
    for c in ax.collections:
        if len(c.get_offsets()) or len(c.get_paths()):
            return True
    if ax.images or ax.patches:
        return True
    return any(NOT_MEASURED in t.get_text() for t in ax.texts)


def _overlaps(boxes) -> bool:
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if a.overlaps(b) and a.width > 0 and b.width > 0:
                return True
    return False


def _data_points(ax) -> np.ndarray:
    """Display coordinates of every drawn data vertex and marker of the axes."""
    pts = []
    for ln in ax.lines:
        if ln.get_visible():
            xy = np.asarray(ln.get_xydata(), float)
            if ln.get_transform() != ax.transData:  # axvline / axhline: not data points
                continue
            pts.append(ax.transData.transform(xy[np.isfinite(xy).all(1)]))
    for c in ax.collections:
        off = np.asarray(c.get_offsets(), float)
        if len(off) and c.get_offset_transform() == ax.transData:
            pts.append(ax.transData.transform(off[np.isfinite(off).all(1)]))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def figure_problems(fig) -> list[str]:
    """What a reviewer would flag, one line per problem: an axes without an x or y label, an
    empty panel (no data and no "not measured"), a legend under 8 pt or over data points, tick
    labels that collide. Colour bars are checked for a label only."""
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure (no pyplot): give it Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    out = []
    r = fig.canvas.get_renderer()
    for i, ax in enumerate(fig.axes):
        name = f"axes {i} ({ax.get_title() or 'untitled'})"
        if not ax.get_visible() or not ax.axison:
            continue
        if ax.get_label() == "<colorbar>":
            if not (ax.get_ylabel() or ax.get_xlabel()):
                out.append(f"{name}: colour bar without a label")
            continue
        if not ax.get_xlabel():
            out.append(f"{name}: no x label")
        if not ax.get_ylabel():
            out.append(f"{name}: no y label")
        if not _has_data(ax):
            out.append(f"{name}: empty panel")
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible()
                      and t.get_text()]  # fmt: skip
            if _overlaps([t.get_window_extent(r) for t in labels]):
                out.append(f"{name}: {axis.axis_name} tick labels collide")
        leg = ax.get_legend()
        if leg is not None:
            if min((t.get_fontsize() for t in leg.get_texts()), default=99) < LEGEND_PT:
                out.append(f"{name}: legend under {LEGEND_PT} pt")
            box = leg.get_window_extent(r)
            pts = _data_points(ax)
            inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0)
                      & (pts[:, 1] < box.y1))  # fmt: skip
            axbox = ax.get_window_extent(r)
            in_axes = ((pts[:, 0] >= axbox.x0) & (pts[:, 0] <= axbox.x1)
                       & (pts[:, 1] >= axbox.y0) & (pts[:, 1] <= axbox.y1))  # fmt: skip
            if (inside & in_axes).any():
                out.append(f"{name}: legend covers {int((inside & in_axes).sum())} data points")
    for leg in fig.legends:
        if min((t.get_fontsize() for t in leg.get_texts()), default=99) < LEGEND_PT:
            out.append(f"figure legend under {LEGEND_PT} pt")
    return out
