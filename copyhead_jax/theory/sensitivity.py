r"""How every ``P*`` moves with every parameter and convention, and which targets a reading can fit.

* :func:`sensitivity`: the log-log slope ``d log P* / d log x`` of ``P_c1``, ``P_cG`` (linear)
  and ``P_aG`` (softmax) in every continuous parameter (central differences in ``log x``; for the
  integers ``L`` and ``V`` the symmetric difference over ``x +- 1``), and the factor
  ``P*(switched) / P*`` of every other value of every convention switch (docs/theory.md §2b, §5).
* :func:`fit`: the least-squares fit of ``log P*`` to target values over the parameters left free
  (Levenberg-Marquardt in ``log x``, Jacobian by the same differences), with its residuals, the
  combinations of ``log P*`` that no free parameter moves (the left null space of the Jacobian:
  e.g. ``P_cG / P_c1``, which depends on ``sigma_e / sigma_p`` alone), and whether a fit within a
  tolerance exists.

Every evaluation is one :func:`~copyhead_jax.theory.points_batch` call over a batch of parameter
sets (the base point and its stencil), so a table or a fit step costs one kernel call per
attention. ``P_aG`` is the softmax transition where it is first order and the crossover of the
global minimiser otherwise (the continuous extension; ``first_order`` says which).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._checks import check_choice, check_float, check_int
from ..config import LIKELIHOODS, LINEAR_SCALES
from .params import TheoryParams
from .points import points_batch

TARGETS = ("P_c1", "P_cG", "P_aG")
_KEYS = {"P_c1": "P_c1", "P_cG": "P_cG", "P_aG": "P_aG_crossover"}
#: the continuous parameters (``L``, ``V`` are integers: symmetric differences over +-1)
CONTINUOUS = ("sigma2", "chi", "sigma_O", "sigma_G", "sigma_e", "sigma_p", "L", "V")
#: the parameters a fit may leave free (real-valued)
FREE = ("sigma2", "chi", "sigma_O", "sigma_G", "sigma_e", "sigma_p")
SWITCHES = {
    "likelihood": LIKELIHOODS,
    "linear_scale": LINEAR_SCALES,
    "chi_in_readout_prior": (True, False),
    "chi_in_noise": (True, False),
}
#: a slope below this is zero: the k-section locates log P* to ~1e-8, so central differences
#: with step 1e-2 carry errors ~1e-6; true slopes of the theory are O(0.1-1)
ZERO_SLOPE = 1e-4


def _attention(targets) -> str:
    lin = any(t in ("P_c1", "P_cG") for t in targets)
    soft = "P_aG" in targets
    return "both" if lin and soft else ("linear" if lin else "softmax")


def _log_points(plist: list[TheoryParams], objective: str, targets) -> tuple[np.ndarray, Any]:
    """``log P*[B, len(targets)]`` and the first-order flags ``[B]`` (None without P_aG)."""
    b = points_batch(plist, _attention(targets), objective)
    logp = np.stack([np.log(b[_KEYS[t]]) for t in targets], axis=1)
    return logp, (b["first_order"] if "P_aG" in targets else None)


def _stencil(p: TheoryParams, names, h: float) -> tuple[list[TheoryParams], np.ndarray]:
    """``p`` at ``x e^{+-h}`` per name (``L``, ``V``: ``x +- 1``, one-sided at the lower bound 2)
    and the ``log`` steps between each pair."""
    out, steps = [], []
    for n in names:
        x = getattr(p, n)
        if n in ("L", "V"):
            lo, hi = max(x - 1, 2), x + 1
        else:
            lo, hi = x * math.exp(-h), x * math.exp(h)
        out += [p.replace(**{n: hi}), p.replace(**{n: lo})]
        steps.append(math.log(hi / lo))
    return out, np.asarray(steps)


def _check_objectives(objectives) -> tuple[str, ...]:
    objectives = (objectives,) if isinstance(objectives, str) else tuple(objectives)
    for o in objectives:
        check_choice("objective", o, ("map", "post"))
    return objectives


def sensitivity(
    params: TheoryParams, *, objectives=("map", "post"), h: float = 1e-2
) -> dict[str, Any]:
    r"""Log-log slopes of every ``P*`` in every continuous parameter and the factor of every
    switch, at ``params``, per objective (docs/theory.md §5).

    Returns ``{objective: {"P": {target: P*}, "first_order": bool, "slopes": {param: {target:
    slope}}, "factors": {"switch=value": {target: factor}}}}`` plus ``inputs``.
    """
    if not isinstance(params, TheoryParams):
        raise ValueError(f"params must be a TheoryParams, got {type(params).__name__}")
    check_float("h", h, lo=0.0, hi=1.0)
    objectives = _check_objectives(objectives)
    stencil, steps = _stencil(params, CONTINUOUS, h)
    switched = [
        (f"{k}={v}", params.replace(**{k: v}))
        for k, values in SWITCHES.items()
        for v in values
        if v != getattr(params, k)
    ]
    batch = [params, *stencil, *(q for _, q in switched)]
    out: dict[str, Any] = {"inputs": params.to_dict(), "step": h}
    for obj in objectives:
        logp, first = _log_points(batch, obj, TARGETS)
        n = len(CONTINUOUS)
        d = (logp[1 : 1 + 2 * n : 2] - logp[2 : 2 + 2 * n : 2]) / steps[:, None]
        out[obj] = {
            "P": dict(zip(TARGETS, np.exp(logp[0]).tolist())),
            # a P* whose search found nothing inside its scan (NaN, printed as null)
            "not_found": [t for t, v in zip(TARGETS, logp[0]) if not np.isfinite(v)],
            "first_order": bool(first[0]),
            "slopes": {c: dict(zip(TARGETS, d[i].tolist())) for i, c in enumerate(CONTINUOUS)},
            "factors": {
                name: dict(zip(TARGETS, np.exp(logp[1 + 2 * n + j] - logp[0]).tolist()))
                for j, (name, _) in enumerate(switched)
            },
        }
    return out


# ---------------------------------------------------------------------------------------------
# Fit


def parse_targets(spec: str | dict) -> dict[str, float]:
    """``'P_c1=23,P_cG=322,P_aG=300'`` (or a dict) -> ``{name: value}``, validated."""
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(","):
            name, eq, value = part.partition("=")
            try:
                if not eq:
                    raise ValueError
                items.append((name.strip(), float(value)))
            except ValueError:
                raise ValueError(
                    f"--target must be NAME=VALUE pairs joined by commas (names "
                    f"{', '.join(TARGETS)}), got {part!r}"
                ) from None
    out: dict[str, float] = {}
    for name, value in items:
        if name not in TARGETS:
            raise ValueError(f"--target names must be among {', '.join(TARGETS)}, got {name!r}")
        if name in out:
            raise ValueError(f"--target names {name} twice")
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"--target {name} must be a finite number > 0, got {value}")
        out[name] = float(value)
    if not out:
        raise ValueError("--target must name at least one of " + ", ".join(TARGETS))
    return out


def parse_free(spec: str | list) -> list[str]:
    """``'sigma2,chi'`` (or a list) -> names, validated against :data:`FREE`."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    if not names or not all(names):
        raise ValueError(f"--free must list parameters among {', '.join(FREE)}, got {spec!r}")
    for n in names:
        if n not in FREE:
            raise ValueError(f"--free entries must be among {', '.join(FREE)}, got {n!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"--free lists a parameter twice: {spec!r}")
    return names


def _monomial(u: np.ndarray, names) -> str:
    return " ".join(f"{n}^{c:+.3g}" for n, c in zip(names, u) if abs(c) > 1e-3)


def _zero(v, J) -> bool:
    return bool(np.all(np.abs(v) <= ZERO_SLOPE * max(1.0, float(np.abs(J).max()))))


def _invariants(J: np.ndarray, J0: np.ndarray, targets, log_model, log_target) -> dict[str, Any]:
    """What no free parameter moves: the left null space of the Jacobian ``J`` (``u^T J = 0``:
    ``prod P_i^{u_i}`` is fixed to first order) and the ratios of two targets whose slopes agree
    in every free parameter at the start ``J0`` and at the fit ``J`` (named invariants)."""
    m = J.shape[0]
    U, s, _ = np.linalg.svd(J, full_matrices=True)
    scale = max(float(s.max()) if s.size else 0.0, 1.0)
    rank = int(np.sum(s > ZERO_SLOPE * scale))
    combos = []
    for i in range(rank, m):
        u = U[:, i] / U[np.argmax(np.abs(U[:, i])), i]
        combos.append(
            {
                "coefficients": dict(zip(targets, u.tolist())),
                "monomial": _monomial(u, targets),
                "model": float(np.exp(u @ log_model)),
                "target": float(np.exp(u @ log_target)),
                "at_start_too": _zero(u @ J0, J0),
            }
        )
    ratios = []
    for a in range(m):
        for b in range(a + 1, m):
            if _zero(J[b] - J[a], J) and _zero(J0[b] - J0[a], J0):
                ratios.append(
                    {
                        "ratio": f"{targets[b]}/{targets[a]}",
                        "model": float(np.exp(log_model[b] - log_model[a])),
                        "target": float(np.exp(log_target[b] - log_target[a])),
                    }
                )
    return {"rank": rank, "n_targets": m, "combinations": combos, "ratios": ratios}


def fit(
    params: TheoryParams,
    targets: str | dict,
    free: str | list,
    *,
    objective: str = "map",
    tol: float = 0.05,
    max_iter: int = 40,
    h: float = 1e-2,
) -> dict[str, Any]:
    r"""Least squares in ``log P*`` over the ``free`` parameters (in ``log x``), from ``params``.

    Levenberg-Marquardt with a Jacobian by central differences; each trial step is one batch.
    Returns the fitted parameters, the model and target ``P*``, the residuals
    ``log(P*/target)``, ``exact`` (every ``|P*/target - 1| <= tol``), the invariants (what no
    free parameter moves, with model and target values) and a one-line ``verdict``.
    """
    if not isinstance(params, TheoryParams):
        raise ValueError(f"params must be a TheoryParams, got {type(params).__name__}")
    tg = parse_targets(targets)
    names = parse_free(free)
    check_choice("objective", objective, ("map", "post"))
    check_float("tol", tol, lo=0.0, hi=10.0)
    check_int("max_iter", max_iter, lo=1, hi=10_000)
    check_float("h", h, lo=0.0, hi=1.0)
    tnames = list(tg)
    y = np.log(np.asarray([tg[t] for t in tnames]))

    def at(theta):
        return params.replace(**{n: float(np.exp(v)) for n, v in zip(names, theta)})

    def evaluate(theta):
        p = at(theta)
        stencil, steps = _stencil(p, names, h)
        logp, first = _log_points([p, *stencil], objective, tnames)
        J = ((logp[1::2] - logp[2::2]) / steps[:, None]).T  # [m, k]
        r = logp[0] - y
        cost = 0.5 * float(r @ r) if np.all(np.isfinite(r)) and np.all(np.isfinite(J)) else np.inf
        return r, J, (None if first is None else bool(first[0])), cost

    theta = np.log([getattr(params, n) for n in names])
    r, J, first, cost = evaluate(theta)
    if not np.isfinite(cost):
        at_start = dict(zip(tnames, np.exp(r + y).tolist()))
        raise ValueError(f"a target P* is undefined at the start ({objective}): {at_start}")
    J0, mu, it = J, 1e-3, 0
    for it in range(1, max_iter + 1):  # noqa: B007 (it: reported)
        g, H = J.T @ r, J.T @ J
        while mu < 1e8:
            step = -np.linalg.solve(H + mu * np.diag(np.diag(H) + 1e-12), g)
            new = evaluate(theta + step)
            if new[3] < cost:
                break
            mu *= 4.0
        else:
            break  # no step lowers the cost: a (local) least-squares minimum
        drop = cost - new[3]
        theta, (r, J, first, cost), mu = theta + step, new, mu / 3.0
        if cost < 1e-16 or drop <= 1e-10 * cost or np.max(np.abs(step)) < 1e-7:
            break
    best = at(theta)
    model = np.exp(r + y)
    rel = np.abs(model / np.exp(y) - 1.0)
    exact = bool(np.all(rel <= tol))
    inv = _invariants(J, J0, tnames, r + y, y)
    free_s = ", ".join(names)
    if exact:
        verdict = f"fit within {tol:.0%}: every target matched by adjusting {free_s}"
    else:
        worst = tnames[int(np.argmax(rel))]
        verdict = f"no fit within {tol:.0%} over {free_s}: {worst} off by {rel.max():.1%}"
        off = lambda v: abs(math.log(v["model"] / v["target"])) > math.log1p(tol)  # noqa: E731
        why = [
            f"{v['ratio']} = {v['model']:.4g} (target {v['target']:.4g}) is independent of {free_s}"
            for v in inv["ratios"]
            if off(v)
        ]
        if not why:
            why = [
                f"{v['monomial']} = {v['model']:.4g} (target {v['target']:.4g}) does not "
                f"move with {free_s} to first order"
                for v in inv["combinations"]
                if off(v)
            ]
        verdict += "; " + "; ".join(why) if why else " (a local minimum of the misfit)"
    return {
        "inputs": {**params.to_dict(), "objective": objective},
        "free": names,
        "fitted": {n: getattr(best, n) for n in names},
        "targets": tg,
        "model": dict(zip(tnames, model.tolist())),
        "residuals_log": dict(zip(tnames, r.tolist())),
        "relative_error": dict(zip(tnames, rel.tolist())),
        "first_order": first,
        "exact": exact,
        "tol": tol,
        "iterations": it,
        "invariants": inv,
        "jacobian": {t: dict(zip(names, J[i].tolist())) for i, t in enumerate(tnames)},
        "verdict": verdict,
    }


__all__ = [
    "CONTINUOUS",
    "FREE",
    "SWITCHES",
    "TARGETS",
    "fit",
    "parse_free",
    "parse_targets",
    "sensitivity",
]
