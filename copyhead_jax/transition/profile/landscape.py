r"""A flat energy with a scalar order parameter: what umbrella sampling needs to know of a model.

A :class:`Landscape` holds pure functions of ``(params, x)`` (``params`` a pytree passed to the
compiled programs as an argument, so one compilation serves every P of a configuration):
the energy $U(x)=-\log p(x\mid{\rm data})+{\rm const}$, the order parameter $a(x)$ the profile is
taken in, optional per-draw observables, and optionally a cheaper energy whose Hessian serves as
the whitening (any constant SPD preconditioner leaves the target unchanged, so a subsample of the
data is enough there).

Window $k$ samples the biased density $\propto e^{-U(x)-\frac\kappa2(a(x)-c_k)^2}$; its
whitening is $x=x_k+C_kw$ with $x_k$ a restrained minimum near the centre and
$C_k=O\Lambda_c^{-1/2}$ from $H_U+\kappa\nabla a\nabla a^\top=O\Lambda O^\top$ ($H_U$ the
Hessian of $U$ near $x_k$, the second term the restraint's Gauss-Newton curvature), eigenvalues
floored at ``floor`` (the prior curvature: $H_U$ may be indefinite off a minimum of $U$). The
restraint enters by a rank-one update of the energy's root (:func:`restrain`), so windows that
share an energy Hessian share its eigendecomposition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from jaxtyping import Array, Float

Flat = Float[Array, " n"]


@dataclasses.dataclass(frozen=True, eq=False)
class Landscape:
    """The model side of a profile (functions of ``(params, x)``; hashed by identity).

    ``energy``: $U$; ``order``: $a$; ``record``: per-draw observables ``[m]`` (``None``: none);
    ``precond``: the energy whose Hessian whitens a window (``None``: ``energy``); ``floor``:
    the prior's curvature (the energy is ``floor |x|^2 / 2`` plus a data part), also the
    smallest curvature kept in the whitening; ``batched(params, n)``: whether a window's ``n``
    chains run batched (``vmap``) or one after the other (``None``: batched); ``restrained(
    params, x, center, kappa)``: the restrained energy where the model computes it faster than
    ``energy`` plus the restraint on ``order`` (e.g. both in one pass), the same function
    (``None``: that sum); ``observe(params, x)``: ``(order, record)`` together where one pass
    gives both, the same values (``None``: each on its own)."""

    energy: Callable
    order: Callable
    record: Callable | None = None
    precond: Callable | None = None
    floor: float = 1.0
    batched: Callable | None = None
    restrained: Callable | None = None
    observe: Callable | None = None

    def batch(self, params, n: int) -> bool:
        """Whether ``n`` chains on ``params`` run batched (:attr:`batched`)."""
        return True if self.batched is None else bool(self.batched(params, n))

    def biased(self, params, x, center, kappa):
        """$U(x)+\\frac\\kappa2(a(x)-c)^2$ (:attr:`restrained` where given)."""
        if self.restrained is not None:
            return self.restrained(params, x, center, kappa)
        return self.energy(params, x) + 0.5 * kappa * (self.order(params, x) - center) ** 2

    def observed(self, params, x):
        """A draw's ``(a, record)``: the order parameter and the per-draw observables (an empty
        vector without :attr:`record`), by :attr:`observe` where given."""
        if self.observe is not None:
            return self.observe(params, x)
        ex = self.record(params, x) if self.record is not None else jnp.zeros((0,), x.dtype)
        return self.order(params, x), ex


@dataclasses.dataclass(frozen=True)
class Restrained:
    """A window's restrained minimum: ``x`` (float64 host array), its energy ``U``, order
    parameter ``a``, biased energy ``Ub``, and whether L-BFGS converged."""

    x: np.ndarray
    U: float
    a: float
    Ub: float
    converged: bool


def _f64(tree):
    return jax.tree.map(
        lambda v: (
            jnp.asarray(v, jnp.float64) if jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating) else v
        ),
        tree,
    )


_PROGRAMS: dict = {}


def _programs(ls: Landscape):
    """Compiled float64 pieces (cached per landscape)."""
    if ls not in _PROGRAMS:
        vg = jax.jit(jax.value_and_grad(ls.biased, argnums=1))
        ua = jax.jit(lambda p, x: (ls.energy(p, x), ls.order(p, x)))
        ga = jax.jit(jax.grad(ls.order, argnums=1))

        @jax.jit
        def hess(p, x):
            g = jax.grad(ls.precond or ls.energy, argnums=1)
            eye = jnp.eye(x.size, dtype=x.dtype)
            H = jax.lax.map(lambda v: jax.jvp(lambda y: g(p, y), (x,), (v,))[1], eye, batch_size=32)
            return 0.5 * (H + H.T)

        _PROGRAMS[ls] = (vg, ua, ga, hess)
    return _PROGRAMS[ls]


def restrained_minimum(
    ls: Landscape,
    params,
    center: float,
    kappa: float,
    x_start,
    *,
    gtol: float = 1e-6,
    max_iter: int = 2000,
) -> Restrained:
    """Minimise the biased energy of one window from ``x_start`` (L-BFGS, float64)."""
    vg, ua, _, _ = _programs(ls)
    with jax.enable_x64(True):
        p64 = _f64(params)
        c, k = jnp.float64(center), jnp.float64(kappa)

        def fun(x):
            v, g = vg(p64, jnp.asarray(x), c, k)
            return float(v), np.asarray(g, np.float64)

        r = scipy.optimize.minimize(
            fun,
            np.asarray(x_start, np.float64),
            jac=True,
            method="L-BFGS-B",
            options=dict(gtol=gtol, maxiter=max_iter),
        )
        U, a = (float(v) for v in ua(p64, jnp.asarray(r.x)))
    return Restrained(np.asarray(r.x), U, a, float(r.fun), bool(r.success))


def energy_hessian(ls: Landscape, params, x: np.ndarray) -> np.ndarray:
    """The Hessian of the whitening's energy (``precond``, else ``energy``) at ``x``, float64."""
    hess = _programs(ls)[3]
    with jax.enable_x64(True):
        return np.asarray(hess(_f64(params), jnp.asarray(x, jnp.float64)))


