r"""One (seed, P) group of the Bayesian softmax transition: the free energies of the pool and
copy branches by Laplace-referenced constrained TI (docs/theory.md §9.5), and a tempered-SMC
cross-check of the copy weight (§9.6), for one run of a reduced softmax head.

The pieces are those of :mod:`.branch_ti` and :mod:`.smc` (``path_rungs``,
``reference_mass``, ``branch_log_z``, ``tempered_smc``, ``hmc_move``) on the collapsed energy
$U_m(W^G)$ of :mod:`copyhead_jax.sampling.collapsed` (readout integrated out). A group is padded
to a ``P_pad`` (one for every group of a small configuration, a ladder of them for a large one:
``plan.pad_of``) and has two runs (the branches), so one compiled program
serves every group of one ``P_pad``; the group's P enters through the mask only. What a group
is asked to do (:class:`~.ti_settings.TISettings`) and the bytes it needs are
:mod:`.ti_settings`'.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ..config import TRANSITION_RUN
from ..data import masked_mean
from ..models import AbstractHead
from ..objective import Objective
from ..observables import attention_matrices, order_parameters
from ..sampling import ess, marginal_energy, marginal_whitening, split_rhat, with_WG
from ..sampling.health import target_meta
from ..sampling.rounds import sample_rounds
from .branch_ti import branch_log_z, path_rungs
from .smc import hmc_move, smc_collapse, tempered_smc
from .ti_settings import ACCEL_REF_BATCH, MIN_T0_HITS, REF_BATCH, REF_ROUNDS, TISettings

BRANCHES = ("pool", "copy")
SIDE = {"pool": -1, "copy": 1}
#: The t = 1 chains also record U(P) - U(P - dP), dP = SLOPE_FRAC P: per branch E[dU] / dP is
#: the slope dF/dP to first order (free-energy perturbation; by Jensen a lower bound of the
#: finite difference). It only places the next probe (:func:`.root.next_probe`); no estimate
#: uses it.
SLOPE_FRAC = 0.03


def a_G(head: AbstractHead, tokens, mask) -> Float[Array, ""]:
    """The copy order parameter $a_G$ of the run's mean attention on its training data."""
    return order_parameters(masked_mean(attention_matrices(head, tokens), mask)).cG


@functools.lru_cache(maxsize=8)
def ti_programs(obj: Objective, s: TISettings):
    """The compiled pieces of a group (cached per objective and settings): the whitening, the
    reference draws' order parameter, and the rungs (steps adapted from the given start step per
    branch and rung)."""

    @jax.jit
    def whiten(heads, train, mask):
        return jax.lax.map(lambda h: marginal_whitening(h, train, mask, obj), heads)

    @jax.jit
    def orders_at_ref(key, heads, train, mask, C):
        """``[2, n_ref, 2]``: ``(a_G, g = U - U_ref)`` at exact reference draws per branch
        (``g`` only with ``exact_t0``, else 0)."""

        def one(k, h, Cm):
            x0 = h.W_G.ravel()
            w = jax.random.normal(k, (s.n_ref, x0.size), x0.dtype)
            U_star = marginal_energy(h, train, mask, obj) if s.exact_t0 else 0.0

            def order(v):
                return a_G(with_WG(h, x0 + Cm @ v), train, mask)

            def g(v):
                U = marginal_energy(with_WG(h, x0 + Cm @ v), train, mask, obj)
                return U - U_star - 0.5 * jnp.sum(v**2)

            batch = ACCEL_REF_BATCH if s.batched else REF_BATCH
            o = jax.lax.map(order, w, batch_size=batch)
            # the energies one at a time on the CPU (a batch's temporaries overflow its cache)
            gs = (
                jax.lax.map(g, w, batch_size=batch if s.batched else None)
                if s.exact_t0
                else jnp.zeros_like(o)
            )
            return jnp.stack([o, gs], axis=-1)

        return jax.vmap(one)(jax.random.split(key, 2), heads, C)

    return whiten, orders_at_ref, _rung_program(obj, s, s.n_iter, False)


