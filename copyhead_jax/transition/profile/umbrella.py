r"""Umbrella windows: HMC chains in harmonic restraints on an order parameter.

Window $k$ (centre $c_k$, force constant $\kappa$) samples
$$\pi_k(x)\propto e^{-U(x)-\frac\kappa2(a(x)-c_k)^2}$$
with the package's HMC kernel (:func:`copyhead_jax.sampling.hmc.hmc_chains`: dual-averaging warm-up,
then an exact chain at the frozen step) in the window's whitening $x=x_k+C_kw$
(:mod:`.landscape`). Each window runs ``n_chains`` chains from independent keys and starts
$w_0\sim\mathcal N(0,s^2I)$ (``start_scale`` $s$). Chain $r$ of every window forms replica $r$:
the replicas are independent umbrella runs (whole profiles), whose spread is the profile's
Monte-Carlo error, and the chains of one window give its split $\hat R$ and ESS
(:mod:`copyhead_jax.sampling.stats`). Windows run one after the other (``lax.map``), the chains of
a window batched (``vmap``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ...sampling.hmc import hmc_chains
from ...sampling.stats import ess, split_rhat
from .landscape import Landscape


@dataclasses.dataclass(frozen=True)
class UmbrellaSettings:
    """Monte-Carlo sizes of one umbrella run.

    ``n_chains`` chains per window (= independent replicas of the profile, >= 2 for a split
    R-hat across chains); ``n_adapt`` step-adaptation iterations (discarded), then ``n_iter``
    iterations recorded every ``thin``; ``n_leap`` leapfrog steps of initial size ``step_size``
    (whitened units); ``start_scale`` the spread of the starts around the window's restrained
    minimum; ``adapt_mass`` a diagonal mass in the warm-up."""

    n_chains: int = 6
    n_adapt: int = 40
    n_iter: int = 200
    thin: int = 2
    n_leap: int = 5
    step_size: float = 0.35
    start_scale: float = 1.0
    adapt_mass: bool = False

    def __post_init__(self):
        for name, lo in (("n_chains", 2), ("n_adapt", 0), ("thin", 1), ("n_leap", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"UmbrellaSettings.{name} must be an int >= {lo}, got {v!r}")
        if not isinstance(self.n_iter, int) or self.n_iter < 8 * self.thin:
            raise ValueError(f"UmbrellaSettings.n_iter must be an int >= 8 thin, got "
                             f"{self.n_iter!r}")  # fmt: skip
        if not self.step_size > 0 or not self.start_scale >= 0:
            raise ValueError("UmbrellaSettings.step_size must be > 0 and start_scale >= 0")

    @property
    def n_draws(self) -> int:
        return self.n_iter // self.thin


class WindowDraws(NamedTuple):
    """Draws of every window and chain: ``a``, ``U`` ``[K, R, S]``, ``extra`` ``[K, R, S, m]``,
    per chain the mean acceptance, frozen step and finiteness ``[K, R]``."""

    a: Float[Array, "K R S"]
    U: Float[Array, "K R S"]
    extra: Float[Array, "K R S m"]
    accept: Float[Array, "K R"]
    step: Float[Array, "K R"]
    finite: Array

    def rhat(self) -> np.ndarray:
        """``[K]`` split R-hat of ``a`` over each window's chains."""
        return np.asarray(split_rhat(np.asarray(self.a, np.float64)))

    def ess(self) -> np.ndarray:
        """``[K]`` ESS of ``a`` in each window (chains pooled)."""
        return np.asarray(ess(np.asarray(self.a, np.float64)))

    def concat(self, other: WindowDraws, before: bool = False) -> WindowDraws:
        """The windows of ``self`` and ``other`` (``other`` first if ``before``)."""
        pair = (other, self) if before else (self, other)
        return WindowDraws(*(np.concatenate(x) for x in zip(*pair)))


@functools.lru_cache(maxsize=16)
def _program(ls: Landscape, s: UmbrellaSettings):
    """The compiled umbrella run of a landscape and settings (window arrays are arguments)."""

    def pot(w, params, x0, C, center, kappa):
        return ls.biased(params, x0 + C @ w, center, kappa)

    def record(state, j, params, x0, C, center, kappa):
        x = x0 + C @ state.position
        ex = ls.record(params, x) if ls.record is not None else jnp.zeros((0,), x.dtype)
        return ls.order(params, x), state.potential_energy - 0.5 * kappa * (
            ls.order(params, x) - center) ** 2, ex  # fmt: skip

    def one_window(key, params, x0, C, center, kappa):
        k_start, k_run = jax.random.split(key)
        w0 = s.start_scale * jax.random.normal(k_start, (s.n_chains, x0.shape[0]), x0.dtype)
        ch = hmc_chains(jax.random.split(k_run, s.n_chains), pot, w0, record, n_iter=s.n_iter,
                        thin=s.thin, step_size=s.step_size, n_leap=s.n_leap,
                        n_adapt=s.n_adapt, adapt_mass=s.adapt_mass,
                        args=(params, x0, C, center, kappa))  # fmt: skip
        a, U, ex = ch.records
        return a, U, ex, jnp.mean(ch.accept, -1), ch.step_size, ch.finite

    @jax.jit
    def run(key, params, x0, C, centers, kappa):
        keys = jax.random.split(key, centers.shape[0])
        return jax.lax.map(lambda a: one_window(a[0], params, a[1], a[2], a[3], kappa),
                           (keys, x0, C, centers))  # fmt: skip

    return run


def run_windows(key: Array, ls: Landscape, params, x0: np.ndarray, C: np.ndarray,
                centers: np.ndarray, kappa: float, s: UmbrellaSettings) -> WindowDraws:  # fmt: skip
    """Every window's chains (module docstring): ``x0[K, n]`` the restrained minima,
    ``C[K, n, n]`` the whitenings, ``centers[K]``; float32."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    out = _program(ls, s)(key, params, f32(x0), f32(C), f32(centers), jnp.float32(kappa))
    return WindowDraws(*(np.asarray(v) for v in out))
