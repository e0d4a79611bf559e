"""The figure check (:mod:`copyhead_jax.plots.check`): every PNG under docs/ passes it, and it
catches each kind of defect on a deliberately bad figure (drawn, saved with its sidecar, and
read back from the PNG)."""

from pathlib import Path

import matplotlib
import numpy as np
import pytest

from copyhead_jax.plots import check_png, save_figure
from copyhead_jax.plots.check import MIN_DPI, png_info, raw_tex, sidecar_path
from copyhead_jax.plots.style import curve

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PNGS = sorted((ROOT / "docs").rglob("*.png"))


def test_every_png_under_docs_passes_the_figure_check():
    assert len(PNGS) >= 40  # the reports' figures and the README's (a glob that found none)
    bad = {str(p.relative_to(ROOT)): d for p in PNGS if (d := check_png(p))}
    assert not bad, "\n".join(f"{p}: {x}" for p, d in bad.items() for x in d)


def test_every_sidecar_under_docs_has_its_png():
    orphans = [s for s in (ROOT / "docs").rglob("*.png.json") if not s.with_suffix("").exists()]
    assert not orphans


def _clean():
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([1, 2, 3, 4], [1.0, 2.0, 4.0, 8.0], "o-", label="$P^*_{aG}$ measured")
    ax.set(xlabel="$P$", ylabel="$a_G$", yscale="log", title="clean")
    ax.legend(loc="upper left", fontsize=8)
    return fig, ax


def _defects(fig, tmp_path, name="f.png", **kw) -> list[str]:
    return check_png(save_figure(fig, tmp_path / name, **kw))


def test_a_clean_figure_passes_and_states_its_resolution(tmp_path):
    fig, _ = _clean()
    path = save_figure(fig, tmp_path / "clean.png")
    assert check_png(path) == []
    assert png_info(path)["dpi"] == pytest.approx(MIN_DPI, abs=0.1)
    assert sidecar_path(path).exists()


def test_low_resolution(tmp_path):
    assert any("80 dpi" in d for d in _defects(_clean()[0], tmp_path, dpi=80))


def test_a_png_without_or_with_a_stale_sidecar(tmp_path):
    path = save_figure(_clean()[0], tmp_path / "a.png")
    other, _ = _clean()
    other.savefig(path, dpi=MIN_DPI)  # another drawing over the PNG: the record no longer fits
    plt.close(other)
    assert "describes another drawing" in " ".join(check_png(path))
    sidecar_path(path).unlink()
    assert "no sidecar" in " ".join(check_png(path))


def test_an_empty_panel(tmp_path):
    fig, _ = _clean()
    ax = fig.add_subplot(2, 2, 4)
    ax.set(xlabel="x", ylabel="y")
    assert any("empty panel" in d for d in _defects(fig, tmp_path))


def test_a_curve_through_two_points_and_the_markers_that_replace_it(tmp_path):
    fig, ax = _clean()
    ax.plot([1, 2], [3.0, 5.0], "s-", label="two P")
    assert any("through 2 point(s)" in d for d in _defects(fig, tmp_path))
    fig, ax = _clean()
    curve(ax, [1, 2], [3.0, 5.0], "-", marker="s", label="two P")  # markers only
    assert _defects(fig, tmp_path) == []


def test_a_point_between_gaps_of_a_curve_is_drawn_as_a_marker(tmp_path):
    fig, ax = _clean()
    before = list(ax.lines)
    line = curve(ax, [1, 2, 3, 4, 5], [3.0, 4.0, 5.0, np.nan, 7.0], "-", marker="_", color="C1")
    alone = [a for a in ax.lines if a is not line and a not in before]
    assert len(alone) == 1 and list(alone[0].get_xdata()) == [5.0]  # the line leaves 5 unseen
    assert alone[0].get_color() == line.get_color() and alone[0].get_label().startswith("_")
    assert _defects(fig, tmp_path) == []