@functools.lru_cache(maxsize=8)
def ti_round_programs(obj: Objective, s: TISettings):
    """The compiled rounds of a group's rungs (``s.ess_target > 0``): the first (``n_adapt``
    warm-up iterations, then ``round_iter``), returning the chains' states too, and the next
    (``round_iter`` more from the states, only the rungs marked ``active``)."""
    n = s.round_draws * s.thin
    return _rung_program(obj, s, n, True), _rung_program(obj, s, n, True, more=True)


def _rung_program(obj: Objective, s: TISettings, n_iter: int, rounds: bool, more: bool = False):
    """Both branches' rungs (``vmap``, or one after the other): ``(records [2, K, C, S, 3],
    accept [2, K, C, S], finite [2, K, C], step [2, K, C], U* [2])``; ``rounds``: with the
    chains' states; ``more``: continued from ``states`` (``first_draw``, ``active[2, K]``)."""
    hmc = {**s.hmc(), "sequential": not s.batched, "n_iter": n_iter}
    hmc.pop("step_size")

    def program(
        keys,
        heads,
        train,
        mask,
        C,
        side,
        thr,
        mask_lo,
        step,
        states=None,
        first_draw=0,
        active=None,
    ):
        def one(k, h, Cm, sd, eps, st=None, act=None):
            x0 = h.W_G.ravel()
            U = lambda w: marginal_energy(with_WG(h, x0 + Cm @ w), train, mask, obj)  # noqa: E731
            order = lambda w: a_G(with_WG(h, x0 + Cm @ w), train, mask)  # noqa: E731
            # U on the run's data less its last rows: the slope of F in P (probe placement)
            dU = lambda w: U(w) - marginal_energy(with_WG(h, x0 + Cm @ w), train, mask_lo, obj)  # noqa: E731
            U_star = U(jnp.zeros_like(x0))
            ch = path_rungs(
                k,
                U,
                order,
                np.asarray(s.chain_ts),
                side=sd,
                threshold=thr,
                n=x0.size,
                U_star=U_star,
                extra=dU,
                extra_last_only=True,
                step_size=eps,
                state=st,
                active=act,
                first_draw=first_draw,
                **hmc,
            )
            out = (ch.records, ch.accept, ch.finite, ch.step_size, U_star)
            return (out, ch.state) if rounds else out

        xs = (keys, heads, C, side, step) + ((states, active) if more else ())
        if s.batched:
            return jax.vmap(one)(*xs)
        return jax.lax.map(lambda a: one(*a), xs)

    return jax.jit(program)


def rung_draws(draws, accept, finite, s: TISettings, n_draws=None) -> list[dict]:
    """Per rung (``draws[R, C, S, m]``, rungs of both branches flattened): its kept draws (the
    first ``n_draws[R]`` per chain, those it took before it stopped, ``None``: all S; less the
    first ``discard`` fraction of them), ``n_draws`` (taken), ``accept`` (their mean) and the
    reached ``ess``/``rhat`` (the smallest ESS, largest split R-hat of ``g`` and ``a_G`` over its
    finite chains; NaN under 4 draws) and ``met`` (every chain finite and both within ``s``'s
    target)."""
    out = []
    S = np.shape(draws)[2]
    taken = np.full(len(draws), S) if n_draws is None else np.asarray(n_draws)
    for x, a, f, n in zip(draws, accept, finite, taken, strict=True):
        n = int(n)
        kept = np.asarray(x[:, :n], np.float64)[:, int(s.discard * n) :]
        fin = np.asarray(f, bool)
        e = r = math.nan
        if fin.any() and kept.shape[1] >= 4:
            with np.errstate(all="ignore"):
                q = np.moveaxis(kept[fin][..., :2], -1, 0)
                e, r = float(np.min(ess(q))), float(np.max(split_rhat(q)))
        met = bool(fin.all() and e >= s.ess_target and r <= s.rhat_target)  # NaN never meets
        acc = float(np.mean(np.asarray(a, np.float64)[:, :n]))
        out.append({"draws": kept, "n_draws": n, "accept": acc, "ess": e, "rhat": r, "met": met})
    return out


