r"""Route B: the variational free energy's basins, profile and the Bayesian $P^*_{a_G}$.

docs/theory.md §13.4-13.6. For each $P$ the local minima of $\mathcal F_q(\beta,\rho;P)$
(:func:`.variational.free_energy`) are found by saddle-free Newton from a pooling start
($\beta=0$, prior spread) and a copy start ($\beta=\log(L-1)+2$, half the prior spread). Each
minimum is a posterior basin; its $\mathcal F_q$ estimates $-\log$ of the basin's posterior
mass up to a constant common to both at that $P$. Hence

* the **Bayesian** $P^*_{a_G}$: where the two basins' $\mathcal F_q$ are equal (first order; equal
  weights), located by a scan in $\log P$ and secant refinement;
* the **spinodals**: the range of $P$ where both basins exist;
* the **profile** $F(a;P)=\min\{\mathcal F_q:\ a_G(q)=a\}$, $a_G(q)=\sqrt L(L\bar p-1)/(L-1)$ of
  the noise-averaged mean attention, in the units of $-\log p(a_G=a\mid\text{data})$ up to a
  $P$-dependent constant (:func:`profile`);
* a **crossover** when only one basin exists at every $P$: $P^*$ is then where the basin's $a_G$
  passes the midpoint of its range.

All of it runs in float64 (``jax.enable_x64``), with one set of common random numbers per call
(:func:`~.rows.row_draws`), so every number is deterministic given ``seed``; the
Monte-Carlo error is measured by independent ``seed`` replicas (:func:`transition_replicas`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as so

from copyhead_jax.theory.params import TheoryParams
from copyhead_jax.theory.points import transition_points

from .rows import N_ROWS, RowDraws, p_of_aG, row_draws
from .variational import free_energy, free_energy_terms

#: Starting points: pooling (beta = 0, prior spread) and copying (beta = log(L-1) + 2, rho = 1/2).
COPY_START_OFFSET = 2.0
N_NEWTON = 40


@dataclasses.dataclass(frozen=True)
class VariationalSettings:
    """Monte-Carlo and solver settings of route B (``n_rows`` rows of common random numbers)."""

    n_rows: int = N_ROWS
    seed: int = 0
    control_variate: bool = True
    n_newton: int = N_NEWTON


def make_draws(params: TheoryParams, settings: VariationalSettings) -> RowDraws:
    """The common random numbers of one replica (float64)."""
    with jax.enable_x64(True):
        return row_draws(jax.random.PRNGKey(settings.seed), L=params.L, V=params.V,
                         n=settings.n_rows)  # fmt: skip


def _starts(L: int) -> np.ndarray:
    b_copy = math.log(L - 1.0) + COPY_START_OFFSET
    return np.array([[0.0] + [0.0] * 5, [b_copy] + [math.log(0.5)] * 5])


#: Box of the L-BFGS-B search: beta, then the log variance ratios.
BOUNDS = [(-3.0, 20.0)] + [(-12.0, 3.0)] * 5


@functools.lru_cache(maxsize=8)
def _compiled(params: TheoryParams, cv: bool):
    """``value_and_grad`` and the terms of F_q, jitted once per (params, cv); P and the draws
    are arguments."""

    def f(x, P, draws):
        return free_energy(x, P, params, draws, cv)

    def terms(x, P, draws):
        return free_energy_terms(x[0], x[1:], P, params, draws, cv)

    return jax.jit(jax.value_and_grad(f)), jax.jit(terms), jax.jit(jax.hessian(f))


def minimise(x0, P: float, params: TheoryParams, draws: RowDraws,
             settings: VariationalSettings = VariationalSettings()) -> tuple[np.ndarray, bool]:  # fmt: skip
    r"""A local minimum of $\mathcal F_q$ from ``x0`` (L-BFGS-B, float64): ``(x, converged)``;
    a minimum on the box's boundary counts as not converged."""
    vg, _, _ = _compiled(params, settings.control_variate)
    with jax.enable_x64(True):
        Pj = jnp.asarray(P, jnp.float64)

        def fun(x):
            v, g = vg(jnp.asarray(x), Pj, draws)
            return float(v), np.asarray(g, dtype=np.float64)

        r = so.minimize(
            fun,
            np.asarray(x0, float),
            jac=True,
            method="L-BFGS-B",
            bounds=BOUNDS,
            options=dict(maxiter=settings.n_newton * 10, ftol=1e-13, gtol=1e-7),
        )
    lo, hi = np.array(BOUNDS).T
    inside = np.all((r.x > lo + 1e-6) & (r.x < hi - 1e-6))
    return r.x, bool(r.success and inside)


