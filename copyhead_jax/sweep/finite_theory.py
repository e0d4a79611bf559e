"""The finite-width, finite-P theory (docs/theory.md §2b) of measured runs: each seed's own
training set and embedding Gram (as :func:`copyhead_jax.run_sweep` draws them), every local
minimum batched over ``P``, and its transition points located like the measured ones.

A *runs* argument is a :class:`copyhead_jax.sweep.refine.Runs` (``cfg``, ``P``, ``row``)."""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from ..compare import locate as loc
from ..compare.branches import quiet_nan
from ..config import Config
from ..models import embedding_root, init_head
from ..sources import task_data
from ..theory import TheoryParams, finite_minima, theory_of

FINITE_DENSE = 16  # log-spaced P across the theory range (plus the measured P)
FINITE_REFINE = 6  # and this many integers inside each bracket of its own P*, per seed


def seed_tokens(cfg: Config, seed_index: int, P: int) -> np.ndarray:
    """The first ``P`` training sequences of seed ``seed_index`` of a sweep of ``cfg``
    (``run_sweep`` draws seed ``s`` from ``key(sweep.seed + s)``, data from its first half)."""
    k = jax.random.split(jax.random.key(cfg.sweep.seed + seed_index))
    return np.asarray(task_data(k[0], cfg.task, P_max=int(P), n_test=1).train)


def seed_gram(cfg: Config, seed_index: int) -> np.ndarray:
    """The embedding Gram ``U U^T / N`` of seed ``seed_index``'s initial (quenched) embeddings
    (reduced engine: ``T T^T`` of the run's Gram root, the prior's ``Sigma`` at width inf)."""
    k = jax.random.split(jax.random.key(cfg.sweep.seed + seed_index))
    if cfg.model.engine == "reduced":
        with jax.enable_x64(True):
            T = np.asarray(embedding_root(k[1], cfg), dtype=np.float64)
        return T @ T.T
    head = init_head(k[1], cfg.model, L=cfg.task.L, V=cfg.task.V, chi=cfg.posterior.chi)
    U = np.asarray(head.embeddings(), dtype=np.float64)
    return U @ U.T / cfg.model.width


def run_gram(runs, P: int, seed_index: int) -> np.ndarray:
    """The embedding Gram of a fitted run (differs from :func:`seed_gram` if embeddings train)."""
    row = runs.row(P)
    W_E = np.asarray(row["params/W_E"][seed_index], np.float64)
    b = np.asarray(row["params/b"][seed_index], np.float64)
    U = np.concatenate([W_E.T, b.T], axis=0)
    return U @ U.T / W_E.shape[0]


def finite_theory(
    params: TheoryParams, attention: str, tokens: list, grams: list, P_values
) -> dict[str, np.ndarray]:
    """Every local minimum of the exact finite-P action at finite width (MAP) on the ansatz, per
    seed (its ``tokens`` and embedding ``gram``) and ``P`` (nested prefixes): arrays
    ``[nP, n_seeds]`` of the global minimiser (its kind's ``fields``: linear ``c1, cG, r, psi``;
    softmax ``beta, aG, a1, p``), ``n_min`` and ``minima_*[nP, n_seeds, k]`` (slot 0 the global
    one)."""
    P = np.asarray(sorted(int(p) for p in P_values))
    per_seed = [
        finite_minima(t[: P[-1]], P, gram=g, params=params, attention=attention)
        for t, g in zip(tokens, grams)
    ]
    kind = theory_of(attention)
    keys = (
        "n_min",
        "minima_value",
        "minima_valid",
        *kind.fields,
        *(f"minima_{k}" for k in kind.minima_fields),
    )
    return {"P": P, **{k: np.stack([x[k] for x in per_seed], axis=1) for k in keys}}


def finite_branch_values(ft: dict[str, np.ndarray], *, split: float) -> tuple[np.ndarray, ...]:
    """Softmax: the action of the weak (``aG < split``) and strong (``aG >= split``) local
    minima, ``[nP, n_seeds]`` (NaN where a branch does not exist)."""
    aG, val, ok = ft["minima_aG"], ft["minima_value"], ft["minima_valid"].astype(bool)
    weak = np.where(ok & (aG < split), val, np.inf).min(-1)
    strong = np.where(ok & (aG >= split), val, np.inf).min(-1)
    return np.where(np.isinf(weak), np.nan, weak), np.where(np.isinf(strong), np.nan, strong)