def draw_rungs(s: TISettings, obj: Objective, args: tuple, programs=None) -> dict:
    """The rungs of both branches (``args`` of the rungs' program before the states): the
    fixed ``n_iter``, or in rounds until each rung meets ``s``'s target (TISettings). Host
    arrays with the rungs of both branches flattened: ``draws [2K, C, S, 3]``, ``accept``,
    ``finite``, ``step`` and ``U_star [2]``. ``programs``: the rounds' ``(first, next)``
    (default :func:`ti_round_programs`'s)."""

    def host(out):
        rec, acc, fin, step, U_star = (np.asarray(x) for x in out)
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
        return {
            "draws": flat(rec),
            "accept": flat(acc),
            "finite": flat(fin).astype(bool),
            "step": flat(step),
            "U_star": U_star,
        }

    if not s.ess_target:
        return host(ti_programs(obj, s)[2](*args))
    # the programs do not read the target's values: one compiled pair for every target (keyed
    # on the table's transition bar, whatever the asked target)
    start, more = programs or ti_round_programs(
        obj,
        dataclasses.replace(
            s, ess_target=TRANSITION_RUN.ess_min, rhat_target=TRANSITION_RUN.rhat_max
        ),
    )

    def enough(a) -> np.ndarray:  # per rung: the others go on
        per = rung_draws(a["draws"], a["accept"], a["finite"], s, a["n_draws"])
        return np.array([r["met"] for r in per])

    return sample_rounds(
        s,
        lambda: start(*args),
        lambda carry, n, active: more(*args, carry, jnp.int32(n), active.reshape(2, -1)),
        host,
        None,
        None,
        done=enough,
        each=True,
    )