def basins(P: float, params: TheoryParams, draws: RowDraws,
           settings: VariationalSettings = VariationalSettings(), x0=None) -> dict:  # fmt: skip
    r"""Both basins of $\mathcal F_q$ at ``P`` from the pooling and copy starts (or ``x0[2, 6]``,
    e.g. the neighbouring P's minima): ``x[2, 6]``, ``F``, ``aG``, ``ok``, the terms; ``distinct``:
    the two ended in different minima (|Delta aG| > 0.05 sqrt L)."""
    x0 = _starts(params.L) if x0 is None else np.asarray(x0)
    res = [minimise(z, P, params, draws, settings) for z in x0]
    x = np.stack([r[0] for r in res])
    _, terms, _ = _compiled(params, settings.control_variate)
    with jax.enable_x64(True):
        t = [terms(jnp.asarray(z), jnp.asarray(P, jnp.float64), draws) for z in x]
    aG = np.array([float(u.aG) for u in t])
    out = {"P": float(P), "x": x, "ok": np.array([r[1] for r in res]),
           "F": np.array([float(u.F) for u in t]), "aG": aG,
           **{k: np.array([float(getattr(u, k)) for u in t]) for k in ("Q", "D", "R", "KL")}}  # fmt: skip
    out["distinct"] = bool(abs(aG[1] - aG[0]) > 0.05 * math.sqrt(params.L))
    return out


def _ek_points(params: TheoryParams) -> dict:
    m = transition_points(params, "softmax", "map")
    p = transition_points(params, "softmax", "post")
    return {"map": m["P_aG"] or m["P_aG_crossover"], "post": p["P_aG"] or p["P_aG_crossover"],
            "map_first_order": m["first_order"], "post_first_order": p["first_order"]}  # fmt: skip


def _global(s: dict) -> tuple[float, float]:
    """(F, aG) of the lower basin of one :func:`basins` result."""
    j = int(np.argmin(s["F"]))
    return float(s["F"][j]), float(s["aG"][j])


def _dF(s: dict) -> float | None:
    """F_copy - F_pool where both basins exist (copy = the larger aG), else None."""
    if not (s["distinct"] and s["ok"].all()):
        return None
    j = int(np.argmax(s["aG"]))
    return float(s["F"][j] - s["F"][1 - j])


#: A jump of the global basin's aG larger than this fraction of sqrt(L) is a first-order jump.
JUMP_FRACTION = 0.25


