r"""Transition points beyond the paper's limits: Markov tokens and the causal mask (§12).

With i.i.d. tokens and no mask the two-parameter ansatz reduces the EK action exactly and
:func:`.points.transition_points` gives every ``P*`` from the closed forms. A Markov chain
(token-token correlations that depend on the lag, not on the cyclic distance) or the causal
mask (no cyclic symmetry) break that reduction, so here each ``P*`` is read off minimisers of
the general action (:func:`.action.ek_action` with the source's exact statistics and the
mask), followed in ``log P`` by continuation:

* ``space='full'``: the minimiser over the whole ``L x L`` matrix (no ansatz);
* ``space='ansatz'``: the same action restricted to the kind's ansatz (:mod:`.heads`:
  ``c1 B1 + cG B2`` linear, logits ``beta G*`` softmax), to measure what the ansatz misses.

Per attention, a branch is followed up in ``P`` from ``G ~ 0`` and, for a two-branch kind,
down from a strong copy start (its :meth:`~.heads.HeadTheory.copy_logits`). ``P_c1``: the
root of ``lambda_min(Hess S(0)) = 0`` in ``log P`` (bisection);
``P_cG``: ``argmax dpsi/dlog P`` on the grid (parabola through the top three points);
``P_cG_half``: ``psi = 1/2``. Two branches: where they differ (``|aG_up - aG_down| >``
``BRANCH_TOL``) the transition is first order, ``P_aG`` is the crossing of their actions and
the window (spinodals) is the range of ``P`` where they differ; otherwise it is a crossover at
``argmax daG/dlog P``. Coverage: the cosine of the full minimiser's attention with the span
(docs/theory.md §6), its minimum over the grid.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice, check_int
from ..sources import is_iid, transition_matrix
from ._common import as_float, x64
from .action import ek_action, project
from .full import lbfgs_minimise
from .heads import COPY_START, theory_of
from .markov import markov_stats
from .params import TheoryParams
from .points import kinds, transition_points

BRANCH_TOL = 1e-3  # |aG_up - aG_down| above this: two distinct minima (L-BFGS reaches ~1e-6)
SPACES = ("full", "ansatz")
ZERO_ATOL = 1e-6  # |(c1, cG)| below this: the linear minimiser is A = 0 (below P_c1)


def source_stats(task, L: int | None = None):
    """Exact ``(S4, S2)`` of ``task``'s source (``TaskConfig``) over ``L`` positions (§12)."""
    return markov_stats(transition_matrix(task), task.L if L is None else L)


def _to_G(theta, *, L, attention, space):
    """The logits: the full matrix, or the ansatz's at its coordinates ``theta``."""
    return theta.reshape(L, L) if space == "full" else theory_of(attention).logits(theta, L)


def _action(theta, P, S4, S2, *, params, attention, space, causal):
    G = _to_G(theta, L=params.L, attention=attention, space=space)
    return ek_action(G, P=P, params=params, attention=attention, stats=(S4, S2), causal=causal)


_STATIC = ("params", "attention", "space", "causal", "n_steps")


@functools.partial(jax.jit, static_argnames=_STATIC)
def _branch(logPs, theta0, S4, S2, key, *, params, attention, space, causal, n_steps):
    """Minimisers along ``logPs``, each started from the previous one (one-branch kinds: plus a
    1e-4 kick that lets the branch leave the saddle ``G = 0`` once ``P > P_c1``)."""
    L = params.L
    kind = theory_of(attention)
    kick = 1e-4 if not kind.two_branches else 0.0

    def step(theta, x):
        logP, k = x
        f = functools.partial(_action, P=jnp.exp(logP), S4=S4, S2=S2, params=params,
                              attention=attention, space=space, causal=causal)  # fmt: skip
        th = lbfgs_minimise(f, theta + kick * jax.random.normal(k, theta.shape, theta.dtype),
                            n_steps)  # fmt: skip
        A = kind.attention(_to_G(th, L=L, attention=attention, space=space), causal)
        pr = project(A)
        sgn = jnp.where(pr["c1"] + pr["cG"] / jnp.sqrt(as_float(L)) < 0, -1.0, 1.0)
        c1, cG = pr["c1"], pr["cG"]
        if kind.gauge_fix:  # Z2 gauge r >= 0 (docs/theory.md §6)
            c1, cG = c1 * sgn, cG * sgn
        out = {"value": f(th), "c1": c1, "cG": cG, "cosine": pr["cosine"],
               "grad_norm": jnp.linalg.norm(jax.grad(f)(th)), "theta": th}  # fmt: skip
        return th, out

    keys = jax.random.split(key, logPs.shape[0])
    return jax.lax.scan(step, theta0, (logPs, keys))[1]


@functools.partial(jax.jit, static_argnames=("params", "attention", "causal", "space"))
def _hess0_min_eig(logP, S4, S2, *, params, attention, causal, space):
    """``lambda_min`` of the Hessian of a one-branch (linear) action at ``G = 0`` (map)."""
    n = params.L**2 if space == "full" else len(theory_of(attention).coords)
    f = functools.partial(_action, P=jnp.exp(logP), S4=S4, S2=S2, params=params,
                          attention=attention, space=space, causal=causal)  # fmt: skip
    return jnp.linalg.eigvalsh(jax.hessian(f)(jnp.zeros(n, S4.dtype)))[0]


