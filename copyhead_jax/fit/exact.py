r"""Exact MAP of the quenched head: float64 L-BFGS to a stationary point, then its curvature.

With frozen embeddings the trained weights of a reduced head (docs/theory.md §2c) are ``W^G``
($D\times D$) and ``W_O_hat`` ($V\times D$): about a thousand numbers at $L=25$, $V=5$. The
quenched $U$ (the data term of ``objective.neg_log_posterior`` through the head's own fused
energy and hand-written gradient, plus the priors of the trained weights) is minimised over them
in float64 by L-BFGS until $\|\nabla U\|\le g_{\rm tol}\max(1,|U|)$.

Why this shape (``benchmarks/profile_exact.py``; paper configuration, $L=25$, $V=5$, width
$10^4$): the Hessian at the minimum is the identity (the prior) plus a low-rank data part,
eigenvalues in $[0.3, 3.5]$ at $P=300$, so L-BFGS needs 10-80 iterations and the cost is the
number of evaluations of $U,\nabla U$ (one pass over the $P\times L\times L$ block each) and
the compilation. The previous solver (:func:`solve_map_optax`, kept as the tests' reference)
spent ~75% of its time in a 64-step forward-over-reverse Lanczos (a product costs 3
evaluations), compiled ~12 s per padding (4 paddings per sweep), and padded P = 4 to 128. Now:

* one evaluation per iteration, at one place in the program: the line search (Armijo
  backtracking with quadratic interpolation, a rounding-level slack near the end; the unit
  L-BFGS step is almost always taken) is a state of the same ``while`` loop, so the compiled
  program holds the energy once, not at each call site of a zoom line search; 40 pairs of
  memory (20: 17% more evaluations on the softmax head at P = 800);
* the data term runs over blocks of ``BLOCK`` sequences with a *traced* block count
  (``n_blocks``): one compiled program serves every $P$ of a sweep, each chunk doing only its
  own $P$'s work;
* the certificate, the smallest Hessian eigenvalue, is Lanczos with full reorthogonalisation on
  finite-difference Hessian-vector products $(\nabla U(x+\epsilon v)-\nabla U(x))/\epsilon$
  (one evaluation each; error ~3e-8 against the dense Hessian), stopped when its smallest Ritz
  value has settled (checked every ``LANCZOS_ROUND`` steps): 22-26 steps at P = 300, ~40 where
  the data Hessian vanishes (saturated softmax, min_eig = 1 = the prior), 64 at most. It is
  still 40-50% of the evaluations (the L-BFGS takes 15-90).

A stationary point need not be a minimum (the linear head's $G=0$ is a saddle above
$P^*_{c_1}$), which is what the certificate is for. Where $U$ has several minima (the linear
head at $P\ge 640$), which one a run ends in depends on the path: 1 of the 320 paper runs ends
in another minimum than with the optax solver (U 0.8% higher); with a unit first step instead of
$1/\|\nabla U\|$, two others did, one higher and one lower.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax import lax
from jaxtyping import Array, Bool, Float, Int

from .._types import Mask, Scalar, TokenBatch
from ..models import AbstractHead
from ..objective import Objective, embedding_prior_energy, neg_log_posterior

N_LANCZOS = 64  # Lanczos steps at most
LANCZOS_ROUND = 2  # Lanczos steps between two checks of the smallest Ritz value (4: +12%)
LANCZOS_RTOL = 1e-7  # settled: it moved by at most this times the largest Ritz value in a round
FD_EPS = 1e-6  # finite-difference step of a Hessian-vector product (unit direction)
BLOCK = 32  # sequences per block of the data term
C1 = 1e-4  # Armijo constant


class ExactFit(NamedTuple):
    """The exact solver's result for one run (a batch of runs adds a leading axis)."""

    head: AbstractHead  # the head at the stationary point
    U: Scalar  # U there
    grad_norm: Scalar  # |grad U| (weights W^G, W_O_hat)
    rel_grad: Scalar  # |grad U| / max(1, |U|)
    min_eig: Scalar  # smallest eigenvalue of the Hessian of U (Lanczos)
    n_steps: Int[Array, ""]  # L-BFGS iterations taken
    converged: Bool[Array, ""]  # rel_grad <= gtol and finite


