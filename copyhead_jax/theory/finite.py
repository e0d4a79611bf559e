r"""Finite-width, finite-P theory of one run (docs/theory.md §2b, §3 (i)): every local minimum.

The exact action (i) on the training set ``tokens[:P]`` and the realised embedding Gram, restricted
to the ansatz (linear: ``A = c1 B1 + cG B2``; softmax: logits ``beta G*``). On the ansatz the
moments of :func:`~.action.moments` are quadratic (``M``) and linear (``m``) in ``(c1, cG)``, so
three calls give them for every ``c`` (:class:`SpanAction`); the prior is a quadratic form
(``R_lin`` in ``c``, ``R_soft(beta G*) = beta^2 R_soft(G*)``). One evaluation is then one ``D x D``
Cholesky solve (:func:`~.action.solve_QD`, the same code as :func:`~.action.finite_action`).

* :func:`nested_stats`: :func:`~.action.dataset_stats` of the nested prefixes ``tokens[:P]``.
* :func:`finite_minima`: every local minimum below ``S(G=0)`` at each ``P`` of one run (grid, then
  Newton, :mod:`._solvers`), mapped over ``P`` in one program: a curve compiles once per bucket.
* :func:`finite_theory_minimum`: one training set, optionally also minimised over the full
  ``L x L`` matrix.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import conventions as conv
from .._checks import check_choice, check_int
from ._common import OBJECTIVES, as_float, x64
from .action import (
    DatasetStats,
    as_stats,
    finite_action,
    finite_terms,
    gram_root,
    moments,
    prior_gram,
    solve_QD,
)
from .full import lbfgs_minimise, summarise_full
from .heads import theory_of
from .params import TheoryParams

N_KEEP = 4  # local-minimum slots returned per P


class SpanAction(NamedTuple):
    """Quadratic structure of the finite action (i) on the ansatz at one ``P`` (a pytree)."""

    A: jax.Array  # [3, D, D]: calA = c1^2 A[0] + cG^2 A[1] + c1 cG A[2]
    b: jax.Array  # [2, D, V]: b = c1 b[0] + cG b[1]
    ysq: jax.Array  # mean |Y|^2 (= L)
    P: jax.Array  # number of sequences (the likelihood convention is applied in solve_QD)
    H: jax.Array  # [d, d]: the prior of the ansatz's logits, R(x) = x^T H x / 2


def _prior_hessian(st: DatasetStats, gram, params: TheoryParams, kind) -> jax.Array:
    """``H`` of the prior ``R(x) = x^T H x / 2`` in the kind's coordinates: the ansatz's logits
    are linear in ``x`` and the prior quadratic in the logits, so the Hessian at 0 is exact (it
    depends on the Gram only)."""
    d = len(kind.coords)

    def R(x):
        G = kind.logits(x, params.L)
        return finite_terms(G, tokens=st, gram=gram, params=params, attention=kind.name)["R"]

    return jax.hessian(R)(jnp.zeros(d, gram.dtype))


def span_action(st: DatasetStats, gram, params: TheoryParams, attention="linear") -> SpanAction:
    """:class:`SpanAction` of one training set's statistics and an embedding Gram ``[D, D]``."""
    kind = theory_of(attention)
    return _span_action(st, gram_root(gram), _prior_hessian(st, gram, params, kind), params)


def _span_action(st, root, H, params) -> SpanAction:
    B1, B2 = conv.basis(params.L, root.dtype)
    (M1, m1, ysq), (M2, m2, _), (M12, _, _) = (moments(B, st.S4, st.S2) for B in (B1, B2, B1 + B2))
    A = jnp.stack([root.T @ M @ root for M in (M1, M2, M12 - M1 - M2)])
    b = jnp.stack([root.T @ m1, root.T @ m2])
    return SpanAction(A, b, ysq, st.P, H)


def span_QD(c1, cG, sa: SpanAction, params: TheoryParams):
    """``Q, D`` of the finite action at ``A = c1 B1 + cG B2`` (scalars)."""
    calA = c1**2 * sa.A[0] + cG**2 * sa.A[1] + c1 * cG * sa.A[2]
    return solve_QD(calA, c1 * sa.b[0] + cG * sa.b[1], sa.ysq, P=sa.P, params=params)


def span_value(x, sa: SpanAction, params: TheoryParams, attention="linear", objective="map"):
    """The finite action ``Q + R [+ D]`` at the kind's ansatz coordinates ``x``."""
    kind = theory_of(attention)
    Q, D = span_QD(*kind.span(x, as_float(params.L)), sa, params)
    return Q + 0.5 * x @ sa.H @ x + (D if objective == "post" else 0.0)


def _S0(sa: SpanAction, params: TheoryParams):
    """``S(A = 0) = Q(0) = chi P_eff |Y|^2 / (2 sigma^2)`` (no fit, no prior, ``D = 0``)."""
    Q, _ = solve_QD(sa.A[0] * 0.0, sa.b[0] * 0.0, sa.ysq, P=sa.P, params=params)
    return Q


