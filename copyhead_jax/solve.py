r"""Exact MAP of the quenched head: float64 L-BFGS to a stationary point, then its curvature.

With frozen embeddings the trained weights of a reduced head (THEORY.md §2c) are ``W^G``
($D\times D$) and ``W_O_hat`` ($V\times D$): about a thousand numbers at $L=25$, $V=5$. The
negative log posterior $U$ (``posterior.neg_log_posterior``, the same objective as Adam's) is
minimised over them in float64 by L-BFGS with a zoom (strong-Wolfe) line search,
``optax.lbfgs``, until $\|\nabla U\|\le g_{\rm tol}\max(1,|U|)$. Why this solver: it is
maintained in optax (already a dependency), runs inside ``jit``/``vmap`` (every run of a sweep in
one compiled program, each stopping on its own criterion), needs only gradients (a dense Hessian
costs ~1,000 Hessian-vector products per run), and on this problem reached $\|\nabla U\|\sim
10^{-13}$ where optimistix's BFGS (backtracking Armijo) stalled at $\|\nabla U\|\sim 20$ on the
linear head (measured on $L=25$, $V=5$, $P=100$).

A stationary point need not be a minimum (the linear head's $G=0$ is a saddle above
$P^*_{c_1}$), so each run also reports the smallest eigenvalue of the Hessian of $U$, from
``n_lanczos`` steps of Lanczos with full reorthogonalisation on Hessian-vector products (the
smallest Ritz value; exact when ``n_lanczos`` is at least the number of weights).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from ._types import Mask, Scalar, TokenBatch
from .models import AbstractHead
from .posterior import Objective, embedding_prior_energy, neg_log_posterior

N_LANCZOS = 64


class ExactFit(NamedTuple):
    """The exact solver's result for one run (a batch of runs adds a leading axis)."""

    head: AbstractHead  # the head at the stationary point
    U: Scalar  # U there
    grad_norm: Scalar  # |grad U| (weights W^G, W_O_hat)
    rel_grad: Scalar  # |grad U| / max(1, |U|)
    min_eig: Scalar  # smallest eigenvalue of the Hessian of U (Lanczos)
    n_steps: Int[Array, ""]  # L-BFGS iterations taken
    converged: Bool[Array, ""]  # rel_grad <= gtol and finite


def _split(head: AbstractHead):
    """``(x, unflatten)``: the trained weights ``(W^G, W_O_hat)`` as one flat vector."""
    sizes = (head.W_G.size, head.W_O_hat.size)
    shapes = (head.W_G.shape, head.W_O_hat.shape)

    def unflatten(x):
        W_G = x[: sizes[0]].reshape(shapes[0])
        W_O = x[sizes[0] :].reshape(shapes[1])
        return eqx.tree_at(lambda h: (h.W_G, h.W_O_hat), head, (W_G, W_O))

    return jnp.concatenate([head.W_G.ravel(), head.W_O_hat.ravel()]), unflatten


def lanczos_min_eig(hvp, n: int, key: Array, dtype, k: int = N_LANCZOS) -> Scalar:
    r"""Smallest Ritz value of ``k`` Lanczos steps on the symmetric operator ``hvp`` (size
    ``n``), with full reorthogonalisation (Golub & Van Loan, *Matrix Computations*, §10.1)."""
    k = min(k, n)
    v0 = jax.random.normal(key, (n,), dtype)
    v0 = v0 / jnp.linalg.norm(v0)
    Vs = jnp.zeros((k + 1, n), dtype).at[0].set(v0)

    def body(i, carry):
        Vs, alpha, beta, alive = carry
        w = hvp(Vs[i])
        a = jnp.dot(w, Vs[i])
        # full reorthogonalisation against every vector so far (twice: classical Gram-Schmidt)
        mask = (jnp.arange(k + 1) <= i)[:, None]
        for _ in range(2):
            w = w - (Vs * mask).T @ ((Vs * mask) @ w)
        b = jnp.linalg.norm(w)
        # breakdown: the Krylov space is invariant (e.g. repeated eigenvalues), its Ritz values
        # are exact; later steps would only orthonormalise rounding noise, so they are dropped
        scale = jnp.maximum(jnp.max(jnp.abs(alpha)), jnp.abs(a))
        go = alive & (b > 1e-10 * scale)
        Vs = Vs.at[i + 1].set(jnp.where(go, w / jnp.where(go, b, 1.0), 0.0))
        alpha = alpha.at[i].set(jnp.where(alive, a, jnp.nan))
        return Vs, alpha, beta.at[i].set(jnp.where(go, b, 0.0)), go

    init = (Vs, jnp.zeros(k, dtype), jnp.zeros(k, dtype), jnp.ones((), bool))
    _, alpha, beta, _ = lax.fori_loop(0, k, body, init)
    used = ~jnp.isnan(alpha)
    big = 2.0 * jnp.max(jnp.where(used, jnp.abs(alpha), 0.0)) + 1.0  # beyond every Ritz value
    alpha = jnp.where(used, alpha, big)
    Tm = jnp.diag(alpha) + jnp.diag(beta[:-1], 1) + jnp.diag(beta[:-1], -1)
    return jnp.linalg.eigvalsh(Tm)[0]


