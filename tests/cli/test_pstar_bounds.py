"""No command reports a P* or a spinodal equal to the bound of the scan it came from: each command
that prints P* as JSON is driven on a configuration whose point lies outside its scan, and must
print null for it, a note, and a non-zero not-found count.

The commands are found by walking the parser (``tests.helpers.parser_tree``): every command with
``--json`` is either driven here or named in :data:`NO_PSTAR` with what it prints instead, so a
new command cannot be missed. A scan is pushed past its point without waiting for a large one:
the Markov theory's ``--P-range`` ends below it; the i.i.d. theory's scans are placed around a
leading-order estimate (softmax) or span a fixed number of decades above ``P_c1`` (linear), and
the tests move the estimate five decades away or shorten the span to a fifth of a decade, so the
same compiled kernels search a range that holds no point. Driving a command compiles the
theory's kernels for its batch (10-80 s here), so those tests are ``slow``; their fast siblings
assert the same at the API, on kernels their files compile anyway
(tests/theory/test_points.py, tests/theory/test_beyond.py), and on the root-finding of the
transition and of route B, and the locators of the measured tables, directly.
"""

import json

import numpy as np
import pytest

from copyhead_jax.cli import main
from copyhead_jax.cli.main import build_parser
from copyhead_jax.theory import points as pts
from copyhead_jax.theory.heads import SoftmaxTheory
from tests.helpers import parser_tree

#: --json commands that print no P*: what they print instead
NO_PSTAR = {
    ("theory", "curve"): "order parameters and actions on a user grid of P",
    ("theory", "landscape"): "potentials at user-given P",
    ("llc",): "learning coefficients of a posterior's runs",
}
#: --json commands that print a P*, and the test that drives each past its scan
DRIVEN = {
    ("theory", "points"): "test_markov_points_outside_the_range, test_iid_points_outside_scans",
    ("theory", "scaling"): "test_scaling_table_counts_what_it_did_not_find",
    ("theory", "sensitivity"): "test_sensitivity_names_what_it_did_not_find",
    ("theory", "fit"): "test_fit_refuses_a_target_not_found_at_the_start",
    ("transition",): "test_transition_root_outside_the_probes_is_none (the search's root)",
}

# every P* key the commands print, and where their scans end
KEYS = ("P_c1", "P_cG", "P_cG_half", "P_aG", "P_aG_crossover", "P_star", "P_star_crossover")


def run_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def values(d, keys=(*KEYS, "spinodals", "spinodal_lo", "spinodal_hi")):
    """Every finite P* and spinodal anywhere in a JSON object (scalars, or tables of them)."""
    if isinstance(d, dict):
        for k, v in d.items():
            if k in keys:
                yield from (
                    (k, x) for x in np.ravel(np.asarray(v, dtype=object)) if isinstance(x, float)
                )
            else:
                yield from values(v, keys)
    elif isinstance(d, list):
        for v in d:
            yield from values(v, keys)


def test_every_json_command_is_driven_or_prints_no_pstar():
    with_json = {
        path
        for path, p in parser_tree(build_parser())
        if any("--json" in a.option_strings for a in p._actions)
    }
    assert with_json == set(NO_PSTAR) | set(DRIVEN)


@pytest.mark.slow
def test_markov_points_outside_the_range(capsys):
    """The Markov theory's scan ends at 60, below P_cG ~ 260 (linear, L = 6, V = 3): P_cG and
    P_cG_half are null, counted, and nothing printed equals either end of --P-range."""
    lo, hi = 3.0, 60.0
    res = run_json(
        capsys,
        [
            *(
                "theory points --preset paper --L 6 --V 3 --attention linear --source "
                "markov --rho 0.3 --space ansatz --P-range"
            ).split(),
            str(lo),
            str(hi),
            "--n-P",
            "7",
            "--json",
        ],
    )
    r = res["ansatz"]
    assert r["P_cG"] is None and r["P_cG_half"] is None
    assert r["n_not_found"] >= 2 and {"P_cG", "P_cG_half"} <= set(r["not_found"])
    assert all(v not in (lo, hi) for _, v in values(res))


@pytest.fixture
def far_estimate(monkeypatch):
    """The softmax scan centred five decades below its point (it spans -3 to +4 decades)."""
    est = SoftmaxTheory.estimate.__func__
    monkeypatch.setattr(SoftmaxTheory, "estimate", classmethod(lambda c, p: est(c, p) * 1e-5))