def order_gradient(ls: Landscape, params, x: np.ndarray) -> np.ndarray:
    """$\\nabla a$ at ``x``, float64."""
    ga = _programs(ls)[2]
    with jax.enable_x64(True):
        return np.asarray(ga(_f64(params), jnp.asarray(x, jnp.float64)))


def root_of_inverse(H: np.ndarray, floor: float) -> np.ndarray:
    """$C=O\\Lambda_c^{-1/2}$ with $H=O\\Lambda O^\\top$, $\\Lambda_c=\\max(\\Lambda,{\\rm floor})$:
    $CC^\\top=H_c^{-1}$."""
    lam, vec = np.linalg.eigh(0.5 * (H + H.T))
    return vec * np.maximum(lam, floor) ** -0.5


def restrain(C: np.ndarray, grad_a: np.ndarray, kappa: float) -> np.ndarray:
    """$C_k$ with $C_kC_k^\\top=(H_c+\\kappa\\nabla a\\nabla a^\\top)^{-1}$ from $C$ of $H_c$,
    by the rank-one update $C_k=C\\,(I+(\\frac1{\\sqrt{1+\\kappa|u|^2}}-1)\\hat u\\hat u^\\top)$,
    $u=C^\\top\\nabla a$ (in $C$'s coordinates the restraint adds $\\kappa uu^\\top$ to $I$)."""
    u = C.T @ grad_a
    nu = float(np.linalg.norm(u))
    if nu == 0.0:
        return C
    uh = u / nu
    return C + (1.0 / np.sqrt(1.0 + kappa * nu**2) - 1.0) * np.outer(C @ uh, uh)