def split_weights(head: AbstractHead):
    """``(x, unflatten)``: the trained weights ``(W^G, W_O_hat)`` as one flat vector."""
    sizes = (head.W_G.size, head.W_O_hat.size)
    shapes = (head.W_G.shape, head.W_O_hat.shape)

    def unflatten(x):
        W_G = x[: sizes[0]].reshape(shapes[0])
        W_O = x[sizes[0] :].reshape(shapes[1])
        return eqx.tree_at(lambda h: (h.W_G, h.W_O_hat), head, (W_G, W_O))

    return jnp.concatenate([head.W_G.ravel(), head.W_O_hat.ravel()]), unflatten


def blocks_of(P: int, P_pad: int, block: int = BLOCK) -> int:
    """Blocks of the data term (of a ``P_pad``-row pool) that hold its first ``P`` rows."""
    return -(-P // min(block, P_pad))


def quenched_split(head: AbstractHead, obj: Objective):
    """``(x0, unflatten, inv_var)``: the trained weights ``(W^G, W_O_hat)`` flat, and the
    inverse prior variance of each coordinate."""
    x0, unflatten = split_weights(head)
    nG = head.W_G.size
    inv_var = jnp.concatenate(
        [
            jnp.full((nG,), 1.0 / obj.sigma_G**2, x0.dtype),
            jnp.full((x0.size - nG,), 1.0 / obj.sigma_O**2, x0.dtype),
        ]
    )
    return x0, unflatten, inv_var


def value_and_grad_fn(
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    n_blocks=None,
    block: int = BLOCK,
    split=quenched_split,
):
    r"""``(x0, unflatten, vg)``: ``vg(x) = (U, grad U)`` of the quenched energy
    (:func:`quenched_energy`) in the flat weights, the data term summed over the first
    ``n_blocks`` blocks of ``block`` sequences (all by default; may be traced, so that one
    compiled program serves datasets of any length up to ``tokens.shape[0]``; rows past the
    data must be masked out). ``split(head, obj) -> (x0, unflatten, inv_var)`` chooses the
    trained coordinates (default: :func:`quenched_split`; trained embeddings:
    ``models._reduce_trained.joint_split``); $U$ is the data term plus
    $\tfrac12\sum_i x_i^2/\sigma_i^2$ over them."""
    x0, unflatten, inv_var = split(head, obj)
    P, L = tokens.shape
    B = min(block, P)
    n = -(-P // B)
    pad = n * B - P
    tb = jnp.concatenate([tokens, jnp.zeros((pad, L), tokens.dtype)]).reshape(n, B, L)
    kb = jnp.concatenate([mask > 0, jnp.zeros((pad,), bool)]).reshape(n, B)
    n_blk = n if n_blocks is None else jnp.minimum(n_blocks, n)
    energy = head.energy_fn()

    def MR(x):
        h = unflatten(x)
        return h.logit_gram(), h.readout_map()

    def vg(x):
        (M, R), pull = jax.vjp(MR, x)

        def body(i, acc):
            loss, (gM, gR) = energy(M, R, tb[i], kb[i])
            return acc[0] + loss, acc[1] + gM, acc[2] + gR

        zero = (jnp.zeros((), M.dtype), jnp.zeros_like(M), jnp.zeros_like(R))
        loss, gM, gR = lax.fori_loop(0, n_blk, body, zero)
        (gx,) = pull((gM, gR))
        w = obj.likelihood_weight
        return w * loss + 0.5 * jnp.sum(inv_var * x * x), w * gx + inv_var * x

    return x0, unflatten, vg


def _two_loop(g, S, Y, rho, ptr, n_pairs):
    """``-H g`` for the L-BFGS inverse-Hessian ``H`` of the pairs in the ring ``(S, Y)``."""
    m = S.shape[0]
    idx = lambda i: (ptr - 1 - i) % m  # i = 0: the newest pair

    def first(i, c):
        q, al = c
        j = idx(i)
        a = jnp.where(i < n_pairs, rho[j] * jnp.dot(S[j], q), 0.0)
        return q - a * Y[j], al.at[i].set(a)

    q, al = lax.fori_loop(0, m, first, (g, jnp.zeros(m, g.dtype)))
    j0 = idx(0)
    yy = jnp.dot(Y[j0], Y[j0])
    gamma = jnp.where(n_pairs > 0, jnp.dot(S[j0], Y[j0]) / jnp.where(yy > 0, yy, 1.0), 1.0)

    def second(k, r):
        i = m - 1 - k
        j = idx(i)
        b = jnp.where(i < n_pairs, rho[j] * jnp.dot(Y[j], r), 0.0)
        return r + S[j] * (al[i] - b)

    return -lax.fori_loop(0, m, second, gamma * q)


class _LBFGS(NamedTuple):
    x: Array
    u: Array  # U(x), inf before the first evaluation
    g: Array
    d: Array  # search direction from x
    a: Array  # trial step: the next evaluation is at x + a d
    S: Array
    Y: Array
    rho: Array
    ptr: Array  # next slot of the ring
    n_pairs: Array
    it: Array  # accepted steps
    n_eval: Array
    n_back: Array  # backtracks of the current line search


def _lbfgs(vg, x0, gtol: float, max_steps: int, m: int) -> _LBFGS:
    """L-BFGS with an Armijo backtracking line search, one evaluation of ``vg`` per pass of a
    single ``while`` loop (the first pass evaluates ``x0``)."""
    n, dt = x0.size, x0.dtype
    i32 = lambda v: jnp.asarray(v, jnp.int32)
    rel = lambda u, g: jnp.linalg.norm(g) / jnp.maximum(1.0, jnp.abs(u))

    def cond(s: _LBFGS):
        go = (s.n_eval == 0) | ((rel(s.u, s.g) > gtol) & jnp.isfinite(s.u))
        return go & (s.it < max_steps) & (s.n_back <= 40)

    def body(s: _LBFGS) -> _LBFGS:
        z = s.x + s.a * s.d
        uz, gz = vg(z)
        gd = jnp.dot(s.g, s.d)
        finite = jnp.isfinite(uz) & jnp.all(jnp.isfinite(gz))
        # the Armijo decrease, or near the end (decreases below the rounding of U) a step that
        # does not raise U beyond rounding and lowers |grad U|
        tiny = 1e-12 * jnp.maximum(1.0, jnp.abs(s.u))
        lower = (uz <= s.u + tiny) & (jnp.linalg.norm(gz) < jnp.linalg.norm(s.g))
        ok = finite & ((uz <= s.u + C1 * s.a * gd) | lower)
        # accepted: store the pair (curvature s.y > 0 only), new direction
        sv, yv = z - s.x, gz - s.g
        sy = jnp.dot(sv, yv)
        keep = ok & (s.n_eval > 0) & (sy > 1e-10 * jnp.linalg.norm(sv) * jnp.linalg.norm(yv))
        S = jnp.where(keep, s.S.at[s.ptr].set(sv), s.S)
        Y = jnp.where(keep, s.Y.at[s.ptr].set(yv), s.Y)
        rho = jnp.where(keep, s.rho.at[s.ptr].set(1.0 / jnp.where(keep, sy, 1.0)), s.rho)
        ptr = jnp.where(keep, (s.ptr + 1) % m, s.ptr)
        n_pairs = jnp.where(keep, jnp.minimum(s.n_pairs + 1, m), s.n_pairs)
        d = _two_loop(gz, S, Y, rho, ptr, n_pairs)
        descent = jnp.dot(d, gz) < 0
        d = jnp.where(descent, d, -gz)
        a_first = jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.linalg.norm(gz), 1e-300))
        a_new = jnp.where(descent & (n_pairs > 0), 1.0, a_first)
        # rejected: shrink the step (minimiser of the quadratic through u, gd, uz), in [0.1, 0.5]
        curv = uz - s.u - gd * s.a
        a_q = -gd * s.a**2 / (2.0 * jnp.where(curv > 0, curv, 1.0))
        a_back = jnp.where(finite & (curv > 0), jnp.clip(a_q, 0.1 * s.a, 0.5 * s.a), 0.1 * s.a)
        pick = lambda new, old: jnp.where(ok, new, old)
        return _LBFGS(
            x=pick(z, s.x),
            u=pick(uz, s.u),
            g=pick(gz, s.g),
            d=pick(d, s.d),
            a=pick(a_new, a_back),
            S=S,
            Y=Y,
            rho=rho,
            ptr=ptr,
            n_pairs=n_pairs,
            it=s.it + (ok & (s.n_eval > 0)),
            n_eval=s.n_eval + 1,
            n_back=jnp.where(ok, 0, s.n_back + 1),
        )

    z = jnp.zeros((m, n), dt)
    init = _LBFGS(
        x=x0,
        u=jnp.asarray(jnp.inf, dt),
        g=jnp.zeros_like(x0),
        d=jnp.zeros_like(x0),
        a=jnp.zeros((), dt),
        S=z,
        Y=z,
        rho=jnp.zeros(m, dt),
        ptr=i32(0),
        n_pairs=i32(0),
        it=i32(0),
        n_eval=i32(0),
        n_back=i32(0),
    )
    return lax.while_loop(cond, body, init)


