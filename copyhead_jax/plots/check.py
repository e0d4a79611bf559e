"""The figure check: what a referee would flag in a figure, from the PNG and its sidecar.

:func:`figure_record` measures a drawn figure (every axes' labels, scales, series with their
finite point counts and ranges, legend entries, every text, and the window boxes of tick labels,
axis labels, titles and legends at draw time); :func:`~copyhead_jax.plots.style.save_figure`
writes it beside each PNG as ``NAME.png.json`` with the PNG's SHA-256. :func:`check_png` reads
the PNG's resolution (its ``pHYs`` chunk) and the sidecar and returns one line per defect
(:func:`check_record` has the rules); a PNG without a sidecar, or whose sidecar describes another
drawing, is a defect. A PNG holds only pixels, so what its axes drew must be recorded when it is
drawn: hence the sidecar.

A legend key that stands for a style, not a series (an empty line explaining "dashed: copy
start"), is an axes line with ``gid="key"`` (or a proxy artist outside the axes).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np

MIN_DPI = 150  # print resolution for a single-column figure
MIN_POINTS = 3  # fewer points than this drawn as a curve: a line between two values, no shape
MAX_DECADES = 10.0  # a log axis over more decades of data holds numerical zeros drawn as data
#: a linear axis whose data all lie below this in magnitude (some not exactly 0) draws numerical
#: zeros: float64 round-off of the O(1) quantities drawn here is ~1e-16, float32's ~1e-8 times
#: a P or an energy of O(1-100) stays above it only when it is no zero
ZERO_ABS = 1e-10
#: a linear axis whose data differ by less than this fraction of their size draws round-off
#: (autoscaled to an offset such as "1e-9 + 1"): float32 resolves 6e-8 of a value
ROUNDOFF_REL = 1e-6
LEGEND_PT = 8  # the smallest legend text that stays readable at column width
NOT_MEASURED = "not measured"
KEY_GID = "key"
SIDECAR_VERSION = 1
_NO_STYLE = (None, "None", "none", "", " ")
#: TeX that only mathtext renders: superscript and subscript groups and control words
_RAW_TEX = re.compile(r"\^\{?|_\{|\\[A-Za-z]+")
_RAW_SUB = re.compile(r"\b[A-Za-z]\w*_\w+")  # P_aG written as an identifier


def sidecar_path(png: str | Path) -> Path:
    """``NAME.png`` -> ``NAME.png.json``, the figure's record."""
    png = Path(png)
    return png.with_name(png.name + ".json")


# ---------------------------------------------------------------------------------------------
# Measuring a drawn figure


def _finite_xy(xy) -> np.ndarray:
    xy = np.asarray(xy, float).reshape(-1, 2)
    return xy[np.isfinite(xy).all(1)]


def _span(v: np.ndarray) -> list[float] | None:
    return [float(v.min()), float(v.max())] if len(v) else None


def _positive_span(v: np.ndarray) -> list[float] | None:
    return _span(v[v > 0])