def transition(params: TheoryParams, settings: VariationalSettings = VariationalSettings(), *,
               P_range: tuple[float, float] | None = None, n_scan: int = 11,
               n_bisect: int = 6, n_refine: int = 3) -> dict:  # fmt: skip
    r"""Route B's Bayesian $P^*_{a_G}$ of one configuration (module docstring).

    Scans $\log P$ over ``P_range`` (default: the EK posterior point times [0.8, 4]); where the
    lower basin's $a_G$ jumps, bisects the jump (``n_bisect`` rounds on "the copy basin is the
    lower"), then, where both basins exist at the bracket's ends, refines the root of
    $\Delta F=F_{\rm copy}-F_{\rm pool}$ by ``n_refine`` secant steps: first order. Without a jump
    the lower basin's $a_G$ rises smoothly: a crossover, placed at its steepest point in $\log P$.
    Returns the point, the verdict, the scanned and probed basins and the spinodals seen.
    """
    draws = make_draws(params, settings)
    ek = _ek_points(params)
    if P_range is None:
        P_range = (0.8 * ek["post"], 4.0 * ek["post"])
    grid = np.exp(np.linspace(math.log(P_range[0]), math.log(P_range[1]), n_scan))
    scan = [basins(P, params, draws, settings) for P in grid]
    probes = list(scan)
    aG = np.array([_global(s)[1] for s in scan])
    out = {"inputs": {**params.to_dict(), **dataclasses.asdict(settings)}, "ek": ek,
           "scan": scan, "probes": probes, "P_star": None, "first_order": None,
           "P_star_crossover": None}  # fmt: skip
    jump = np.diff(aG)
    k = int(np.argmax(jump))
    if jump[k] > JUMP_FRACTION * math.sqrt(params.L):
        lo, hi, s_lo, s_hi = math.log(grid[k]), math.log(grid[k + 1]), scan[k], scan[k + 1]
        a_mid = 0.5 * (aG[k] + aG[k + 1])
        for _ in range(n_bisect):
            t = 0.5 * (lo + hi)
            s_t = basins(math.exp(t), params, draws, settings)
            probes.append(s_t)
            if _global(s_t)[1] > a_mid:
                hi, s_hi = t, s_t
            else:
                lo, s_lo = t, s_t
        d_lo, d_hi = _dF(s_lo), _dF(s_hi)
        out["first_order"] = d_lo is not None and d_hi is not None
        if out["first_order"]:
            for _ in range(n_refine):
                t = lo + (hi - lo) * d_lo / (d_lo - d_hi)
                s_t = basins(math.exp(t), params, draws, settings)
                probes.append(s_t)
                d = _dF(s_t)
                if d is None:
                    break
                if d > 0:
                    lo, d_lo = t, d
                else:
                    hi, d_hi = t, d
            out["P_star"] = math.exp(lo + (hi - lo) * d_lo / (d_lo - d_hi))
            out["slope_dF_dlogP"] = (d_hi - d_lo) / (hi - lo)
        else:
            out["P_star"] = math.exp(0.5 * (lo + hi))
        out["bracket"] = [math.exp(lo), math.exp(hi)]
    else:  # one basin at every P: a crossover, P* at the steepest rise of its aG in log P
        t = np.log(grid)
        slope = np.diff(aG) / np.diff(t)
        j = int(np.argmax(slope))
        out["P_star_crossover"] = float(np.exp(0.5 * (t[j] + t[j + 1])))
        out["first_order"] = False
        out["crossover_slope"] = float(slope[j])
    both = sorted(s["P"] for s in probes if _dF(s) is not None)
    out["coexistence_seen"] = [both[0], both[-1]] if both else None
    return out


@functools.lru_cache(maxsize=8)
def _aG_grad(params: TheoryParams, cv: bool):
    def aG(x, P, draws):
        return free_energy_terms(x[0], x[1:], P, params, draws, cv).aG

    return jax.jit(jax.grad(aG))


def basin_variance(x, P: float, params: TheoryParams, draws: RowDraws,
                   settings: VariationalSettings = VariationalSettings()) -> dict:  # fmt: skip
    r"""Posterior variance of $a_G$ in a basin from the curvature of its profile (§13.9).

    Near the basin's minimum $x^*$, $\mathcal F_q\approx\mathcal F^*+\tfrac12\delta x^\top H\delta x$
    and $a_G\approx a^*+g^\top\delta x$; the profile $F(a)=\min\{\mathcal F_q: a_G=a\}$ is then
    $F^*+(a-a^*)^2/(2g^\top H^{-1}g)$, the free energy of a Gaussian law of $a_G$ with variance
    $\mathrm{Var}(a_G)=g^\top H^{-1}g$, and the susceptibility (docs/theory.md §9.7) is
    $\chi=P\,\mathrm{Var}(a_G)$. Returns both and the smallest Hessian eigenvalue."""
    _, _, hess = _compiled(params, settings.control_variate)
    with jax.enable_x64(True):
        xj, Pj = jnp.asarray(x, jnp.float64), jnp.asarray(P, jnp.float64)
        H = np.asarray(hess(xj, Pj, draws))
        g = np.asarray(_aG_grad(params, settings.control_variate)(xj, Pj, draws))
    H = 0.5 * (H + H.T)
    var = float(g @ np.linalg.solve(H, g))
    return {"var_aG": var, "chi_aG": P * var, "min_eig": float(np.linalg.eigvalsh(H)[0])}


