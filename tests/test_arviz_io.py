"""ArviZ output of a posterior: dims, coordinates and values survive InferenceData/DataTree and
netCDF; ``az.summary`` reads it; ``copyhead sample --netcdf`` writes it."""

import json

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.arviz_io import save_netcdf, to_arviz
from copyhead_jax.results import DRAW_FIELDS, PosteriorResult

az = pytest.importorskip("arviz")

CFG = ch.TINY.replace(sweep=dict(P=(2, 8, 16), n_seeds=2))
SGLD = ch.SGLDConfig(step_size=1e-5, n_steps=100, burn_in=20, thin=10, n_chains=3)
SHAPE = (3, 2, 3, 8)  # P, seed, chain, draw


@pytest.fixture
def post():
    rng = np.random.default_rng(0)
    finite = np.ones(SHAPE[:3], bool)
    finite[1, 0, 2] = False  # one diverged chain
    arrays = dict(
        draws=rng.normal(size=(*SHAPE, len(DRAW_FIELDS))),
        accept=rng.uniform(size=SHAPE),
        distance=rng.uniform(size=SHAPE),
        U0=rng.normal(size=SHAPE[:3]),
        finite=finite,
        draw_step=np.arange(30, 101, 10),
    )
    return PosteriorResult(CFG, SGLD, arrays)


def _posterior(data):
    return data.posterior if hasattr(data, "posterior") else data["posterior"]


def _stats(data):
    return data.sample_stats if hasattr(data, "sample_stats") else data["sample_stats"]


def _back(da):
    """A variable as ``[P, seed, chain, draw]`` again."""
    return np.asarray(da.transpose("P", "seed", "chain", "draw").values)


def _check(data, post):
    p, s = _posterior(data), _stats(data)
    assert set(p.data_vars) == set(DRAW_FIELDS)
    for name in DRAW_FIELDS:
        assert p[name].dims == ("chain", "draw", "P", "seed")
        np.testing.assert_array_equal(_back(p[name]), post[name])
    np.testing.assert_array_equal(p["P"].values, [2, 8, 16])
    np.testing.assert_array_equal(p["seed"].values, [0, 1])
    np.testing.assert_array_equal(p["chain"].values, [0, 1, 2])
    np.testing.assert_array_equal(p["draw"].values, np.arange(8))
    np.testing.assert_array_equal(p["step"].values, np.arange(30, 101, 10))
    np.testing.assert_array_equal(_back(s["lp"]), -post["U"])
    np.testing.assert_array_equal(_back(s["acceptance_rate"]), post["accept"])
    np.testing.assert_array_equal(_back(s["distance"]), post["distance"])
    div = _back(s["diverging"])
    assert div[1, 0, 2].all() and div.sum() == SHAPE[3]  # exactly the diverged chain's draws
    assert json.loads(p.attrs["sgld"])["n_chains"] == 3
    assert p.attrs["attention"] == CFG.model.attention


def test_to_arviz_keeps_dims_coordinates_and_values(post):
    data = to_arviz(post)
    kind = "DataTree" if int(az.__version__.split(".")[0]) >= 1 else "InferenceData"
    assert type(data).__name__ == kind
    _check(data, post)


def test_summary_reads_every_run(post):
    summ = az.summary(to_arviz(post), var_names=["cG", "U"], kind="stats")
    assert len(summ) == 2 * 3 * 2  # one row per variable x P x seed
    np.testing.assert_allclose(summ.loc["cG[8, 1]", "mean"], post["cG"][1, 1].mean(), atol=5e-4)


def test_netcdf_round_trip(post, tmp_path):
    f = save_netcdf(post, tmp_path / "post.nc")
    _check(az.from_netcdf(f), post)


def test_to_arviz_rejects_other_objects():
    with pytest.raises(ValueError, match="post must be a PosteriorResult"):
        to_arviz({"draws": np.zeros(3)})


def test_cli_sample_writes_netcdf(post, tmp_path, monkeypatch, capsys):
    # The sampler itself is tested in test_sample.py (a sweep plus its chains compile for ~30 s on
    # 2 cores); here it returns the fixture, and the flag's wiring is what is checked.
    import copyhead_jax.results
    import copyhead_jax.sample
    from copyhead_jax.cli import main

    class Sweep:
        has_params = True
        config = post.config  # default_sgld reads the engine off it

        def __getitem__(self, name):
            return np.zeros(SHAPE[:2])

    post.arrays.update(rhat=np.ones(SHAPE[:2]), ess=np.ones(SHAPE[:2]),
                       accept_mean=np.ones(SHAPE[:3]))  # fmt: skip
    post.meta.update(wall_seconds=0.0, warnings=[])
    monkeypatch.setattr(copyhead_jax.results.SweepResult, "load", lambda path: Sweep())
    monkeypatch.setattr(copyhead_jax.sample, "run_sampler", lambda *a, **k: post)
    nc = tmp_path / "post.nc"
    argv = ["sample", str(tmp_path / "sweep.npz"), "--quiet", "--no-plot", "--netcdf", str(nc)]
    assert main(argv) == 0
    assert f"saved {nc}" in capsys.readouterr().out
    _check(az.from_netcdf(nc), post)