def _series(ax) -> list[dict[str, Any]]:
    """Every data artist of ``ax``: kind, label, finite points, ranges, non-positive counts."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.lines import AxLine

    out = []

    def add(artist, kind, xy, **kw):
        out.append(
            dict(
                kind=kind,
                label=str(artist.get_label() or ""),
                gid=artist.get_gid(),
                n=len(xy),
                x=_span(xy[:, 0]),
                y=_span(xy[:, 1]),
                x_pos=_positive_span(xy[:, 0]),
                y_pos=_positive_span(xy[:, 1]),
                x_nonpos=int((xy[:, 0] <= 0).sum()),
                y_nonpos=int((xy[:, 1] <= 0).sum()),
                **kw,
            )
        )

    for ln in ax.lines:
        if not ln.get_visible():
            continue
        if isinstance(ln, AxLine) or ln.get_transform() != ax.transData:  # axhline, axvline
            add(ln, "reference", np.zeros((0, 2)), curve=False)
            continue
        add(
            ln,
            "line",
            _finite_xy(ln.get_xydata()),
            curve=ln.get_linestyle() not in _NO_STYLE,
            markers=ln.get_marker() not in _NO_STYLE,
        )
    for c in ax.collections:
        if not c.get_visible():
            continue
        if isinstance(c, PathCollection) and c.get_offset_transform() == ax.transData:
            add(c, "markers", _finite_xy(c.get_offsets()), curve=False)
        elif isinstance(c, PolyCollection):  # fill_between: its outline's vertices
            vs = [np.asarray(p.vertices, float).reshape(-1, 2) for p in c.get_paths()]
            xy = _finite_xy(np.concatenate(vs)) if vs else np.zeros((0, 2))
            add(c, "band", xy, curve=False)
        elif isinstance(c, LineCollection):  # error bars, vlines: segments in data coordinates
            segs = [np.asarray(g, float).reshape(-1, 2) for g in c.get_segments()]
            xy = _finite_xy(np.concatenate(segs)) if segs else np.zeros((0, 2))
            kind = "segments" if c.get_transform() == ax.transData else "reference"
            add(c, kind, xy if kind == "segments" else np.zeros((0, 2)), curve=False)
        else:
            add(c, "other", np.zeros((0, 2)), curve=False, count=1)
    return out


def _box(artist, r) -> list[float] | None:
    if not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
        return None
    b = artist.get_window_extent(r)
    return [round(float(v)) for v in (b.x0, b.y0, b.x1, b.y1)] if b.width > 0 else None


def _data_pixels(ax) -> np.ndarray:
    """Display coordinates of the axes' drawn data vertices and markers."""
    pts = []
    for ln in ax.lines:
        if ln.get_visible() and ln.get_transform() == ax.transData:
            pts.append(ax.transData.transform(_finite_xy(ln.get_xydata())))
    for c in ax.collections:
        off = np.asarray(c.get_offsets(), float)
        if len(off) and c.get_offset_transform() == ax.transData:
            pts.append(ax.transData.transform(_finite_xy(off)))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def _drawn_ticklabels(axis) -> list:
    """The tick labels ``axis`` draws: those of ticks inside its view interval (matplotlib keeps
    labels of ticks outside it, undrawn)."""
    lo, hi = sorted(axis.get_view_interval())
    scale = axis.get_transform()
    a, b = scale.transform([lo, hi]) if lo > 0 or axis.get_scale() != "log" else (lo, hi)
    tol = 1e-6 * max(abs(b - a), 1e-300)
    out = []
    for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
        loc = tick.get_loc()
        if loc is None or not np.isfinite(loc) or (axis.get_scale() == "log" and loc <= 0):
            continue
        v = scale.transform([loc])[0] if axis.get_scale() == "log" else loc
        if a - tol <= v <= b + tol:
            out += [t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text()]
    return out


def _legend_record(leg, r, ax=None) -> dict[str, Any]:
    box = leg.get_window_extent(r)
    rec = dict(
        entries=[t.get_text() for t in leg.get_texts()],
        fontsize=min((t.get_fontsize() for t in leg.get_texts()), default=99.0),
        title=leg.get_title().get_text(),
        covers=0,
    )
    if ax is not None:
        p, a = _data_pixels(ax), ax.get_window_extent(r)
        inside = (p[:, 0] > box.x0) & (p[:, 0] < box.x1) & (p[:, 1] > box.y0) & (p[:, 1] < box.y1)
        in_ax = (p[:, 0] >= a.x0) & (p[:, 0] <= a.x1) & (p[:, 1] >= a.y0) & (p[:, 1] <= a.y1)
        rec["covers"] = int((inside & in_ax).sum())
    return rec


