"""One look for every figure: a colour-blind-safe palette, readable sizes, legends off the data,
log-P ticks that never collide, :func:`save_figure` (the one writer of figures) and
:func:`figure_problems`, the checks a reviewer would make (:mod:`.check`).

The palette is Okabe & Ito's (2008), safe for the common colour-vision deficiencies; viridis for
colour maps. Roles, in every figure: linear attention blue, softmax vermillion; a transition
point keeps one colour wherever it is marked (:data:`KEY_COLORS`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402
from matplotlib.transforms import offset_copy  # noqa: E402

from ..models import HEADS  # noqa: E402
from .check import (  # noqa: E402
    LEGEND_PT,
    MIN_DPI,
    MIN_POINTS,
    NOT_MEASURED,
    check_record,
    figure_record,
    sha256,
    sidecar_path,
    sidecar_text,
)

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
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
P_LABEL = "training set size $P$ (sequences)"
A_G_LABEL = "copy logit $a_G$ (dimensionless)"
#: legend names of the transition points whose name is not their key's tail (``P_cG`` -> cG)
STAR_NAMES = {
    "P_cG_half": "cG,1/2",
    "P_aG_single": "aG,\\ one\\ start",
    "window_lo": "window,\\ low",
    "spinodal_lo": "spinodal,\\ lower",
    "spinodal_hi": "spinodal,\\ upper",
}

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
    "savefig.dpi": MIN_DPI,
}


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
    return ax.legend(
        handles,
        labels,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=anchor,
        ncol=ncol,
        fontsize=LEGEND_PT,
        frameon=False,
        handlelength=2.2,
        columnspacing=1.2,
    )


def num(v: float) -> str:
    """A P or P* for a label: thousands separated from 100 up, three significant digits below."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def star_label(name: str) -> str:
    """A transition point's key as a legend's symbol: ``P_cG`` -> ``$P^*_{cG}$``."""
    return f"$P^*_{{{STAR_NAMES.get(name, name[2:])}}}$"


def curve(ax, x, y, fmt: str = "-", *, marker: str = "o", **kw):
    """``ax.plot(x, y, fmt)`` where at least :data:`~copyhead_jax.plots.check.MIN_POINTS` points
    are finite; fewer are drawn as ``marker`` alone (a line between two values shows no shape),
    and so is a finite point between gaps (NaN on both sides), which a line would not show.
    Nothing is drawn (and ``None`` returned) where no point is finite."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    finite = np.isfinite(x) & np.isfinite(y)
    n = int(finite.sum())
    if n == 0:
        return None
    bare = {k: v for k, v in kw.items() if k not in ("ls", "linestyle", "lw", "linewidth")}
    if n < MIN_POINTS:
        return ax.plot(x, y, ls="none", marker=marker, **bare)[0]
    line = ax.plot(x, y, fmt, **kw)[0]
    alone = finite & ~np.r_[False, finite[:-1]] & ~np.r_[finite[1:], False]
    if alone.any():
        bare = {k: v for k, v in bare.items() if k not in ("label", "color", "c")}
        ax.plot(x[alone], y[alone], ls="none", marker=marker, color=line.get_color(), **bare)
    return line


def law_tex(law: str) -> str:
    """A scaling law as mathtext, thin spaces between factors: ``L ln^2 L`` ->
    ``$L\\,\\ln^2\\,L$``."""
    return "$" + law.replace("ln", "\\ln").replace(" ", "\\,") + "$"


def interval_span(interval, P) -> tuple[float, float, str]:
    """An interval ``[lo, hi]`` as drawn on a log-P axis: an unbounded side (``lo`` 0 or None,
    ``hi`` inf or None: the crossing rule could not bound it) stops at the edge of the probes
    ``P``, and the text names it ``unbounded``."""
    lo, hi = (None if x is None or not np.isfinite(x) or x <= 0 else float(x) for x in interval)
    P = [float(p) for p in P if p is not None and np.isfinite(p) and p > 0]
    text = f"[{f'{lo:.4g}' if lo else 'unbounded'}, {f'{hi:.4g}' if hi else 'unbounded'}]"
    return (lo or (min(P) if P else np.nan)), (hi or (max(P) if P else np.nan)), text


def not_measured(ax, what: str = "") -> None:
    """Write "not measured" inside an axes that has no data (an empty panel says why)."""
    text = NOT_MEASURED + (f":\n{what}" if what else "")
    ax.text(
        0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=GREY, fontsize=10
    )


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
# Saving and checking


def figure_problems(fig) -> list[str]:
    """What a reviewer would flag in a drawn figure, one line per problem (the rules of
    :func:`copyhead_jax.plots.check.check_record`, resolution aside)."""
    return check_record(figure_record(fig))


def save_figure(
    fig, path: str | Path, dpi: int = MIN_DPI, *, note: str = "", close: bool = True
) -> Path:
    """``fig`` to ``path`` (PNG, PDF or SVG by suffix) at ``dpi``, atomically
    (:func:`~copyhead_jax.storage.atomic_write`: a failed draw or a full disk leaves neither a
    half-written figure nor a temporary); errors are one line naming the path (``note``
    appended to a figure matplotlib cannot draw). A PNG is written in a 256-colour palette (a
    third of the bytes; figures have few colours) with its record beside it
    (``NAME.png.json``, :mod:`copyhead_jax.plots.check`)."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    from ..storage import WriteError, atomic_write

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".")
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ValueError(f"figure path {str(path)!r} must end in one of {FIGURE_SUFFIXES}")
    side = sidecar_path(path)

    def png(tmp: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        rec = figure_record(fig, dpi=dpi)  # after the save: the boxes as drawn in the PNG
        with Image.open(buf) as im:
            im = im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
            im.save(tmp, format="PNG", optimize=True, dpi=(dpi, dpi))
        text = sidecar_text(rec, sha256(tmp))
        atomic_write(side, lambda t: Path(t).write_text(text))

    try:
        if fmt == "png":
            atomic_write(path, png)
        else:
            atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt))
    except WriteError as e:
        if fmt == "png" and side.exists() and not path.exists():
            side.unlink()  # no record without its figure
        cause = e.__cause__
        if isinstance(cause, WriteError):  # the record's own write
            raise ValueError(f"cannot write the figure's record {str(side)!r}: {cause.why}") from e
        if isinstance(cause, ValueError) and not isinstance(cause, OSError):
            raise ValueError(f"cannot draw the figure {str(path)!r} ({cause}){note}") from e
        raise ValueError(f"cannot write the figure {str(path)!r}: {e.why}") from e
    finally:
        if close:
            plt.close(fig)
    return path