def _tridiag_min(alpha, beta, used):
    """Smallest eigenvalue of the Lanczos tridiagonal (unused steps pushed beyond the rest)."""
    big = 2.0 * jnp.max(jnp.where(used, jnp.abs(alpha), 0.0)) + 1.0
    a = jnp.where(used, alpha, big)
    b = jnp.where(used[1:], beta[:-1], 0.0)
    return jnp.linalg.eigvalsh(jnp.diag(a) + jnp.diag(b, 1) + jnp.diag(b, -1))[0]


def lanczos_min_eig(
    hvp,
    n: int,
    key: Array,
    dtype,
    k: int = N_LANCZOS,
    *,
    rnd: int = LANCZOS_ROUND,
    rtol: float = LANCZOS_RTOL,
    steps: bool = False,
) -> Scalar:
    r"""Smallest Ritz value of at most ``k`` Lanczos steps on the symmetric operator ``hvp``
    (size ``n``), with full reorthogonalisation (Golub & Van Loan, *Matrix Computations*,
    §10.1); stops early when the smallest Ritz value moved by at most ``rtol`` times the
    largest in the last ``rnd`` steps, or the Krylov space is invariant (exact Ritz values).
    ``steps``: also return the number of steps taken. (Started from the last L-BFGS steps or
    their Ritz vector instead of a random vector, it took as many steps: measured, P = 300.)"""
    k = min(k, n)
    v0 = jax.random.normal(key, (n,), dtype)
    Vs = jnp.zeros((k + 1, n), dtype).at[0].set(v0 / jnp.linalg.norm(v0))

    def step(i, c):
        Vs, alpha, beta, alive, n_done = c
        live = alive & (i < k)
        ii = jnp.minimum(i, k - 1)
        w = hvp(Vs[ii])
        a = jnp.dot(w, Vs[ii])
        mask = (jnp.arange(k + 1) <= i)[:, None]
        for _ in range(2):  # full reorthogonalisation, twice (classical Gram-Schmidt)
            w = w - (Vs * mask).T @ ((Vs * mask) @ w)
        b = jnp.linalg.norm(w)
        scale = jnp.maximum(jnp.max(jnp.abs(alpha)), jnp.abs(a))
        go = live & (b > 1e-10 * scale)  # breakdown: the Krylov space is invariant
        Vs = jnp.where(go, Vs.at[ii + 1].set(w / jnp.where(go, b, 1.0)), Vs)
        alpha = jnp.where(live, alpha.at[ii].set(a), alpha)
        beta = jnp.where(go, beta.at[ii].set(b), beta)
        return Vs, alpha, beta, go, n_done + live

    def round_(c):
        r, Vs, alpha, beta, alive, n_done, theta, _ = c
        Vs, alpha, beta, alive, n_done = lax.fori_loop(
            r * rnd, (r + 1) * rnd, step, (Vs, alpha, beta, alive, n_done)
        )
        new = _tridiag_min(alpha, beta, jnp.arange(k) < n_done)
        settled = jnp.abs(theta - new) <= rtol * jnp.max(jnp.abs(alpha))
        return r + 1, Vs, alpha, beta, alive, n_done, new, settled

    def more(c):
        r, _, _, _, alive, _, _, settled = c
        return (r * rnd < k) & alive & ~settled

    z = jnp.zeros(k, dtype)
    one = jnp.ones((), bool)
    init = (0, Vs, z, z, one, 0, jnp.asarray(jnp.inf, dtype), ~one)
    out = lax.while_loop(more, round_, init)
    return (out[6], out[5]) if steps else out[6]


