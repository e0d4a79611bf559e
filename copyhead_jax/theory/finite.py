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
from ._common import ATTENTIONS, OBJECTIVES, as_float, x64
from ._solvers import asinh_grid, minima_1d, minima_2d
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
from .minima import to_c
from .params import TheoryParams
from .potentials import ansatz

N_KEEP = 4  # local-minimum slots returned per P
N_R, N_S, N_BETA = 48, 97, 513  # grids: linear (r >= 0, s symmetric), softmax beta
ASINH_FRACTION = 60.0  # linear grids are fine within 1/60 of their half-width of 0
S0_RTOL = 1e-12  # linear: minima are kept if S <= S(0) (1 + S0_RTOL), the region the grid covers
N_SEEDS, N_ITER = 8, 30  # linear: grid minima refined by Newton, and its iterations


class SpanAction(NamedTuple):
    """Quadratic structure of the finite action (i) on the ansatz at one ``P`` (a pytree)."""

    A: jax.Array  # [3, D, D]: calA = c1^2 A[0] + cG^2 A[1] + c1 cG A[2]
    b: jax.Array  # [2, D, V]: b = c1 b[0] + cG b[1]
    ysq: jax.Array  # mean |Y|^2 (= L)
    P: jax.Array  # number of sequences (the likelihood convention is applied in solve_QD)
    R_lin: jax.Array  # [3]: R_lin = R[0] c1^2 + R[1] cG^2 + R[2] c1 cG
    R_beta: jax.Array  # R_soft(beta G*) = R_beta beta^2


def _prior_coefficients(st: DatasetStats, gram, params: TheoryParams):
    """``R_lin`` on the basis and ``R_soft(G*)`` (they depend on the Gram only)."""
    B1, B2 = conv.basis(params.L, gram.dtype)

    def R(G, attention):
        return finite_terms(G, tokens=st, gram=gram, params=params, attention=attention)["R"]

    r1, r2 = R(B1, "linear"), R(B2, "linear")
    R_lin = jnp.stack([r1, r2, R(B1 + B2, "linear") - r1 - r2])
    return R_lin, R(conv.shift_matrix(params.L, gram.dtype), "softmax")


def span_action(st: DatasetStats, gram, params: TheoryParams) -> SpanAction:
    """:class:`SpanAction` of one training set's statistics and an embedding Gram ``[D, D]``."""
    R_lin, R_beta = _prior_coefficients(st, gram, params)
    return _span_action(st, gram_root(gram), R_lin, R_beta, params)


def _span_action(st, root, R_lin, R_beta, params) -> SpanAction:
    B1, B2 = conv.basis(params.L, root.dtype)
    (M1, m1, ysq), (M2, m2, _), (M12, _, _) = (moments(B, st.S4, st.S2) for B in (B1, B2, B1 + B2))
    A = jnp.stack([root.T @ M @ root for M in (M1, M2, M12 - M1 - M2)])
    b = jnp.stack([root.T @ m1, root.T @ m2])
    return SpanAction(A, b, ysq, st.P, R_lin, R_beta)


def span_QD(c1, cG, sa: SpanAction, params: TheoryParams):
    """``Q, D`` of the finite action at ``A = c1 B1 + cG B2`` (scalars)."""
    calA = c1**2 * sa.A[0] + cG**2 * sa.A[1] + c1 * cG * sa.A[2]
    return solve_QD(calA, c1 * sa.b[0] + cG * sa.b[1], sa.ysq, P=sa.P, params=params)


def span_linear(c1, cG, sa: SpanAction, params: TheoryParams, objective: str = "map"):
    """Finite linear action ``Q + R_lin [+ D]`` at ``A = c1 B1 + cG B2``."""
    Q, D = span_QD(c1, cG, sa, params)
    R = sa.R_lin[0] * c1**2 + sa.R_lin[1] * cG**2 + sa.R_lin[2] * c1 * cG
    return Q + R + (D if objective == "post" else 0.0)


def span_softmax(beta, sa: SpanAction, params: TheoryParams, objective: str = "map"):
    """Finite softmax action ``Q + R_soft [+ D]`` at logits ``beta G*``."""
    _, a1, aG = ansatz(beta, as_float(params.L))
    Q, D = span_QD(a1, aG, sa, params)
    return Q + sa.R_beta * beta**2 + (D if objective == "post" else 0.0)


def _S0(sa: SpanAction, params: TheoryParams):
    """``S(G = 0) = Q(0) = chi P_eff |Y|^2 / (2 sigma^2)`` (no fit, no prior, ``D = 0``)."""
    Q, _ = solve_QD(sa.A[0] * 0.0, sa.b[0] * 0.0, sa.ysq, P=sa.P, params=params)
    return Q


