r"""Free energy of each softmax branch of a reduced sweep by Laplace-referenced thermodynamic
integration with whitened SGLD, and WBIC as a cross-check (docs/reports/posterior.md, item 3).

In the whitened coordinates of :func:`copyhead_jax.sampling.run.whiten_runs` ($\theta=\theta^*+Cw$,
$CC^\top=H^{-1}$ at the branch fit) the reference $U_0(w)=U^*+\tfrac12|w|^2$ is the branch's
Laplace Gaussian and the path $U_t=(1-t)U_0+tU$ stays on the branch at every $t$. With
$g=U-U_0$: $\log Z_1/Z_0=-\int_0^1\mathbb E_t[g]\,dt$ (:func:`copyhead_jax.sampling.ti_quadrature`)
and $F=U^*+\tfrac12\log\det H-\log Z_1/Z_0$, up to the likelihood's normalisation (common to
both branches at one P). WBIC: $\mathbb E_{\beta_0}[D]$ at $\beta_0=1/\log P$. All chains of all
runs, rungs and the WBIC temperature run in one compiled program (``vmap`` of
:func:`copyhead_jax.sampling.sgld.sgld_chains`), each started at the fit.
"""

from __future__ import annotations

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from ..data import masked_mean
from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective, embedding_prior_energy, log_prior_energy
from ..observables import attention_matrices, order_parameters
from ..sampling import (
    mcse_mean,
    sgld_chains,
    split_rhat,
    susceptibility,
    ti_quadrature,
    whiten_runs,
    whitened_potential,
)

#: Recorded at every draw: data energy D, prior energy, 0.5|w|^2, and c1, cG (aG), r.
TEMPERED_FIELDS = ("D", "prior", "half_w2", "c1", "cG", "r")


def _one_run(cfg, n_steps, burn_in, thin, n_chains, eta, keys, head, train, mask, theta, C, coef):
    """Chains of one run at one temperature: potential ``a D + b prior + c U_0`` with
    ``coef = (a, b, c)`` and ``U_0 = U* + |w|^2/2`` (``U*`` = U at the fit)."""
    obj = Objective.from_config(cfg)
    U_w, head_of = whitened_potential(head, obj)

    def parts(w, th, Cm, t, m):
        h = head_of(w, th, Cm)
        prior = log_prior_energy(h, obj) - embedding_prior_energy(h, obj)
        return obj.likelihood_weight * h.squared_error_sum(t, m), prior, h

    w0 = jnp.zeros_like(theta)
    D0, pr0, _ = parts(w0, theta, C, train, mask)
    U_star = D0 + pr0

    def potential(w, th, Cm, t, m, cf):
        D, pr, _ = parts(w, th, Cm, t, m)
        return cf[0] * D + cf[1] * pr + cf[2] * (U_star + 0.5 * jnp.sum(w**2))

    def draw(w, th, Cm, t, m, cf):
        D, pr, h = parts(w, th, Cm, t, m)
        o = order_parameters(masked_mean(attention_matrices(h, t), m), gauge_fix=head.gauge_fix)
        return jnp.stack([D, pr, 0.5 * jnp.sum(w**2), o.c1, o.cG, o.r])

    res = sgld_chains(
        keys,
        w0,
        potential,
        n_steps=n_steps,
        step_size=eta,
        burn_in=burn_in,
        thin=thin,
        n_chains=n_chains,
        args=(theta, C, train, mask, coef),
        draw_fn=draw,
    )
    return res.draws, res.finite, U_star


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4, 5))
def tempered_chains(
    cfg, n_steps, burn_in, thin, n_chains, eta, keys, heads, train, mask, theta, C, coef
):
    """``vmap`` over runs ``r`` and temperatures ``k`` (``coef[r, k, 3]``, ``keys[r, k, C]``):
    draws ``[r, k, chain, draw, field]``, finite ``[r, k, chain]``, ``U*[r, k]``."""
    one = functools.partial(_one_run, cfg, n_steps, burn_in, thin, n_chains, eta)
    inner = jax.vmap(one, in_axes=(0, None, None, None, None, None, 0))
    return jax.vmap(inner)(keys, heads, train, mask, theta, C, coef)


def ti_coefficients(ts, beta0: float | None) -> np.ndarray:
    """``[K (+1), 3]``: the Laplace-referenced path ``(t, t, 1 - t)`` per rung, then the WBIC
    temperature ``(beta0, 1, 0)`` when ``beta0`` is given."""
    rows = [(t, t, 1.0 - t) for t in ts]
    if beta0 is not None:
        rows.append((beta0, 1.0, 0.0))
    return np.asarray(rows, np.float32)


def branch_free_energy(ts, draws, finite, U_star: float, half_logdet_H: float) -> dict:
    """``F = U* + 0.5 log det H_c - log(Z_1/Z_0)`` of one run from its rungs' draws
    (``draws[K, chain, draw, field]`` on ``ts``), with the TI MCSE and the quadrature check."""
    D, pr, hw = (draws[..., TEMPERED_FIELDS.index(k)] for k in ("D", "prior", "half_w2"))
    g = np.asarray(D + pr - U_star - hw, np.float64)  # U - U_0
    K = len(ts)
    mean, var, mse, vse, rhat = (np.full(K, np.nan) for _ in range(5))
    for k in range(K):
        ok = g[k][finite[k]]
        if ok.shape[0] >= 1 and ok.shape[1] >= 4:
            mean[k], mse[k] = -ok.mean(), float(mcse_mean(ok))
            s = susceptibility(ok)
            var[k], vse[k] = float(s.value), float(s.mcse)
            rhat[k] = float(split_rhat(ok)) if ok.shape[0] > 1 else np.nan
    logz, se = ti_quadrature(ts, mean, var, mse, vse)
    trap, _ = ti_quadrature(ts, mean)
    return {
        "F": float(U_star + half_logdet_H - logz),
        "mcse": se,
        "U_star": float(U_star),
        "half_logdet_H": float(half_logdet_H),
        "log_Z_ratio": logz,
        "quadrature_correction": logz - trap,
        "mean_g": (-mean).tolist(),
        "var_g": var.tolist(),
        "rhat_g": rhat.tolist(),
    }


