r"""The free energy and the posterior weight of each softmax branch over a batch of runs of
reduced sweeps (different P and seeds in one compiled program), from each branch's reference
MAP (docs/reports/posterior_branches.md): constrained Laplace-referenced TI
(:func:`free_energies`) and tempered SMC across both branches (:func:`smc_weights`), over the
runs :func:`branch_runs` and :func:`paired_runs` gather from the reference sweeps. The one-run
version with probes chosen on the fly is :mod:`copyhead_jax.transition.branch_group`.
"""

from __future__ import annotations

import functools
import logging
import math
import resource
import time

import jax
import jax.numpy as jnp
import numpy as np

from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective
from ..sampling import marginal_energy, marginal_whitening, with_WG
from .branch_group import BRANCHES, SIDE, a_G
from .branch_ti import branch_log_z, path_rungs
from .smc import hmc_move, smc_collapse, tempered_smc


def _log(msg: str) -> None:
    logging.getLogger(__name__).info(msg)


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU time of this process (or, ``RUSAGE_CHILDREN``, its finished children)
    so far."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def stack_heads(arrs: list, cfg, dtype):
    """One head of ``cfg``'s attention whose leading axis runs over ``arrs`` (:func:`head_arrays`
    dicts)."""
    return head_class(cfg.model.attention).from_config(
        cfg, **{k: jnp.asarray(np.stack([a[k] for a in arrs]), dtype) for k in arrs[0]}
    )


def pick_reference(sweeps, branch: str, P: int, s: int, thr: float):
    """``(sweep, index, ref_P)``: the branch's MAP at ``P`` if its aG is in the branch's region,
    else the same seed's MAP of that branch at the nearest such P (None if there is none)."""
    cands = []
    for res in sweeps:
        for i, p in enumerate(res.P):
            a = float(res["cG"][i, s])
            if (a >= thr) if SIDE[branch] > 0 else (a < thr):
                cands.append((abs(math.log(p / P)), int(p), res, i))
    if not cands:
        return None
    _, p, res, i = min(cands, key=lambda c: c[:2])
    return res, i, p


def head_arrays(res, i, s):
    """The kept weights of run ``(i, s)`` of a reduced sweep."""
    return {k: np.asarray(res[f"params/{k}"][i, s]) for k in ("W_E", "b", "W_G", "W_O_hat")}


def references(sweeps: dict, P_group, seeds, a_thr: float):
    """``(index of P, P, seed, branch, pick_reference(...) or None)`` for every run of a group
    (``sweeps``: branch -> reference sweeps), P outermost, then seed, then branch."""
    for ip, P in enumerate(P_group):
        for s in seeds:
            for b in BRANCHES:
                yield ip, P, s, b, pick_reference(sweeps[b], b, P, s, a_thr)


def reference_list(sweeps: dict, P_group, seeds, a_thr: float) -> list:
    """``[P, seed, branch, the reference sweep's P grid, ref_P]`` per run with a reference: what
    a group's chains start from (a sweep added for other P leaves it unchanged)."""
    return [
        [int(P), s, b, [int(p) for p in ref[0].P], int(ref[2])]
        for _, P, s, b, ref in references(sweeps, P_group, seeds, a_thr)
        if ref is not None
    ]


def _rows(cfg, P_group):
    """``row(ip, s)``: the data (train, mask) of run ``(P_group[ip], s)`` of ``cfg``'s sweep,
    padded to the largest P."""
    inp = sweep_inputs(cfg, None, max(P_group))
    train, mask, nS = np.asarray(inp.train), np.asarray(inp.mask), cfg.sweep.n_seeds
    return lambda ip, s: (train[ip * nS + s], mask[ip * nS + s])


def branch_runs(cfg, sweeps: dict, P_group, seeds, a_thr: float, log=_log):
    """``(runs, arrs, trains, masks)`` of :func:`free_energies`: every (P, seed, branch) of a
    group that has a reference (:func:`references`; ``cfg``: the softmax config of the group's
    data, its P grid ``P_group``); a run without one is logged and skipped."""
    runs, arrs, data = [], [], []
    row = _rows(cfg, P_group)
    for ip, P, s, b, ref in references(sweeps, P_group, seeds, a_thr):
        if ref is None:
            log(f"P={P} seed={s} {b}: no MAP of that branch at any P; skipped")
            continue
        runs.append(dict(P=int(P), seed=s, branch=b, ref_P=ref[2]))
        arrs.append(head_arrays(ref[0], ref[1], s))
        data.append(row(ip, s))
    trains, masks = (list(x) for x in zip(*data)) if data else ([], [])
    return runs, arrs, trains, masks


