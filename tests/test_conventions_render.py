"""``python -m experiments conventions --render`` reads a rerun artefact: the unswept readings'
P* come again from the committed ``main_r.json`` (its grid-widened intervals replace a stale
copy), the swept reading's own sweeps are kept, and a second pass changes nothing."""

import json

from experiments.conventions import refresh_from_artefacts


def _rows(x: float, grid: bool) -> list[dict]:
    m = {"estimate": x, "lo": 0.99 * x, "hi": 1.01 * x, "n": 10}
    if grid:
        m.update(grid_lo=0.98 * x, grid_hi=1.02 * x, lo=0.97 * x, hi=1.03 * x)
    return [{"key": "P_c1", "measured": m}, {"key": "window_lo", "measured": {**m, "n": 0}}]


def test_render_refreshes_the_main_readings_and_keeps_the_swept_one(tmp_path):
    main = {"ci_table": _rows(100.0, grid=True), "widths": {"inf": {"ci_table": _rows(90.0, True)}}}
    (tmp_path / "main_paper.json").write_text(json.dumps(main))
    old = {"P_c1": {"estimate": 100.0, "lo": 99.0, "hi": 101.0, "n": 10}}
    swept = {"10000": {"P_c1": {"estimate": 17.0, "grid_lo": 16.0}}}
    data = {
        "paper": {"measured": {"10000": old}, "exponents_measured": {}},
        "plain": {"measured": {"10000": old}, "exponents_measured": {}},  # no main_plain.json
        "paper-chi-lik": {"measured": swept, "exponents_measured": {}},
    }
    assert refresh_from_artefacts(data, tmp_path) is True
    now = data["paper"]["measured"]
    assert now["10000"]["P_c1"]["grid_lo"] == 98.0 and now["10000"]["P_c1"]["lo"] == 97.0
    assert now["inf"]["P_c1"]["estimate"] == 90.0 and now["10000"]["coexistence_seen"] is False
    assert data["plain"]["measured"] == {"10000": old}  # nothing to read it from: kept
    assert data["paper-chi-lik"]["measured"] == swept  # its own sweeps, not main's
    assert refresh_from_artefacts(data, tmp_path) is False
