"""Grid-then-Newton minimisers that return every local minimum (jit/vmap-able, fixed trip counts).

``minima_1d``: sign changes of ``f'`` on a grid bracket each local minimum; a safeguarded Newton
(bisection fallback) converges inside each bracket. ``minima_2d``: the grid points lowest in
their 3 x 3 window seed :func:`refine_minima`. ``refine_minima``: saddle-free Newton with a
negative-curvature step and a vectorised backtracking search from given seeds, then a check that
each end point is a minimum (Hessian PSD, tiny Newton decrement), optional folding by a Z2
symmetry ``f(-x) = f(x)``, de-duplication and sorting by value.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

_INF = jnp.inf
N_ALPHA = 16  # backtracking steps 1, 1/2, ..., 2^-15


def _sort_by_value(x, fx, valid):
    order = jnp.argsort(jnp.where(valid, fx, _INF))
    return x[order], fx[order], valid[order]


def _smallest(score, k: int):
    """Indices of the ``k`` smallest entries (``lax.top_k`` is slow on CPU)."""
    idx = []
    pos = jnp.arange(score.shape[0])
    for _ in range(k):
        i = jnp.argmin(score)
        idx.append(i)
        score = jnp.where(pos == i, _INF, score)
    return jnp.stack(idx)


def asinh_grid(lo, hi, width, n: int):
    """``n`` points on ``[lo, hi]`` uniform in ``asinh(x / width)``: fine near 0, coarse far out."""
    u = jnp.linspace(jnp.arcsinh(lo / width), jnp.arcsinh(hi / width), n)
    return width * jnp.sinh(u)


def minima_1d(f, grid, *, n_keep: int = 3, n_iter: int = 40):
    """Local minima of scalar ``f`` inside ``[grid[0], grid[-1]]``.

    Returns ``x[n_keep], f(x), valid, n_min``, sorted by value (invalid slots last); ``n_min``
    counts every bracketed minimum (it may exceed ``n_keep``).
    """
    f1 = jax.grad(f)
    f2 = jax.grad(f1)
    v = jax.vmap(f)(grid)
    d1 = jax.vmap(f1)(grid)
    cell = (d1[:-1] < 0) & (d1[1:] >= 0)
    score = jnp.where(cell, jnp.minimum(v[:-1], v[1:]), _INF)
    idx = _smallest(score, n_keep)
    valid = jnp.isfinite(score[idx])
    lo, hi = grid[idx], grid[idx + 1]

    def body(_, carry):
        x, lo, hi = carry
        g = jax.vmap(f1)(x)
        h = jax.vmap(f2)(x)
        lo = jnp.where(g < 0, x, lo)
        hi = jnp.where(g >= 0, x, hi)
        xn = x - g / h
        ok = (h > 0) & (xn > lo) & (xn < hi)
        return jnp.where(ok, xn, 0.5 * (lo + hi)), lo, hi

    x, _, _ = jax.lax.fori_loop(0, n_iter, body, (0.5 * (lo + hi), lo, hi))
    fx = jax.vmap(f)(x)
    x, fx, valid = _sort_by_value(x, fx, valid)
    return x, fx, valid, jnp.sum(cell)


def _newton(f, x0, step_scale, n_iter: int):
    """Saddle-free Newton, a negative-curvature step of length ``step_scale``, backtracking.

    Returns the end point and whether it is a minimum: the last iteration's Hessian is PSD and
    its Newton decrement is at rounding level (so the step it then took is negligible).
    """
    g_f = jax.grad(f)
    h_f = jax.hessian(f)
    alphas = 2.0 ** -jnp.arange(float(N_ALPHA))

    def body(_, carry):
        x, _ = carry
        fx, g, H = f(x), g_f(x), h_f(x)
        w, U = jnp.linalg.eigh(0.5 * (H + H.T))
        scale = jnp.max(jnp.abs(w))
        wabs = jnp.maximum(jnp.abs(w), 1e-13 * scale + 1e-300)
        gu = U.T @ g
        d = -U @ (gu / wabs)
        is_min = (w[0] >= -1e-7 * scale) & (jnp.sum(gu**2 / wabs) <= 1e-10 * (1.0 + jnp.abs(fx)))
        u0 = U[:, 0]
        sgn = jnp.where(u0 @ g > 0, -1.0, 1.0)
        d = d + jnp.where(w[0] < 0, sgn * step_scale, 0.0) * u0
        cand = x[None, :] + alphas[:, None] * d[None, :]
        fc = jax.vmap(f)(cand)
        ok = fc < fx
        # near a flat minimum the decrease drops below the rounding of f: with a positive
        # definite Hessian take the Newton step unless f rises beyond rounding
        flat = (w[0] > 0) & (fc[0] <= fx + 16.0 * jnp.finfo(fx.dtype).eps * jnp.abs(fx))
        x_new = jnp.where(jnp.any(ok), cand[jnp.argmax(ok)], jnp.where(flat, cand[0], x))
        return x_new, is_min

    return jax.lax.fori_loop(0, n_iter, body, (x0, jnp.zeros((), dtype=bool)))


def refine_minima(f, x0, started, step_scale, *, n_keep: int, z2: bool = False, n_iter: int = 30):
    """Newton from seeds ``x0[M, n]`` (``started[M]`` marks real seeds) to distinct minima.

    Returns ``x[n_keep, n], f(x), valid[n_keep]`` sorted by value. With ``z2``, ``f(-x) = f(x)``
    and minima are reported with ``x[0] >= 0``.
    """
    x, is_min = jax.vmap(lambda z: _newton(f, z, step_scale, n_iter))(x0)
    if z2:
        flip = (x[:, 0] < 0) | ((x[:, 0] == 0) & (x[:, 1] < 0))
        x = jnp.where(flip[:, None], -x, x)
    fx = jax.vmap(f)(x)
    valid = started & is_min & jnp.isfinite(fx)
    x, fx, valid = _sort_by_value(x, fx, valid)
    dist = jnp.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
    near = dist <= 1e-6 * (1.0 + jnp.linalg.norm(x, axis=-1))[None, :]
    m = x.shape[0]
    earlier = jnp.tril(jnp.ones((m, m), dtype=bool), k=-1)
    valid = valid & ~jnp.any(near & earlier & valid[None, :], axis=1)
    x, fx, valid = _sort_by_value(x, fx, valid)
    return x[:n_keep], fx[:n_keep], valid[:n_keep]


def minima_2d(f, r_grid, s_grid, *, n_keep: int = 4, n_iter: int = 30, z2: bool = True):
    """Local minima of ``f(x)``, ``x = (r, s)``, inside the grid's box.

    With ``z2`` (the default), ``f(-x) = f(x)`` and minima are reported with ``r >= 0``:
    ``r_grid`` must start at 0 and ``s_grid`` be symmetric (``s_grid[::-1] == -s_grid``), so that
    the row ``r = -r_grid[1]`` is the mirror of row 1 and minima on ``r = 0`` are detected too.
    Without it any increasing grids serve; points on the box's edge never seed.
    Returns ``x[n_keep, 2], f(x), valid, n_min`` sorted by value.
    """
    R, S = jnp.meshgrid(r_grid, s_grid, indexing="ij")
    pts = jnp.stack([R, S], axis=-1)
    v = jax.vmap(jax.vmap(f))(pts)
    mirror = v[1, ::-1][None] if z2 else jnp.full_like(v[:1], -_INF)
    vp = jnp.concatenate([mirror, v, jnp.full_like(mirror, -_INF)], axis=0)
    col = jnp.full((vp.shape[0], 1), -_INF)
    vp = jnp.concatenate([col, vp, col], axis=1)
    # a grid point is a seed if it is the lowest of its 3 x 3 window (edges: -inf padding)
    is_min = v <= jax.lax.reduce_window(vp, _INF, jax.lax.min, (3, 3), (1, 1), "VALID")
    score = jnp.where(is_min, v, _INF).ravel()
    idx = _smallest(score, n_keep)
    ns = s_grid.shape[0]
    step = jnp.hypot(r_grid[1] - r_grid[0], s_grid[ns // 2 + 1] - s_grid[ns // 2])
    x, fx, valid = refine_minima(
        f,
        pts.reshape(-1, 2)[idx],
        jnp.isfinite(score[idx]),
        step,
        n_keep=n_keep,
        z2=z2,
        n_iter=n_iter,
    )
    return x, fx, valid, jnp.sum(valid)
