"""Shared internals of the theory: the float64 scope, the scale pytree, the convention switches."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .. import conventions as conv
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
    """The numeric inputs of every closed form, as arrays (a pytree: vmap over any field).

    The convention switches and the objective are 0/1 floats, so one compiled program serves
    every preset: ``per_position`` (likelihood), ``inv_L`` (linear_scale), ``w_D`` (1 for the
    posterior objective, which adds D) and ``w_J`` (1 adds the pushforward term J, softmax).
    """

    L: jax.Array
    V: jax.Array
    sigma_e: jax.Array
    sigma_p: jax.Array
    sigma_G: jax.Array
    sigma_O: jax.Array
    sigma2: jax.Array
    chi: jax.Array
    per_position: jax.Array
    inv_L: jax.Array
    w_D: jax.Array
    w_J: jax.Array


NUMERIC_FIELDS = Scales._fields[:8]


def as_float(x) -> jax.Array:
    """``x`` as an array of the default float dtype (float64 inside ``x64``)."""
    return jnp.asarray(x, dtype=jnp.result_type(float))


def make_scales(
    *,
    likelihood: str = "per_position",
    linear_scale: str = "inv_L",
    objective: str = "map",
    pushforward: bool = False,
    dtype=None,
    **numeric,
) -> Scales:
    """``Scales`` from the numeric fields and the switches (validated)."""
    check_choice("likelihood", likelihood, LIKELIHOODS)
    check_choice("linear_scale", linear_scale, LINEAR_SCALES)
    check_choice("objective", objective, OBJECTIVES)
    bad = set(numeric) - set(NUMERIC_FIELDS)
    if bad:
        raise ValueError(f"unknown arguments {sorted(bad)}; allowed: {list(NUMERIC_FIELDS)}")
    flags = dict(
        per_position=float(likelihood == "per_position"),
        inv_L=float(linear_scale == "inv_L"),
        w_D=float(objective == "post"),
        w_J=float(bool(pushforward)),
    )
    conv = as_float if dtype is None else (lambda x: jnp.asarray(x, dtype=dtype))
    return Scales(**{k: conv(v) for k, v in {**numeric, **flags}.items()})


def p_eff(P, sc: Scales):
    """docs/theory.md §2b: the per-position likelihood replaces ``P`` by ``P/L`` in Q and lambda."""
    return conv.effective_P(P, L=sc.L, likelihood=sc.per_position)


def sigma_G_lin(sc: Scales):
    """docs/theory.md §2b: ``A = s/L`` replaces ``sigma_G^2`` by ``sigma_G^2/L^2`` (linear only)."""
    return sc.sigma_G / (1.0 + sc.inv_L * (sc.L - 1.0))
