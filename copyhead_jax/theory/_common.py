"""Shared internals of the theory: the float64 scope, the objective's weights, the switches."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .. import conventions as conv
from .._checks import check_choice

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


def as_float(x) -> jax.Array:
    """``x`` as an array of the default float dtype (float64 inside ``x64``)."""
    return jnp.asarray(x, dtype=jnp.result_type(float))


def weights(objective: str = "map", pushforward: bool = False) -> tuple[float, float]:
    """``(w_D, w_J)``: 1 adds the Occam term D (the posterior objective), resp. the pushforward
    term J (the density of A, docs/theory.md §3), to an action."""
    check_choice("objective", objective, OBJECTIVES)
    return float(objective == "post"), float(bool(pushforward))


def p_eff(P, p):
    """docs/theory.md §2b: the per-position likelihood replaces ``P`` by ``P/L`` in Q and lambda
    (``p``: a :class:`~.params.TheoryParams`, of names or arrays)."""
    return conv.effective_P(P, L=p.L, likelihood=p.likelihood)


def sigma_G_lin(p):
    """docs/theory.md §2b: ``A = s/L^k`` replaces ``sigma_G^2`` by ``sigma_G^2/L^2k`` (linear)."""
    return p.sigma_G / conv.linear_scale_divisor(p.L, p.linear_scale)