def paired_runs(cfg, sweeps: dict, P_group, seeds, a_thr: float, log=_log):
    """``(runs, heads, trains, masks)`` of :func:`smc_weights`: every (P, seed) of a group whose
    two branches both have a reference (``heads``: branch -> weights per run); a run without is
    logged and skipped, two branches with different embeddings refused."""
    refs: dict = {}
    for ip, P, s, br, ref in references(sweeps, P_group, seeds, a_thr):
        refs.setdefault((ip, P, s), {})[br] = ref
    runs, heads, trains, masks = [], {k: [] for k in BRANCHES}, [], []
    row = _rows(cfg, P_group)
    for (ip, P, s), r in refs.items():
        if any(x is None for x in r.values()):
            log(f"P={P} seed={s}: a branch has no MAP at any P; skipped")
            continue
        arr = {br: head_arrays(x[0], x[1], s) for br, x in r.items()}
        if not all(np.array_equal(arr["pool"][k], arr["copy"][k]) for k in ("W_E", "b")):
            raise ValueError(f"seed {s}: the two branches' sweeps have different embeddings")
        runs.append(dict(P=int(P), seed=s, **{f"ref_P_{br}": int(r[br][2]) for br in BRANCHES}))
        for br in BRANCHES:
            heads[br].append(arr[br])
        train, mask = row(ip, s)
        trains.append(train)
        masks.append(mask)
    return runs, heads, trains, masks


@functools.partial(jax.jit, static_argnums=0)
def whiten(cfg, heads, train, mask):
    """The marginal whitening of every run (``lax.map``); call inside ``jax.enable_x64``."""
    obj = Objective.from_config(cfg)
    return jax.lax.map(lambda a: marginal_whitening(*a, obj), (heads, train, mask))


class _RungProgress:
    """Host side of ``hmc_chains(progress=...)`` for a group's rungs (one compiled program that
    runs for up to hours): a line at most every ``every_s`` seconds with the HMC steps done and
    the time left at the rate so far."""

    def __init__(self, every_s: float = 300.0):
        self.every_s, self.t0, self.last = every_s, 0.0, 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.time()
        if done <= 1:
            self.t0 = self.last = now
        if done < total and now - self.last < self.every_s:
            return
        self.last, spent = now, now - self.t0
        left = spent * (total - done) / max(done, 1)
        _log(
            f"rungs: HMC step {done}/{total} ({done / total:.0%}), {spent / 60:.0f} min in, "
            f"~{left / 60:.0f} min left"
        )


_PROGRESS = _RungProgress()


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _rungs(cfg, ts, hmc, keys, heads, train, mask, C, side, thr):
    """``vmap`` over runs: ``(draws[r, K, C, S, 2], accept, outside, finite, step, U*)``."""
    obj = Objective.from_config(cfg)
    hmc = dict(hmc)

    def one(k, h, t, m, Cm, sd):
        x0 = h.W_G.ravel()
        U = lambda w: marginal_energy(with_WG(h, x0 + Cm @ w), t, m, obj)  # noqa: E731
        order = lambda w: a_G(with_WG(h, x0 + Cm @ w), t, m)  # noqa: E731
        U_star = U(jnp.zeros_like(x0))
        st = path_rungs(
            k,
            U,
            order,
            np.asarray(ts),
            side=sd,
            threshold=thr,
            n=x0.size,
            U_star=U_star,
            progress=_PROGRESS,
            **hmc,
        )
        return st.records, st.accept, st.outside, st.finite, st.step_size, U_star

    return jax.vmap(one)(keys, heads, train, mask, C, side)


@functools.partial(jax.jit, static_argnums=(0,))
def _ref_orders(n_draws, key, heads, train, mask, C):
    """aG at ``n_draws`` exact reference draws ``x* + C w``, ``w ~ N(0, I)``, per run."""

    def one(k, h, t, m, Cm):
        x0 = h.W_G.ravel()
        w = jax.random.normal(k, (n_draws, x0.size), x0.dtype)
        return jax.lax.map(lambda v: a_G(with_WG(h, x0 + Cm @ v), t, m), w, batch_size=250)

    keys = jax.random.split(key, train.shape[0])
    return jax.vmap(one)(keys, heads, train, mask, C)


