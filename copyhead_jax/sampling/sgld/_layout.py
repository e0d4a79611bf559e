"""The position pytree as one flat vector, and the preconditioner in that layout."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float, Int

from ._noise import step_normal

PyTree = Any


class Layout(NamedTuple):
    """How the position's leaves map onto one flat vector (static).

    The kernel works on the flat vector: one fused update, one noise draw and one reduction per
    step whatever the number of leaves; ``potential_fn`` still sees the pytree.
    """

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[Any, ...]
    size: int
    dtype: Any  # dtype of the flat vector (the leaves' common dtype)

    @classmethod
    def of(cls, position: PyTree) -> Layout:
        leaves, treedef = jax.tree.flatten(position)
        if not leaves:
            raise ValueError("position must be a pytree with at least one array leaf")
        for x in leaves:
            if not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
                raise ValueError(
                    f"position leaves must be floating point arrays, got dtype {jnp.result_type(x)}"
                )
        shapes = tuple(tuple(jnp.shape(x)) for x in leaves)
        dtypes = tuple(jnp.result_type(x) for x in leaves)
        size = sum(math.prod(s) for s in shapes)
        return cls(treedef, shapes, dtypes, size, jnp.result_type(*dtypes))

    def flatten(self, tree: PyTree) -> Float[Array, " D"]:
        leaves = [jnp.ravel(x).astype(self.dtype) for x in self.treedef.flatten_up_to(tree)]
        return leaves[0] if len(leaves) == 1 else jnp.concatenate(leaves)

    def unflatten(self, flat: Float[Array, " D"]) -> PyTree:
        out, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            n = math.prod(shape)
            out.append(lax.slice_in_dim(flat, start, start + n).reshape(shape).astype(dtype))
            start += n
        return jax.tree.unflatten(self.treedef, out)

    def noise(self, key: Array, t: Int[Array, ""], impl: str = "threefry") -> Float[Array, " D"]:
        """xi_t, the standard normal of step ``t`` for chain key ``key``."""
        return step_normal(key, t, self.size, self.dtype, impl)


def check_preconditioner(preconditioner: PyTree | None) -> PyTree | None:
    if preconditioner is None:
        return None
    for m in jax.tree.leaves(preconditioner):
        try:
            v = np.asarray(m)
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
            continue
        if not np.issubdtype(v.dtype, np.number) or not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(
                "preconditioner entries must be finite reals > 0 (a pytree matching the "
                f"position, leaves broadcastable to its leaves), got {m!r}"
            )
    return preconditioner


def flat_preconditioner(
    preconditioner: PyTree | None, position: PyTree, layout: Layout
) -> Float[Array, " D"] | None:
    """M as a flat vector matching ``layout`` (``None`` = identity); checks the structure."""
    if preconditioner is None:
        return None
    leaves, treedef = jax.tree.flatten(position)
    m_leaves, m_treedef = jax.tree.flatten(preconditioner)
    if m_treedef != treedef:
        raise ValueError(
            f"preconditioner must have the tree structure of the position {treedef}, "
            f"got {m_treedef}"
        )
    out = []
    for m, x in zip(m_leaves, leaves):
        try:
            ok = np.broadcast_shapes(jnp.shape(m), jnp.shape(x)) == jnp.shape(x)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"preconditioner leaf of shape {jnp.shape(m)} does not broadcast to the "
                f"position leaf of shape {jnp.shape(x)}"
            )
        out.append(jnp.broadcast_to(jnp.asarray(m, layout.dtype), jnp.shape(x)))
    return layout.flatten(jax.tree.unflatten(treedef, out))
