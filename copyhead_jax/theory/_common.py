"""Shared internals of the theory: the float64 scope, the scale pytree, the convention switches."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._checks import check_choice
from ..config import LIKELIHOODS, LINEAR_SCALES

OBJECTIVES = ("map", "post")
ATTENTIONS = ("linear", "softmax")


def x64(fn):
    """Run ``fn`` under ``jax.enable_x64(True)``.

    ``jax.enable_x64`` is a scoped (thread-local) config context: the caller's global
    ``jax_enable_x64`` is unchanged after the call. The high-level entry points (minima, curves,
    transition points, scaling) use this and return NumPy float64 / Python floats.
    """

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    return wrapped


class Scales(NamedTuple):
    """The numeric inputs of every closed form, as arrays (a pytree: vmap over any field)."""

    L: jax.Array
    V: jax.Array
    sigma_e: jax.Array
    sigma_p: jax.Array
    sigma_G: jax.Array
    sigma_O: jax.Array
    sigma2: jax.Array
    chi: jax.Array


def as_float(x) -> jax.Array:
    """``x`` as an array of the default float dtype (float64 inside ``x64``)."""
    return jnp.asarray(x, dtype=jnp.result_type(float))


def make_scales(**kw) -> Scales:
    return Scales(**{k: as_float(kw[k]) for k in Scales._fields})


def check_switches(likelihood: str, linear_scale: str) -> None:
    check_choice("likelihood", likelihood, LIKELIHOODS)
    check_choice("linear_scale", linear_scale, LINEAR_SCALES)


def p_eff(P, L, likelihood: str):
    """THEORY.md §2b: the per-position likelihood replaces ``P`` by ``P/L`` in Q and lambda."""
    return P / L if likelihood == "per_position" else P


def sigma_G_lin(sigma_G, L, linear_scale: str):
    """THEORY.md §2b: ``A = s/L`` replaces ``sigma_G^2`` by ``sigma_G^2/L^2`` (linear only)."""
    return sigma_G / L if linear_scale == "inv_L" else sigma_G
