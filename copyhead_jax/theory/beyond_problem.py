r"""One attention's EK action at fixed token statistics ``(S4, S2)`` (Markov sources, the causal
mask; docs/theory.md §12) and its minimisers: L-BFGS branches along ``t = log P``, Newton from a
nearby minimiser accepted only at a minimum, and the quantities the roots of
:mod:`.beyond` need (the copy fraction, its slope, the softest curvature)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from ._common import as_float
from .action import ek_action, project
from .full import lbfgs_minimise
from .heads import theory_of


def to_G(theta, *, L, attention, space):
    """The logits: the full matrix, or the ansatz's at its coordinates ``theta``."""
    return theta.reshape(L, L) if space == "full" else theory_of(attention).logits(theta, L)


def gauged(pr: dict, L: int, fix: bool = True):
    """``(c1, cG)`` of a projection ``pr`` in the Z2 gauge ``r >= 0`` (docs/theory.md §6) where
    ``fix`` (the head has that symmetry), else as projected."""
    if not fix:
        return pr["c1"], pr["cG"]
    sgn = jnp.where(pr["c1"] + pr["cG"] / jnp.sqrt(as_float(L)) < 0, -1.0, 1.0)
    return pr["c1"] * sgn, pr["cG"] * sgn


def action(theta, P, S4, S2, *, params, attention, space, causal):
    G = to_G(theta, L=params.L, attention=attention, space=space)
    return ek_action(G, P=P, params=params, attention=attention, stats=(S4, S2), causal=causal)


_STATIC = ("params", "attention", "space", "causal", "n_steps")


@functools.partial(jax.jit, static_argnames=_STATIC)
def minimisers(logPs, theta0, S4, S2, key, *, params, attention, space, causal, n_steps):
    """Minimisers along ``logPs``, each started from the previous one (one-branch kinds: plus a
    1e-4 kick that lets the branch leave the saddle ``G = 0`` once ``P > P_c1``)."""
    L = params.L
    kind = theory_of(attention)
    kick = 1e-4 if not kind.two_branches else 0.0

    def step(theta, x):
        logP, k = x
        f = functools.partial(
            action,
            P=jnp.exp(logP),
            S4=S4,
            S2=S2,
            params=params,
            attention=attention,
            space=space,
            causal=causal,
        )
        th = lbfgs_minimise(
            f, theta + kick * jax.random.normal(k, theta.shape, theta.dtype), n_steps
        )
        A = kind.attention(to_G(th, L=L, attention=attention, space=space), causal)
        pr = project(A)
        c1, cG = gauged(pr, L, kind.gauge_fix)
        out = {
            "value": f(th),
            "c1": c1,
            "cG": cG,
            "cosine": pr["cosine"],
            "grad_norm": jnp.linalg.norm(jax.grad(f)(th)),
            "theta": th,
        }
        return th, out

    keys = jax.random.split(key, logPs.shape[0])
    return jax.lax.scan(step, theta0, (logPs, keys))[1]


@functools.partial(jax.jit, static_argnames=("params", "attention", "causal", "space"))
def hess0_min_eig(logP, S4, S2, *, params, attention, causal, space):
    """``lambda_min`` of the Hessian of a one-branch (linear) action at ``G = 0`` (map)."""
    n = params.L**2 if space == "full" else len(theory_of(attention).coords)
    f = functools.partial(
        action,
        P=jnp.exp(logP),
        S4=S4,
        S2=S2,
        params=params,
        attention=attention,
        space=space,
        causal=causal,
    )
    return jnp.linalg.eigvalsh(jax.hessian(f)(jnp.zeros(n, S4.dtype)))[0]


def sym_lstsq(H, b):
    """The minimum-norm least-squares solution of ``H x = b`` for a symmetric ``H`` (the
    pseudo-inverse over the eigenvalues above ``jnp.linalg.lstsq``'s cut, ``eps n max |lambda|``).
    Through ``eigh``, not ``lstsq``'s SVD: LAPACK's ``gesdd`` in SciPy's OpenBLAS fails to
    converge (NaN) on some of the action's Hessians, and which ones depends on the BLAS thread
    count (OpenMathLib/OpenBLAS#3044; met on a 625 x 625 Hessian of the L = 25 Markov theory)."""
    H = 0.5 * (H + H.T)
    lam, U = jnp.linalg.eigh(H)
    cut = jnp.finfo(H.dtype).eps * H.shape[0] * jnp.max(jnp.abs(lam))
    inv = jnp.where(jnp.abs(lam) > cut, 1.0 / jnp.where(lam == 0, 1.0, lam), 0.0)
    return U @ (inv[:, None] * (U.T @ b.reshape(H.shape[0], -1))).reshape(b.shape)