def _heads(res, idx):
    cfg = res.config
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    h = {
        k: res[f"params/{k}"].reshape((n_runs,) + res[f"params/{k}"].shape[2:])[idx]
        for k in ("W_E", "b", "W_G", "W_O_hat")
    }
    return head_class(cfg.model.attention)(**h, chi=cfg.posterior.chi)


def free_energies(pool, copy, P_ti, ti: dict, key) -> dict:
    """F and WBIC of both branches (kept-weights sweeps ``pool`` and ``copy`` of one config but
    their start) at every ``P_ti`` and seed, in one compiled program; ``ti``: ``n_rungs``,
    ``n_steps``, ``burn_in``, ``thin``, ``n_chains``, ``step_size``. Arrays ``[branch, P,
    seed]``."""
    cfg = pool.config
    nS = cfg.sweep.n_seeds
    P_ti = [int(p) for p in P_ti if p in pool.P and p in copy.P]
    Pm = max(P_ti)
    runs, heads, trains, masks = [], [], [], []
    for br, res in (("pool", pool), ("copy", copy)):
        inp = sweep_inputs(res.config, None)
        for p in P_ti:
            i = int(np.flatnonzero(res.P == p)[0])
            for s in range(nS):
                j = i * nS + s
                runs.append((br, p, s))
                heads.append(_heads(res, j))
                trains.append(np.asarray(inp.train)[j][:Pm])
                masks.append(np.asarray(inp.mask)[j][:Pm])
    n = len(P_ti) * nS  # the two branches share data and embeddings run by run
    same = all(np.array_equal(trains[i], trains[i + n]) for i in range(n))
    same_emb = all(np.array_equal(heads[i].W_E, heads[i + n].W_E) for i in range(n))
    head = jax.tree.map(lambda *x: jnp.stack(x), *heads)
    train, mask = jnp.asarray(np.stack(trains)), jnp.asarray(np.stack(masks))
    with jax.enable_x64(True):
        h64 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64), head)
        theta, C = whiten_runs(cfg, h64, train, mask)
        theta, C = np.asarray(theta), np.asarray(C)
    half_logdet = np.array([-np.linalg.slogdet(c)[1] for c in C])  # 0.5 log det H_c
    ts = np.linspace(0.0, 1.0, ti["n_rungs"] + 1)
    beta0 = np.array([1.0 / math.log(p) if p > 1 else 1.0 for _, p, _ in runs])
    coef = np.stack([ti_coefficients(ts, b) for b in beta0])
    R, K, nC = len(runs), len(ts) + 1, ti["n_chains"]
    keys = jax.random.split(key, R * K * nC).reshape(R, K, nC)
    head32 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), head)
    t0 = time.time()
    draws, finite, U_star = tempered_chains(
        cfg,
        ti["n_steps"],
        ti["burn_in"],
        ti["thin"],
        nC,
        ti["step_size"],
        keys,
        head32,
        train,
        mask,
        jnp.asarray(theta, jnp.float32),
        jnp.asarray(C, jnp.float32),
        jnp.asarray(coef),
    )
    draws, finite, U_star = np.asarray(draws, np.float64), np.asarray(finite), np.asarray(U_star)
    iG = TEMPERED_FIELDS.index("cG")
    out = {
        k: np.full((2, len(P_ti), nS), np.nan)
        for k in (
            "F",
            "F_mcse",
            "U_star",
            "half_logdet_H",
            "log_Z_ratio",
            "quad_corr",
            "wbic",
            "wbic_mcse",
            "aG_t1",
            "aG_wbic",
            "rhat_g_max",
        )
    }
    for r, (br, p, s) in enumerate(runs):
        b, i = ("pool", "copy").index(br), P_ti.index(p)
        fe = branch_free_energy(ts, draws[r, :-1], finite[r, :-1], U_star[r, 0], half_logdet[r])
        for k, v in (
            ("F", fe["F"]),
            ("F_mcse", fe["mcse"]),
            ("U_star", fe["U_star"]),
            ("half_logdet_H", fe["half_logdet_H"]),
            ("log_Z_ratio", fe["log_Z_ratio"]),
            ("quad_corr", fe["quadrature_correction"]),
            ("rhat_g_max", np.nanmax(np.r_[fe["rhat_g"], -np.inf])),
        ):
            out[k][b, i, s] = v
        w = draws[r, -1][finite[r, -1]]  # WBIC temperature
        D = w[..., TEMPERED_FIELDS.index("D")]
        out["wbic"][b, i, s] = D.mean()
        out["wbic_mcse"][b, i, s] = float(mcse_mean(D)) if D.shape[1] >= 4 else np.nan
        out["aG_wbic"][b, i, s] = w[..., iG].mean()
        out["aG_t1"][b, i, s] = draws[r, len(ts) - 1][finite[r, len(ts) - 1]][..., iG].mean()
    out.update(
        P=P_ti,
        ts=ts,
        same_data=same,
        same_embeddings=same_emb,
        finite_frac=float(finite.mean()),
        seconds=time.time() - t0,
    )
    return out