def solve_map(
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    *,
    gtol: float = 1e-9,
    max_steps: int = 5000,
    memory_size: int = 40,
    n_lanczos: int = N_LANCZOS,
    n_blocks=None,
    split=quenched_split,
) -> ExactFit:
    r"""Minimise $U$ over ``(W^G, W_O_hat)`` from ``head`` (embeddings frozen) by L-BFGS.

    The energy minimised and reported is the quenched $U$ (:func:`quenched_energy`: data term
    and the priors of $W^G$, $\hat W^O$; the frozen embeddings' prior is a constant left out, so
    that a reduced head and its width-$N$ original compare: $U_N-U_{N,\rm emb}=U+U_\perp$).
    Pure JAX (``jit``/``vmap`` over runs). Run it in float64 (inside ``jax.enable_x64(True)``,
    with a float64 head): the stopping rule $\|\nabla U\|\le g_{\rm tol}\max(1,|U|)$ with
    ``gtol = 1e-9`` is below float32 resolution. ``n_blocks``: see :func:`value_and_grad_fn`
    (only the sequences of the first ``n_blocks`` blocks count). ``split``: the trained
    coordinates and their priors (see :func:`value_and_grad_fn`; with
    ``models._reduce_trained.joint_split`` the embeddings are trained too and $U$ includes
    their prior, docs/theory.md §2d)."""
    x0, unflatten, vg = value_and_grad_fn(head, tokens, mask, obj, n_blocks, split=split)
    s = _lbfgs(vg, x0, gtol, max_steps, memory_size)
    x, u, g = s.x, s.u, s.g
    eps = FD_EPS * jnp.maximum(1.0, jnp.linalg.norm(x) / jnp.sqrt(x.size))
    hvp = lambda v: (vg(x + eps * v)[1] - g) / eps
    lam = lanczos_min_eig(hvp, x.size, jax.random.key(0), x.dtype, n_lanczos)
    r = jnp.linalg.norm(g) / jnp.maximum(1.0, jnp.abs(u))
    return ExactFit(
        head=unflatten(x),
        U=u,
        grad_norm=jnp.linalg.norm(g),
        rel_grad=r,
        min_eig=lam,
        n_steps=s.it,
        converged=(r <= gtol) & jnp.isfinite(u),
    )