def psi(theta, *, params, attention, space, causal):
    """The copy fraction of the attention at ``theta`` (Z2 gauge ``r >= 0``)."""
    kind = theory_of(attention)
    pr = project(kind.attention(to_G(theta, L=params.L, attention=attention, space=space), causal))
    return conv.copy_fraction(*gauged(pr, params.L), params.L)


@functools.partial(jax.jit, static_argnames=("params", "attention", "space", "causal"))
def psi_slope(theta, logP, S4, S2, *, params, attention, space, causal):
    """``dpsi/dlog P`` along the minimiser ``theta`` by implicit differentiation,
    ``dtheta/dt = -H^{-1} d_t grad S``."""
    kw = dict(params=params, attention=attention, space=space, causal=causal)
    grad = jax.grad(lambda th, t: action(th, jnp.exp(t), S4, S2, **kw))
    H = jax.jacfwd(grad, argnums=0)(theta, logP)
    dtheta = -sym_lstsq(H, jax.jacfwd(grad, argnums=1)(theta, logP))
    return jax.grad(functools.partial(psi, **kw))(theta) @ dtheta


_KW = ("params", "attention", "space", "causal")


def _grad_fn(S4, S2, kw):
    return jax.grad(lambda th, t: action(th, jnp.exp(t), S4, S2, **kw))


@functools.partial(jax.jit, static_argnames=(*_KW, "n_iter"))
def newton_minimiser(theta, logP, S4, S2, *, params, attention, space, causal, n_iter=12):
    """Newton's method on ``grad S = 0`` from a nearby minimiser (minimum-norm least-squares
    steps, :func:`sym_lstsq`: the full space has exact null directions, e.g. the softmax rows'
    shifts), and the minimiser's
    summary as :func:`minimisers` gives it."""
    kw = dict(params=params, attention=attention, space=space, causal=causal)
    f = lambda th: action(th, jnp.exp(logP), S4, S2, **kw)  # noqa: E731
    g = jax.grad(f)

    tol = 1e-12 * (1.0 + jnp.max(jnp.abs(theta)))  # float64 rounding of the gradient

    def body(c):
        i, th, _ = c
        dth = sym_lstsq(jax.hessian(f)(th), g(th))
        th = jnp.where(jnp.all(jnp.isfinite(dth)), th - dth, th)
        return i + 1, th, jnp.linalg.norm(g(th))

    def cond(c):
        return (c[0] < n_iter) & (c[2] > tol)

    th = jax.lax.while_loop(cond, body, (0, theta, jnp.linalg.norm(g(theta))))[1]
    kind = theory_of(attention)
    pr = project(kind.attention(to_G(th, L=params.L, attention=attention, space=space), causal))
    c1, cG = gauged(pr, params.L, kind.gauge_fix)
    lam = jnp.linalg.eigvalsh(jax.hessian(f)(th))  # Newton stops at any stationary point
    return {
        "value": f(th),
        "c1": c1,
        "cG": cG,
        "grad_norm": jnp.linalg.norm(g(th)),
        "theta": th,
        "lam_min_rel": lam[0] / jnp.max(jnp.abs(lam)),
    }


@functools.partial(jax.jit, static_argnames=_KW)
def _soft_eig(theta, logP, Q, S4, S2, *, params, attention, space, causal):
    """The smallest eigenvalue of the Hessian at ``theta`` in the directions ``Q`` (an
    orthonormal basis of the non-null ones)."""
    grad = _grad_fn(S4, S2, dict(params=params, attention=attention, space=space, causal=causal))
    return jnp.linalg.eigvalsh(Q.T @ jax.jacfwd(grad)(theta, logP) @ Q)[0]


#: the smallest Hessian eigenvalue over the largest (in modulus) below which a stationary point
#: is a saddle: exact null directions (the softmax rows' shifts) sit at rounding level, ~1e-16
#: of the largest; a saddle's negative curvature is of the order of the spectrum's
MIN_CURVATURE = -1e-8


