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
down from a strong copy start (its :meth:`~.heads.HeadTheory.copy_logits`). The scan only
brackets each point; every point is then located by root-finding on minimisers warm-started from
the bracket's ends (:mod:`.beyond_roots`), so the Markov path is as exact as the closed forms:
``P_c1``, the root of ``lambda_min(Hess S(0)) = 0`` in ``log P`` (bisection); ``P_cG``, the root
of ``d^2 psi / d log P^2`` (the slope by implicit differentiation, its derivative by central
differences); ``P_cG_half``, ``psi = 1/2``. Two branches: where they differ (``|aG_up -
aG_down| >`` ``BRANCH_TOL``) the transition is first order, ``P_aG`` is the root of the
difference of their actions and the spinodals are folds (Newton on ``grad S = 0``, ``H v = 0``,
``|v| = 1`` in ``(G, v, log P)``); otherwise it is a crossover at ``argmax daG/dlog P``. A point
whose bracket is not inside the scan is reported as not found (``None`` with a note), never as
the scan's edge. Coverage: the cosine of the full minimiser's attention with the span
(docs/theory.md §6), its minimum over the grid.
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice, check_int
from ..sources import is_iid, transition_matrix
from . import beyond_roots as roots
from ._common import as_float, x64
from .beyond_problem import Problem as Problem
from .beyond_problem import hess0_min_eig, minimisers, nearest
from .beyond_problem import newton_minimiser as newton_minimiser
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


def _p_c1(S4, S2, params, attention, causal, space, lo=-2.0, hi=12.0, n_iter=40):
    """Bisection in ``log P`` on the sign of ``lambda_min(Hess S(0))`` (positive below P_c1)."""
    kw = dict(params=params, attention=attention, causal=causal, space=space)
    ev = lambda t: float(hess0_min_eig(as_float(t), S4, S2, **kw))  # noqa: E731
    if ev(hi) > 0 or ev(lo) < 0:
        return None
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ev(mid) > 0 else (lo, mid)
    return float(np.exp(0.5 * (lo + hi)))


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
        "inputs": {
            **params.to_dict(),
            "causal": causal,
            "space": space,
            "iid": task is None or is_iid(task),
            "P_range": list(P_range),
            "n_P": n_P,
        },
        "P": np.exp(logP),
        "notes": [],
    }
    atts = [k.name for k in ks]
    key = jax.random.key(seed)
    with jax.numpy_dtype_promotion("standard"):  # optax counters, see lbfgs_minimise
        for kind, att in zip(ks, atts):
            kw = dict(params=params, attention=att, space=space, causal=causal, n_steps=n_steps)
            prob = Problem(S4, S2, key, **kw)
            t = jnp.asarray(logP)
            th0 = _theta0(att, space, L, copy=False, dtype=S4.dtype)
            up = minimisers(t, th0, S4, S2, key, **kw)
            up = {k: np.asarray(v) for k, v in up.items()}
            if not kind.two_branches:
                out.update(_linear_points(logP, up, prob, out["notes"]))
                out[att] = {"up": up}
            else:
                down = minimisers(
                    t[::-1], _theta0(att, space, L, copy=True, dtype=S4.dtype), S4, S2, key, **kw
                )
                down = {k: np.asarray(v)[::-1] for k, v in down.items()}
                fine = _refine(logP, up, down, S4, S2, key, n_fine, kw)
                out.update(_softmax_points(*(fine or (logP, up, down)), prob, out["notes"], att))
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
    out["not_found"] = not_found(out["notes"])
    if space == "full":
        cos = [
            np.nanmin(b["cosine"])
            for a in atts
            for b in out[a].values()
            if np.any(np.isfinite(b["cosine"]))
        ]
        out["coverage_min"] = float(min(cos)) if cos else None
    return out


def not_found(notes: list[str]) -> list[str]:
    """The points a scan did not bracket, read off their notes (``"<attention>: <point> not
    found: ..."``; spinodals as ``spinodal_lower`` / ``spinodal_upper``)."""
    out = []
    for n in notes:
        m = re.match(r"\w+: (\w+?)( spinodal)? not found:", n)
        if m:
            out.append(f"spinodal_{m[1]}" if m[2] else m[1])
    return out