def figure_record(fig, dpi: float | None = None) -> dict[str, Any]:
    """What ``fig`` draws, measured after a draw (JSON-ready): per axes its labels, scales,
    series, texts and legend; every text of the figure; the boxes (display pixels) of tick
    labels, axis labels, titles and legends; ``dpi`` as saved."""
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure (no pyplot): give it Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    axes, boxes, texts = [], [], []

    def box(what, artist, owner=None, frame=False):
        if (b := _box(artist, r)) is not None:
            boxes.append(
                dict(
                    what=what,
                    box=b,
                    **({"axes": owner} if owner is not None else {}),
                    **({"frame": True} if frame else {}),
                )
            )

    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        title = " / ".join(
            t for t in (ax.get_title(loc=s) for s in ("left", "center", "right")) if t
        )
        name = f"axes {i} ({title or 'untitled'})"
        colorbar = ax.get_label() == "<colorbar>"
        leg = ax.get_legend()
        rec = dict(
            name=name,
            colorbar=colorbar,
            xlabel=ax.get_xlabel(),
            ylabel=ax.get_ylabel(),
            xscale=ax.get_xscale(),
            yscale=ax.get_yscale(),
            series=[] if colorbar else _series(ax),
            images=len(ax.images),
            patches=len(ax.patches),
            texts=[t.get_text() for t in ax.texts],
            legend=_legend_record(leg, r, ax) if leg is not None else None,
        )
        axes.append(rec)
        box("frame", ax.patch, len(axes) - 1, frame=True)
        for axis in (ax.xaxis, ax.yaxis):
            for t in _drawn_ticklabels(axis):
                box(f"{axis.axis_name} tick label {t.get_text()!r}", t, len(axes) - 1)
                texts.append(t.get_text())
            box(f"{axis.axis_name} label", axis.label, len(axes) - 1)
        for t in (ax.title, ax._left_title, ax._right_title):
            box("title", t, len(axes) - 1)
        if leg is not None:
            box("legend", leg, len(axes) - 1)
        texts += [rec["xlabel"], rec["ylabel"], title, *rec["texts"]]
        texts += [*(rec["legend"] or {}).get("entries", []), (rec["legend"] or {}).get("title")]
    legends = [_legend_record(leg, r) for leg in fig.legends]
    for j, leg in enumerate(fig.legends):
        box(f"figure legend {j}", leg)
        texts += [*legends[j]["entries"], legends[j]["title"]]
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        if (t := getattr(fig, name, None)) is not None:
            box(f"figure {name[1:]}", t)
            texts.append(t.get_text())
    texts += [t.get_text() for t in fig.texts]
    return dict(
        version=SIDECAR_VERSION,
        dpi=dpi,
        size_in=[float(v) for v in fig.get_size_inches()],
        canvas=[0.0, 0.0, float(fig.bbox.width), float(fig.bbox.height)],
        axes=axes,
        figure_legends=legends,
        boxes=boxes,
        texts=sorted({t for t in texts if t}),
    )


# ---------------------------------------------------------------------------------------------
# The rules


def raw_tex(text: str) -> list[str]:
    """The TeX fragments of ``text`` outside ``$...$`` (which mathtext would not render):
    ``^{``, ``_{``, control words such as ``\\frac``, identifiers with an underscore (``P_aG``)."""
    parts = re.split(r"(?<!\\)\$", text)
    outside = " ".join(parts[::2]) if len(parts) % 2 else " ".join(parts[:-1][::2])
    return _RAW_TEX.findall(outside) + _RAW_SUB.findall(outside)