def solve_map(
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    *,
    gtol: float = 1e-9,
    max_steps: int = 5000,
    memory_size: int = 20,
    n_lanczos: int = N_LANCZOS,
) -> ExactFit:
    r"""Minimise $U$ over ``(W^G, W_O_hat)`` from ``head`` (embeddings frozen) by L-BFGS.

    The energy minimised and reported is the quenched $U$ (:func:`quenched_energy`: data term
    and the priors of $W^G$, $\hat W^O$; the frozen embeddings' prior is a constant left out, so
    that a reduced head and its width-$N$ original compare: $U_N-U_{N,\rm emb}=U+U_\perp$).
    Pure JAX (``jit``/``vmap`` over runs). Run it in float64 (inside ``jax.enable_x64(True)``,
    with a float64 head): the stopping rule $\|\nabla U\|\le g_{\rm tol}\max(1,|U|)$ with
    ``gtol = 1e-9`` is below float32 resolution."""
    x0, unflatten = _split(head)
    f = lambda x: quenched_energy(unflatten(x), tokens, mask, obj)
    opt = optax.lbfgs(memory_size=memory_size)
    vg = optax.value_and_grad_from_state(f)
    u0, g0 = jax.value_and_grad(f)(x0)

    def rel(u, g):
        return jnp.linalg.norm(g) / jnp.maximum(1.0, jnp.abs(u))

    def cond(c):
        x, state, u, g, it = c
        return (it < max_steps) & (rel(u, g) > gtol) & jnp.isfinite(u)

    def body(c):
        x, state, _, _, it = c
        u, g = vg(x, state=state)
        upd, state = opt.update(g, state, x, value=u, grad=g, value_fn=f)
        x = optax.apply_updates(x, upd)
        u1, g1 = optax.tree_utils.tree_get(state, "value"), optax.tree_utils.tree_get(state, "grad")
        return x, state, u1, g1, it + 1

    it0 = jnp.zeros((), jnp.int32)
    x, _, _, _, it = lax.while_loop(cond, body, (x0, opt.init(x0), u0, g0, it0))
    u, g = jax.value_and_grad(f)(x)
    hvp = lambda v: jax.jvp(jax.grad(f), (x,), (v,))[1]
    key = jax.random.key(0)
    lam = lanczos_min_eig(hvp, x.size, key, x.dtype, n_lanczos)
    r = rel(u, g)
    return ExactFit(
        head=unflatten(x),
        U=u,
        grad_norm=jnp.linalg.norm(g),
        rel_grad=r,
        min_eig=lam,
        n_steps=it,
        converged=(r <= gtol) & jnp.isfinite(u),
    )


def quenched_energy(head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective) -> Scalar:
    """``U`` without the (constant) prior energy of the frozen embeddings."""
    return neg_log_posterior(head, tokens, mask, obj) - embedding_prior_energy(head, obj)


def hessian(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective, *, batch: int = 32
) -> Float[Array, "n n"]:
    """Dense Hessian of ``U`` in the flat ``(W^G, W_O_hat)`` coordinates: one Hessian-vector
    product per weight (~1,000 at L=25, V=5), ``batch`` of them vectorised at a time."""
    x0, unflatten = _split(head)
    f = lambda x: neg_log_posterior(unflatten(x), tokens, mask, obj)
    g = jax.grad(f)
    eye = jnp.eye(x0.size, dtype=x0.dtype)
    return lax.map(lambda v: jax.jvp(g, (x0,), (v,))[1], eye, batch_size=batch)