def _minima_one(sa: SpanAction, *, params, kind, objective, n_keep):
    """Every local minimum at one ``P``. A minimum below ``S0 = S(A = 0)`` has its prior
    ``x^T H x / 2 <= S0`` (Q, D >= 0), so ``|x_i| <= sqrt(2 S0 (H^-1)_ii)`` bounds the grids."""
    S0 = _S0(sa, params)
    x_max = 1.05 * jnp.sqrt(2.0 * S0 * jnp.diag(jnp.linalg.inv(sa.H)))
    x, fx, valid = kind.finite_minima(
        lambda z: span_value(z, sa, params, kind, objective), x_max, n_keep=n_keep, S0=S0
    )
    return {"x": x, "value": fx, "valid": valid}


@functools.partial(jax.jit, static_argnames=("params", "kind", "objective", "n_keep"))
def finite_core(st: DatasetStats, gram, *, params, kind, objective, n_keep):
    """:func:`_minima_one` vmapped over the ``P`` axis of ``st`` (one Gram)."""
    first = DatasetStats(st.S4[0], st.S2[0], st.P[0])
    H = _prior_hessian(first, gram, params, kind)
    root = gram_root(gram)

    def one(s):
        sa = _span_action(DatasetStats(*s), root, H, params)
        return _minima_one(sa, params=params, kind=kind, objective=objective, n_keep=n_keep)

    return jax.lax.map(one, (st.S4, st.S2, st.P))


def nested_stats(tokens, P_values, V: int) -> DatasetStats:
    """:func:`~.action.dataset_stats` of ``tokens[:P]`` for each ``P`` (leaves ``[nP, ...]``).

    Incremental integer counts (exact in float64) divided by ``P``: each slice equals
    ``dataset_stats`` of the prefix to one rounding.
    """
    tokens = np.asarray(tokens)
    P = np.asarray(P_values, dtype=np.int64)
    if P.ndim != 1 or P.size == 0 or P.min() < 1 or P.max() > tokens.shape[0]:
        raise ValueError(f"P_values must be ints in [1, {tokens.shape[0]}] (the token count)")
    L = tokens.shape[1]
    X = np.eye(V)[tokens].reshape(tokens.shape[0], L * V)
    order = np.argsort(P, kind="stable")
    S4 = np.empty((P.size, L * V, L * V))
    S2 = np.empty((P.size, L * V))
    acc4, acc2, done = np.zeros((L * V, L * V)), np.zeros(L * V), 0
    for i in order:
        blk = X[done : P[i]]
        acc4 += blk.T @ blk
        acc2 += blk.sum(0)
        done = max(done, int(P[i]))
        S4[i], S2[i] = acc4 / P[i], acc2 / P[i]
    f = functools.partial(jnp.asarray, dtype=jnp.result_type(float))
    return DatasetStats(f(S4.reshape(-1, L, V, L, V)), f(S2.reshape(-1, L, V)), f(P))


def _check_inputs(tokens, gram, params: TheoryParams):
    L, V = params.L, params.V
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] != L:
        raise ValueError(f"tokens must be an int array [P, L={L}], got {tokens.shape}")
    if tokens.min() < 0 or tokens.max() >= V:
        raise ValueError(f"tokens must lie in [0, V-1] = [0, {V - 1}]")
    gram = prior_gram(params) if gram is None else jnp.asarray(gram, dtype=jnp.float64)
    if gram.shape != (V + L, V + L):
        raise ValueError(f"gram must have shape (V+L, V+L) = {(V + L,) * 2}, got {gram.shape}")
    return tokens, gram


def _named(m: dict, kind, L: int) -> dict[str, np.ndarray]:
    """Global minimiser (slot 0) and every minimum, NaN in empty slots (NumPy)."""
    ok = np.asarray(m["valid"])
    out: dict[str, Any] = {
        "n_min": ok.sum(-1),
        "minima_value": np.where(ok, np.asarray(m["value"]), np.nan),
        "minima_valid": ok,
    }
    x = np.where(ok[..., None], np.asarray(m["x"]), np.nan)
    named = {k: np.asarray(v) for k, v in kind.named(jnp.asarray(x), as_float(L)).items()}
    out.update({k: named[k][..., 0] for k in kind.fields}, x=x[..., 0, :])
    out.update({f"minima_{k}": named[k] for k in kind.minima_fields})
    out["action"] = out["minima_value"][..., 0]
    return out


