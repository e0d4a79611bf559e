r"""Route B's early warning (docs/theory.md §13.9): the posterior variance of an order parameter
in the basin a transition leaves, at the two ends of the window ``[0.5 P*, 0.9 P*]``.

Softmax: $\mathrm{Var}(a_G)=g^\top H^{-1}g$ at the pooling basin's minimum of $\mathcal F_q$
(:func:`.profile.basin_variance`), the basin followed in $P$ from the pooling start. Linear: the
covariance of the mean attention's coordinates $(c_1,c_G)$ on span$\{B_1,B_2\}$ under $q$ at the
global minimum of the linear $\mathcal F_q$ (:func:`.linear.projection_law`, mapped through the
basis Gram's inverse as ``conventions.project`` does). The growth ratio
$\mathrm{Var}(0.9P^*)/\mathrm{Var}(0.5P^*)$ is what a measured growth is compared with; the
criterion that says whether growth is a warning is :mod:`copyhead_jax.compare.warning`'s.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..params import TheoryParams
from .linear import free_energy_linear, minimise_linear, projection_law
from .profile import basin_variance
from .solve import DEFAULT_SETTINGS, VariationalSettings, make_draws, minimise, starts

#: the window, as fractions of P* (the same as ``compare.warning.WINDOW``; theory/ sits below
#: compare/, which checks that both agree)
WINDOW = (0.5, 0.9)
#: a linear minimum counts as found where the free energy's largest gradient entry is below
#: this times (1 + |F|): L-BFGS-B's flat minima stop at ~1e-8 relative (F ~ 10^3 nats at P ~ 80)
GRAD_REL = 1e-7


def softmax_variances(
    params: TheoryParams, P_values, settings: VariationalSettings = DEFAULT_SETTINGS
) -> list[dict[str, Any]]:
    """``Var(a_G)`` in the pooling basin at each ``P`` (increasing), the basin followed from the
    pooling start; a point whose minimum is not a converged minimum with a positive-definite
    Hessian has ``var_aG = None``."""
    draws = make_draws(params, settings)
    cv = settings.control_variate
    x, out = starts(params.L)[0], []
    for P in sorted(float(p) for p in P_values):
        m = minimise(x, P, params, draws, cv=cv)
        v = basin_variance(m["x"], P, params, draws, settings)
        good = m["ok"] and v["min_eig"] > 0 and math.isfinite(v["var_aG"])
        out.append(
            {
                "P": P,
                "aG": m["aG"],
                "var_aG": v["var_aG"] if good else None,
                "min_eig": v["min_eig"],
                "ok": bool(good),
            }
        )
        x = m["x"]
    return out


def linear_variances(params: TheoryParams, P_values) -> list[dict[str, Any]]:
    """``Var(c1)``, ``Var(cG)`` of the mean attention under route B's ``q`` at the lowest of the
    linear free energy's minima from four starts (as :func:`.linear.linear_curve`) at each P;
    ``ok``: L-BFGS-B converged, or stopped where the gradient's largest entry is below
    ``GRAD_REL (1 + |F|)`` (its line search gives up at ``ftol = 1e-14`` on a flat minimum)."""
    g = 1.0 / math.sqrt(params.L)
    inv = np.linalg.inv(np.array([[1.0, g], [g, 1.0]]))
    cands = [np.r_[a, b, np.zeros(8)] for a in (0.0, 2.0) for b in (0.0, 2.0)]
    out = []
    for P in sorted(float(p) for p in P_values):
        x, F, ok = min((minimise_linear(z, P, params) for z in cands), key=lambda t: t[1])
        with jax.enable_x64(True):
            xj = jnp.asarray(x)
            grad = np.asarray(jax.grad(free_energy_linear)(xj, jnp.float64(P), params))
            _, cov_y = projection_law(xj, params)
        ok = ok or bool(np.max(np.abs(grad)) < GRAD_REL * (1.0 + abs(F)))
        cov = inv @ np.asarray(cov_y, float) @ inv
        out.append(
            {
                "P": P,
                "c1": float(x[0]),
                "cG": float(x[1]),
                "var_c1": float(cov[0, 0]),
                "var_cG": float(cov[1, 1]),
                "ok": bool(ok),
            }
        )
    return out


def predicted_growth(
    params: TheoryParams,
    attention_kind,
    P_star: float,
    order: str,
    *,
    window=WINDOW,
    settings: VariationalSettings = DEFAULT_SETTINGS,
) -> dict[str, Any]:
    """Route B's growth ratio of ``Var(order)`` over ``[window[0] P*, window[1] P*]``.

    ``attention_kind``: a theory class (``theory.heads``); two-branch kinds take ``order`` =
    ``'aG'`` (the pooling basin), one-branch kinds ``'c1'`` or ``'cG'``. ``growth`` is None
    where either end has no converged basin."""
    lo, hi = (f * float(P_star) for f in window)
    if attention_kind.two_branches:
        if order != "aG":
            raise ValueError(f"order must be 'aG' for {attention_kind.name}, got {order!r}")
        rows = softmax_variances(params, (lo, hi), settings)
        var = [r["var_aG"] for r in rows]
    else:
        if order not in ("c1", "cG"):
            raise ValueError(f"order must be 'c1' or 'cG' for {attention_kind.name}, got {order!r}")
        rows = linear_variances(params, (lo, hi))
        var = [r[f"var_{order}"] if r["ok"] else None for r in rows]
    growth = var[1] / var[0] if None not in var and var[0] > 0 else None
    return {
        "P_star": float(P_star),
        "window": list(window),
        "P": [lo, hi],
        "order": order,
        "var": var,
        "growth": growth,
        "route": "B",
        "rows": rows,
    }


__all__ = ["WINDOW", "linear_variances", "predicted_growth", "softmax_variances"]