def free_energies(
    cfg, runs: list, arrs: list, trains: list, masks: list, key, c: dict, label="", log=_log
) -> dict:
    """F of every run of a group (``runs[r]``: P, seed, branch; ``arrs[r]``: its reference MAP's
    weights, :func:`head_arrays`; ``trains[r]``, ``masks[r]``: its data padded to one P) by
    constrained Laplace-referenced TI (:func:`.branch_ti.branch_log_z`): whitening in
    float64, then every run's rungs in one program. ``c``: ``a_thr``, ``ts``, ``hmc``,
    ``n_chains``, ``n_ref``, ``discard``. Each run gains its F, parts and chain health."""
    thr = c["a_thr"]
    for a, r in zip(arrs, runs, strict=True):  # one set of embeddings per seed, both branches
        o = next(x for x, q in zip(arrs, runs, strict=True) if q["seed"] == r["seed"])
        if not (np.array_equal(a["W_E"], o["W_E"]) and np.array_equal(a["b"], o["b"])):
            raise ValueError(f"seed {r['seed']}: the sweeps' embeddings differ")
    train, mask = jnp.asarray(np.stack(trains)), np.stack(masks)
    stack = lambda dt: stack_heads(arrs, cfg, dt)  # noqa: E731
    t0, c0 = time.time(), cpu_seconds()
    with jax.enable_x64(True):
        C64 = np.asarray(whiten(cfg, stack(jnp.float64), train, jnp.asarray(mask, jnp.float64)))
    logdet = np.array([np.linalg.slogdet(x)[1] for x in C64])
    log(f"P={label}: whitening of {len(runs)} runs, {cpu_seconds() - c0:.0f} CPU s")
    heads, C32 = stack(jnp.float32), jnp.asarray(C64, jnp.float32)
    m32 = jnp.asarray(mask, jnp.float32)
    side = jnp.asarray([SIDE[r["branch"]] for r in runs], jnp.int32)
    aG0 = np.asarray(jax.vmap(a_G)(heads, train, m32))
    inside = np.where(side > 0, aG0 >= thr, aG0 < thr)
    if not inside.all():
        raise ValueError(f"references outside their region: {np.asarray(runs)[~inside]}")
    k_ref, k_ch = jax.random.split(key)
    c1 = cpu_seconds()
    o_ref = np.asarray(_ref_orders(c["n_ref"], k_ref, heads, train, m32, C32))  # [R, n_ref]
    log(f"P={label}: reference masses, {cpu_seconds() - c1:.0f} CPU s")
    K, nC = len(c["ts"]), c["n_chains"]
    keys = jax.random.split(k_ch, len(runs) * K * nC).reshape(len(runs), K, nC)
    c2 = cpu_seconds()
    out = _rungs(
        cfg,
        tuple(c["ts"]),
        tuple(sorted(c["hmc"].items())),
        keys,
        heads,
        train,
        m32,
        C32,
        side,
        thr,
    )
    draws, acc, outside, finite, step, U_star = (np.asarray(x, np.float64) for x in out)
    draws = draws[..., int(c["discard"] * draws.shape[-2]) :, :]  # further burn-in
    log(f"P={label}: {len(runs)} runs x {K} rungs x {nC} chains, {cpu_seconds() - c2:.0f} CPU s")
    n = int(C64.shape[-1])
    for r, run in enumerate(runs):
        hit = (o_ref[r] >= thr) if run["branch"] == "copy" else (o_ref[r] < thr)
        p = float(hit.mean())
        fe = branch_log_z(
            c["ts"],
            draws[r, ..., 0],
            finite[r].astype(bool),
            U_star=U_star[r],
            logdet_C=float(logdet[r]),
            n=n,
            p_ref=p,
            p_ref_se=math.sqrt(p * (1 - p) / hit.size),
        )
        run.update(
            fe,
            p_ref=p,
            ref_hits=int(hit.sum()),
            n_ref=int(hit.size),
            aG_ref=float(aG0[r]),
            U_star=float(U_star[r]),
            logdet_C=float(logdet[r]),
            accept=acc[r].mean((1, 2)).tolist(),
            outside=outside[r].mean((1, 2)).tolist(),
            step=step[r].mean(1).tolist(),
            finite=finite[r].all(1).tolist(),
            aG_mean=draws[r, ..., 1].mean((1, 2)).tolist(),
            aG_t1=draws[r, -1, ..., 1][finite[r, -1] > 0].ravel().tolist(),
        )
    return {"runs": runs, "cpu_s": cpu_seconds() - c0, "wall_s": time.time() - t0}


TARGET_ACCEPT = 0.65