def _minima_one(sa: SpanAction, *, params, attention, objective, n_keep):
    """Every local minimum at one ``P``; the grids bound the minima below ``S0`` (Q, D >= 0)."""
    S0 = _S0(sa, params)
    if attention == "softmax":
        b_max = 1.05 * jnp.sqrt(S0 / sa.R_beta) + 1.0
        grid = asinh_grid(-b_max, b_max, 2.0, N_BETA)
        beta, fx, valid, _ = minima_1d(
            lambda x: span_softmax(x, sa, params, objective), grid, n_keep=n_keep
        )
        return {"beta": beta, "value": fx, "valid": valid}
    L = params.L
    k = jnp.sqrt(1.0 - 1.0 / L)
    T = jnp.array([[1.0, -1.0 / (k * jnp.sqrt(L))], [0.0, 1.0 / k]])  # (r, s) -> (c1, cG)
    r1, r2, rx = sa.R_lin
    H = T.T @ jnp.array([[2.0 * r1, rx], [rx, 2.0 * r2]]) @ T  # R = x^T H x / 2
    # a minimum below S0 has R <= S0: |x_i| <= sqrt(2 S0 (H^-1)_ii)
    x_max = 1.05 * jnp.sqrt(2.0 * S0 * jnp.diag(jnp.linalg.inv(H)))
    r_grid = asinh_grid(0.0, x_max[0], x_max[0] / ASINH_FRACTION, N_R)
    s_grid = asinh_grid(-x_max[1], x_max[1], x_max[1] / ASINH_FRACTION, N_S)

    def f(x):
        c1, cG = to_c(x[0], x[1], L)
        return span_linear(c1, cG, sa, params, objective)

    # more seeds than slots: neighbouring grid cells of one flat minimum give duplicate seeds
    x, fx, valid, _ = minima_2d(f, r_grid, s_grid, n_keep=max(N_SEEDS, n_keep), n_iter=N_ITER)
    x, fx, valid = x[:n_keep], fx[:n_keep], valid[:n_keep]
    valid = valid & (fx <= S0 + S0_RTOL * jnp.abs(S0))
    c1, cG = to_c(x[:, 0], x[:, 1], L)
    return {"c1": c1, "cG": cG, "value": fx, "valid": valid}


@functools.partial(jax.jit, static_argnames=("params", "attention", "objective", "n_keep"))
def finite_core(st: DatasetStats, gram, *, params, attention, objective, n_keep):
    """:func:`_minima_one` vmapped over the ``P`` axis of ``st`` (one Gram)."""
    first = DatasetStats(st.S4[0], st.S2[0], st.P[0])
    R_lin, R_beta = _prior_coefficients(first, gram, params)
    root = gram_root(gram)

    def one(s):
        sa = _span_action(DatasetStats(*s), root, R_lin, R_beta, params)
        return _minima_one(sa, params=params, attention=attention, objective=objective,
                           n_keep=n_keep)  # fmt: skip

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


def _named(m: dict, L: int) -> dict[str, np.ndarray]:
    """Global minimiser (slot 0) and every minimum, NaN in empty slots (NumPy)."""
    ok = np.asarray(m["valid"])
    nan = lambda a: np.where(ok, np.asarray(a), np.nan)  # noqa: E731
    out: dict[str, Any] = {"n_min": ok.sum(-1), "minima_value": nan(m["value"]),
                           "minima_valid": ok}  # fmt: skip
    if "c1" in m:
        c1, cG = nan(m["c1"]), nan(m["cG"])
        r = c1 + cG / np.sqrt(L)
        psi = np.asarray(conv.copy_fraction(jnp.asarray(c1), jnp.asarray(cG), L))
        out.update(c1=c1[..., 0], cG=cG[..., 0], r=r[..., 0], psi=psi[..., 0],
                   minima_c1=c1, minima_cG=cG)  # fmt: skip
    else:
        beta = nan(m["beta"])
        p, a1, aG = (np.asarray(a) for a in ansatz(jnp.asarray(beta), as_float(L)))
        out.update(beta=beta[..., 0], aG=aG[..., 0], a1=a1[..., 0], p=p[..., 0],
                   minima_beta=beta, minima_aG=aG)  # fmt: skip
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
    check_choice("attention", attention, ATTENTIONS)
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
    m = finite_core(st, gram, params=params, attention=attention, objective=objective,
                     n_keep=n_keep)  # fmt: skip
    out = _named({k: np.asarray(v)[:n] for k, v in m.items()}, params.L)
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
    m = finite_minima(tokens, [tokens.shape[0]], gram=gram, params=params, attention=attention,
                      objective=objective, n_keep=n_keep)  # fmt: skip
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
        B1, B2 = conv.basis(L)
        if attention == "linear":
            G_span = out["c1"] * B1 + out["cG"] * B2
        else:
            G_span = out["beta"] * conv.shift_matrix(L)
        key = jax.random.key(0) if key is None else key
        G0 = G_span[None] + (jnp.std(G_span) + 1e-3) * jax.random.normal(key, (n_starts + 1, L, L))
        G0 = G0.at[0].set(G_span)
        st = DatasetStats(*(as_float(x) for x in as_stats(jnp.asarray(tokens), params.V)))
        with jax.numpy_dtype_promotion("standard"):  # optax counters, see lbfgs_minimise
            full = _full_core(G0, st, gram, params=params, attention=attention,
                              objective=objective, n_steps=n_steps)  # fmt: skip
    best = int(np.argmin(np.asarray(full["value"])))
    out["full"] = {k: np.asarray(v)[best] for k, v in full.items()}
    return out


__all__ = [
    "SpanAction",
    "finite_minima",
    "finite_theory_minimum",
    "nested_stats",
    "span_action",
    "span_linear",
    "span_softmax",
]