def _p_c1(S4, S2, params, attention, causal, space, lo=-2.0, hi=12.0, n_iter=40):
    """Bisection in ``log P`` on the sign of ``lambda_min(Hess S(0))`` (positive below P_c1)."""
    kw = dict(params=params, attention=attention, causal=causal, space=space)
    ev = lambda t: float(_hess0_min_eig(as_float(t), S4, S2, **kw))  # noqa: E731
    if ev(hi) > 0 or ev(lo) < 0:
        return None
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ev(mid) > 0 else (lo, mid)
    return float(np.exp(0.5 * (lo + hi)))


def _argmax_slope(logP, y):
    """``P`` at the largest ``dy/dlog P`` (centred differences, parabola through the top 3)."""
    d = np.gradient(y, logP)
    i = int(np.clip(np.argmax(d), 1, len(d) - 2))
    y0, y1, y2 = d[i - 1 : i + 2]
    den = y0 - 2 * y1 + y2
    shift = 0.5 * (y0 - y2) / den if den < 0 else 0.0
    return float(np.exp(logP[i] + np.clip(shift, -1, 1) * (logP[1] - logP[0])))


def _crossing(logP, y, level):
    """``P`` where ``y - level`` first changes sign (log-linear interpolation), else ``None``."""
    s = np.sign(np.asarray(y) - level)
    idx = np.nonzero(s[:-1] * s[1:] < 0)[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    t = (level - y[i]) / (y[i + 1] - y[i])
    return float(np.exp(logP[i] + t * (logP[i + 1] - logP[i])))


def _theta0(attention, space, L, *, copy, dtype):
    kind = theory_of(attention)
    if space == "full":
        G = kind.copy_logits(L, COPY_START, dtype) if copy else jnp.zeros((L, L), dtype)
        return G.ravel()
    return kind.start(copy, dtype)


@x64
def beyond_points(
    params: TheoryParams,
    task=None,
    *,
    causal: bool = False,
    attention: str = "both",
    space: str = "full",
    P_range: tuple[float, float] = (1.0, 1e5),
    n_P: int = 81,
    n_steps: int = 200,
    n_fine: int = 25,
    seed: int = 0,
) -> dict[str, Any]:
    r"""Every ``P*`` of the EK action (map) for ``task``'s token source and the mask, by
    continuation of minimisers over ``n_P`` log-spaced ``P`` in ``P_range`` (module docstring).

    ``task``: a ``TaskConfig`` with ``L, V`` of ``params`` (``None``: i.i.d.). Returns JSON-ready
    ``P_c1, P_cG, P_cG_half`` (linear), ``P_aG, spinodals, first_order, P_aG_crossover``
    (softmax), ``coverage_min`` (full space), the branches (``P``, ``up``, ``down``) and notes.
    """
    ks = kinds(attention)
    check_choice("space", space, SPACES)
    check_int("n_P", n_P, lo=5, hi=10_000)
    check_int("n_steps", n_steps, lo=1, hi=100_000)
    if not (0 < P_range[0] < P_range[1]):
        raise ValueError(f"P_range must be (lo, hi) with 0 < lo < hi, got {P_range!r}")
    if task is not None and (task.L, task.V) != (params.L, params.V):
        raise ValueError(
            f"task (L, V) = {(task.L, task.V)} must equal params' {(params.L, params.V)}"
        )
    L = params.L
    if task is None:
        S4, S2 = markov_stats(np.full((params.V,) * 2, 1.0 / params.V), L)
    else:
        S4, S2 = source_stats(task)
    logP = np.linspace(np.log(P_range[0]), np.log(P_range[1]), n_P)
    out: dict[str, Any] = {
        "inputs": {**params.to_dict(), "causal": causal, "space": space,
                   "iid": task is None or is_iid(task), "P_range": list(P_range), "n_P": n_P},
        "P": np.exp(logP), "notes": [],
    }  # fmt: skip
    atts = [k.name for k in ks]
    key = jax.random.key(seed)
    with jax.numpy_dtype_promotion("standard"):  # optax counters, see lbfgs_minimise
        for kind, att in zip(ks, atts):
            kw = dict(params=params, attention=att, space=space, causal=causal, n_steps=n_steps)
            t = jnp.asarray(logP)
            up = _branch(t, _theta0(att, space, L, copy=False, dtype=S4.dtype), S4, S2, key, **kw)
            up = {k: np.asarray(v) for k, v in up.items()}
            if not kind.two_branches:
                out.update(_linear_points(logP, up, S4, S2, params, att, causal, space))
                out[att] = {"up": up}
            else:
                down = _branch(t[::-1], _theta0(att, space, L, copy=True, dtype=S4.dtype), S4,
                               S2, key, **kw)  # fmt: skip
                down = {k: np.asarray(v)[::-1] for k, v in down.items()}
                fine = _refine(logP, up, down, S4, S2, key, n_fine, kw)
                out.update(_softmax_points(*(fine or (logP, up, down)), out["notes"], att))
                out[att] = {"up": up, "down": down}
                if fine:
                    out[f"{att}_fine"] = {"P": np.exp(fine[0]), "up": fine[1], "down": fine[2]}
                    out["notes"].append(f"{att}: refined on {n_fine} points around the jump")
                    out["aG_max_step"] = float(np.max(np.abs(np.diff(fine[1]["cG"]))))
                    out["fine_step_decades"] = float((fine[0][1] - fine[0][0]) / np.log(10))
            g = max(float(np.nanmax(b["grad_norm"])) for b in out[att].values())
            out[f"{att}_max_grad_norm"] = g
    for name in (*atts, *(f"{a}_fine" for a in atts)):  # the minimisers stay here (L x L each)
        for b in out.get(name, {}).values():
            if isinstance(b, dict):
                b.pop("theta", None)
    if space == "full":
        cos = [np.nanmin(b["cosine"]) for a in atts for b in out[a].values()
               if np.any(np.isfinite(b["cosine"]))]  # fmt: skip
        out["coverage_min"] = float(min(cos)) if cos else None
    return out


def _linear_points(logP, up, S4, S2, params, attention, causal, space):
    moved = np.hypot(up["c1"], up["cG"]) > ZERO_ATOL
    psi = np.asarray(conv.copy_fraction(jnp.asarray(up["c1"]), jnp.asarray(up["cG"]), params.L))
    up["psi"] = np.where(moved, psi, 0.0)
    up["cosine"] = np.where(moved, up["cosine"], np.nan)  # no direction at A = 0
    return {"P_c1": _p_c1(S4, S2, params, attention, causal, space),
            "P_cG": _argmax_slope(logP, up["psi"]),
            "P_cG_half": _crossing(logP, up["psi"], 0.5)}  # fmt: skip


def _refine(logP, up, down, S4, S2, key, n_fine, kw):
    """The two softmax branches again on ``n_fine`` points across the coarse window (two grid
    steps beyond it each side), or, without a window, across the largest step of the global
    ``aG`` (one grid step each side): started from the coarse minimisers there, a finer step
    keeps each branch in its own well closer to its spinodal, or resolves a steep crossover."""
    if n_fine < 3:
        return None
    gap = np.nonzero(np.abs(up["cG"] - down["cG"]) > BRANCH_TOL)[0]
    if gap.size:
        i, j = max(gap[0] - 2, 0), min(gap[-1] + 2, len(logP) - 1)
    else:
        k = int(np.argmax(np.abs(np.diff(up["cG"]))))
        i, j = max(k - 1, 0), min(k + 2, len(logP) - 1)
    t = np.linspace(logP[i], logP[j], n_fine)
    f_up = _branch(jnp.asarray(t), jnp.asarray(up["theta"][i]), S4, S2, key, **kw)
    f_dn = _branch(jnp.asarray(t[::-1]), jnp.asarray(down["theta"][j]), S4, S2, key, **kw)
    return (t, {k: np.asarray(v) for k, v in f_up.items()},
            {k: np.asarray(v)[::-1] for k, v in f_dn.items()})  # fmt: skip


def _softmax_points(logP, up, down, notes, attention):
    gap = np.abs(up["cG"] - down["cG"]) > BRANCH_TOL
    res: dict[str, Any] = {"first_order": bool(gap.any()), "P_aG": None, "spinodals": None}
    if gap.any():  # two minima: the global one switches where their actions cross
        i = np.nonzero(gap)[0]
        t, dv = logP[i], up["value"][i] - down["value"][i]
        edge = float(np.exp(t[0] if dv[0] > 0 else t[-1]))  # no crossing inside: an end
        res["P_aG"] = _crossing(t, dv, 0.0) or edge
        res["spinodals"] = [float(np.exp(t[0])), float(np.exp(t[-1]))]  # grid points inside
        res["window_decades"] = float((t[-1] - t[0]) / np.log(10))
    else:
        notes.append(
            f"{attention}: the two branches coincide on the grid: no coexistence window "
            "resolved (a crossover, or a window narrower than one step)"
        )
    glob = np.where(up["value"] <= down["value"], up["cG"], down["cG"])
    res["P_aG_crossover"] = _argmax_slope(logP, glob)
    return res


def config_points(cfg, attention: str = "both") -> dict[str, Any]:
    """The EK theory's ``P*`` for a sweep's ``Config``: the closed forms of
    :func:`.points.transition_points` for i.i.d. tokens without mask, else
    :func:`beyond_points` (full ``L x L`` minimisers) for its source and mask."""
    params = TheoryParams.from_config(cfg)
    if is_iid(cfg.task) and not cfg.model.causal:
        return transition_points(params, attention)
    res = beyond_points(params, cfg.task, causal=cfg.model.causal, attention=attention,
                        P_range=(3.0, 3e4), n_P=41)  # fmt: skip
    if res.get("first_order") is False:  # no jump: the crossover faces a measured single jump
        res["P_aG_jump"] = res["P_aG_crossover"]
    return res


__all__ = ["BRANCH_TOL", "beyond_points", "config_points", "source_stats"]
