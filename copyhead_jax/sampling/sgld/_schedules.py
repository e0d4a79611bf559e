r"""Step-size schedules $t\mapsto\eta_t$ for SGLD (constant, polynomial, or any callable)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..._checks import check_float

Scalar = Float[Array, ""]
Schedule = Callable[[Int[Array, ""]], Scalar]


def constant_step_size(eta: float) -> Schedule:
    r"""$\eta_t=\eta$."""
    eta = check_float("step_size", eta, lo=0.0)
    return lambda t: jnp.full((), eta, jnp.float32)


def polynomial_step_size(a: float, b: float = 1.0, gamma: float = 0.55) -> Schedule:
    r"""$\eta_t=a\,(b+t)^{-\gamma}$, the decay of Welling & Teh (2011).

    $\gamma\in(0.5,1]$ gives $\sum_t\eta_t=\infty$, $\sum_t\eta_t^2<\infty$; ``gamma = 0`` is a
    constant step.
    """
    a = check_float("polynomial_step_size.a", a, lo=0.0)
    b = check_float("polynomial_step_size.b", b, lo=0.0)
    gamma = check_float("polynomial_step_size.gamma", gamma, lo=0.0, hi=1.0, lo_open=False)
    return lambda t: a * (b + jnp.asarray(t, jnp.float32)) ** (-gamma)


def as_schedule(step_size: Any) -> Schedule:
    """A callable ``t -> eta_t`` from a float, a (possibly traced) scalar array or a callable."""
    if callable(step_size):
        return step_size
    try:
        value = np.asarray(step_size)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        value = None  # traced (e.g. one step size per run under vmap): checked by the caller
    if value is not None:
        if value.shape != () or not np.issubdtype(value.dtype, np.number):
            raise ValueError(
                f"step_size must be a real number > 0 or a callable t -> eta_t, got {step_size!r}"
            )
        check_float("step_size", float(value), lo=0.0)
    return lambda t: jnp.asarray(step_size)