def _overlaps(boxes: list[dict], axes: list[dict], canvas=None, slack: float = 1.0) -> list[str]:
    """Labels, titles and legends that overlap each other or another axes' frame by more than
    ``slack`` pixels in both directions (boxes rounded to whole pixels), or reach past the
    figure's edge (cut off). A box's ``axes``: its index in ``axes``."""
    b = np.array([x["box"] for x in boxes], float).reshape(-1, 4)
    named = [
        dict(x, what=f"{axes[x['axes']]['name']} {x['what']}" if "axes" in x else x["what"])
        for x in boxes
    ]
    boxes, out = named, []
    for i in range(len(b)):
        dx = np.minimum(b[i, 2], b[i + 1 :, 2]) - np.maximum(b[i, 0], b[i + 1 :, 0])
        dy = np.minimum(b[i, 3], b[i + 1 :, 3]) - np.maximum(b[i, 1], b[i + 1 :, 1])
        for j in np.flatnonzero((dx > slack) & (dy > slack)):
            x, y = boxes[i], boxes[i + 1 + j]
            if x.get("frame") and y.get("frame"):
                continue  # axes beside axes (an inset, a colour bar): not text
            if (x.get("frame") or y.get("frame")) and x.get("axes") == y.get("axes"):
                continue  # an axes' own legend inside it: the legend rule's
            out.append(f"{x['what']} overlaps {y['what']}")
        if canvas is not None and not boxes[i].get("frame"):
            x0, y0, x1, y1 = b[i]
            if (
                x0 < canvas[0] - slack
                or y0 < canvas[1] - slack
                or x1 > canvas[2] + slack
                or y1 > canvas[3] + slack
            ):
                out.append(f"{boxes[i]['what']} is cut off at the figure's edge")
    return out


def _axes_defects(ax: dict) -> list[str]:
    name, out = ax["name"], []
    if ax["colorbar"]:
        return [] if ax["xlabel"] or ax["ylabel"] else [f"{name}: colour bar without a label"]
    for k in ("xlabel", "ylabel"):
        if not ax[k]:
            out.append(f"{name}: no {k[0]} label")
    series = ax["series"]
    data = [s for s in series if s["kind"] != "reference" and s["n"] > 0]
    said = any(NOT_MEASURED in t for t in ax["texts"])
    if not data and not ax["images"] and not ax["patches"] and not said:
        out.append(f"{name}: empty panel (no data and no '{NOT_MEASURED}')")
    for s in series:
        who = f"{name}: series {s['label']!r}"
        if s.get("curve") and s["kind"] == "line" and 0 < s["n"] < MIN_POINTS:
            out.append(f"{who} draws a curve through {s['n']} point(s) (< {MIN_POINTS})")
        for a in "xy":
            if ax[f"{a}scale"] == "log" and s[f"{a}_nonpos"] and s["kind"] != "band":
                out.append(f"{who}: {s[f'{a}_nonpos']} value(s) <= 0 on the log {a} axis")
    for a in "xy":
        if ax[f"{a}scale"] == "linear":
            out += _linear_noise(name, a, [s[a] for s in series if s[a] and s["kind"] != "band"])
        spans = [s[f"{a}_pos"] for s in series if s[f"{a}_pos"] and s["kind"] != "band"]
        if ax[f"{a}scale"] == "log" and spans:
            lo, hi = min(v[0] for v in spans), max(v[1] for v in spans)
            if np.log10(hi / lo) > MAX_DECADES:
                out.append(
                    f"{name}: the log {a} axis spans {np.log10(hi / lo):.0f} decades of "
                    f"data (> {MAX_DECADES:g}: numerical zeros drawn as data?)"
                )
    if (leg := ax["legend"]) is not None:
        out += _legend_defects(leg, name)
        empty = {
            s["label"]
            for s in series
            if s["n"] == 0 and s["kind"] in ("line", "markers") and s["gid"] != KEY_GID
        }
        full = {s["label"] for s in series if s["n"] > 0 or s["kind"] == "reference"}
        for e in leg["entries"]:
            if e in empty and e not in full:
                out.append(f"{name}: legend entry {e!r} has no data")
    return out