def _is_minimum(out, scale: float) -> bool:
    """Whether a Newton result is a minimum: converged (gradient below ``1e-9 scale``, where
    ``scale`` is ``1 + max |theta0|``) and without negative curvature."""
    return bool(
        float(out["grad_norm"]) < 1e-9 * scale and float(out["lam_min_rel"]) > MIN_CURVATURE
    )


def nearest(logP, x: float) -> int:
    """The grid index nearest ``x``: the warm start a root-finder's evaluation at ``x`` uses
    (half a grid step away at most, so Newton starts inside the minimiser's basin)."""
    return int(np.argmin(np.abs(np.asarray(logP) - x)))


class Problem:
    """One attention's action at fixed statistics: minimisers warm-started anywhere in
    ``t = log P`` and the quantities the roots need (:mod:`.beyond_roots`)."""

    def __init__(self, S4, S2, key, *, params, attention, space, causal, n_steps):
        self.S4, self.S2, self.key, self.n_steps = S4, S2, key, n_steps
        self.kw = dict(params=params, attention=attention, space=space, causal=causal)

    def _t(self, t):
        return jnp.asarray(t, self.S4.dtype)

    def solve(self, t: float, theta0) -> dict[str, np.ndarray]:
        """The minimiser at ``t`` in ``theta0``'s basin: Newton, or L-BFGS then Newton where
        Newton alone does not reach a minimum (a start far from the minimiser: Newton converges
        to whichever stationary point is near, a saddle included). ``ok``: a minimum was
        reached (gradient at rounding level, no negative curvature beyond ``MIN_CURVATURE``);
        callers read a quantity at a point that is not ``ok`` as NaN (not found)."""
        scale = 1.0 + float(np.max(np.abs(np.asarray(theta0))))
        out = newton_minimiser(jnp.asarray(theta0), self._t(t), self.S4, self.S2, **self.kw)
        if not _is_minimum(out, scale):
            far = minimisers(
                jnp.asarray([t], self.S4.dtype),
                jnp.asarray(theta0),
                self.S4,
                self.S2,
                self.key,
                n_steps=self.n_steps,
                **self.kw,
            )
            out = newton_minimiser(far["theta"][0], self._t(t), self.S4, self.S2, **self.kw)
        out = {k: np.asarray(v) for k, v in out.items()}
        out["ok"] = _is_minimum(out, scale)
        return out

    def psi(self, theta) -> float:
        return float(psi(jnp.asarray(theta), **self.kw))

    def slope(self, theta, t) -> float:
        return float(psi_slope(jnp.asarray(theta), self._t(t), self.S4, self.S2, **self.kw))

    def alive(self, theta_ref, t_ref: float, cG_ref: float, cG_other: float):
        """``g(t)`` for a spinodal: the softest non-null curvature of the minimiser in the basin
        of ``theta_ref`` (a minimiser at ``t_ref`` with copy order parameter ``cG_ref``) at
        ``t``, found by Newton from ``theta_ref``; -1 where that basin has no minimum (Newton
        does not converge, lands on a saddle, or lands nearer the other branch's ``cG_other``).
        Positive on the alive side, falling to 0 at the fold like a square root, -1 beyond it:
        a sign change that Brent locates."""
        theta_ref = jnp.asarray(theta_ref)
        H = jax.jacfwd(_grad_fn(self.S4, self.S2, self.kw))(theta_ref, self._t(t_ref))
        lam, U = np.linalg.eigh(np.asarray(H))  # the null directions are the action's symmetries
        Q = jnp.asarray(U[:, np.abs(lam) > 1e-9 * np.max(np.abs(lam))])
        scale = 1.0 + float(jnp.max(jnp.abs(theta_ref)))

        def g(t: float) -> float:
            out = newton_minimiser(theta_ref, self._t(t), self.S4, self.S2, **self.kw)
            cG = float(out["cG"])
            if not float(out["grad_norm"]) < 1e-9 * scale or abs(cG - cG_ref) > abs(cG - cG_other):
                return -1.0
            lam_min = float(_soft_eig(out["theta"], self._t(t), Q, self.S4, self.S2, **self.kw))
            return lam_min if lam_min > 0 else -1.0

        return g
