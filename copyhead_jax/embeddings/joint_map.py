r"""The joint MAP (every weight trained, embeddings included) started from a quenched MAP
(docs/theory.md §2d): the quenched fit moved along the scale gauge $(U,W^G,W^O)\to
(sU,W^G/s^2,W^O/s)$ (the same function) to its lowest prior energy, then solved exactly at the
run's width with the joint reduction's split (:func:`copyhead_jax.models.joint_split`).
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..config import Config
from ..fit import blocks_of, measure_blocked, solve_map, sweep_inputs
from ..models import ARRAY_FIELDS, head_template, joint_split
from ..objective import Objective
from ..results import SweepResult

#: what :func:`joint_from_quenched` measures per run
KEYS = ("U", "c1", "cG", "r", "psi", "converged", "min_eig", "gram_trace")


def rebalance(w: dict, obj: Objective, width: float) -> dict:
    r"""The point of the scale gauge $(\tilde U,A,B)\to(s\tilde U,A/s^2,B/s)$ (the same
    logits and outputs) with the lowest prior energy $as^2+g/s^4+b/s^2$: $t=s^2$ is the positive
    root of $at^3-bt-2g=0$ (one sign change: exactly one)."""
    D = w["W_G"].shape[0]
    c2 = D / width  # head embeddings = sqrt(D / N) U~
    a = (np.sum(w["W_E"] ** 2) / obj.sigma_e**2 + np.sum(w["b"] ** 2) / obj.sigma_p**2) / c2
    g, b = np.sum(w["W_G"] ** 2) / obj.sigma_G**2, np.sum(w["W_O_hat"] ** 2) / obj.sigma_O**2
    roots = np.roots([a, 0.0, -b, -2.0 * g])
    t = max(float(r.real) for r in roots if abs(r.imag) < 1e-9 * abs(r) and r.real > 0)
    s = np.sqrt(t)
    return dict(W_E=w["W_E"] * s, b=w["b"] * s, W_G=w["W_G"] / t, W_O_hat=w["W_O_hat"] / s)


def gauge_energy(w: dict, obj: Objective, width: float) -> tuple[float, float]:
    """The prior energy of ``w`` as it is and at :func:`rebalance`'s scale (width-N units)."""
    c2 = w["W_G"].shape[0] / width

    def energy(v):
        emb = np.sum(v["W_E"] ** 2) / obj.sigma_e**2 + np.sum(v["b"] ** 2) / obj.sigma_p**2
        rest = np.sum(v["W_G"] ** 2) / obj.sigma_G**2 + np.sum(v["W_O_hat"] ** 2) / obj.sigma_O**2
        return 0.5 * (emb / c2 + rest)

    return energy(w), energy(rebalance(w, obj, width))


def quenched_as_joint(cfg: Config, quenched: SweepResult) -> np.ndarray:
    """``[nP, n_seeds]`` joint U of each quenched fit's function at its cheapest scale: the
    start of :func:`joint_from_quenched` (the joint fit from it ends at or below it)."""
    obj, a = Objective.from_config(cfg), quenched.arrays
    U = np.asarray(a["U"], float).copy()
    for i, s in np.ndindex(U.shape):
        w = {k: v.astype(np.float64) for k, v in quenched.head_arrays((i, s)).items()}
        before, after = gauge_energy(w, obj, cfg.model.width)
        emb = 0.5 * (np.sum(w["W_E"] ** 2) / obj.sigma_e**2 + np.sum(w["b"] ** 2) / obj.sigma_p**2)
        U[i, s] += after - (before - emb * cfg.model.width / w["W_G"].shape[0])
    return U


@functools.partial(jax.jit, static_argnums=0)
def _joint_fit(cfg: Config, w: tuple, tokens, mask, test, n_blocks):
    head = eqx.tree_at(lambda h: tuple(getattr(h, k) for k in ARRAY_FIELDS), head_template(cfg), w)
    ex = cfg.solver  # the ExactConfig
    fit = solve_map(
        head,
        tokens,
        mask,
        Objective.from_config(cfg),
        gtol=ex.gtol,
        max_steps=ex.max_steps,
        n_blocks=n_blocks,
        split=functools.partial(joint_split, width=cfg.model.width),
    )
    o = measure_blocked(fit.head, tokens, mask, test, n_blocks).order
    E = fit.head.embeddings()
    return dict(
        U=fit.U,
        c1=o.c1,
        cG=o.cG,
        r=o.r,
        psi=o.psi,
        converged=fit.converged,
        min_eig=fit.min_eig,
        gram_trace=jnp.trace(E @ E.T) / E.shape[0] ** 2,
    )


def joint_from_quenched(cfg: Config, quenched: SweepResult) -> dict[str, np.ndarray]:
    """The joint MAP of every run of ``cfg`` started from ``quenched``'s fit, rebalanced."""
    inp = sweep_inputs(cfg, None)
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    obj = Objective.from_config(cfg)
    out = {k: np.zeros((nP, nS)) for k in KEYS}
    neutral = cfg.replace(train=dict(init_attention="prior"))  # one compilation for all starts
    with jax.enable_x64(True):
        for i, P in enumerate(cfg.sweep.P):
            nb = jnp.asarray(blocks_of(P, inp.train.shape[1]), jnp.int32)
            for s in range(nS):
                w = {k: v.astype(np.float64) for k, v in quenched.head_arrays((i, s)).items()}
                w = rebalance(w, obj, cfg.model.width)
                j = i * nS + s
                r = _joint_fit(
                    neutral,
                    tuple(jnp.asarray(w[k]) for k in ARRAY_FIELDS),
                    jnp.asarray(inp.train[j]),
                    jnp.asarray(inp.mask[j], jnp.float64),
                    jnp.asarray(inp.test[j]),
                    nb,
                )
                for k in KEYS:
                    out[k][i, s] = float(r[k])
    return out


def order_arrays(res: SweepResult) -> dict[str, np.ndarray]:
    """``[nP, n_seeds]`` float arrays of :data:`KEYS` of a sweep, as :func:`joint_from_quenched`
    returns them (softmax ``a1``, ``aG`` as ``c1``, ``cG``; ``gram_trace``: tr C / D)."""
    a = res.arrays
    n1, nG = res.order_names
    g = np.asarray(a["gram"])
    out = {
        "U": a["U"],
        "c1": a[n1],
        "cG": a[nG],
        "r": a["r"],
        "psi": a["psi"],
        "converged": a["converged"],
        "min_eig": a["min_eig"],
        "gram_trace": np.trace(g, axis1=-2, axis2=-1) / g.shape[-1],
    }
    return {k: np.asarray(v, float) for k, v in out.items()}


def lowest_start(*runs: dict) -> tuple[dict, np.ndarray]:
    """Per run ``(P, seed)``, the :data:`KEYS` of the converged start of lowest finite U among
    ``runs`` (each as :func:`order_arrays`), and the index of that start."""
    U = np.stack(
        [np.where((r["converged"] > 0) & np.isfinite(r["U"]), r["U"], np.inf) for r in runs]
    )
    pick = np.argmin(U, axis=0)
    best = {k: np.take_along_axis(np.stack([r[k] for r in runs]), pick[None], 0)[0] for k in KEYS}
    return best, pick