def test_a_legend_entry_without_data_and_a_style_key(tmp_path):
    fig, ax = _clean()
    ax.plot([], [], "x", label="SGLD $a_G$")
    ax.legend(loc="upper left", fontsize=8)
    assert any("'SGLD $a_G$' has no data" in d for d in _defects(fig, tmp_path))
    fig, ax = _clean()
    ax.plot([], [], "--", color="grey", label="dashed: copy start", gid="key")
    ax.legend(loc="upper left", fontsize=8)
    assert _defects(fig, tmp_path) == []


@pytest.mark.parametrize(
    "text", ["paper L^{3/2} V^{1/2}", "P_aG measured", "\\frac{1}{2}", "$P^*$ and V^2"]
)
def test_tex_outside_mathtext(tmp_path, text):
    fig, ax = _clean()
    ax.set_title(text)
    assert any("outside $...$" in d for d in _defects(fig, tmp_path))


def test_raw_tex_reads_only_outside_dollars():
    assert raw_tex("$L^{3/2} V^{1/2}$, $P^*_{aG}$ and $\\frac{1}{2}$") == []
    assert raw_tex("$a$ L^{3/2} $b$") == ["^{"]
    assert raw_tex("n_seeds") == ["n_seeds"]


def test_values_at_or_below_zero_and_numerical_zeros_on_a_log_axis(tmp_path):
    fig, ax = _clean()
    ax.plot([1, 2, 3], [0.0, 1.0, 2.0], "o", label="with a zero")
    assert any("value(s) <= 0 on the log y axis" in d for d in _defects(fig, tmp_path))
    fig, ax = _clean()
    ax.plot([1, 2, 3], [1e-16, 1.0, 2.0], "o", label="a float64 zero")
    assert any("spans 17 decades" in d for d in _defects(fig, tmp_path))  # 1e-16 to 8


def test_numerical_zeros_and_round_off_on_a_linear_axis(tmp_path):
    def linear(*ys):
        fig, axes = plt.subplots(1, len(ys), figsize=(4 * len(ys), 3), layout="constrained")
        for ax, y in zip(fig.axes, ys, strict=True):
            ax.plot([1, 2, 3, 4], y, "o-", label="measured")
            ax.set(xlabel="$P$", ylabel="$a_G$")
        return fig

    zeros = _defects(linear([3e-17, -1e-16, 2e-16, 0.0]), tmp_path)  # float64 zeros
    assert any("linear y axis draws only values below 1e-10" in d for d in zeros), zeros
    noise = _defects(linear([1.0, 1.0 + 2e-9, 1.0 - 1e-9, 1.0]), tmp_path)  # offset noise
    assert any("linear y axis draws values that differ by 3.0e-09" in d for d in noise), noise
    # exact zeros are data; so are small values and small differences that are not round-off
    assert (
        _defects(linear([0.0] * 4, [1e-4, 2e-4, 5e-5, 3e-4], [1.0, 1.001, 0.999, 1.0]), tmp_path)
        == []
    )


def test_overlapping_labels_and_labels_cut_off(tmp_path):
    fig, ax = plt.subplots(1, 2, figsize=(6, 3))
    fig.subplots_adjust(wspace=0.0)  # no room for the right panel's y label
    for a in ax:
        a.plot([1, 2, 3], [1, 2, 3], "o-")
        a.set(xlabel="$P$", ylabel="a long label for the order parameter")
    assert any(
        "axes 0 (untitled) frame overlaps axes 1 (untitled) y label" in d
        for d in _defects(fig, tmp_path)
    )
    fig, ax = _clean()
    fig.suptitle("a title far wider than the four inches of this small figure, cut off")
    assert any("cut off" in d for d in _defects(fig, tmp_path))


def test_tick_labels_that_collide(tmp_path):
    fig, ax = plt.subplots(figsize=(3, 3), layout="constrained")
    ax.plot(range(12), range(12), "o-")
    ax.set_xticks(range(12), [f"{1000 * i:,}" for i in range(12)])
    ax.set(xlabel="$P$", ylabel="$a_G$")
    assert any("x tick label" in d and "overlaps" in d for d in _defects(fig, tmp_path))