def smc_programs(cfg, c):
    """The jitted ``g``, ``record`` and ``mutate`` of :func:`tempered_smc` over ``R`` runs."""
    obj = Objective.from_config(cfg)
    thr = c["a_thr"]
    n_moves, n_leap = c["n_moves"], c["n_leap"]

    def U_m(h, t, m, x):
        return marginal_energy(with_WG(h, x), t, m, obj)

    def aG(h, t, m, x):
        return a_G(with_WG(h, x), t, m)

    def U_0(ref, x):
        """-log of the normalised two-component reference at ``x``."""
        lp = [
            -0.5 * jnp.sum((Ci @ (x - x0)) ** 2) - ld
            for x0, Ci, ld in zip(ref["x0"], ref["Cinv"], ref["logdet"], strict=True)
        ]
        n = x.size
        return -(jnp.logaddexp(*lp) - math.log(2.0) - 0.5 * n * math.log(2 * math.pi))

    per_run = lambda f: jax.vmap(jax.vmap(f, (None, None, None, None, 0)))  # noqa: E731

    @jax.jit
    def g_fn(h, t, m, ref, x):
        return per_run(lambda hh, tt, mm, rr, xx: U_m(hh, tt, mm, xx) - U_0(rr, xx))(
            h, t, m, ref, x
        )

    @jax.jit
    def record(h, t, m, x):
        return jax.vmap(jax.vmap(aG, (None, None, None, 0)))(h, t, m, x)

    @jax.jit
    def mutate(key, h, t, m, ref, x, temp, log_eps):
        R, N = x.shape[:2]

        def one(k, hh, tt, mm, rr, xi, ti, le):
            copy = aG(hh, tt, mm, xi) >= thr
            x0 = jnp.where(copy, rr["x0"][1], rr["x0"][0])
            w0 = jnp.where(copy, rr["Cinv"][1] @ (xi - x0), rr["Cinv"][0] @ (xi - x0))

            def to_x(w):
                return x0 + jnp.where(copy, rr["C"][1] @ w, rr["C"][0] @ w)

            def pot(w):
                x = to_x(w)
                return (1 - ti) * U_0(rr, x) + ti * U_m(hh, tt, mm, x)

            inside = lambda w: (aG(hh, tt, mm, to_x(w)) >= thr) == copy  # noqa: E731
            eps = jnp.exp(jnp.where(copy, le[1], le[0]))
            w1, a = hmc_move(
                k, pot, w0, step_size=eps, n_steps=n_moves, n_leap=n_leap, inside=inside
            )
            return to_x(w1), a, copy

        ks = jax.random.split(key, R * N).reshape(R, N)
        inner = jax.vmap(one, (0, None, None, None, None, 0, None, None))
        x1, a, copy = jax.vmap(inner)(ks, h, t, m, ref, x, temp, log_eps)
        # step per run and branch follows the mean acceptance of its particles
        n_b = jnp.stack([jnp.sum(~copy, 1), jnp.sum(copy, 1)], 1)
        a_b = jnp.stack([jnp.sum(a * ~copy, 1), jnp.sum(a * copy, 1)], 1) / jnp.maximum(n_b, 1)
        log_eps = jnp.where(n_b > 0, log_eps + (a_b - TARGET_ACCEPT), log_eps)
        return x1, a, jnp.clip(log_eps, math.log(0.01), math.log(1.5))

    return g_fn, record, mutate


