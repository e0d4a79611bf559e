"""Shared internals of the theory: the float64 scope, the scale pytree, the convention switches."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from .. import conventions as conv
from .._checks import check_choice
from ..config import ATTENTIONS as ATTENTIONS  # the attention names are written once, in config
from ..config import LIKELIHOODS, LINEAR_SCALES

OBJECTIVES = ("map", "post")


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

    The convention switches and the objective are floats, so one compiled program serves
    every preset: ``per_position`` (likelihood, 0/1), ``inv_L`` (the exponent k of the linear
    attention scale ``A = s / L^k``: 0, 1/2 or 1), ``w_D`` (1 for the posterior objective, which
    adds D) and ``w_J`` (1 adds the pushforward term J, softmax). ``sigma2`` and ``chi`` are the
    closed forms' own (both chi switches on): :func:`make_scales` maps every reading of
    ``chi_in_readout_prior`` / ``chi_in_noise`` onto them (``conventions.theory_sigma2_chi``).
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
    chi_in_readout_prior: bool = True,
    chi_in_noise: bool = True,
    dtype=None,
    **numeric,
) -> Scales:
    """``Scales`` from the numeric fields and the switches (validated; docs/theory.md §2b)."""
    check_choice("likelihood", likelihood, LIKELIHOODS)
    check_choice("linear_scale", linear_scale, LINEAR_SCALES)
    check_choice("objective", objective, OBJECTIVES)
    bad = set(numeric) - set(NUMERIC_FIELDS)
    if bad:
        raise ValueError(f"unknown arguments {sorted(bad)}; allowed: {list(NUMERIC_FIELDS)}")
    if "sigma2" in numeric and "chi" in numeric:
        numeric["sigma2"], numeric["chi"] = conv.theory_sigma2_chi(
            numeric["sigma2"], numeric["chi"],
            chi_in_readout_prior=chi_in_readout_prior, chi_in_noise=chi_in_noise,
        )  # fmt: skip
    elif not (chi_in_readout_prior and chi_in_noise):
        raise ValueError("the chi switches need both sigma2 and chi")
    flags = dict(
        per_position=float(likelihood == "per_position"),
        inv_L=conv.LINEAR_SCALE_EXPONENTS[linear_scale],
        w_D=float(objective == "post"),
        w_J=float(bool(pushforward)),
    )
    cast = as_float if dtype is None else (lambda x: jnp.asarray(x, dtype=dtype))
    return Scales(**{k: cast(v) for k, v in {**numeric, **flags}.items()})


def p_eff(P, sc: Scales):
    """docs/theory.md §2b: the per-position likelihood replaces ``P`` by ``P/L`` in Q and lambda."""
    return conv.effective_P(P, L=sc.L, likelihood=sc.per_position)


def sigma_G_lin(sc: Scales):
    """docs/theory.md §2b: ``A = s/L^k`` replaces ``sigma_G^2`` by ``sigma_G^2/L^2k`` (linear)."""
    return sc.sigma_G / conv.linear_scale_divisor(sc.L, sc.inv_L)