@functools.lru_cache(maxsize=8)
def _profile_compiled(params: TheoryParams, cv: bool, n_inner: int = 10):
    """Value and gradient in ``y = log rho`` of $F(\\beta^*(y),y)$ with $\\beta^*$ solving
    $\\bar p(\\beta,y)=p_t$ (Newton on the log-odds, warm start ``b0``); the gradient by the
    implicit function theorem, $\\nabla_yF-\\partial_\\beta F\\,\\nabla_y\\bar p/\\partial_\\beta\\bar p$."""
    from .rows import row_attention
    from .variational import row_noise, spread_of

    def pbar(b, y, draws):
        return jnp.mean(row_attention(b, row_noise(spread_of(y), params), draws)[:, 0])

    def F(b, y, P, draws):
        return free_energy_terms(b, y, P, params, draws, cv).F

    def fun(y, b0, p_t, P, draws):
        lt = jnp.log(p_t) - jnp.log1p(-p_t)

        def body(_, b):
            pb, dpb = jax.jvp(lambda bb: pbar(bb, y, draws), (b,), (jnp.ones_like(b),))
            g = jnp.log(pb) - jnp.log1p(-pb) - lt
            return b - jnp.clip(g * pb * (1.0 - pb) / dpb, -2.0, 2.0)

        b = jax.lax.stop_gradient(jax.lax.fori_loop(0, n_inner, body, b0))
        Fv, (Fb, Fy) = jax.value_and_grad(F, argnums=(0, 1))(b, y, P, draws)
        pb_b, pb_y = jax.grad(pbar, argnums=(0, 1))(b, y, draws)
        return Fv, Fy - Fb * pb_y / pb_b, b, pbar(b, y, draws)

    return jax.jit(fun)


def profile(P: float, a_values, params: TheoryParams, draws: RowDraws,
            settings: VariationalSettings = VariationalSettings(), y0=None) -> dict:  # fmt: skip
    r"""$F(a;P)=\min\{\mathcal F_q(\beta,\rho): a_G(\beta,\rho)=a\}$ on ``a_values`` (increasing),
    continued from the first value (``y0``: its start in log rho, default the prior's): the
    Landau free energy of route B in the units of $-\log p(a_G=a\mid\text{data})$ up to a
    constant (§13.5). Returns ``F``, ``beta``, ``log_rho`` per point and the attained ``aG``."""

    fun = _profile_compiled(params, settings.control_variate)
    L = params.L
    y = np.zeros(5) if y0 is None else np.asarray(y0, float)
    b = 0.0
    out = {"a": [], "F": [], "beta": [], "log_rho": [], "aG": []}
    with jax.enable_x64(True):
        Pj = jnp.asarray(P, jnp.float64)
        for a in a_values:
            p_t = jnp.asarray(float(p_of_aG(a, L)), jnp.float64)
            state = {"b": b}

            def f(yy):
                v, g, bb, _ = fun(jnp.asarray(yy), jnp.asarray(state["b"], jnp.float64), p_t, Pj,
                                  draws)  # fmt: skip
                state["b"] = float(bb)
                return float(v), np.asarray(g, np.float64)

            r = so.minimize(f, y, jac=True, method="L-BFGS-B", bounds=BOUNDS[1:],
                            options=dict(maxiter=500, ftol=1e-13, gtol=1e-7))  # fmt: skip
            y, b = r.x, state["b"]
            _, _, _, pb = fun(jnp.asarray(y), jnp.asarray(b, jnp.float64), p_t, Pj, draws)
            out["a"].append(float(a))
            out["F"].append(float(r.fun))
            out["beta"].append(b)
            out["log_rho"].append(y.tolist())
            out["aG"].append(float(math.sqrt(L) * (L * float(pb) - 1.0) / (L - 1.0)))
    return {k: np.asarray(v) for k, v in out.items()}