def smc_weights(
    cfg, runs: list, arrs: dict, trains: list, masks: list, key, c: dict, label="", log=_log
) -> dict:
    """Tempered SMC of every run of a group from the fair mixture of its two branches' Laplace
    Gaussians to ``e^{-U_m}`` (``arrs[branch][r]``: the branch's reference weights): a pilot
    population on an adaptive schedule, then ``n_reps`` populations on the pilot's. ``c``:
    ``a_thr``, ``n_moves``, ``n_leap``, ``step_size``, ``ess_target``, ``max_steps``,
    ``n_pilot``, ``n_particles``, ``n_reps``. Each run gains log Z and the copy weight."""
    c0, t0 = cpu_seconds(), time.time()
    train, mask = jnp.asarray(np.stack(trains)), np.stack(masks)
    stack = lambda br, dt: stack_heads(arrs[br], cfg, dt)  # noqa: E731
    with jax.enable_x64(True):
        m64 = jnp.asarray(mask, jnp.float64)
        C64 = {br: np.asarray(whiten(cfg, stack(br, jnp.float64), train, m64)) for br in BRANCHES}
    log(f"P={label}: whitening, {len(runs)} runs x 2 branches, {cpu_seconds() - c0:.0f} CPU s")
    heads = {br: stack(br, jnp.float32) for br in BRANCHES}
    h = heads["pool"]  # the embeddings; W_G is each particle's
    m32 = jnp.asarray(mask, jnp.float32)
    f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
    x_ref = {br: heads[br].W_G.reshape(len(runs), -1) for br in BRANCHES}
    ref = {
        "x0": [x_ref[br] for br in BRANCHES],
        "C": [f32(C64[br]) for br in BRANCHES],
        "Cinv": [f32(np.linalg.inv(C64[br])) for br in BRANCHES],
        "logdet": [f32([np.linalg.slogdet(a)[1] for a in C64[br]]) for br in BRANCHES],
    }
    g_fn, record, mutate = smc_programs(cfg, c)
    R, n = len(runs), x_ref["pool"].shape[1]

    def draw(k, N):
        """Exact draws of each run's reference: branch by a fair coin, then its Gaussian."""
        k1, k2 = jax.random.split(k)
        copy = jax.random.bernoulli(k1, 0.5, (R, N, 1))
        z = jax.random.normal(k2, (R, N, n), jnp.float32)
        xs = [
            x_ref[br][:, None] + jnp.einsum("rij,rnj->rni", ref["C"][i], z)
            for i, br in enumerate(BRANCHES)
        ]
        return jnp.where(copy, xs[1], xs[0])

    def population(k, N, schedule):
        k0, k1 = jax.random.split(k)
        log_eps = jnp.full((R, 2), math.log(c["step_size"]), jnp.float32)

        def prog(i, t):
            if i % 10 == 0:
                log(f"P={label} N={N}: step {i}, min t {np.min(t):.3g}")

        res, _ = tempered_smc(
            k1,
            draw(k0, N),
            lambda x: g_fn(h, train, m32, ref, x),
            lambda kk, x, t, le: mutate(kk, h, train, m32, ref, x, t, le),
            log_eps,
            ess_target=c["ess_target"],
            max_steps=c["max_steps"],
            record=lambda x: record(h, train, m32, x),
            progress=prog,
            schedule=schedule,
        )
        return res

    k_pilot, k_reps = jax.random.split(key)
    c1 = cpu_seconds()
    pilot = population(k_pilot, c["n_pilot"], None)
    log(f"P={label}: pilot, {pilot.ts.shape[0]} steps, {cpu_seconds() - c1:.0f} CPU s")
    reps = []
    for i, k in enumerate(jax.random.split(k_reps, c["n_reps"])):
        c2 = cpu_seconds()
        reps.append(population(k, c["n_particles"], pilot.ts))
        log(f"P={label}: population {i}, {cpu_seconds() - c2:.0f} CPU s")
    thr = c["a_thr"]

    def w_copy(p, r):  # the last reweighting's weighted fraction with aG >= a_thr
        return float(np.sum(np.exp(p.log_w1[r]) * (p.obs1[r] >= thr)))

    for r, run in enumerate(runs):
        lz = np.array([p.log_z[r] for p in reps])
        wc = np.array([w_copy(p, r) for p in reps])
        nc = np.array([int(np.sum(p.obs[r] >= thr)) for p in reps])
        run.update(
            log_Z=lz.tolist(),
            w_copy=wc.tolist(),
            n_copy_final=nc.tolist(),
            finite=[bool(p.finite[r]) for p in reps],
            n_steps=int(pilot.ts.shape[0]),
            ts=pilot.ts[:, r].tolist(),
            pilot_ess=pilot.ess[:, r].tolist(),
            accept=[p.accept[:, r].mean() for p in reps],
            aG_final=[np.asarray(p.obs[r]).tolist() for p in reps],
            log_Z_pilot=float(pilot.log_z[r]),
            w_copy_pilot=w_copy(pilot, r),
            ess=[p.ess[:, r].tolist() for p in reps],  # on the pilot's fixed schedule
            collapsed=[
                smc_collapse(
                    {
                        "reached": bool(p.reached[r]),
                        "finite": bool(p.finite[r]),
                        "n_steps": int(p.ts.shape[0]),
                        "ts": p.ts[:, r].tolist(),
                        "ess": p.ess[:, r].tolist(),
                        "unique": len(np.unique(np.asarray(p.x[r]), axis=0)) / p.x.shape[1],
                    }
                )
                for p in reps
            ],
        )
    return {"runs": runs, "cpu_s": cpu_seconds() - c0, "wall_s": time.time() - t0}