def beyond_bytes(L: int, V: int, n_P: int, space: str, n_fine: int = 25) -> int:
    """Peak bytes of :func:`beyond_points`, float64: the statistics ``S4[LV, LV]`` and the
    action's ``D x D`` kernels (``D = LV``; with its Cholesky ~8 copies), Newton's Hessian by
    forward-over-reverse (``n`` tangents of one ``D x D`` kernel at once, fused by XLA into about
    one copy: 1.0-1.5x in the compiled program's buffer assignment at L = 6-10; ``n = L^2`` in
    the full space, the ansatz's few), its least-squares solve (~4 ``n x n``), and the
    minimisers kept per scanned point (both branches, scan and refinement)."""
    n = L * L if space == "full" else 4
    D = L * V
    return 8 * (9 * D * D + n * D * D + 4 * n * n + 2 * n * (n_P + n_fine) * 3)


def _linear_points(logP, up, prob: Problem, notes):
    """``P_c1`` (bisection), ``P_cG`` (root of the slope's derivative), ``P_cG_half`` (Brent on
    ``psi = 1/2``), each warm-started from the scan; ``None`` with a note where the scan holds
    no bracket."""
    moved = np.hypot(up["c1"], up["cG"]) > ZERO_ATOL
    psi = np.asarray(
        conv.copy_fraction(jnp.asarray(up["c1"]), jnp.asarray(up["cG"]), prob.kw["params"].L)
    )
    up["psi"] = np.where(moved, psi, 0.0)
    up["cosine"] = np.where(moved, up["cosine"], np.nan)  # no direction at A = 0
    th = up["theta"]
    slope = np.array([prob.slope(th[k], logP[k]) if moved[k] else 0.0 for k in range(len(logP))])
    up["psi_slope"] = slope

    def slope_at(x, _):
        m = prob.solve(x, th[nearest(logP, x)])
        return prob.slope(m["theta"], x) if m["ok"] else np.nan

    def psi_at(x, _):
        m = prob.solve(x, th[nearest(logP, x)])
        return prob.psi(m["theta"]) if m["ok"] else np.nan

    kw = {k: prob.kw[k] for k in ("params", "attention", "causal", "space")}
    res = {
        "P_c1": _p_c1(prob.S4, prob.S2, **kw),
        "P_cG": roots.slope_argmax(logP, slope, slope_at) if moved.any() else None,
        "P_cG_half": roots.first_crossing(logP, up["psi"], 0.5, psi_at),
    }
    for k in ("P_cG", "P_cG_half"):
        if res[k] is not None:
            res[k] = float(np.exp(res[k]))
    for k, what in (
        ("P_c1", "lambda_min(Hess S(0)) keeps one sign"),
        ("P_cG", "the psi slope's maximum is not inside the scan"),
        ("P_cG_half", "psi does not cross 1/2 inside the scan"),
    ):
        if res[k] is None:
            notes.append(
                f"{prob.kw['attention']}: {k} not found: {what} "
                f"(P in [{np.exp(logP[0]):.4g}, {np.exp(logP[-1]):.4g}])"
            )
    return res


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
    f_up = minimisers(jnp.asarray(t), jnp.asarray(up["theta"][i]), S4, S2, key, **kw)
    f_dn = minimisers(jnp.asarray(t[::-1]), jnp.asarray(down["theta"][j]), S4, S2, key, **kw)
    return (
        t,
        {k: np.asarray(v) for k, v in f_up.items()},
        {k: np.asarray(v)[::-1] for k, v in f_dn.items()},
    )


