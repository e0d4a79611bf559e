r"""Minimisers of an action over the full ``L x L`` matrix (no ansatz), by L-BFGS.

* :func:`full_minimum`: the minimiser of the full EK action (ii) from random starts (identity 7
  of docs/theory.md §7).
* :func:`lbfgs_minimise`, :func:`summarise_full`: the L-BFGS loop and the per-start summary
  (projection on ``{B1, B2}``, Z2 gauge, action, gradient norm), shared with the finite-P full
  minimiser of :func:`~.finite.finite_theory_minimum`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .._checks import check_choice, check_int
from ._common import OBJECTIVES, as_float, x64
from .action import ek_action, project
from .heads import theory_of
from .params import TheoryParams


def lbfgs_minimise(f, x0, n_steps: int):
    """``n_steps`` of optax L-BFGS (zoom line search). Call under standard dtype promotion:
    optax mixes int32/int64 step counters, which strict promotion rejects under x64."""
    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(f)

    def body(carry, _):
        x, state = carry
        value, grad = vg(x, state=state)
        updates, state = opt.update(grad, state, x, value=value, grad=grad, value_fn=f)
        return (optax.apply_updates(x, updates), state), None

    (x, _), _ = jax.lax.scan(body, (x0, opt.init(x0)), None, length=n_steps)
    return x


def summarise_full(f, G, attention):
    kind = theory_of(attention)
    A = kind.attention(G)
    pr = jax.vmap(project)(A)
    c1, cG = pr["c1"], pr["cG"]
    if kind.gauge_fix:  # Z2 gauge r > 0 (docs/theory.md §6)
        sgn = jnp.where(c1 + cG / jnp.sqrt(as_float(G.shape[-1])) < 0, -1.0, 1.0)
        c1, cG, G, A = c1 * sgn, cG * sgn, G * sgn[:, None, None], A * sgn[:, None, None]
    return {
        "G": G,
        "A": A,
        "c1": c1,
        "cG": cG,
        "cosine": pr["cosine"],
        "value": jax.vmap(f)(G),
        "grad_norm": jax.vmap(lambda x: jnp.linalg.norm(jax.grad(f)(x)))(G),
    }


_STATIC = ("params", "attention", "objective")


@functools.partial(jax.jit, static_argnames=(*_STATIC, "n_steps"))
def _full_ek_core(G0, P, *, params, attention, objective, n_steps):
    def f(x):
        return ek_action(x, P=P, params=params, attention=attention, objective=objective)

    G = jax.vmap(lambda x0: lbfgs_minimise(f, x0, n_steps))(G0)
    return summarise_full(f, G, attention)


@x64
def full_minimum(
    params: TheoryParams,
    P,
    attention: str = "linear",
    objective: str = "map",
    *,
    key: jax.Array,
    n_starts: int = 4,
    init_scale: float = 1.0,
    n_steps: int = 500,
) -> dict[str, np.ndarray]:
    r"""Minimise the full ``L x L`` EK action (ii) from ``n_starts`` random starts (identity 7).

    Starts: ``G0 ~ init_scale * N(0, 1)`` entries (linear: the attention matrix; softmax: the
    logits). L-BFGS (optax), ``n_steps`` steps. Returns per start the minimiser ``G``, the attention
    ``A``, its coefficients ``c1, cG`` on ``{B1, B2}`` (gauge ``r >= 0`` for linear), the subspace
    ``cosine``, the action ``value`` and the final gradient norm ``grad_norm``.
    """
    theory_of(attention)
    check_choice("objective", objective, OBJECTIVES)
    check_int("n_starts", n_starts, lo=1, hi=10_000)
    G0 = init_scale * jax.random.normal(key, (n_starts, params.L, params.L))
    with jax.numpy_dtype_promotion("standard"):  # optax mixes int32/int64 counters under x64
        out = _full_ek_core(
            G0,
            as_float(P),
            params=params,
            attention=attention,
            objective=objective,
            n_steps=n_steps,
        )
    return {k: np.asarray(v) for k, v in out.items()}


__all__ = ["full_minimum", "lbfgs_minimise", "summarise_full"]