def free_energies(
    key, heads: AbstractHead, train, mask, thr: float, s: TISettings, obj: Objective
) -> dict:
    """``F``, its MCSE and health of both branches of one run: ``heads`` stacks the pool and copy
    references (leading axis 2, ``W_G`` inside their regions ``a_G < thr`` / ``>= thr``),
    ``train[P_pad, L]`` the run's data, ``mask`` its first P rows."""
    whiten, orders_at_ref, _ = ti_programs(obj, s)
    with jax.enable_x64(True):
        h64 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), heads)
        C64 = np.asarray(whiten(h64, train, jnp.asarray(mask, jnp.float64)))
    logdet = [float(np.linalg.slogdet(c)[1]) for c in C64]
    C32, m32 = jnp.asarray(C64, jnp.float32), jnp.asarray(mask, jnp.float32)
    aG0 = np.asarray(jax.vmap(lambda h: a_G(h, train, m32))(heads))
    k_ref, k_ch = jax.random.split(key)
    ref = [np.asarray(orders_at_ref(k_ref, heads, train, m32, C32), np.float64)]
    side_of = np.array([SIDE[b] for b in BRANCHES])[:, None]

    def hits(r):  # [2, n]: draws inside each branch's region
        return np.where(side_of > 0, r[..., 0] >= thr, r[..., 0] < thr)

    while (
        s.exact_t0
        and len(ref) < REF_ROUNDS
        and hits(np.concatenate(ref, 1)).sum(1).min() < MIN_T0_HITS
    ):
        kk = jax.random.fold_in(k_ref, len(ref))
        ref.append(np.asarray(orders_at_ref(kk, heads, train, m32, C32), np.float64))
    ref = np.concatenate(ref, 1)
    hit = hits(ref)
    K, nC = len(s.chain_ts), s.n_chains
    keys = jax.random.split(k_ch, 2 * K * nC).reshape(2, K, nC)
    side = jnp.asarray([SIDE[b] for b in BRANCHES], jnp.int32)
    P = int(np.sum(np.asarray(mask) > 0))
    dP = max(1, int(round(SLOPE_FRAC * P))) if P > 1 else 0
    m_lo = jnp.asarray(np.arange(m32.shape[0]) < P - dP, jnp.float32)
    got = draw_rungs(
        s,
        obj,
        (
            keys,
            heads,
            train,
            m32,
            C32,
            side,
            jnp.float32(thr),
            m_lo,
            jnp.full((2, K), s.step_size, jnp.float32),
        ),
    )
    per = rung_draws(got["draws"], got["accept"], got["finite"], s, got.get("n_draws"))
    finite = got["finite"].reshape(2, K, -1)
    step = np.asarray(got["step"], np.float64).reshape(2, K, -1)
    U_star = np.asarray(got["U_star"], np.float64)
    n = int(C64.shape[-1])
    out = {}
    lead = [None] if s.exact_t0 else []  # per-rung chain fields: none at an exact t = 0
    for r, b in enumerate(BRANCHES):
        mine = per[r * K : (r + 1) * K]
        p = float(hit[r].mean())
        g0 = ref[r, hit[r], 1] if s.exact_t0 else None
        fe = branch_log_z(
            s.ts,
            [x["draws"][..., 0] for x in mine],
            finite[r],
            U_star=U_star[r],
            logdet_C=logdet[r],
            n=n,
            p_ref=p,
            g0=g0,
            p_ref_se=math.sqrt(p * (1 - p) / hit[r].size),
        )
        fe.update(
            p_ref=p,
            aG_ref=float(aG0[r]),
            U_star=float(U_star[r]),
            logdet_C=logdet[r],
            n_ref_draws=int(hit[r].size),
            accept=lead + [x["accept"] for x in mine],
            step=lead + step[r].mean(1).tolist(),
            finite=bool(finite[r].all()),
            rhat_max=float(np.nanmax(np.r_[fe["rhat_g"], -np.inf])),
            ess_min=float(np.nanmin(np.r_[fe["ess_g"], np.inf])),
            n_draws=lead + [x["n_draws"] for x in mine],
            ess_reached=lead + [x["ess"] for x in mine],
            rhat_reached=lead + [x["rhat"] for x in mine],
            target=target_meta(s),
        )
        if s.ess_target:
            fe["target_met"] = lead + [x["met"] for x in mine]
        ok = finite[r, -1]
        last = mine[-1]["draws"]
        fe["dU_dP"] = float(last[ok][..., 2].mean() / dP) if dP and ok.any() else None
        out[b] = fe
    out["_C"] = C64  # for the SMC cross-check; dropped before saving
    return out


def smc_weight(
    key, heads: AbstractHead, train, mask, thr: float, C64, s: TISettings, obj: Objective
) -> dict:
    r"""Tempered SMC (§9.6) from the two branches' Laplace Gaussians (a fair mixture) to
    $e^{-U_m}$, HMC moves confined to the branch a particle sits in: the copy weight
    $w_{\rm copy}$ read from the last reweighting, and $\log Z$. Independent of the TI's
    estimator (different path, weights instead of integrated energies)."""
    N = s.smc_particles
    m32 = jnp.asarray(mask, jnp.float32)
    h = jax.tree.map(lambda a: a[0], heads)  # the embeddings (both references share them)
    x_ref = heads.W_G.reshape(2, -1)
    C = jnp.asarray(C64, jnp.float32)
    Cinv = jnp.asarray(np.linalg.inv(C64), jnp.float32)
    logdet = jnp.asarray([np.linalg.slogdet(c)[1] for c in C64], jnp.float32)
    n = x_ref.shape[1]
    g_fn, record, mutate = _smc_programs(obj, thr, s.smc_moves, batched=s.batched)
    k0, k1, k2 = jax.random.split(key, 3)
    pick = jax.random.bernoulli(k0, 0.5, (1, N, 1))
    z = jax.random.normal(k1, (1, N, n), jnp.float32)
    xs = [x_ref[i][None, None] + z @ C[i].T for i in range(2)]
    x0 = jnp.where(pick, xs[1], xs[0])
    ref = (x_ref, C, Cinv, logdet)
    log_eps = jnp.full((1, 2), math.log(s.step_size), jnp.float32)
    res, _ = tempered_smc(
        k2,
        x0,
        lambda x: g_fn(h, train, m32, ref, x),
        lambda kk, x, t, le: mutate(kk, h, train, m32, ref, x, t, le),
        log_eps,
        ess_target=0.5,
        max_steps=s.smc_max_steps,
        record=lambda x: record(h, train, m32, x),
    )
    w = float(np.sum(np.exp(res.log_w1[0]) * (res.obs1[0] >= thr)))
    out = {
        "w_copy": w,
        "log_Z": float(res.log_z[0]),
        "n_steps": int(res.ts.shape[0]),
        "reached": bool(res.reached[0]),
        "finite": bool(res.finite[0]),
        "n_particles": N,
        "accept": float(np.mean(res.accept)) if res.accept.size else None,
        "ts": res.ts[:, 0].tolist(),
        "ess": res.ess[:, 0].tolist(),
        "accept_steps": res.accept[:, 0].tolist(),
        "unique": len(np.unique(np.asarray(res.x[0]), axis=0)) / N,
    }
    out["collapsed"] = smc_collapse(out)
    return out