def solve_map_optax(
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
    """The reference solver: ``optax.lbfgs`` (zoom line search) on :func:`quenched_energy`, and
    ``n_lanczos`` Lanczos steps on forward-over-reverse Hessian-vector products."""
    x0, unflatten = split_weights(head)
    f = lambda x: quenched_energy(unflatten(x), tokens, mask, obj)
    opt = optax.lbfgs(memory_size=memory_size)
    vg = optax.value_and_grad_from_state(f)
    u0, g0 = jax.value_and_grad(f)(x0)
    rel = lambda u, g: jnp.linalg.norm(g) / jnp.maximum(1.0, jnp.abs(u))

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
    lam = lanczos_min_eig(hvp, x.size, jax.random.key(0), x.dtype, n_lanczos, rtol=0.0)
    r = rel(u, g)
    return ExactFit(unflatten(x), u, jnp.linalg.norm(g), r, lam, it, (r <= gtol) & jnp.isfinite(u))


def quenched_energy(head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective) -> Scalar:
    """``U`` without the (constant) prior energy of the frozen embeddings."""
    return neg_log_posterior(head, tokens, mask, obj) - embedding_prior_energy(head, obj)


def hessian(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective, *, batch: int = 32
) -> Float[Array, "n n"]:
    """Dense Hessian of ``U`` in the flat ``(W^G, W_O_hat)`` coordinates: one Hessian-vector
    product per weight (~1,000 at L=25, V=5), ``batch`` of them vectorised at a time."""
    x0, unflatten = split_weights(head)
    f = lambda x: neg_log_posterior(unflatten(x), tokens, mask, obj)
    g = jax.grad(f)
    eye = jnp.eye(x0.size, dtype=x0.dtype)
    return lax.map(lambda v: jax.jvp(g, (x0,), (v,))[1], eye, batch_size=batch)