def _linear_noise(name: str, a: str, spans: list[list[float]]) -> list[str]:
    """Numerical zeros or round-off drawn as data on a linear axis: every value below
    :data:`ZERO_ABS` in magnitude (not all exactly 0), or all values equal to within
    :data:`ROUNDOFF_REL` of their size (not all exactly equal)."""
    if not spans:
        return []
    lo, hi = min(v[0] for v in spans), max(v[1] for v in spans)
    size = max(abs(lo), abs(hi))
    if 0 < size < ZERO_ABS:
        return [
            f"{name}: the linear {a} axis draws only values below {ZERO_ABS:g} in magnitude "
            f"(up to {size:.1e}): numerical zeros drawn as data"
        ]
    if lo < hi and hi - lo < ROUNDOFF_REL * size:
        return [
            f"{name}: the linear {a} axis draws values that differ by {hi - lo:.1e} about "
            f"{size:.3g} (< {ROUNDOFF_REL:g} of it): round-off drawn as data"
        ]
    return []


def _legend_defects(leg: dict, name: str) -> list[str]:
    out = []
    if leg["fontsize"] < LEGEND_PT:
        out.append(f"{name}: legend under {LEGEND_PT} pt")
    if leg["covers"]:
        out.append(f"{name}: legend covers {leg['covers']} data points")
    return out


def check_record(rec: dict[str, Any], dpi: float | None = None) -> list[str]:
    """Every defect of a figure's record, one line each: resolution under :data:`MIN_DPI`;
    an axes without x or y label; an empty panel (no data, no "not measured"); a curve through
    fewer than :data:`MIN_POINTS` points; a legend entry whose series has no data; TeX outside
    ``$...$``; values <= 0 or over :data:`MAX_DECADES` decades on a log axis; numerical zeros
    or round-off on a linear axis (:func:`_linear_noise`); a legend under
    8 pt or over data; overlapping tick labels, axis labels, titles or legends."""
    out = []
    dpi = rec.get("dpi") if dpi is None else dpi
    if dpi is not None and dpi < MIN_DPI - 0.5:  # None: not saved yet
        out.append(f"resolution {dpi:.0f} dpi (< {MIN_DPI})")
    for ax in rec["axes"]:
        out += _axes_defects(ax)
    for j, leg in enumerate(rec["figure_legends"]):
        out += _legend_defects(leg, f"figure legend {j}")
    for t in rec["texts"]:
        if bad := raw_tex(t):
            out.append(f"text {t!r}: {', '.join(dict.fromkeys(bad))} outside $...$")
    out += _overlaps(rec["boxes"], rec["axes"], rec.get("canvas"))
    return out


# ---------------------------------------------------------------------------------------------
# PNG files


def _chunks(data: bytes):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    i = 8
    while i + 8 <= len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        yield data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        i += 12 + n


def png_info(path: str | Path) -> dict[str, Any]:
    """A PNG's pixel size and resolution (``dpi``: from its ``pHYs`` chunk, None without one)."""
    info: dict[str, Any] = dict(dpi=None)
    for kind, body in _chunks(Path(path).read_bytes()):
        if kind == b"IHDR":
            info["width"], info["height"] = struct.unpack(">II", body[:8])
        elif kind == b"pHYs":
            x, y, unit = struct.unpack(">IIB", body[:9])
            info["dpi"] = min(x, y) * 0.0254 if unit == 1 else None  # pixels per metre
    return info


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sidecar_text(rec: dict[str, Any], png_sha256: str) -> str:
    """The record of a figure as written beside its PNG (one JSON line), stamped with the
    PNG's SHA-256."""
    return json.dumps(dict(rec, png_sha256=png_sha256), separators=(",", ":")) + "\n"


def check_png(path: str | Path) -> list[str]:
    """The defects of a PNG figure (:func:`check_record` on its sidecar, at the resolution the
    PNG states); a missing or stale sidecar is one."""
    path = Path(path)
    info, side = png_info(path), sidecar_path(path)
    if not side.exists():
        return [f"no sidecar {side.name} (draw it with plots.style.save_figure)"]
    rec = json.loads(side.read_text())
    if rec.get("png_sha256") != sha256(path):
        return [f"{side.name} describes another drawing (the PNG changed after it was written)"]
    if info["dpi"] is None:
        return ["no resolution recorded (no pHYs chunk)", *check_record(rec, dpi=MIN_DPI)]
    return check_record(rec, dpi=info["dpi"])
