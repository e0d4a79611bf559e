r"""Free energy of one branch of a posterior: constrained, Laplace-referenced thermodynamic
integration on collapsed-HMC rungs.

**Reference.** At a point $x^*$ of the branch (its exact MAP) with the whitening
$C=V\Lambda_c^{-1/2}$ (for the reduced heads: ``sampling.marginal_whitening``) the chain runs
on $w$, $x=x^*+Cw$, and the reference energy is $U_{\rm ref}(w)=U_m(x^*)+\tfrac12|w|^2$. Over
$x$ (Jacobian $|\det C|$)
$$\log Z_{\rm ref}=-U_m(x^*)+\tfrac n2\log2\pi+\log|\det C| .$$

**Region.** The branch is a region $R$ of the order parameter (for the softmax head: copy
$=\{a_G\ge a_{\rm thr}\}$, pool $=\{a_G<a_{\rm thr}\}$, a partition of the whole space). The
path $U_t=(1-t)\,U_{\rm ref}+t\,U_m$ is restricted to $R$ at every $t$, so
$$\log Z_R=\log Z_{\rm ref}+\log P_{\rm ref}(R)-\int_0^1\mathbb E_{t,R}[U_m-U_{\rm ref}]\,dt ,$$
with $P_{\rm ref}(R)$ the mass of $R$ under the reference $\mathcal N(0,I)$ in $w$ (exact
draws, :func:`reference_mass`) and $\mathbb E_{t,R}$ the mean under $e^{-U_t}$ restricted to
$R$, the integral by :func:`copyhead_jax.sampling.ti_quadrature` (trapezoid plus the
Euler-Maclaurin end correction from $\frac{d}{dt}\mathbb E_{t,R}[g]=-\mathrm{Var}_{t,R}[g]$).
$F_R=-\log Z_R$; when the regions partition the space the posterior weight of region $a$ is
$1/(1+\sum_{b\ne a}e^{F_a-F_b})$.

**Sampler.** :func:`hmc_chains` runs the one HMC kernel of the package,
:func:`copyhead_jax.sampling.hmc_chain` (unit mass in the whitened coordinates, ``LEAPFROG`` steps
of a jittered size, dual-averaging adaptation that is then frozen; the collapsed sampler of
``sampling.collapsed_hmc`` runs it too), on any potential, with an optional region: a proposal that
ends outside it is rejected. That is exact Metropolis-Hastings for the target restricted to the
region (the target density is 0 outside, the leapfrog map stays volume preserving and reversible, so
the acceptance ratio is the usual one times the indicator). With no region and the same potential
and keys it makes the same moves as ``collapsed_chains`` (tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..sampling import (
    HMCChains,
    ess,
    hmc_chains,
    map_chains,
    mcse_mean,
    split_rhat,
    susceptibility,
    ti_quadrature,
)


def path_rungs(
    keys,
    U: Callable,
    order: Callable,
    ts,
    *,
    side: int | jax.Array,
    threshold: float | jax.Array,
    n: int,
    U_star,
    w_start=None,
    dtype=jnp.float32,
    extra: Callable | None = None,
    extra_last_only: bool = False,
    state=None,
    active=None,
    first_draw=0,
    **hmc,
) -> HMCChains:
    r"""The rungs of one branch: ``keys[K, C]``, ``ts[K]``. ``U(w)`` is the target energy in the
    whitened coordinates ($U_m(x^*+Cw)$), ``U_star = U(0)``, ``order(w)`` the region's order
    parameter; region ``order >= threshold`` for ``side = +1``, ``order < threshold`` for
    ``side = -1`` (``side = 0``: everywhere; ``side`` and ``threshold`` may be traced). Each
    chain starts at ``w_start`` (default ``w = 0``, the reference point; it must lie in the
    region) and records ``(g, order)`` with ``g = U - U_ref``, ``U_ref = U_star + |w|^2/2``,
    then ``extra(w)`` (a scalar) when given (``extra_last_only``: at the last rung only, 0 at
    the others, for a quantity only the target's rung needs; run one rung after the other, the
    others skip its cost). ``hmc``: :func:`~copyhead_jax.sampling.hmc_chains`' options; its
    ``step_size`` may be one per rung (``[K]``, may be traced: e.g. steps adapted elsewhere,
    with ``n_adapt = 0``); ``sequential=True`` runs rungs and chains one after the other.
    ``finite``: the chain's energy and every record finite.

    ``state`` (a previous call's ``HMCChains.state``, leaves ``[K, C, ...]``): continue each
    rung's chains for ``n_iter`` more iterations, draws numbered from ``first_draw``; only the
    rungs ``active[K]`` draw (run one after the other, an inactive rung costs nothing): an
    inactive rung keeps its state and returns NaN records and acceptances (its draws end where
    the rounds' ``n_draws`` say)."""
    side, thr = jnp.asarray(side), jnp.asarray(threshold, dtype)

    def inside(w):
        o = order(w)
        return jnp.where(side > 0, o >= thr, jnp.where(side < 0, o < thr, True))

    def g(w):
        return U(w) - (U_star + 0.5 * jnp.sum(w**2))

    ts = jnp.asarray(ts, dtype)
    steps = jnp.broadcast_to(jnp.asarray(hmc.pop("step_size"), dtype), ts.shape)
    sequential = hmc.pop("sequential", False)

    def one(k, t, eps, st=None, act=None):
        pot = lambda w: (1 - t) * (U_star + 0.5 * jnp.sum(w**2)) + t * U(w)  # noqa: E731
        more = () if extra is None else (extra,)
        if extra is not None and extra_last_only:
            zero = lambda w: jnp.zeros((), dtype)  # noqa: E731
            more = (lambda w: lax.cond(t == ts[-1], extra, zero, w),)

        def rec(state, j):
            w = state.position
            return jnp.stack([g(w), order(w), *(f(w) for f in more)])

        def run(st):
            if st is None:
                w0 = jnp.zeros((k.shape[0], n), dtype)
                w0 = w0 if w_start is None else w0 + jnp.asarray(w_start, dtype)[None]
                c = hmc_chains(
                    k, pot, w0, rec, inside=inside, step_size=eps, batched=not sequential, **hmc
                )
            else:
                c = hmc_chains(
                    None,
                    pot,
                    None,
                    rec,
                    inside=inside,
                    step_size=eps,
                    batched=not sequential,
                    state=st,
                    first_draw=first_draw,
                    **hmc,
                )
            return c._replace(finite=c.finite & jnp.all(jnp.isfinite(c.records), axis=(1, 2)))

        if st is None:
            return run(None)

        def stay(st):
            c = jax.eval_shape(run, st)
            nan = lambda x: jnp.full(x.shape, jnp.nan, x.dtype)  # noqa: E731
            return c._replace(
                records=nan(c.records),
                accept=nan(c.accept),
                outside=nan(c.outside),
                energy=nan(c.energy),
                finite=jnp.ones(c.finite.shape, bool),
                step_size=nan(c.step_size),
                scale=nan(c.scale),
                state=st,
            )

        return lax.cond(act, run, stay, st)

    if state is None:
        return map_chains(one, not sequential)(keys, ts, steps)
    return map_chains(one, not sequential)(keys, ts, steps, state, jnp.asarray(active, bool))


def reference_mass(
    key, order: Callable, n: int, n_draws: int, *, side: int, threshold: float, batch: int = 256
) -> tuple[float, float, int]:
    """``(p, se, hits)``: the mass of the region under the reference ``N(0, I_n)`` in ``w`` from
    ``n_draws`` exact draws (binomial standard error ``sqrt(p (1 - p) / n_draws)``)."""
    w = jax.random.normal(key, (n_draws, n), jnp.float32)
    o = np.asarray(lax.map(order, w, batch_size=batch))
    hit = (o >= threshold) if side > 0 else (o < threshold)
    k = int(hit.sum())
    p = k / n_draws
    return p, math.sqrt(max(p * (1 - p), 0.0) / n_draws), k


def branch_log_z(
    ts, g, finite, *, U_star: float, logdet_C: float, n: int, p_ref: float, p_ref_se: float, g0=None
) -> dict:
    r"""$\log Z_R$ and $F_R=-\log Z_R$ with its Monte-Carlo standard error from the rungs'
    ``g[K, C, S]`` (module docstring). The error adds the TI MCSE (rungs independent, ESS of
    ``g`` per rung) and the binomial error of ``log P_ref(R)`` in quadrature; ``p_ref = 0``
    gives ``F = inf``. ``quad_corr``: the Euler-Maclaurin term (a gauge of the rung spacing).

    ``g0``: exact i.i.d. draws of ``g`` at ``t = 0`` (the reference restricted to the region:
    the reference draws that hit it), standing for the first rung; ``g`` and ``finite`` then
    hold the rungs ``ts[1:]`` only. Its statistics are the chains' estimators on one chain."""
    rungs = [np.asarray(x, np.float64)[np.asarray(f, bool)] for x, f in zip(g, finite)]
    if g0 is not None:
        rungs.insert(0, np.asarray(g0, np.float64).reshape(1, -1))
    K = len(ts)
    if len(rungs) != K:
        raise ValueError(f"branch_log_z: {len(rungs)} rungs of draws for {K} values of t")
    m, v, mse, vse, rh, es = (np.full(K, np.nan) for _ in range(6))
    for k in range(K):
        x = rungs[k]
        if x.shape[0] >= 1 and x.shape[1] >= 4:
            m[k], mse[k] = -x.mean(), float(mcse_mean(x))
            s = susceptibility(x)
            v[k], vse[k] = float(s.value), float(s.mcse)
            rh[k] = float(split_rhat(x)) if x.shape[0] > 1 else np.nan
            es[k] = float(ess(x))
    log_ratio, se_ti = ti_quadrature(ts, m, v, mse, vse)
    trap, _ = ti_quadrature(ts, m)
    log_ref = -U_star + 0.5 * n * math.log(2 * math.pi) + logdet_C
    log_p = math.log(p_ref) if p_ref > 0 else -math.inf
    se_p = p_ref_se / p_ref if p_ref > 0 else math.inf
    # no reference mass in the region: Z_R = 0 whatever the rungs say (with an exact t = 0 rung
    # they have no draws there, and NaN + -inf would hide the verdict F = inf)
    log_z = log_ref + log_p + log_ratio if p_ref > 0 else -math.inf
    return {
        "F": -log_z,
        "mcse": math.hypot(se_ti, se_p),
        "mcse_ti": se_ti,
        "mcse_p_ref": se_p,
        "log_Z_ref": log_ref,
        "log_p_ref": log_p,
        "log_Z_ratio": log_ratio,
        "quad_corr": log_ratio - trap,
        "mean_g": (-m).tolist(),
        "var_g": v.tolist(),
        "mcse_g": mse.tolist(),
        "rhat_g": rh.tolist(),
        "ess_g": es.tolist(),
    }