def _softmax_points(logP, up, down, prob: Problem, notes, attention):
    """First order where the branches differ: ``P_aG`` by Brent on the difference of their
    actions, the spinodals as folds (Newton, kept only inside the scan's bracket, else the grid
    point with a note); otherwise the crossover, located like ``P_cG`` on ``aG``. ``None`` with
    a note where the scan holds no bracket."""
    gap = np.abs(up["cG"] - down["cG"]) > BRANCH_TOL
    res: dict[str, Any] = {"first_order": bool(gap.any()), "P_aG": None, "spinodals": None}
    where = f"P in [{np.exp(logP[0]):.4g}, {np.exp(logP[-1]):.4g}]"
    if gap.any():  # two minima: the global one switches where their actions cross
        g = np.nonzero(gap)[0]
        dv = up["value"] - down["value"]

        def dv_at(x, _):
            k = g[nearest(logP[g], x)]  # where both branches live, apart
            a, b = prob.solve(x, up["theta"][k]), prob.solve(x, down["theta"][k])
            return float(a["value"] - b["value"]) if a["ok"] and b["ok"] else np.nan

        sub = np.arange(g[0], g[-1] + 1)
        t_aG = roots.first_crossing(logP[sub], dv[sub], 0.0, lambda x, i: dv_at(x, sub[i]))
        if t_aG is None:
            notes.append(
                f"{attention}: P_aG not found: the branches' actions do not cross "
                f"inside the coexistence window seen ({where})"
            )
        res["P_aG"] = None if t_aG is None else float(np.exp(t_aG))
        res["spinodals"] = [
            _spinodal(logP, g[0], -1, down, up, prob, notes, attention),
            _spinodal(logP, g[-1], 1, up, down, prob, notes, attention),
        ]
        ends = [np.log(x) for x in res["spinodals"] if x is not None]
        res["window_decades"] = float((ends[1] - ends[0]) / np.log(10)) if len(ends) == 2 else None
        res["P_aG_crossover"] = res["P_aG"]  # the global minimiser jumps there
        return res
    notes.append(
        f"{attention}: the two branches coincide on the grid: no coexistence window "
        "resolved (a crossover, or a window narrower than one step)"
    )
    h = roots.SLOPE_STEP

    def slope_at(x, _):
        th = up["theta"][nearest(logP, x)]
        a, b = prob.solve(x + h, th), prob.solve(x - h, th)
        return float(a["cG"] - b["cG"]) / (2 * h) if a["ok"] and b["ok"] else np.nan

    t_x = roots.slope_argmax(logP, np.gradient(up["cG"], logP), slope_at)
    if t_x is None:
        notes.append(
            f"{attention}: P_aG_crossover not found: the aG slope's maximum is not "
            f"inside the scan ({where})"
        )
    res["P_aG_crossover"] = None if t_x is None else float(np.exp(t_x))
    return res


def _spinodal(logP, k, side, branch, other, prob: Problem, notes, attention) -> float | None:
    """The fold where ``branch`` (alive at grid index ``k``) ends on ``side`` (-1: below, +1:
    above): Brent on :meth:`Problem.alive` between ``k`` and the first grid point beyond it
    where the branch has no minimum (the scan's continuation can lose a branch before its
    fold); ``None`` with a note where the branch outlives the scanned range."""
    name = "lower" if side < 0 else "upper"
    g = prob.alive(
        branch["theta"][k], float(logP[k]), float(branch["cG"][k]), float(other["cG"][k])
    )
    j = k + side
    while 0 <= j < len(logP) and g(float(logP[j])) > 0:
        j += side
    if not 0 <= j < len(logP):
        end = np.exp(logP[-1 if side > 0 else 0])
        notes.append(
            f"{attention}: {name} spinodal not found: the branch outlives the scan "
            f"(alive from P = {np.exp(logP[k]):.4g} to {end:.4g})"
        )
        return None
    t = roots.brent(g, float(logP[j - side]), float(logP[j]), xtol=roots.FOLD_XTOL)
    return None if t is None else float(np.exp(t))


def config_points(cfg, attention: str = "both") -> dict[str, Any]:
    """The EK theory's ``P*`` for a sweep's ``Config``: the closed forms of
    :func:`.points.transition_points` for i.i.d. tokens without mask, else
    :func:`beyond_points` (full ``L x L`` minimisers) for its source and mask."""
    params = TheoryParams.from_config(cfg)
    if is_iid(cfg.task) and not cfg.model.causal:
        return transition_points(params, attention)
    res = beyond_points(
        params, cfg.task, causal=cfg.model.causal, attention=attention, P_range=(3.0, 3e4), n_P=41
    )
    if res.get("first_order") is False:  # no jump: the crossover faces a measured single jump
        res["P_aG_jump"] = res["P_aG_crossover"]
    return res


__all__ = ["BRANCH_TOL", "Problem", "beyond_points", "config_points", "source_stats"]
