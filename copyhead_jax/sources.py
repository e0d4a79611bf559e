r"""Token sources: i.i.d. uniform tokens or a stationary Markov chain over V tokens.

The chain is given by its row-stochastic transition matrix $T_{uv}=\Pr(t_{a+1}=v\mid t_a=u)$,
one of

* the stickiness family $T=\rho I+(1-\rho)J/V$ (stay with probability $\rho+(1-\rho)/V$, else
  uniform; $\rho=0$ is the i.i.d. task), ``TaskConfig(source="markov", rho=...)``;
* a Dirichlet random matrix, rows i.i.d. $\mathrm{Dir}(\alpha\mathbf 1_V)$ drawn from
  ``TaskConfig.chain_seed`` (the same matrix for every data seed), ``alpha=...``;
* a given matrix, ``transition=...``.

Every sequence starts from the stationary law $\pi$ ($\pi T=\pi$), so every position has
marginal $\pi$. Sequence ``alpha`` of a batch is drawn from ``fold_in(key, alpha)``: datasets
are nested across P exactly as in :mod:`.data`. The stickiness family draws the i.i.d. tokens
of :func:`.data.sample_tokens` from the same key and replaces token ``a`` by token ``a-1`` where
a coin (drawn from another key) says stay: at ``rho = 0`` its draws are today's, bit for bit.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._checks import check_choice, check_float, check_int
from ._types import TokenBatch
from .data import SeedData, sample_tokens

SOURCES = ("iid", "markov")
STOCHASTIC_ATOL = 1e-6  # |row sum - 1| allowed in a given transition matrix
_COIN = 0x57A7  # the stay coins of sequence i use fold_in(fold_in(key, i), _COIN)

Transition = Float[np.ndarray, "V V"]


# ---- validation ------------------------------------------------------------------------------


def check_transition(T: Any, *, V: int | None = None, name: str = "transition") -> Transition:
    """A row-stochastic ``V x V`` matrix with a unique stationary law, as float64.

    Raises a one-line ``ValueError`` naming ``name`` otherwise."""
    try:
        T = np.asarray(T, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a square matrix of real numbers") from None
    if T.ndim != 2 or T.shape[0] != T.shape[1] or T.shape[0] < 2:
        raise ValueError(f"{name} must be a square V x V matrix with V >= 2, got shape {T.shape}")
    if V is not None and T.shape[0] != V:
        raise ValueError(f"{name} must be {V} x {V} (TaskConfig.V = {V}), got {T.shape}")
    if not np.all(np.isfinite(T)) or np.any(T < 0):
        raise ValueError(f"{name} must have finite entries >= 0 (a stochastic matrix)")
    err = np.max(np.abs(T.sum(axis=1) - 1.0))
    if err > STOCHASTIC_ATOL:
        raise ValueError(
            f"{name} must be row-stochastic (every row sums to 1 within {STOCHASTIC_ATOL}), "
            f"max |row sum - 1| = {err:.3g}"
        )
    n = T.shape[0]
    if np.linalg.matrix_rank(T.T - np.eye(n), tol=1e-9) != n - 1:
        raise ValueError(f"{name} must have a unique stationary law (an irreducible chain)")
    return T / T.sum(axis=1, keepdims=True)


def check_task_source(task) -> None:
    """Validate the source fields of a ``TaskConfig`` (called by its ``__post_init__``)."""
    check_choice("TaskConfig.source", task.source, SOURCES)
    bad_rho = f"TaskConfig.rho must be a real number in [0, 1), got {task.rho!r}"
    try:
        rho = check_float("TaskConfig.rho", task.rho, lo=0.0, hi=1.0, lo_open=False)
    except ValueError:
        raise ValueError(bad_rho) from None
    if rho >= 1.0:
        raise ValueError(bad_rho)
    check_int("TaskConfig.chain_seed", task.chain_seed, lo=0, hi=2**31 - 1)
    if task.alpha is not None:
        check_float("TaskConfig.alpha", task.alpha, lo=0.0, hi=1e6)
        # a tiny alpha can underflow whole rows to zeros: a reducible chain, refused here
        name = (
            f"the Dirichlet matrix of TaskConfig.alpha={task.alpha}, chain_seed {task.chain_seed}"
        )
        check_transition(dirichlet_transition(task.V, task.alpha, task.chain_seed), name=name)
    if task.transition is not None:
        T = check_transition(task.transition, V=task.V, name="TaskConfig.transition")
        object.__setattr__(task, "transition", tuple(tuple(float(x) for x in r) for r in T))
    chosen = [
        k
        for k, on in (
            ("rho", rho != 0.0),
            ("alpha", task.alpha is not None),
            ("transition", task.transition is not None),
        )
        if on
    ]
    if task.source == "iid" and chosen:
        raise ValueError(
            f"TaskConfig.{chosen[0]} needs TaskConfig.source='markov' (source is 'iid')"
        )
    if len(chosen) > 1:
        raise ValueError(
            f"TaskConfig takes one of rho, alpha, transition for the Markov chain, got {chosen}"
        )


def check_tokens(tokens: Any, *, L: int, V: int, name: str = "tokens") -> np.ndarray:
    """A user's token array: integers in ``{0..V-1}`` of shape ``[n, L]``, as int32."""
    t = np.asarray(tokens)
    if t.ndim != 2 or t.shape[1] != L or t.shape[0] < 1:
        raise ValueError(f"{name} must have shape [n, L] with n >= 1, L = {L}; got {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        if not (np.issubdtype(t.dtype, np.floating) and np.all(t == np.round(t))):
            raise ValueError(f"{name} must hold integer token indices, got dtype {t.dtype}")
    if t.min() < 0 or t.max() >= V:
        raise ValueError(
            f"{name} must hold token indices in [0, {V - 1}] (V = {V}), "
            f"got range [{t.min()}, {t.max()}]"
        )
    return t.astype(np.int32)


# ---- the chain -------------------------------------------------------------------------------


def sticky_transition(V: int, rho: float) -> Transition:
    """``T = rho I + (1 - rho) J / V`` (float64)."""
    return rho * np.eye(V) + (1.0 - rho) * np.full((V, V), 1.0 / V)


def dirichlet_transition(V: int, alpha: float, seed: int) -> Transition:
    """Rows i.i.d. ``Dirichlet(alpha 1_V)`` from ``numpy.random.default_rng(seed)`` (float64)."""
    rows = np.random.default_rng(seed).dirichlet(np.full(V, float(alpha)), size=V)
    return rows / rows.sum(axis=1, keepdims=True)


def transition_matrix(task) -> Transition:
    """The task's ``T`` (float64); ``J / V`` for ``source='iid'``."""
    V = task.V
    if task.source == "iid":
        return np.full((V, V), 1.0 / V)
    if task.transition is not None:
        return np.asarray(task.transition, dtype=np.float64)
    if task.alpha is not None:
        return dirichlet_transition(V, task.alpha, task.chain_seed)
    return sticky_transition(V, task.rho)


def stationary_law(T: Any) -> Float[np.ndarray, " V"]:
    r"""$\pi$ with $\pi T=\pi$, $\sum_v\pi_v=1$ (float64) of a checked transition matrix (least
    squares on the stacked system)."""
    T = check_transition(T)
    V = T.shape[0]
    A = np.vstack([T.T - np.eye(V), np.ones((1, V))])
    b = np.zeros(V + 1)
    b[-1] = 1.0
    pi = np.clip(np.linalg.lstsq(A, b, rcond=None)[0], 0.0, None)
    return pi / pi.sum()


def _cdf(p: np.ndarray) -> Array:
    """Cumulative sums along the last axis, float32, with every entry where the mass is complete
    (the float64 sum within 1e-12 of 1) set to 2: ``u < 1`` never reaches a zero-probability
    tail state through float32 rounding of the sum."""
    c = np.cumsum(p, axis=-1)
    return jnp.asarray(np.where(c >= 1.0 - 1e-12, 2.0, c), jnp.float32)


def _inverse_cdf(cdf: Float[Array, "... V"], u: Float[Array, "..."]) -> Array:
    """Index ``v`` with ``cdf[v-1] <= u < cdf[v]`` (a zero-probability state is never drawn)."""
    return jnp.sum(u[..., None] >= cdf[..., :-1], axis=-1).astype(jnp.int32)


def sample_chain(key: Array, *, n: int, L: int, T: Any) -> TokenBatch:
    """``n`` sequences of ``L`` tokens of the chain ``T``, started from its stationary law.

    Sequence ``alpha`` uses ``fold_in(key, alpha)`` (nested datasets, as :func:`sample_tokens`);
    the draws are inverse-CDF transforms of ``L`` uniforms per sequence."""
    T = check_transition(T)
    pi_cdf = _cdf(stationary_law(T))
    cdf = _cdf(T)

    def one(i):
        u = jax.random.uniform(jax.random.fold_in(key, i), (L,), dtype=jnp.float32)
        t0 = _inverse_cdf(pi_cdf, u[0])
        step = lambda prev, ua: (lambda t: (t, t))(_inverse_cdf(cdf[prev], ua))
        rest = jax.lax.scan(step, t0, u[1:])[1]
        return jnp.concatenate([t0[None], rest])

    return jax.vmap(one)(jnp.arange(n))


def sample_sticky(key: Array, *, n: int, L: int, V: int, rho: float) -> TokenBatch:
    """The stickiness chain ``rho I + (1 - rho) J / V`` from uniform stationary starts.

    Token ``a`` is token ``a-1`` where a coin of probability ``rho`` says stay, else the i.i.d.
    token that :func:`sample_tokens` draws from the same key; at ``rho = 0`` the result is
    :func:`sample_tokens`'s, bit for bit."""
    fresh = sample_tokens(key, n=n, L=L, V=V)
    if rho == 0.0:
        return fresh

    def coins(i):
        k = jax.random.fold_in(jax.random.fold_in(key, i), _COIN)
        return jax.random.uniform(k, (L,), dtype=jnp.float32) < rho

    stay = jax.vmap(coins)(jnp.arange(n)).at[:, 0].set(False)

    def step(prev, x):
        t = jnp.where(x[1], prev, x[0])
        return t, t

    seq = jax.lax.scan(step, fresh[:, 0], (fresh.T, stay.T))[1]
    return seq.T


def is_iid(task) -> bool:
    """Whether ``task`` draws i.i.d. uniform tokens (``source='iid'``, or the chain at rho = 0)."""
    plain = task.rho == 0.0 and task.alpha is None and task.transition is None
    return task.source == "iid" or plain


def sample_task(key: Array, task, *, n: int) -> TokenBatch:
    """``n`` sequences of ``task``'s source (``TaskConfig``), nested in ``n``."""
    L, V = task.L, task.V
    if task.source == "iid":
        return sample_tokens(key, n=n, L=L, V=V)
    if task.transition is None and task.alpha is None:
        return sample_sticky(key, n=n, L=L, V=V, rho=task.rho)
    return sample_chain(key, n=n, L=L, T=transition_matrix(task))


def task_data(key: Array, task, *, P_max: int, n_test: int | None = None) -> SeedData:
    """One seed's training pool and test set from ``task``'s source, with the keys of
    :func:`.data.seed_data` (``source='iid'`` and ``rho = 0`` give its draws exactly)."""
    n_test = task.n_test if n_test is None else n_test
    k_train, k_test = jax.random.split(key)
    return SeedData(
        train=sample_task(k_train, task, n=P_max), test=sample_task(k_test, task, n=n_test)
    )


def token_data(tokens: Any, *, L: int, V: int, P_max: int, n_test: int) -> SeedData:
    """A user's sequences as one seed's data: rows ``[0, P_max)`` the (nested) training pool,
    the next ``n_test`` rows the test set; validated by :func:`check_tokens`."""
    t = check_tokens(tokens, L=L, V=V)
    if t.shape[0] < P_max + n_test:
        raise ValueError(
            f"tokens must have at least P_max + n_test = {P_max + n_test} rows, got {t.shape[0]}"
        )
    return SeedData(train=jnp.asarray(t[:P_max]), test=jnp.asarray(t[P_max : P_max + n_test]))


def user_seed_data(tokens: Any, cfg, P_pad: int, *, check_only: bool = False):
    """A user's sequences split into seeds: block ``s`` of ``B = P_max + n_test`` rows is seed
    ``s`` (training pool: its first ``P_pad`` rows, nested; test set: its last ``n_test``).

    Needs ``n_seeds * B`` rows (``cfg``: a ``Config``); ``check_only`` returns the validated
    int32 array instead of the per-seed :class:`SeedData` list."""
    L, V, n_test = cfg.task.L, cfg.task.V, cfg.task.n_test
    t = check_tokens(tokens, L=L, V=V)
    B = cfg.sweep.P_max + n_test
    need = cfg.sweep.n_seeds * B
    if t.shape[0] < need:
        raise ValueError(
            f"tokens must have at least n_seeds x (P_max + n_test) = {cfg.sweep.n_seeds} x {B} = "
            f"{need} rows (one block per seed), got {t.shape[0]}"
        )
    if check_only:
        return t
    return [
        SeedData(
            train=jnp.asarray(t[s * B : s * B + P_pad]),
            test=jnp.asarray(t[(s + 1) * B - n_test : (s + 1) * B]),
        )
        for s in range(cfg.sweep.n_seeds)
    ]


def tokens_tag(tokens: Any) -> str:
    """First 16 hex digits of the SHA-256 of a token array's int32 bytes and shape."""
    t = np.ascontiguousarray(np.asarray(tokens, np.int32))
    return hashlib.sha256(str(t.shape).encode() + t.tobytes()).hexdigest()[:16]
