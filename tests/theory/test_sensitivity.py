"""Sensitivity of every P* and the least-squares fit to target P* (theory/sensitivity.py).

Tolerances: the k-section locates log P* to ~1e-8 and central differences with step 1e-2 err by
~1e-6, so a slope known in closed form is checked to ``ZERO_SLOPE`` = 1e-4.
"""

import json

import numpy as np
import pytest

from copyhead_jax import theory as th
from copyhead_jax.cli.theory import main
from copyhead_jax.theory.sensitivity import ZERO_SLOPE, fit, parse_free, parse_targets, sensitivity

# compute-bound (theory batches at the paper's size): XLA's default optimisations (conftest)
pytestmark = pytest.mark.xla_optimized

PAPER = th.TheoryParams.preset("paper")


@pytest.fixture(scope="module")
def sens():
    return sensitivity(PAPER, objectives="map")["map"]


def test_slopes_and_factors_that_are_known_in_closed_form(sens):
    # MAP P_c1 = mu_max^-1/2 of the Hessian at G = 0 scales as sigma2 / (sqrt(chi) sigma_O
    # sigma_G) (docs/theory.md §5); P* is linear in sigma2 at fixed chi (the whole action is a
    # function of P / sigma2 up to the chi prefactor)
    s = sens["slopes"]
    for name, slope in (("sigma2", 1.0), ("chi", -0.5), ("sigma_O", -1.0), ("sigma_G", -1.0)):
        assert s[name]["P_c1"] == pytest.approx(slope, abs=ZERO_SLOPE)
    for t in ("P_c1", "P_cG", "P_aG"):
        assert s["sigma2"][t] == pytest.approx(1.0, abs=ZERO_SLOPE)
    f = sens["factors"]
    for t in ("P_c1", "P_cG", "P_aG"):
        # per_position has noise L sigma^2, so it multiplies every P* by exactly L (§2b)
        assert f["likelihood=per_sequence"][t] == pytest.approx(1 / 25, rel=1e-6)
        # noise sigma^2 instead of sigma^2/chi: the same theory at sigma2 * chi
        assert f["chi_in_noise=False"][t] == pytest.approx(30.0, rel=1e-6)
    assert f["linear_scale=none"]["P_aG"] == 1.0  # the linear scale never touches softmax
    # the invariant: P_cG / P_c1 moves with neither sigma2, chi, sigma_O, sigma_G nor a
    # switch, only with the embedding scales (and L, V)
    for name in ("sigma2", "chi", "sigma_O", "sigma_G"):
        assert s[name]["P_cG"] - s[name]["P_c1"] == pytest.approx(0.0, abs=ZERO_SLOPE)
    for name, row in f.items():
        assert row["P_cG"] / row["P_c1"] == pytest.approx(1.0, rel=1e-6), name
    assert abs(s["sigma_e"]["P_cG"] - s["sigma_e"]["P_c1"]) > 0.5


def test_planted_parameters_are_recovered():
    truth = PAPER.replace(sigma2=12.0, sigma_p=1.4)
    pts = th.transition_points(truth, "linear")
    targets = {"P_c1": pts["P_c1"], "P_cG": pts["P_cG"]}
    res = fit(PAPER, targets, "sigma2,sigma_p")
    assert res["exact"] and "fit within" in res["verdict"]
    # the fit reaches the targets to the k-section's precision; the parameters follow through
    # a Jacobian of condition ~4, so 1e-5 relative leaves margin
    assert res["fitted"]["sigma2"] == pytest.approx(12.0, rel=1e-5)
    assert res["fitted"]["sigma_p"] == pytest.approx(1.4, rel=1e-5)
    assert max(abs(v) for v in res["residuals_log"].values()) < 1e-6
    assert res["invariants"]["rank"] == 2 and not res["invariants"]["ratios"]


def test_a_ratio_the_invariant_forbids_is_reported():
    # the paper's 322 / 23 = 14 against the model's P_cG / P_c1 = 20.45 at unit sigma_e / sigma_p
    res = fit(PAPER, "P_c1=23,P_cG=322", ["sigma2", "chi"])
    assert not res["exact"]
    [ratio] = res["invariants"]["ratios"]
    assert ratio["ratio"] == "P_cG/P_c1" and ratio["target"] == pytest.approx(14.0)
    assert ratio["model"] == pytest.approx(2124.8866482427425 / 103.889017050305, rel=1e-6)
    assert "P_cG/P_c1" in res["verdict"] and "independent of sigma2, chi" in res["verdict"]
    # the best fit splits the fixed ratio evenly in log between the two targets
    r = res["residuals_log"]
    assert r["P_c1"] == pytest.approx(-r["P_cG"], abs=1e-6)
    assert r["P_cG"] - r["P_c1"] == pytest.approx(np.log(ratio["model"] / 14.0), abs=1e-6)


@pytest.mark.parametrize(
    "spec,match",
    [
        ("P_c1=23,P_x=3", "names must be among P_c1, P_cG, P_aG"),
        ("P_c1", "NAME=VALUE"),
        ("P_c1=-2", "P_c1 must be a finite number > 0"),
        ("P_c1=2,P_c1=3", "P_c1 twice"),
    ],
)
def test_bad_targets_name_the_problem(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_targets(spec)


def test_bad_free_and_cli_errors(capsys):
    with pytest.raises(ValueError, match="--free entries must be among sigma2"):
        parse_free("sigma2,L")
    with pytest.raises(ValueError, match="twice"):
        parse_free("chi,chi")
    with pytest.raises(SystemExit):
        main(["fit", "--target", "P_c1=23", "--free", "V"])
    assert "--free entries must be among" in capsys.readouterr().err


def test_every_theory_subcommand_has_help_and_examples(capsys):
    for cmd in ("points", "curve", "landscape", "scaling", "sensitivity", "fit"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = capsys.readouterr().out
        assert "examples:" in out and f"copyhead theory {cmd}" in out, cmd
        assert "--no-chi-in-readout-prior" in out and "inv_sqrt_L" in out


def test_fit_cli_json(capsys):
    main(["fit", "--target", "P_c1=23,P_cG=322", "--free", "sigma2,chi", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert res["exact"] is False and res["invariants"]["ratios"][0]["ratio"] == "P_cG/P_c1"