@functools.lru_cache(maxsize=8)
def _smc_programs(obj: Objective, thr: float, n_moves: int, n_leap: int = 5, batched: bool = False):
    def U_m(h, t, m, x):
        return marginal_energy(with_WG(h, x), t, m, obj)

    def U_0(ref, x):  # -log of the normalised two-Gaussian reference
        x_ref, _, Cinv, logdet = ref
        lp = [-0.5 * jnp.sum((Cinv[i] @ (x - x_ref[i])) ** 2) - logdet[i] for i in range(2)]
        return -(jnp.logaddexp(*lp) - math.log(2.0) - 0.5 * x.size * math.log(2 * math.pi))

    def each(f, x):  # f over the particles x[1, N, n]: batched, or one after the other
        return (jax.vmap(f)(x[0]) if batched else jax.lax.map(f, x[0]))[None]

    @jax.jit
    def g_fn(h, t, m, ref, x):
        return each(lambda xx: U_m(h, t, m, xx) - U_0(ref, xx), x)

    @jax.jit
    def record(h, t, m, x):
        return each(lambda xx: a_G(with_WG(h, xx), t, m), x)

    @jax.jit
    def mutate(key, h, t, m, ref, x, temp, log_eps):
        x_ref, C, Cinv, _ = ref

        def one(k, xi):
            copy = a_G(with_WG(h, xi), t, m) >= thr
            i = copy.astype(jnp.int32)
            w0 = Cinv[i] @ (xi - x_ref[i])
            to_x = lambda w: x_ref[i] + C[i] @ w  # noqa: E731
            pot = lambda w: (1 - temp[0]) * U_0(ref, to_x(w)) + temp[0] * U_m(h, t, m, to_x(w))  # noqa: E731
            inside = lambda w: (a_G(with_WG(h, to_x(w)), t, m) >= thr) == copy  # noqa: E731
            w1, a = hmc_move(
                k,
                pot,
                w0,
                step_size=jnp.exp(log_eps[0, i]),
                n_steps=n_moves,
                n_leap=n_leap,
                inside=inside,
            )
            return to_x(w1), a, copy

        N = x.shape[1]
        ks = jax.random.split(key, N)
        x1, a, copy = (
            jax.vmap(one)(ks, x[0]) if batched else jax.lax.map(lambda kx: one(*kx), (ks, x[0]))
        )
        n_b = jnp.stack([jnp.sum(~copy), jnp.sum(copy)])
        a_b = jnp.stack([jnp.sum(a * ~copy), jnp.sum(a * copy)]) / jnp.maximum(n_b, 1)
        # the step per branch follows its particles' acceptance (target 0.65), between moves
        log_eps = jnp.where(n_b[None] > 0, log_eps + (a_b[None] - 0.65), log_eps)
        return x1[None], a[None], jnp.clip(log_eps, math.log(0.01), math.log(1.5))

    return g_fn, record, mutate