@pytest.fixture
def short_span(monkeypatch):
    """The linear psi scan a fifth of a decade above P_c1 (P_cG lies ~1 decade above it)."""
    monkeypatch.setattr(pts, "LIN_SCAN_DECADES", 0.2)


@pytest.mark.slow
def test_iid_points_outside_scans(capsys, far_estimate, short_span):
    res = run_json(capsys, ["theory", "points", "--preset", "tiny", "--json"])
    assert res["P_aG"] is None and res["P_aG_crossover"] is None and res["spinodals"] is None
    assert res["P_cG"] is None and res["P_cG_half"] is None
    assert res["P_c1"] is not None  # a closed form: no scan
    assert {"P_cG", "P_cG_half", "P_aG_crossover"} <= set(res["not_found"])
    assert res["n_not_found"] == len(res["not_found"])
    edges = (res["scan_lo"], res["scan_hi"])
    assert all(not np.isclose(v, e, rtol=1e-12) for _, v in values(res) for e in edges)


@pytest.mark.slow
def test_scaling_table_counts_what_it_did_not_find(capsys, far_estimate):
    res = run_json(
        capsys,
        "theory scaling --preset tiny --attention softmax --L 6,7 --V 3 --no-plot --json".split(),
    )
    t = res["table"]
    assert all(v is None for row in t["P_aG_crossover"] for v in row)
    assert t["not_found"]["P_aG_crossover"] == 2 and t["n_not_found"] >= 2
    edges = np.asarray(t["scan_hi"], float).ravel().tolist()
    assert all(v not in edges for _, v in values(t))


@pytest.mark.slow
def test_sensitivity_names_what_it_did_not_find(capsys, far_estimate):
    res = run_json(
        capsys, ["theory", "sensitivity", "--preset", "tiny", "--objective", "map", "--json"]
    )
    assert res["map"]["P"]["P_aG"] is None and res["map"]["not_found"] == ["P_aG"]
    assert res["map"]["P"]["P_c1"] is not None


@pytest.mark.slow
def test_fit_refuses_a_target_not_found_at_the_start(capsys, far_estimate):
    rc = main(
        ["theory", "fit", "--preset", "tiny", "--target", "P_aG=300", "--free", "sigma2", "--json"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "undefined at the start" in err and "Traceback" not in err


def test_transition_root_outside_the_probes_is_none():
    """The transition's P* is the root of d(P) between probes of opposite sign (TI and profile
    alike); probes all on one side give no P*, the side it lies on, and a missing seed in the
    seeds' summary, never the outermost probe."""
    from copyhead_jax.transition.root import combine_seeds, crossing

    P = [20.0, 25.0, 31.0]
    for d, side in (([5.0, 3.0, 1.0], "above"), ([-1.0, -3.0, -5.0], "below")):
        cr = crossing(P, d, [0.5] * 3)
        assert cr.P_star is None and cr.side == side
    ok = crossing(P, [2.0, 1.0, -1.0], [0.5] * 3)
    assert P[1] < ok.P_star < P[2]
    s = combine_seeds([ok.log_P, np.nan], [ok.err_mc, np.nan], [ok.err_sys, np.nan])
    assert s["n"] == 1 and s["n_missing"] == 1 and s["P_star"] == pytest.approx(ok.P_star)


def test_bayes_crossover_at_a_scan_end_is_not_located():
    """Route B's crossover is the steepest interval of the lower basin's a_G over its scan; a
    steepest first or last interval may continue beyond the scan, so it is not located."""
    from copyhead_jax.theory.bayes.solve import steepest_inside

    assert steepest_inside([0.1, 0.5, 0.2]) == 1
    assert steepest_inside([0.9, 0.5, 0.2]) is None and steepest_inside([0.1, 0.5, 0.8]) is None


def test_measured_points_outside_the_grid_are_not_located():
    """The sweep's and the comparisons' P* tables locate each point on the runs' P grid; a
    feature beyond the grid is not located ("above" / "below"), its P* None."""
    from copyhead_jax.compare.locate import locate_crossing, locate_level, locate_max_slope

    P = np.array([4.0, 8.0, 16.0, 32.0])
    for loc in (
        locate_level(P, np.array([0.0, 0.1, 0.2, 0.3]), 0.5),
        locate_max_slope(P, np.array([0.0, 0.1, 0.3, 0.9])),
        locate_crossing(P, np.array([1.0, 2.0, 3.0, 4.0]), np.zeros(4)),
    ):
        assert loc.P_star is None and not loc.bracketed and loc.side in ("above", "below")