@x64
def finite_minima(
    tokens,
    P_values,
    *,
    gram=None,
    params: TheoryParams,
    attention: str = "linear",
    objective: str = "map",
    n_keep: int = N_KEEP,
) -> dict[str, Any]:
    r"""Every local minimum of the finite action (i) on the ansatz at each ``P`` of one run.

    ``tokens``: the run's int ``[P_max, L]`` training sequences, ``P`` uses ``tokens[:P]``;
    ``gram``: its embedding Gram ``U U^T / N`` ``[V+L, V+L]`` (rows: V tokens, then L positions),
    ``None`` for the prior Gram (``N -> infinity``). Minima below ``S(G = 0)`` are kept, slot 0
    is the global one. Returns NumPy arrays over ``P`` (input order): linear ``c1, cG, r, psi``,
    softmax ``beta, aG, a1, p``; ``action``, ``n_min`` and ``minima_*[P, n_keep]`` (``value``,
    ``valid``, ``c1, cG`` or ``beta, aG``; NaN in empty slots). ``P`` is padded to a bucket
    (8, 16, 32, ...): one compiled program per bucket, Gram and data shape.
    """
    kind = theory_of(attention)
    check_choice("objective", objective, OBJECTIVES)
    check_int("n_keep", n_keep, lo=1, hi=64)
    tokens, gram = _check_inputs(tokens, gram, params)
    P = np.atleast_1d(np.asarray(P_values))
    if P.ndim != 1 or P.size == 0 or not np.all(P == np.round(P)):
        raise ValueError("P_values must be a non-empty 1-d array of integers")
    n = P.size
    bucket = max(8, 1 << (n - 1).bit_length())
    P_pad = np.concatenate([P, np.full(bucket - n, P[-1])]).astype(np.int64)
    st = nested_stats(tokens, P_pad, params.V)
    m = finite_core(st, gram, params=params, kind=kind, objective=objective, n_keep=n_keep)
    out = _named({k: np.asarray(v)[:n] for k, v in m.items()}, kind, params.L)
    return {"P": P, **out, "attention": attention, "objective": objective}


@functools.partial(jax.jit, static_argnames=("params", "attention", "objective", "n_steps"))
def _full_core(G0, st, gram, *, params, attention, objective, n_steps):
    def S(G):
        return finite_action(
            G, tokens=st, gram=gram, params=params, attention=attention, objective=objective
        )

    G = jax.vmap(lambda g: lbfgs_minimise(S, g, n_steps))(G0)
    return summarise_full(S, G, attention)


@x64
def finite_theory_minimum(
    *,
    tokens,
    gram=None,
    params: TheoryParams,
    attention: str = "linear",
    objective: str = "map",
    space: str = "span",
    key: jax.Array | None = None,
    n_starts: int = 2,
    n_steps: int = 500,
    n_keep: int = N_KEEP,
) -> dict[str, Any]:
    r"""Minimiser of the exact finite-P action (i) of one run: same tokens, same embedding Gram.

    ``tokens``: int ``[P, L]``; ``gram``: ``U U^T / N`` or ``None`` (prior Gram). ``space='span'``:
    :func:`finite_minima` at ``P = len(tokens)`` as scalars (every local minimum in
    ``minima_*``). The finite dataset breaks the cyclic symmetry, so the exact minimiser leaves
    the span slightly; ``space='full'`` also minimises over the full ``L x L`` matrix by L-BFGS
    from the span minimiser and ``n_starts`` perturbations of it, and reports the best one
    (``full``: ``G, A, c1, cG, cosine, value, grad_norm``).
    """
    check_choice("space", space, ("span", "full"))
    tokens, gram = _check_inputs(tokens, gram, params)
    m = finite_minima(
        tokens,
        [tokens.shape[0]],
        gram=gram,
        params=params,
        attention=attention,
        objective=objective,
        n_keep=n_keep,
    )
    out: dict[str, Any] = {}
    for k, v in m.items():  # the single P as scalars (minima_* stay [n_keep])
        if isinstance(v, np.ndarray):
            v = v[0]
            v = float(v) if v.ndim == 0 and k != "n_min" else v
        out[k] = v
    out["n_min"] = int(out["n_min"])
    if space == "span":
        return out
    L = params.L
    with jax.enable_x64(True):
        G_span = theory_of(attention).logits(jnp.asarray(out["x"]), L)
        key = jax.random.key(0) if key is None else key
        G0 = G_span[None] + (jnp.std(G_span) + 1e-3) * jax.random.normal(key, (n_starts + 1, L, L))
        G0 = G0.at[0].set(G_span)
        st = DatasetStats(*(as_float(x) for x in as_stats(jnp.asarray(tokens), params.V)))
        with jax.numpy_dtype_promotion("standard"):  # optax counters, see lbfgs_minimise
            full = _full_core(
                G0,
                st,
                gram,
                params=params,
                attention=attention,
                objective=objective,
                n_steps=n_steps,
            )
    best = int(np.argmin(np.asarray(full["value"])))
    out["full"] = {k: np.asarray(v)[best] for k, v in full.items()}
    return out


__all__ = [
    "SpanAction",
    "finite_minima",
    "finite_theory_minimum",
    "nested_stats",
    "span_action",
    "span_value",
]
