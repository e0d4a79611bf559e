r"""The law of the Bayesian transition in $L$ and $V$ (docs/theory.md §13.10).

:func:`scaling_table` runs route B (:func:`.solve.transition`, two Monte-Carlo replicas) and
the EK MAP / posterior points on a grid of $(L,V)$; :func:`fit_law_table` fits
$\log P^*=\log C+k_L\log L+k_V\log V$ jointly (least squares, Student-t intervals whose
residual variance contains the replicas' Monte-Carlo spread), power laws along each axis, and the
paper's laws with one free constant (``theory.scaling.fit_law``: $R^2$ of $\log P^*$). Under the
per-position likelihood every EK $P^*$ of softmax is exactly $L$ times the per-sequence one
(docs/theory.md §2b), so the paper-preset law is the plain one times $L$.
"""

from __future__ import annotations

import math
import time

import numpy as np

from copyhead_jax.theory.params import TheoryParams
from copyhead_jax.theory.scaling import PAPER_LAWS, fit_law, fit_power_law, t_quantile

from .solve import DEFAULT_ROWS, VariationalSettings, ek_points, point, transition


def scaling_table(
    base: TheoryParams, Ls, Vs, *, n_rows: int = DEFAULT_ROWS, replicas: int = 2, on_row=None
) -> list[dict]:
    """Route B's $P^*_{a_G}$ (each replica) and the EK points on every ``(L, V)`` of ``base``;
    ``on_row(k, n, row, seconds)`` after each of the ``n`` configurations (its wall seconds:
    what a caller's estimate of the rest is measured on)."""
    rows = []
    grid = [(int(L), int(V)) for V in Vs for L in Ls]
    for k, (L, V) in enumerate(grid):
        t0 = time.perf_counter()
        p = base.replace(L=L, V=V)
        ek = ek_points(p)
        runs = [
            transition(p, VariationalSettings(n_rows=n_rows, seed=s), ek=ek)
            for s in range(replicas)
        ]
        rows.append(
            {
                "L": L,
                "V": V,
                "P_bayes": [point(r) for r in runs],
                "first_order": [r["first_order"] for r in runs],
                "ek_map": ek["map"],
                "ek_post": ek["post"],
            }
        )
        if on_row is not None:
            on_row(k, len(grid), rows[-1], time.perf_counter() - t0)
    return rows


def joint_fit(L, V, y, *, level: float = 0.95) -> dict:
    r"""$\log y=a+k_L\log L+k_V\log V$ by least squares; Student-t intervals ($n-3$ d.o.f.)."""
    L, V, y = (np.asarray(v, float) for v in (L, V, y))
    ok = np.isfinite(y) & (y > 0)
    X = np.stack([np.ones(ok.sum()), np.log(L[ok]), np.log(V[ok])], axis=1)
    ly = np.log(y[ok])
    coef, *_ = np.linalg.lstsq(X, ly, rcond=None)
    res = ly - X @ coef
    n, k = X.shape
    out = {
        "n": int(n),
        "k_L": float(coef[1]),
        "k_V": float(coef[2]),
        "C": float(math.exp(coef[0])),
        "r2": float(1.0 - res @ res / np.sum((ly - ly.mean()) ** 2)),
    }
    if n > k:
        s2 = res @ res / (n - k)
        se = np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))
        t = t_quantile(0.5 + level / 2.0, n - k)
        out["k_L_ci"] = [float(coef[1] - t * se[1]), float(coef[1] + t * se[1])]
        out["k_V_ci"] = [float(coef[2] - t * se[2]), float(coef[2] + t * se[2])]
        out["max_ratio_error"] = float(math.exp(np.abs(res).max()) - 1.0)
    return out


def fit_law_table(rows: list[dict], likelihood: str = "per_sequence") -> dict:
    """Fits of every column (route B, EK MAP, EK post) of a :func:`scaling_table`: joint, per
    axis, and the paper's $P^*_{a_G}$ law: $L\\ln^2L$ under the per-position likelihood (the
    paper's reading), $\\ln^2L$ per sequence (the same law with $P$ counted in sequences)."""
    per_position = likelihood == "per_position"
    L = np.array([r["L"] for r in rows], float)
    V = np.array([r["V"] for r in rows], float)
    cols = {
        "bayes_B": np.array(
            [
                np.exp(np.mean(np.log([v for v in r["P_bayes"] if v])))
                if any(r["P_bayes"])
                else np.nan
                for r in rows
            ]
        ),
        "ek_map": np.array([r["ek_map"] or np.nan for r in rows], float),
        "ek_post": np.array([r["ek_post"] or np.nan for r in rows], float),
    }
    out = {}
    for name, y in cols.items():
        f = {"joint": joint_fit(L, V, y)}
        f["per_V"] = {int(v): fit_power_law(L[V == v], y[V == v]) for v in np.unique(V)}
        f["per_L"] = {int(l): fit_power_law(V[L == l], y[L == l]) for l in np.unique(L)}
        lname, law = PAPER_LAWS["P_aG"]
        f["paper_law"] = {
            "law": lname if per_position else "ln^2 L (L ln^2 L per position)",
            **fit_law(y, law(L, V) if per_position else np.log(L) ** 2),
        }
        f["ln2L_plus_V"] = _two_term(L, V, y / L if per_position else y)
        out[name] = f
    return out


def _two_term(L, V, y) -> dict:
    r"""$y=a\ln^2L+bV$ by least squares (the heuristic of §13.10): ``a``, ``b``, largest ratio
    error."""
    ok = np.isfinite(y)
    X = np.stack([np.log(L[ok]) ** 2, V[ok]], axis=1)
    coef, *_ = np.linalg.lstsq(X, y[ok], rcond=None)
    pred = X @ coef
    return {
        "a": float(coef[0]),
        "b": float(coef[1]),
        "max_ratio_error": float(np.max(np.abs(pred / y[ok] - 1.0))),
    }
