r"""A low-dimensional double well whose profile is a 1-d integral: the tests' reference.

$$U(x)=h\,(x_0^2-1)^2+\tau x_0+\frac{(x_1-bx_0)^2}{2s^2}+\tfrac12\sum_{i\ge2}x_i^2,\qquad
a(x)=x_0+\gamma\tanh x_1 .$$
The order parameter mixes the well coordinate with a coupled, non-linearly mapped one, so the
profile is not the well's own marginal, yet it is one quadrature away:
$$p(a)\propto\int dx_1\,e^{-U(a-\gamma\tanh x_1,\,x_1)}$$
(substituting $x_0=a-\gamma\tanh x_1$, unit Jacobian at fixed $x_1$; the $x_{i\ge2}$ integrate to
a constant). :func:`exact_profile` evaluates it on a fine grid.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from copyhead_jax.transition.profile.landscape import Landscape


@dataclasses.dataclass(frozen=True)
class Well:
    """Parameters of the module docstring; ``dim`` the total dimension (>= 2)."""

    h: float = 4.0
    tau: float = 0.4
    b: float = 0.8
    s: float = 0.5
    gamma: float = 0.5
    dim: int = 4

    def params(self) -> dict:
        return {k: jnp.float32(getattr(self, k)) for k in ("h", "tau", "b", "s", "gamma")}


def energy(p: dict, x):
    x0, x1 = x[0], x[1]
    return (
        p["h"] * (x0**2 - 1) ** 2
        + p["tau"] * x0
        + (x1 - p["b"] * x0) ** 2 / (2 * p["s"] ** 2)
        + 0.5 * jnp.sum(x[2:] ** 2)
    )


def order(p: dict, x):
    return x[0] + p["gamma"] * jnp.tanh(x[1])


def record(p: dict, x):
    return x[:2]


#: The toy's landscape (energy, order, the first two coordinates recorded, floor 0.1).
WELL = Landscape(energy=energy, order=order, record=record, floor=0.1)


def start(w: Well):
    """Window start for centre ``c``: ``x0 = c``, the rest at their conditional means."""

    def f(c: float) -> np.ndarray:
        x = np.zeros(w.dim)
        x[0], x[1] = c, w.b * c
        return x

    return f


def exact_log_density(w: Well, a: np.ndarray, n_x1: int = 2001) -> np.ndarray:
    """$\\log p(a)$ normalised on the grid ``a`` (fine, uniform, covering the mass)."""
    x1 = np.linspace(-8.0, 8.0, n_x1)
    x0 = a[:, None] - w.gamma * np.tanh(x1)[None]
    U = w.h * (x0**2 - 1) ** 2 + w.tau * x0 + (x1[None] - w.b * x0) ** 2 / (2 * w.s**2)
    lp = logsumexp(-U, axis=1) + np.log(x1[1] - x1[0])
    return lp - (logsumexp(lp) + np.log(a[1] - a[0]))


def exact_on_bins(w: Well, edges: np.ndarray, per_bin: int = 50) -> np.ndarray:
    """$F_j=-\\log(\\int_{\\rm bin}p/h)$ on ``edges`` (the profile's binned value)."""
    lo, hi = edges[0] - 3.0, edges[-1] + 3.0
    a = np.linspace(lo, hi, int((hi - lo) / np.min(np.diff(edges)) * per_bin) + 1)
    lp = exact_log_density(w, a)
    da = a[1] - a[0]
    out = []
    for l, r in zip(edges[:-1], edges[1:]):
        sel = (a >= l) & (a < r)
        out.append(-(logsumexp(lp[sel]) + np.log(da) - np.log(r - l)))
    return np.array(out)


def exact_copy_weight(w: Well, a_star: float) -> float:
    """$\\int_{a^*}^\\infty p(a)\\,da$."""
    a = np.linspace(-5.0, 5.0, 5001)
    lp = exact_log_density(w, a)
    p = np.exp(lp) * (a[1] - a[0])
    return float(p[a >= a_star].sum())