def finite_action_gap(ft: dict[str, np.ndarray]) -> np.ndarray:
    """Softmax: the seed mean of the action gap per sequence between the weak and the strong
    local minima (the theory of ``(U_pool - U_copy) / P``), split halfway between the smallest
    and the largest ``aG`` of the curve ``ft``; NaN where a branch is absent on every seed."""
    split = 0.5 * (np.nanmax(ft["aG"]) + np.nanmin(ft["aG"]))
    weak, strong = finite_branch_values(ft, split=split)
    with quiet_nan():
        return np.nanmean((weak - strong) / ft["P"][:, None], axis=1)


def finite_width(params: TheoryParams, runs, attention: str, P_grid) -> dict[str, Any]:
    """The finite-width theory of each seed of ``runs`` on ``P_grid`` plus the measured ``P``,
    refined near its own jump / steepest rise (integers); with trained embeddings each run's
    own Gram, at the measured ``P`` only. Returns the ``curve``, each seed's located ``points``
    and their ``summary`` (mean, sd, per seed)."""
    cfg = runs.cfg
    th = params.replace(L=cfg.task.L, V=cfg.task.V)
    nS = cfg.sweep.n_seeds
    if cfg.train.train_embeddings:
        P = runs.P
        parts = []
        for p in P:
            toks = [seed_tokens(cfg, s, p) for s in range(nS)]
            grams = [run_gram(runs, p, s) for s in range(nS)]
            parts.append(finite_theory(th, attention, toks, grams, [p]))
        ft = {k: (np.concatenate([x[k] for x in parts]) if k != "P" else P) for k in parts[0]}
    else:
        P = np.union1d(np.asarray(P_grid, int), runs.P)
        toks = [seed_tokens(cfg, s, int(P.max() * 2)) for s in range(nS)]
        grams = [seed_gram(cfg, s) for s in range(nS)]
        ft = finite_theory(th, attention, toks, grams, P)
        extra = []
        for s in range(nS):
            for L_ in finite_points(ft, attention, s).values():
                if L_.bracketed:
                    extra.extend(loc.refine_grid(L_.bracket, n_new=FINITE_REFINE, existing=P))
        extra = np.setdiff1d(np.asarray(extra, int), P)
        if extra.size:
            more = finite_theory(th, attention, toks, grams, extra)
            Pm = np.concatenate([ft["P"], more["P"]])
            order = np.argsort(Pm)
            ft = {
                k: (Pm[order] if k == "P" else np.concatenate([ft[k], more[k]])[order]) for k in ft
            }
    pts = [finite_points(ft, attention, s) for s in range(nS)]
    return {"curve": ft, "points": pts, "summary": summarise_points(pts)}


def finite_points(ft, attention: str, s: int) -> dict[str, loc.Located]:
    """Seed ``s``'s transition points of a finite-theory curve ``ft`` (one branch, linear: onset,
    steepest rise and psi = 1/2; two branches: the jump of ``aG`` and the spinodals, where two
    minima start and stop coexisting)."""
    P = ft["P"]
    if not theory_of(attention).two_branches:
        r = ft["r"][:, s]
        tol = 1e-6 * max(float(np.abs(r).max()), 1e-300)
        return {
            "P_c1": loc.locate_onset(P, r, tol=tol),
            "P_cG": loc.locate_max_slope(P, ft["psi"][:, s]),
            "P_cG_half": loc.locate_level(P, ft["psi"][:, s], 0.5),
        }
    out = {"P_aG": loc.locate_jump(P, ft["aG"][:, s])}
    two = ft["n_min"][:, s] >= 2
    if two.any():
        i, j = np.flatnonzero(two)[[0, -1]]
        lo = (float(P[i - 1]) if i > 0 else None, float(P[i]))
        hi = (float(P[j]), float(P[j + 1]) if j + 1 < P.size else None)
        out["spinodal_lo"] = loc.Located(
            "spinodal",
            math.sqrt(lo[0] * lo[1]) if lo[0] else None,
            lo if lo[0] else None,
            lo[0] is not None,
        )
        out["spinodal_hi"] = loc.Located(
            "spinodal",
            math.sqrt(hi[0] * hi[1]) if hi[1] else None,
            hi if hi[1] else None,
            hi[1] is not None,
        )
    return out


def summarise_points(pts: list[dict[str, loc.Located]]) -> dict[str, Any]:
    """Per point: the mean and sd over the seeds that located it, and every seed's value."""
    out = {}
    for k in pts[0]:
        v = [p[k].P_star for p in pts if k in p and p[k].P_star is not None]
        out[k] = {
            "mean": float(np.mean(v)) if v else None,
            "sd": float(np.std(v)) if len(v) > 1 else None,
            "per_seed": [p[k].P_star if k in p else None for p in pts],
        }
    return out
