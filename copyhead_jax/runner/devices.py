"""Spreading the run axis over devices: a 1-D ``runs`` mesh with automatic axis types.

Every array with a leading run axis is placed with ``NamedSharding(mesh, P("runs"))``; the
compiled programs are ``vmap``s over that axis, so XLA partitions them without communication.
Axis types are ``Auto`` on purpose: recent JAX's ``make_mesh`` defaults to explicit axes, under
which a ``scan`` whose carry starts from a constant fails to type-check.

Multi-host: call ``jax.distributed.initialize()`` in every process before building a sweep; the
mesh then spans ``jax.devices()`` of all hosts, each process builds the same host inputs
(deterministic from the config), keeps only its addressable shards, and results are gathered
with ``multihost_utils.process_allgather``.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def run_mesh(n_devices: int = 0) -> Mesh:
    """A 1-D mesh named ``runs`` over the first ``n_devices`` devices (0 = all)."""
    devices = jax.devices()
    n = len(devices) if n_devices <= 0 else n_devices
    if n > len(devices):
        raise ValueError(f"n_devices must be <= {len(devices)} (devices available), got {n}")
    try:
        return jax.make_mesh(
            (n,), ("runs",), axis_types=(jax.sharding.AxisType.Auto,), devices=devices[:n]
        )
    except (AttributeError, TypeError):  # older JAX: no axis types, Auto is the only kind
        return Mesh(np.asarray(devices[:n]), ("runs",))


def shard_runs(tree, mesh: Mesh):
    """Place every leaf (leading run axis divisible by the mesh size) across the mesh."""
    if mesh.size == 1:
        return jax.device_put(tree, mesh.devices.flat[0])
    sharding = NamedSharding(mesh, P("runs"))

    def put(x):
        x = np.asarray(x)
        return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

    return jax.tree_util.tree_map(put, tree)


def to_host(x) -> np.ndarray:
    """A (possibly multi-host sharded) array as one host numpy array."""
    if jax.process_count() > 1 and isinstance(x, jax.Array) and not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)
