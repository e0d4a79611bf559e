r"""ArviZ output of a :class:`~copyhead_jax.results.PosteriorResult` (issue 12, item 5).

:func:`to_arviz` returns what the installed ArviZ works with: ``arviz.InferenceData`` (ArviZ
< 1) or ``xarray.DataTree`` (ArviZ >= 1), with two groups:

* ``posterior``: one variable per recorded field (``U``, ``train_loss``, ``c1``, ``cG``, ``r``,
  ``psi``, ``coverage``; for softmax ``c1``/``cG`` hold ``a1``/``aG``), dims ``(chain, draw, P,
  seed)``: ArviZ's sample dims first, then the sweep's run axes. Coordinates: ``P`` the training
  set sizes, ``seed`` and ``chain`` integers, ``draw`` the draw index, plus ``step`` (along
  ``draw``) the SGLD step number of each draw;
* ``sample_stats``: ``lp`` $=-U$ (the log posterior up to a constant), ``acceptance_rate`` (the
  MALA acceptance proxy averaged over the ``thin`` steps before each draw: SGLD never rejects),
  ``distance`` ($\|\Theta_{\rm draw}-\Theta_0\|$ from the warm start) and ``diverging`` (every
  draw of a chain that produced a non-finite value; SGLD records divergence per chain).

ArviZ is imported only when called (``pip install copyhead_jax[posterior]``); ``import
copyhead_jax`` does not import it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from .results import PosteriorResult

__all__ = ["save_netcdf", "to_arviz"]

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


def to_arviz(post) -> Any:
    """``post`` as ``arviz.InferenceData`` (ArviZ < 1) or ``xarray.DataTree`` (ArviZ >= 1)."""
    if not isinstance(post, PosteriorResult):
        raise ValueError(f"post must be a PosteriorResult, got {type(post).__name__}")
    az, xr = _arviz()
    a = post.arrays
    draws = np.asarray(a["draws"])  # [P, seed, chain, draw, field]
    nP, nS, C, D, F = draws.shape
    if F != len(post.fields):
        raise ValueError(f"draws has {F} fields, post.fields names {len(post.fields)}")
    steps = np.asarray(a.get("draw_step", np.arange(1, D + 1)))
    coords = {
        "chain": np.arange(C), "draw": np.arange(D), "P": np.asarray(post.P)[:nP],
        "seed": np.arange(nS), "step": ("draw", steps),
    }  # fmt: skip
    dims = SAMPLE_DIMS + RUN_DIMS
    posterior = xr.Dataset(
        {f: (dims, _sample_first(draws[..., i])) for i, f in enumerate(post.fields)}, coords
    )
    U = draws[..., post.fields.index("U")] if "U" in post.fields else None
    stats = {
        "acceptance_rate": (dims, _sample_first(a["accept"])),
        "distance": (dims, _sample_first(a["distance"])),
    }
    if U is not None:
        stats["lp"] = (dims, _sample_first(-U))
    if "finite" in a:
        div = np.broadcast_to(~np.asarray(a["finite"], bool)[..., None], (nP, nS, C, D))
        stats["diverging"] = (dims, _sample_first(div))
    sample_stats = xr.Dataset(stats, coords)
    attrs = {
        "inference_library": "copyhead_jax",
        "sampler": "SGLD (T = 1 on U, warm-started from the MAP fits)",
        "attention": post.config.model.attention,
        "sgld": json.dumps(dataclasses.asdict(post.sgld)),
        "config": json.dumps(post.config.to_dict()),
    }
    for ds in (posterior, sample_stats):
        ds.attrs.update(attrs)
    if _uses_datatree(az):
        return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})
    return az.InferenceData(posterior=posterior, sample_stats=sample_stats)


#: File endings of a netCDF output (the path is checked before the sampling starts).
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf")


def save_netcdf(post, path: str | Path) -> Path:
    """Write :func:`to_arviz` of ``post`` to a netCDF-4 file (read back: ``az.from_netcdf``),
    atomically: a temporary file in the same folder, then renamed; errors name the path."""
    import os
    import tempfile

    from ._checks import check_output_path
    from .storage import remove_tmp_orphans

    path = check_output_path("netCDF path", path, suffixes=NETCDF_SUFFIXES)
    data = to_arviz(post)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_tmp_orphans(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        data.to_netcdf(tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise ValueError(f"cannot write {str(path)!r}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
