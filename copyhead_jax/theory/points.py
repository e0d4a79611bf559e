r"""Transition points ``P*`` on the EK potentials (docs/theory.md §5), batched over parameter sets.

* ``P_c1`` (linear pooling onset, 2nd order): ``mu_max^{-1/2}`` of the generalised eigenproblem
  ``(A, B)`` of the Hessian at ``G = 0`` (closed form, MAP), and the numeric root of
  ``lambda_min(hess V(0)) = 0`` (any objective; the only definition for ``post``).
* ``P_cG`` (linear copy crossover): ``argmax_P dpsi/dlog P`` of the global minimiser, with the
  implicit derivative ``dc/dlogP = -H^{-1} d_logP grad V``, k-section on the slope, then the
  root of its derivative (the rule of the Markov path, :func:`.beyond_roots.slope_argmax`);
  ``P_cG_half``: ``psi = 1/2``.
* ``P_aG`` (softmax copy transition, 1st order): the jump of the global minimiser ``beta``,
  located by bisection on ``1[beta_glob > (beta_left + beta_right)/2]`` across the largest jump of
  a log-P scan. It is first order iff two local minima coexist at the jump; otherwise ``P_aG`` is
  ``None`` (no first-order transition at this ``L``). The spinodals bound the coexistence window:
  bisection on ``n_min >= 2``, then Newton on the fold ``V' = V'' = 0`` in ``(beta, log P)``.

Every search is a scan over ``log P`` followed by k-section refinement (each round evaluates
the same number of points inside the current bracket), so one compiled kernel per attention serves
all rounds and a batch of parameter sets (``L`` and ``V`` grids) at once.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice
from ..config import BOTH
from ._common import OBJECTIVES, sigma_G_lin, x64
from .beyond_roots import SLOPE_STEP
from .heads import HeadTheory, LinearTheory, SoftmaxTheory, theory_of
from .minima import copy_fraction
from .params import TheoryParams
from .potentials import lam1_of, lin_V

COARSE = dict(n_keep=3, coarse=True)  # the global minimum only (tested against the fine grids)
N_SCAN_LIN = 81  # psi scan: LIN_SCAN_DECADES above P_c1, 0.1 decade steps
LIN_SCAN_DECADES = 8.0
N_SCAN_SOFT = 141  # beta scan: 7 decades around the ln^2 L estimate, 0.05 decade steps
N_ROUNDS = 5  # k-section refinement rounds after a scan (bracket / ~K^5)


# ---------------------------------------------------------------------------------------------
# Closed forms


def p_c1_closed_form(p: TheoryParams):
    r"""``P*_c1 = mu_max^{-1/2}``, ``mu_max`` the top generalised eigenvalue of ``(A, B)`` (§5)."""
    L, V = p.L, p.V
    lam1 = lam1_of(p)
    gam = sigma_G_lin(p) ** 2
    sigma2, chi = p.sigma2_chi
    kappa = chi * p.sigma_O**2 / (sigma2**2 * V)
    u2, w2 = 1.0 / jnp.sqrt(L), jnp.sqrt(L)  # u = (1, L^-1/2), w = (1, sqrt L)
    ka, kb = kappa * L * lam1, kappa * p.sigma_e**2 * (1.0 - 1.0 / V)
    a11, a12, a22 = ka + kb, ka * u2 + kb * w2, ka * u2**2 + kb * w2**2
    b0, be = 1.0 / (gam * lam1**2), (L - 1.0) / (L * gam * p.sigma_p**4)
    b11, b12, b22 = b0, b0 * u2, b0 * u2**2 + be
    # det(A - mu B) = detB mu^2 - t mu + detA
    detA, detB = a11 * a22 - a12**2, b11 * b22 - b12**2
    t = a11 * b22 + a22 * b11 - 2.0 * a12 * b12
    mu = (t + jnp.sqrt(t**2 - 4.0 * detA * detB)) / (2.0 * detB)
    return mu**-0.5 * conv.noise_factor(L, p.likelihood)


def p_c1_asymptotic(p: TheoryParams):
    r"""Mean-sector estimate ``sigma^2/(sigma_O sigma_G) sqrt(V/(chi L lam1^3))`` (§5)."""
    sigma2, chi = p.sigma2_chi
    Pe = sigma2 / (p.sigma_O * sigma_G_lin(p)) * jnp.sqrt(p.V / (chi * p.L * lam1_of(p) ** 3))
    return Pe * conv.noise_factor(p.L, p.likelihood)


def p_aG_estimate(p: TheoryParams):
    r"""Leading-order ``sigma^2 ln^2 L / (chi sigma_G^2 sigma_p^4 (1 - 1/V))`` (§5)."""
    return SoftmaxTheory.estimate(p)


# ---------------------------------------------------------------------------------------------
# Kernels: t = log P of shape [B, K], parameter records with leaves [B]; one compile per shape
# (and objective, theory class).


def _hess0_min_eig(logP, p, objective):
    def f(c):
        return lin_V(c[0], c[1], jnp.exp(logP), p, objective)

    return jnp.linalg.eigvalsh(jax.hessian(f)(jnp.zeros(2, dtype=logP.dtype)))[0]


def _psi_slope(logP, p, objective):
    """``psi`` of the global minimiser and ``dpsi/dlog P`` by implicit differentiation."""
    x = LinearTheory.minima(jnp.exp(logP), p, objective=objective, **COARSE)[0]
    c = jnp.stack(LinearTheory.span(x[0], p.L))

    def grad_c(c, t):
        return jax.grad(lambda z: lin_V(z[0], z[1], jnp.exp(t), p, objective))(c)

    dc = -jnp.linalg.solve(
        jax.jacobian(grad_c, argnums=0)(c, logP), jax.jacobian(grad_c, argnums=1)(c, logP)
    )
    moved = jnp.sum(c**2) > 0
    c_safe = jnp.where(moved, c, jnp.ones_like(c))
    psi, dpsi = jax.value_and_grad(lambda z: copy_fraction(z[0], z[1], p.L))(c_safe)
    return jnp.where(moved, psi, 0.0), jnp.where(moved, dpsi @ dc, 0.0)


def _glob(logP, p, objective, kind):
    """The global minimiser's copy logit ``beta``, the number of minima, and the coordinates of
    the strongest (largest ``beta``) and the weakest minimum."""
    x, _, valid, n_min = kind.minima(jnp.exp(logP), p, objective=objective, **COARSE)
    beta = kind.named(x, p.L)["beta"]
    strong = jnp.argmax(jnp.where(valid, beta, -jnp.inf))
    weak = jnp.argmin(jnp.where(valid, beta, jnp.inf))
    return {"beta": beta[0], "n_min": n_min, "x_strong": x[strong], "x_weak": x[weak]}


def _fold_newton(x0, t0, p, objective, kind, n=30):
    """Newton on ``(grad V(x; e^t), det hess V(x; e^t)) = 0`` in ``(x, t)``: a fold (spinodal)."""

    def F(z):
        V = lambda x: kind.potential(x, jnp.exp(z[-1]), p, objective)  # noqa: E731
        return jnp.concatenate([jax.grad(V)(z[:-1]), jnp.linalg.det(jax.hessian(V)(z[:-1]))[None]])

    def body(_, z):
        step = jnp.linalg.solve(jax.jacobian(F)(z), F(z))
        return jnp.where(jnp.all(jnp.isfinite(step)), z - step, z)

    z = jax.lax.fori_loop(0, n, body, jnp.concatenate([x0, t0[None]]))
    return z, F(z)


def _batched(fn):
    """``fn(t, p, *static)`` for one point -> jitted over ``t[B, K]`` and parameter records with
    leaves ``[B]`` (``static``: hashable arguments: the objective, a theory class)."""

    @functools.partial(jax.jit, static_argnums=(2,))
    def kernel(t, p, static):
        return jax.vmap(lambda tb, pb: jax.vmap(lambda x: fn(x, pb, *static))(tb))(t, p)

    return kernel


_hess_kernel = _batched(_hess0_min_eig)
_lin_kernel = _batched(_psi_slope)
glob_kernel = _batched(_glob)


@functools.partial(jax.jit, static_argnums=(3, 4))
def _fold_kernel(x0, t0, p, objective, kind):
    return jax.vmap(lambda x, t, q: _fold_newton(x, t, q, objective, kind))(x0, t0, p)


# ---------------------------------------------------------------------------------------------
# Scan + k-section refinement (host loop over a fixed number of rounds; arrays [B, K])


def _grid(lo, hi, K):
    return lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, K)[None, :]


def _take(t, j):
    return t[np.arange(t.shape[0]), j]


def _first_true(run, searches, K, rounds=N_ROUNDS):
    """k-section for the first ``t`` in each ``[lo, hi]`` where ``pred(out)`` turns true.

    ``searches``: ``(lo, hi, pred)`` triples sharing each kernel call ``run(t[B, K])`` (``K``
    split between them); ``pred(hi)`` is assumed true. Returns per search ``(lo, hi, out_lo,
    out_hi)``: the final bracket and the kernel outputs at its ends.
    """
    m = len(searches)
    sizes = [K // m] * (m - 1) + [K - (K // m) * (m - 1)]
    offs = np.cumsum([0, *sizes])
    state = [(lo, hi, None, None) for lo, hi, _ in searches]
    for _ in range(rounds):
        ts = [_grid(lo, hi, n) for (lo, hi, _, _), n in zip(state, sizes)]
        out = run(np.concatenate(ts, axis=1))
        for k, ((_, _, pred), t) in enumerate(zip(searches, ts)):
            sub = {key: v[:, offs[k] : offs[k + 1]] for key, v in out.items()}
            p = np.asarray(pred(sub))
            n = sizes[k]
            j = np.clip(np.where(p.any(axis=1), np.argmax(p, axis=1), n - 1), 1, n - 1)
            state[k] = (
                _take(t, j - 1),
                _take(t, j),
                {key: _take(v, j - 1) for key, v in sub.items()},
                {key: _take(v, j) for key, v in sub.items()},
            )
    return state


def _argmax_by_derivative(lin, t0, K, width=1e-5, rounds=7):
    """The slope's maximum near ``t0`` (a k-section argmax, resolved to ~1e-8 in ``log P`` only:
    values near a maximum differ by its curvature times the squared distance) as the root of
    its derivative, by k-section on the derivative's sign in ``t0 +- width`` (Richardson's
    central differences, as :func:`.beyond_roots.slope_argmax`; ``K // 4`` points a round, 7
    rounds: ``2 width / 19^7`` ~ 2e-14). Where the derivative does not change sign there,
    ``t0`` is kept."""
    h = SLOPE_STEP
    off = np.array([-h, -h / 2, h / 2, h])
    n = K // 4
    lo, hi = t0 - width, t0 + width
    valid = np.ones(t0.shape, bool)
    for r in range(rounds):
        x = _grid(lo, hi, n)
        t = (x[:, :, None] + off).reshape(x.shape[0], -1)
        t = np.pad(t, ((0, 0), (0, K - t.shape[1])), mode="edge")  # the kernel's compiled width
        s = np.asarray(lin(jnp.asarray(t))[1])
        s = s[:, : 4 * n].reshape(-1, n, 4)
        d = (4.0 * (s[..., 2] - s[..., 1]) / h - (s[..., 3] - s[..., 0]) / (2 * h)) / 3.0
        neg = d < 0
        if r == 0:
            valid = ~neg[:, 0] & neg[:, -1]
        j = np.clip(np.argmax(neg, axis=1), 1, n - 1)
        lo, hi = np.where(valid, _take(x, j - 1), lo), np.where(valid, _take(x, j), hi)
    return np.where(valid, 0.5 * (lo + hi), t0)


def linear_points_batch(p: TheoryParams, *, objective: str) -> dict[str, np.ndarray]:
    """Linear ``P*`` for a batch of parameter sets (a record with leaves ``[B]``); NumPy arrays
    ``[B]`` out."""
    cf = np.asarray(p_c1_closed_form(p))
    K = N_SCAN_LIN

    # numeric root of lambda_min(hess V(0)): D only adds curvature, so it lies above cf
    def hess(t):
        return {"eig": np.asarray(_hess_kernel(jnp.asarray(t), p, (objective,)))}

    t_scan = _grid(np.log(cf) - 1.0, np.log(cf) + 30.0, K)
    neg = hess(t_scan)["eig"] < 0
    j = np.clip(np.argmax(neg, axis=1), 1, K - 1)
    [(a, b, _, _)] = _first_true(
        hess, [(_take(t_scan, j - 1), _take(t_scan, j), lambda o: o["eig"] < 0)], K, N_ROUNDS + 1
    )
    num = np.where(~neg[:, 0] & neg[:, -1], np.exp(0.5 * (a + b)), np.nan)
    P_c1 = cf if objective == "map" else num

    lin = lambda t: _lin_kernel(t, p, (objective,))  # noqa: E731
    t0 = np.log(P_c1) + 1e-3
    t_scan = _grid(t0, t0 + LIN_SCAN_DECADES * np.log(10.0), K)
    psi, slope = (np.asarray(a) for a in lin(jnp.asarray(t_scan)))
    slope_scan = slope
    psi_step = np.max(np.abs(np.diff(psi, axis=1)), axis=1)
    step = t_scan[:, 1] - t_scan[:, 0]
    i = np.argmax(slope, axis=1)
    a_lo, a_hi = _take(t_scan, i) - step, _take(t_scan, i) + step  # argmax of the slope
    above = psi >= 0.5
    has_half = above.any(axis=1) & ~above[:, 0]
    j = np.clip(np.argmax(above, axis=1), 1, K - 1)
    h_lo, h_hi = _take(t_scan, j - 1), _take(t_scan, j)  # first psi >= 1/2
    # both searches share each kernel call: half of the K points each
    k1 = K // 2
    for _ in range(N_ROUNDS + 1):
        t = np.concatenate([_grid(a_lo, a_hi, k1), _grid(h_lo, h_hi, K - k1)], axis=1)
        psi, slope = (np.asarray(a) for a in lin(jnp.asarray(t)))
        i = np.argmax(slope[:, :k1], axis=1)
        best_slope = _take(slope, i)
        a_lo, a_hi = _take(t, np.maximum(i - 1, 0)), _take(t, np.minimum(i + 1, k1 - 1))
        up = psi[:, k1:] >= 0.5
        j = np.clip(np.where(up.any(axis=1), np.argmax(up, axis=1), K - k1 - 1), 1, K - k1 - 1)
        h_lo, h_hi = _take(t[:, k1:], j - 1), _take(t[:, k1:], j)
    t_cG = _argmax_by_derivative(lin, 0.5 * (a_lo + a_hi), K)
    half = np.where(has_half, np.exp(0.5 * (h_lo + h_hi)), np.nan)
    # a slope largest at the scan's last point has its maximum beyond the scan: not found
    inside = np.argmax(slope_scan, axis=1) < K - 1
    return {
        "P_c1": P_c1,
        "P_c1_closed_form": cf,
        "P_c1_numeric": num,
        "P_c1_asymptotic": np.asarray(p_c1_asymptotic(p)),
        "P_cG": np.where(inside, np.exp(t_cG), np.nan),
        "P_cG_half": half,
        "psi_slope_max": best_slope,
        "psi_max_step": psi_step,
    }


def first_order_points_batch(
    p: TheoryParams, kind: type[HeadTheory], objective: str = "map", *, spinodals: bool = True
) -> dict[str, np.ndarray]:
    """``P_aG``, first-order flag and spinodals of a two-branch kind for a batch of parameter
    sets (a record with leaves ``[B]``): the jump of the global minimiser's copy logit
    ``beta``; NumPy ``[B]`` out. ``spinodals=False`` skips the spinodals (NaN; their fold
    Newton is most of the cost of tracing the batch) and leaves every other number unchanged."""

    def run(t):
        out = glob_kernel(jnp.asarray(t), p, (objective, kind))
        return {k: np.asarray(v) for k, v in out.items()}

    K = N_SCAN_SOFT
    est = np.asarray(kind.estimate(p))
    t_scan = _grid(np.log(est) - 3.0 * np.log(10.0), np.log(est) + 4.0 * np.log(10.0), K)
    m = run(t_scan)
    beta = m["beta"]
    i = np.argmax(np.diff(beta, axis=1), axis=1)
    mid = 0.5 * (_take(beta, i) + _take(beta, i + 1))
    [(a, b, end_a, end_b)] = _first_true(
        run, [(_take(t_scan, i), _take(t_scan, i + 1), lambda o: o["beta"] > mid[:, None])], K
    )
    first = (end_a["n_min"] >= 2) & (end_b["n_min"] >= 2)
    t_aG = 0.5 * (a + b)
    B = t_aG.shape[0]
    nan = np.full(B, np.nan)
    # the largest step in the scan's first or last interval may be the edge of a larger one
    # beyond it: not found (NaN), never the scan's edge
    inside = (i > 0) & (i < K - 2)
    points = {
        "P_aG": np.where(first & inside, np.exp(t_aG), nan),
        "first_order": first,
        "beta_weak": np.where(first, end_a["beta"], nan),
        "beta_strong": np.where(first, end_b["beta"], nan),
        "P_aG_crossover": np.where(inside, np.exp(t_aG), nan),
        "P_aG_estimate": est,
        "scan_lo": np.exp(t_scan[:, 0]),
        "scan_hi": np.exp(t_scan[:, -1]),
    }
    if not spinodals:
        return {**points, "spinodal_lo": nan, "spinodal_hi": nan}

    # spinodals: nearest scan points outside the window, then k-section on n_min >= 2
    two = m["n_min"] >= 2
    idx = np.arange(K)[None, :]
    lo_i = np.max(np.where(~two & (t_scan < t_aG[:, None]), idx, 0), axis=1)
    hi_i = np.min(np.where(~two & (t_scan > t_aG[:, None]), idx, K - 1), axis=1)
    (_, l_in, _, l_out), (u_in, _, u_out, _) = _first_true(
        run,
        [
            (_take(t_scan, lo_i), t_aG, lambda o: o["n_min"] >= 2),
            (t_aG, _take(t_scan, hi_i), lambda o: o["n_min"] < 2),
        ],
        K,
    )
    # the strong (largest-beta) minimum is born at P_s-, the weak (smallest-beta) dies at P_s+
    z, res = _fold_kernel(
        jnp.asarray(np.concatenate([l_out["x_strong"], u_out["x_weak"]])),
        jnp.asarray(np.concatenate([l_in, u_in])),
        jax.tree.map(lambda x: jnp.concatenate([x, x]), p),
        objective,
        kind,
    )
    z, res = np.asarray(z), np.asarray(res)
    t_in = np.concatenate([l_in, u_in])
    # keep the Newton polish only where it converged next to the k-section result
    ok = np.all(np.abs(res) < 1e-8 * (1.0 + est.max()), axis=1) & (np.abs(z[:, -1] - t_in) < 0.05)
    t_sp = np.where(ok, z[:, -1], t_in)
    # a window that reaches an end of the scan has its spinodal beyond it: not found
    lo_ok, hi_ok = first & ~two[:, 0], first & ~two[:, -1]
    return {
        **points,
        "spinodal_lo": np.where(lo_ok, np.exp(t_sp[:B]), nan),
        "spinodal_hi": np.where(hi_ok, np.exp(t_sp[B:]), nan),
    }


def _num(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def kinds(attention: str) -> list[type[HeadTheory]]:
    """The theory classes of an attention name, or of ``'both'`` (linear and softmax)."""
    return [theory_of(a) for a in (BOTH if attention == "both" else (attention,))]


def _points_of(kind, p, objective, spinodals):
    if kind.two_branches:
        return first_order_points_batch(p, kind, objective, spinodals=spinodals)
    return linear_points_batch(p, objective=objective)


@x64
def points_batch(
    params: list[TheoryParams],
    attention: str = "both",
    objective: str = "map",
    *,
    spinodals: bool = True,
) -> dict[str, np.ndarray]:
    """All ``P*`` for a list of parameter sets, one batch per kernel (NumPy arrays ``[B]``);
    ``spinodals=False``: without the spinodals (:func:`first_order_points_batch`)."""
    ks = kinds(attention)
    check_choice("objective", objective, OBJECTIVES)
    p = TheoryParams.stack(params)
    out: dict[str, np.ndarray] = {}
    for kind in ks:
        out.update(_points_of(kind, p, objective, spinodals))
    return out


#: Peak bytes per (parameter set, log P) point of a kind's scan kernel: XLA's buffer assignment
#: at 2, 4 and 8 parameter sets (L = 8) holds 15.6 kB (linear psi slope), 37.1 kB (softmax
#: global minimiser), 57.2 kB (sigmoid) per point, the same at each size; rounded up by ~20%.
POINT_BYTES = {"linear": 19_000, "softmax": 45_000, "sigmoid": 69_000}


def points_bytes(n_params: int, attention: str = "both") -> int:
    """Peak bytes of :func:`points_batch` over ``n_params`` parameter sets: each kind's scan
    kernel over ``[n_params, K]`` points at once (the kinds run one after the other)."""
    K = {k.name: N_SCAN_SOFT if k.two_branches else N_SCAN_LIN for k in kinds(attention)}
    return max(POINT_BYTES[name] * int(n_params) * n for name, n in K.items())


@x64
def psi_slope(params: TheoryParams, logP, objective: str = "map") -> tuple[np.ndarray, np.ndarray]:
    """``psi`` of the global minimiser and ``dpsi/dlog P`` (implicit derivative) at each of
    ``logP`` (1-d, at most ``N_SCAN_LIN`` values), by the kernel that locates ``P_cG``."""
    t = np.atleast_1d(np.asarray(logP, np.float64))
    if t.ndim != 1 or not 0 < t.size <= N_SCAN_LIN:
        raise ValueError(f"logP must hold 1 to {N_SCAN_LIN} values, got shape {t.shape}")
    grid = np.pad(t[None], ((0, 0), (0, N_SCAN_LIN - t.size)), mode="edge")
    psi, slope = _lin_kernel(jnp.asarray(grid), TheoryParams.stack([params]), (objective,))
    return np.asarray(psi)[0, : t.size], np.asarray(slope)[0, : t.size]


def transition_points(
    params: TheoryParams,
    attention: str = "both",
    objective: str = "map",
    *,
    spinodals: bool = True,
) -> dict[str, Any]:
    r"""Every ``P*`` and the spinodals of docs/theory.md §5 (float64; JSON-ready: ``None`` = none).

    Keys: ``P_c1, P_cG, P_cG_half`` (linear), ``P_aG, spinodals = [P_s-, P_s+]``,
    ``first_order`` (two-branch kinds: softmax, sigmoid), diagnostics (``P_c1_closed_form,
    P_c1_numeric, P_c1_asymptotic, P_aG_estimate, beta_weak, beta_strong``, ...), ``notes`` and
    ``inputs``. ``spinodals=False`` leaves the spinodals out (None), every other number equal.
    """
    b = points_batch([params], attention, objective, spinodals=spinodals)
    out: dict[str, Any] = {
        "inputs": {**params.to_dict(), "attention": attention, "objective": objective},
        "P_c1": None,
        "P_cG": None,
        "P_cG_half": None,
        "P_aG": None,
        "spinodals": None,
        "notes": [],
    }
    for k, v in b.items():
        out[k] = bool(v[0]) if v.dtype == bool else _num(v[0])
    nf = out["not_found"] = []
    for kind in kinds(attention):
        if not kind.two_branches:
            if out["P_cG_half"] is None:
                nf.append("P_cG_half")
                out["notes"].append(
                    "P_cG_half not found: psi never reaches 1/2 in the scan "
                    f"({LIN_SCAN_DECADES:g} decades above P_c1)"
                )
            if out["P_cG"] is None:
                nf.append("P_cG")
                out["notes"].append(
                    "P_cG not found: the psi slope is largest at the scan's end "
                    f"({LIN_SCAN_DECADES:g} decades above P_c1)"
                )
            continue
        where = f"(scan {out['scan_lo']:.4g} to {out['scan_hi']:.4g})"
        if out["P_aG_crossover"] is None:
            nf.extend(["P_aG", "P_aG_crossover"] if out["first_order"] else ["P_aG_crossover"])
            out["notes"].append(
                f"{kind.name}: P_aG not found: the largest beta step is in the "
                f"scan's first or last interval {where}"
            )
        if out["first_order"] and spinodals:
            out["spinodals"] = [out["spinodal_lo"], out["spinodal_hi"]]
            for side, v in zip(("lower", "upper"), out["spinodals"]):
                if v is None:
                    nf.append(f"spinodal_{side}")
                    out["notes"].append(
                        f"{kind.name}: {side} spinodal not found: the "
                        f"coexistence window reaches the scan's end {where}"
                    )
        elif not out["first_order"]:
            out["notes"].append(
                f"no first-order transition at L={params.L}: the coexistence window is empty; "
                "P_aG_crossover is where the global beta crosses its mid-value"
            )
    out.pop("spinodal_lo", None), out.pop("spinodal_hi", None)
    out["n_not_found"] = len(nf)
    return out


__all__ = [
    "first_order_points_batch",
    "kinds",
    "linear_points_batch",
    "p_aG_estimate",
    "p_c1_asymptotic",
    "p_c1_closed_form",
    "points_batch",
    "points_bytes",
    "psi_slope",
    "transition_points",
]
