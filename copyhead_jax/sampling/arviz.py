r"""ArviZ output of a :class:`~copyhead_jax.results.PosteriorResult`.

:func:`to_arviz` returns what the installed ArviZ works with: ``arviz.InferenceData`` (ArviZ
< 1) or ``xarray.DataTree`` (ArviZ >= 1), with the groups:

* ``posterior``: one variable per recorded field (``U``, ``train_loss``, the order parameters
  under the head's names, ``r``, ``psi``, ``coverage``), plus ``W_G`` and ``W_O_hat`` when the
  sampler kept the weights (``HMCConfig.keep_weights``); dims ``(chain, draw, P, seed, ...)``:
  ArviZ's sample dims first, then the sweep's run axes. Coordinates: ``P`` the training set
  sizes, ``seed`` and ``chain`` integers, ``draw`` the draw index, plus ``step`` (along
  ``draw``) the SGLD step or HMC iteration of each draw;
* ``log_likelihood`` (when kept: ``keep_loglik`` of either sampler config): ``y``, the
  log-likelihood of each training sequence (docs/theory.md §9b), dim ``sequence`` last; NaN on
  the rows a run does not use (its ``P`` is below the sweep's largest);
* ``sample_stats``: ``lp`` $=-U$ (the log posterior up to a constant), ``acceptance_rate``
  (HMC: the mean Metropolis acceptance probability of the ``thin`` iterations before each draw;
  SGLD: the MALA acceptance proxy, SGLD never rejects), ``step_size`` (HMC: each chain's adapted
  leapfrog step; SGLD: eta), ``distance`` (from the start), ``diverging`` (every draw of a
  chain that produced a non-finite value: divergence is recorded per chain) and, for HMC,
  ``energy``: the Hamiltonian $U_m+\tfrac12|p|^2$ (the collapsed energy, whitened momentum) where
  the transition before each draw ended, so ``az.bfmi`` works on a one-run selection. SGLD
  has no Hamiltonian and no ``energy``.

A whole sweep sampled in rounds keeps its NaN padding past each run's ``n_draws``
(:mod:`.rounds`). ``to_arviz(post, P=..., seed=...)`` selects one run: dims ``(chain, draw,
...)``, its own draws, only the
run's ``P`` sequences in ``log_likelihood``, and ``observed_data`` with the run's training
sequences ``x`` and their copy targets ``y`` (``y^a = x^{a-1}``, periodic; dims ``sequence,
position``), redrawn from the config's source and seed exactly as the sweep drew them (absent for
a sweep of a user's token rows, which the result does not store), so ``az.loo``, ``az.waic``,
``az.bfmi`` and ``az.summary`` work on it directly and on its netCDF file
(:func:`save_netcdf`; ``copyhead sample --netcdf FILE --run P,SEED``). Attributes name the
sampler (``sampler``: its real name, e.g. "collapsed HMC"), its kind and settings (JSON), the
sweep's config and the versions of copyhead_jax and ArviZ that wrote it.

ArviZ is imported only when called (``pip install copyhead_jax[posterior]``); ``import
copyhead_jax`` does not import it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..results import PosteriorResult

__all__ = ["run_tokens", "save_netcdf", "to_arviz"]

SAMPLE_DIMS = ("chain", "draw")
RUN_DIMS = ("P", "seed")


def _arviz():
    try:
        import arviz as az
        import xarray as xr
    except ImportError as e:  # pragma: no cover - arviz is in the test extra
        raise ImportError(
            "to_arviz needs ArviZ: pip install 'copyhead_jax[posterior]' (arviz>=0.17)"
        ) from e
    return az, xr


def _uses_datatree(az) -> bool:
    return int(az.__version__.split(".")[0]) >= 1


def _sample_first(a: np.ndarray) -> np.ndarray:
    """``[P, seed, chain, draw]`` -> ``[chain, draw, P, seed]``."""
    return np.moveaxis(np.asarray(a), (2, 3), (0, 1))


def _run_index(post, P, seed) -> tuple[int, int] | None:
    if P is None and seed is None:
        return None
    if P is None or seed is None:
        raise ValueError("to_arviz: give both P and seed to select one run, or neither")
    Ps = [int(p) for p in post.P]
    if P not in Ps:
        raise ValueError(f"P must be one of the sweep's training set sizes {Ps}, got {P!r}")
    nS = post.config.sweep.n_seeds
    if not isinstance(seed, int | np.integer) or not 0 <= seed < nS:
        raise ValueError(f"seed must be an int in [0, {nS - 1}], got {seed!r}")
    return Ps.index(P), int(seed)


def _version() -> str:
    from .. import __version__

    return __version__


def run_tokens(cfg, P: int, seed: int) -> np.ndarray:
    """The ``P`` training sequences ``[P, L]`` of seed ``seed`` of a sweep of ``cfg``, drawn as
    the sweep drew them (the seed's key, the task's source, the nested pool's first rows)."""
    import jax

    from ..sources import task_data

    key = jax.random.split(jax.random.key(cfg.sweep.seed + seed))[0]
    return np.asarray(task_data(key, cfg.task, P_max=cfg.sweep.P_max).train)[:P]


def to_arviz(post, *, P: int | None = None, seed: int | None = None) -> Any:
    """``post`` as ``arviz.InferenceData`` (ArviZ < 1) or ``xarray.DataTree`` (ArviZ >= 1);
    with ``P`` and ``seed`` only that run (``az.loo`` then works when the log-likelihood was
    kept)."""
    if not isinstance(post, PosteriorResult):
        raise ValueError(f"post must be a PosteriorResult, got {type(post).__name__}")
    az, xr = _arviz()
    a = post.arrays
    draws = np.asarray(a["draws"])  # [P, seed, chain, draw, field]
    nP, nS, C, D, F = draws.shape
    if F != len(post.fields):
        raise ValueError(f"draws has {F} fields, post.fields names {len(post.fields)}")
    run = _run_index(post, P, seed)
    steps = np.asarray(a.get("draw_step", np.arange(1, D + 1)))
    # one run: its own draws (a run in rounds holds n_draws, NaN past them; sampling.rounds)
    n = D if run is None or "n_draws" not in a else int(a["n_draws"][run])
    coords = {
        "chain": np.arange(C),
        "draw": np.arange(n),
        "P": np.asarray(post.P)[:nP],
        "seed": np.arange(nS),
        "step": ("draw", steps[:n]),
    }
    dims = SAMPLE_DIMS + RUN_DIMS

    def var(x, extra=()):  # [P, seed, chain, draw, *extra] -> (dims, values) of the selection
        x = _sample_first(np.asarray(x))
        if run is not None:
            return SAMPLE_DIMS + extra, x[:, :n, run[0], run[1]]
        return dims + extra, x

    if run is not None:
        coords = {k: v for k, v in coords.items() if k not in RUN_DIMS}
    posterior = {f: var(draws[..., i]) for i, f in enumerate(post.fields)}
    for w, extra in (("W_G", ("W_G_row", "W_G_col")), ("W_O_hat", ("W_O_row", "W_O_col"))):
        if w in a:
            posterior[w] = var(a[w], extra)
    groups = {"posterior": xr.Dataset(posterior, coords)}
    if "log_lik" in a:
        ll = np.asarray(a["log_lik"])
        if run is not None:  # the run's own sequences only (the rest are NaN padding)
            ll = ll[..., : int(post.P[run[0]])]
        groups["log_likelihood"] = xr.Dataset({"y": var(ll, ("sequence",))}, coords)
    U = draws[..., post.fields.index("U")] if "U" in post.fields else None
    stats = {"acceptance_rate": var(a["accept"]), "distance": var(a["distance"])}
    if U is not None:
        stats["lp"] = var(-U)
    if "finite" in a:
        stats["diverging"] = var(
            np.broadcast_to(~np.asarray(a["finite"], bool)[..., None], (nP, nS, C, D))
        )
    if "energy" in a:  # HMC only
        stats["energy"] = var(a["energy"])
    if "step" in a:
        stats["step_size"] = var(np.broadcast_to(np.asarray(a["step"])[..., None], (nP, nS, C, D)))
    groups["sample_stats"] = xr.Dataset(stats, coords)
    if run is not None and "tokens_sha256" not in post.meta:
        x = run_tokens(post.config, int(post.P[run[0]]), run[1])
        groups["observed_data"] = xr.Dataset(
            {
                "x": (("sequence", "position"), x),
                "y": (("sequence", "position"), np.roll(x, 1, axis=-1)),
            }
        )
    mc = post.sampler
    attrs = {
        "inference_library": "copyhead_jax",
        "sampler": mc.name,
        "sampler_kind": mc.kind,
        "sampler_settings": json.dumps(dataclasses.asdict(mc)),
        "attention": post.config.model.attention,
        "config": json.dumps(post.config.to_dict()),
        "copyhead_jax_version": _version(),
        "arviz_version": az.__version__,
    }
    if run is not None:
        attrs.update(P=int(post.P[run[0]]), seed=run[1])
    for ds in groups.values():
        ds.attrs.update(attrs)
    if _uses_datatree(az):
        return xr.DataTree.from_dict(groups)
    return az.InferenceData(**groups)


#: File endings of a netCDF output (the path is checked before the sampling starts).
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")


def save_netcdf(post, path: str | Path, **run) -> Path:
    """Write :func:`to_arviz` of ``post`` (``run``: its ``P``, ``seed``) to a netCDF-4 file
    (read back: ``az.from_netcdf``), atomically (:func:`~copyhead_jax.storage.atomic_write`).
    The file is built in memory and then written as plain bytes: h5py never touches the disk,
    so a full disk or an unwritable folder is one error naming the path, with no temporary
    left (h5py writing the file itself would fail again at exit, outside any handler)."""
    from .._checks import check_output_path
    from ..storage import atomic_write, remove_tmp_orphans

    path = check_output_path("netCDF path", path, suffixes=NETCDF_SUFFIXES)
    data = to_arviz(post, **run)
    if path.parent.is_dir():
        remove_tmp_orphans(path)
    return atomic_write(path, lambda tmp: Path(tmp).write_bytes(netcdf_bytes(data)))


def netcdf_bytes(data) -> bytes:
    """The netCDF-4 file of ``data`` (an ArviZ ``InferenceData``, or a ``DataTree``) as bytes,
    group by group as ``InferenceData.to_netcdf`` writes it (numeric variables compressed)."""
    import io

    import xarray as xr

    buf = io.BytesIO()
    if not hasattr(data, "_groups_all"):  # a DataTree writes itself to a buffer
        data.to_netcdf(buf, engine="h5netcdf")
        return buf.getvalue()
    mode = "w"
    if data.attrs:
        xr.Dataset(attrs=data.attrs).to_netcdf(buf, mode=mode, engine="h5netcdf", group="/")
        mode = "a"
    for g in data.groups():
        ds = data[g]
        enc = {v: {"zlib": True} for v, x in ds.variables.items() if x.dtype.kind in "biufc"}
        ds.to_netcdf(buf, mode=mode, engine="h5netcdf", group=f"/{g}", encoding=enc)
        mode = "a"
    return buf.getvalue()
