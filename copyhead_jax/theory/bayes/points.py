r"""The Bayesian transition points of the theory (docs/theory.md §13): one call per configuration.

* softmax: route B's $P^*_{a_G}$ on ``replicas`` independent sets of common random numbers
  (their spread is the Monte-Carlo error: a Student-t interval over the replicas), first order
  or crossover, the coexistence window seen, beside the EK MAP and EK posterior points (§5);
* linear: the $P$ where route B's posterior mean of the copy fraction $\psi$ passes 1/2 (and
  where $\psi$ of the posterior-mean attention does), beside the EK points.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..heads import LinearTheory, SoftmaxTheory
from ..params import TheoryParams
from ..points import kinds, transition_points
from ..scaling import t_quantile
from .linear import linear_curve, linear_half_point
from .solve import DEFAULT_ROWS, VariationalSettings, ek_points, point, transition

#: The kinds whose Bayesian transition §13 derives (route B's row moments are softmax's).
BAYES_KINDS = (LinearTheory, SoftmaxTheory)

#: Linear head: the scan of P spans the EK posterior crossover times [1/2, 60].
LINEAR_SPAN = (0.5, 60.0)


def replica_interval(values, level: float = 0.95) -> list[float] | None:
    """Student-t interval of the geometric mean of independent replicas (``None`` below 2)."""
    v = np.log(np.asarray([x for x in values if x], float))
    if v.size < 2:
        return None
    h = t_quantile(0.5 + level / 2.0, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return [float(math.exp(v.mean() - h)), float(math.exp(v.mean() + h))]


def softmax_points(
    params: TheoryParams, *, replicas: int = 2, n_rows: int = DEFAULT_ROWS, seed: int = 0
) -> dict[str, Any]:
    """Route B's Bayesian $P^*_{a_G}$ over ``replicas`` seeds (``seed``, ``seed + 1``, ...)."""
    t0 = time.perf_counter()
    ek = ek_points(params)
    runs = [
        transition(params, VariationalSettings(n_rows=n_rows, seed=seed + r), ek=ek)
        for r in range(replicas)
    ]
    vals = [point(r) for r in runs]
    good = [v for v in vals if v]
    return {
        "inputs": {
            **params.to_dict(),
            "attention": "softmax",
            "objective": "bayes",
            "n_rows": n_rows,
            "replicas": replicas,
            "seed": seed,
        },
        "route": "B (variational Gaussian)",
        "P_aG_bayes": float(math.exp(np.mean(np.log(good)))) if good else None,
        "replicas": vals,
        "replica_interval": replica_interval(vals),
        "first_order": all(r["first_order"] for r in runs),
        "converged": all(bool(r["converged"]) for r in runs if r["first_order"]),
        "coexistence_seen": runs[0]["coexistence_seen"],
        "ek_map": ek["map"],
        "ek_post": ek["post"],
        "n_eval": int(sum(r["n_eval"] for r in runs)),
        "seconds": time.perf_counter() - t0,
        "runs": runs,
    }


def linear_points(params: TheoryParams, *, n_scan: int = 19, seed: int = 0) -> dict[str, Any]:
    r"""Linear head: where route B's $E_q[\psi]$ passes 1/2 on ``n_scan`` log-spaced $P$ around
    the EK posterior crossover (linear interpolation in $\log P$ between grid points)."""
    from .linear import LinearSettings

    t0 = time.perf_counter()
    post = transition_points(params, "linear", "post")
    mp = transition_points(params, "linear", "map")
    ref = post["P_cG_half"] or post["P_c1"]
    P = np.geomspace(LINEAR_SPAN[0] * ref, LINEAR_SPAN[1] * ref, n_scan)
    rows = linear_curve(params, P, LinearSettings(seed=seed))
    return {
        "inputs": {
            **params.to_dict(),
            "attention": "linear",
            "objective": "bayes",
            "n_scan": n_scan,
            "seed": seed,
        },
        "route": "B (variational Gaussian, closed-form moments)",
        "P_cG_half_bayes": linear_half_point(rows),
        "P_cG_half_of_mean": linear_half_point(rows, "psi_of_mean"),
        "ek_map": {"P_c1": mp["P_c1"], "P_cG_half": mp["P_cG_half"]},
        "ek_post": {"P_c1": post["P_c1"], "P_cG_half": post["P_cG_half"]},
        "seconds": time.perf_counter() - t0,
        "curve": rows,
    }


def bayes_points(params: TheoryParams, attention: str = "softmax", **kw) -> dict[str, Any]:
    """The theory's Bayesian transition of one configuration (module docstring); ``attention``
    ``'softmax'``, ``'linear'`` or ``'both'`` (then ``{'softmax': ..., 'linear': ...}``)."""
    ks = kinds(attention)  # validates the name ('both': every kind)
    for k in ks:
        if k not in BAYES_KINDS:
            raise ValueError(
                f"the Bayesian theory (docs/theory.md §13) is derived for linear "
                f"and softmax attention, not {k.name!r}"
            )
    lin_kw = {k: v for k, v in kw.items() if k == "seed"}

    def one(kind):  # two branches: the first-order point; one: the posterior crossover
        return (
            softmax_points(params, **kw) if kind.two_branches else linear_points(params, **lin_kw)
        )

    return {k.name: one(k) for k in ks} if attention == "both" else one(ks[0])
