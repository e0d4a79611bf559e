r"""devinterp's default local learning coefficient per run (issue 12, item 2).

$$\hat\lambda(w^*)=n\beta\,\big(\mathbb E_{w\mid w^*,\gamma}[L_n(w)]-L_n(w^*)\big),\qquad
p(w)\propto e^{-n\beta L_n(w)-\frac\gamma2\|w-w^*\|^2},$$

at devinterp's defaults $\beta=1/\log n$ and $\gamma=100$ (``copyhead_jax.bayes.llc`` has the
conventions), on the quenched reduced head: $w=(W^G,\hat W^O)$ (1,050 weights at L = 25, V = 5),
$w^*$ the run's exact MAP, $n=P$ sequences and
$nL_n=D=w_{\rm lik}\sum_\alpha\|f_\alpha-y_\alpha\|^2$ (the data energy of docs/theory.md §2 up
to a constant that cancels; the paper preset's per-position likelihood only changes
$w_{\rm lik}$). No prior term (devinterp has none): the localisation
is the only restoring force in directions the data do not pin.

Sampler: full-batch SGLD (``copyhead_jax.sgld.run_chains``, devinterp's ``lr`` = 2 eta), all
seeds of one P in one compiled program. Step per run: eta = ``eta_frac`` / (gamma +
lambda_max), lambda_max the largest curvature of $n\beta L_n$ at $w^*$ (power iteration), so the
stiffest direction's stationary variance is inflated by at most 1 / (1 - eta_frac / 2) (SGLD's
O(eta) bias; 2.6% at eta_frac = 0.05) and the softest (curvature >= gamma) relaxes in
~(1 + lambda_max / gamma) / eta_frac steps.
"""

from __future__ import annotations

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from copyhead_jax.bayes import ess, mcse_mean, split_rhat
from copyhead_jax.models import head_class
from copyhead_jax.posterior import Objective
from copyhead_jax.sgld import run_chains
from copyhead_jax.sweep import sweep_inputs

#: devinterp's defaults (beta = 1/log n, gamma = 100); chains: at gamma = 100 the slowest
#: direction relaxes in ~(1 + lambda_max / gamma) / eta_frac <= 70 steps on the plain grid
#: (lambda_max <= 250 measured at P <= 8 linear, <= 6 softmax), so 1,500 kept steps are >= 20
#: relaxation times per chain
LLC = dict(gamma=100.0, n_chains=4, n_steps=2000, burn_in=500, thin=5, eta_frac=0.05,
           power_iters=30)  # fmt: skip


def _data_energy(cls, chi, w_lik):
    def D(w, tokens, mask, W_E, b):
        h = cls(W_E=W_E, b=b, W_G=w[0], W_O_hat=w[1], chi=chi)
        return w_lik * jnp.sum(mask * h.squared_errors(tokens))

    return D


@functools.partial(jax.jit, static_argnames=("cls", "chi", "w_lik", "n_steps", "burn_in",
                                             "thin", "n_chains", "power_iters"))  # fmt: skip
def _llc_chains(keys, w_star, tokens, mask, W_E, b, nbeta_over_n, gamma, eta_frac, *, cls, chi,
                w_lik, n_steps, burn_in, thin, n_chains, power_iters):  # fmt: skip
    """One P, all seeds (leading axis): ``(L_n draws [S, C, T], L_n(w*) [S], eta [S],
    lambda_max [S], finite [S, C])``."""
    D = _data_energy(cls, chi, w_lik)

    def one(key, ws, tok, m, we, bb):
        Ln = lambda w: D(w, tok, m, we, bb) / jnp.maximum(jnp.sum(m), 1.0)  # noqa: E731
        n = jnp.sum(m)
        nbeta = nbeta_over_n * n
        g = jax.grad(Ln)

        def power(v, _):
            hv = jax.tree.map(lambda x: nbeta * x, jax.jvp(g, (ws,), (v,))[1])
            nrm = jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree.leaves(hv)))
            return jax.tree.map(lambda x: x / nrm, hv), nrm

        v0 = jax.tree.map(lambda x: jnp.ones_like(x) / math.sqrt(sum(
            y.size for y in jax.tree.leaves(ws))), ws)  # fmt: skip
        _, nrms = jax.lax.scan(power, v0, None, length=power_iters)
        lam = nrms[-1]
        eta = eta_frac / (gamma + lam)

        def potential(w):
            loc = sum(jnp.sum((a - c) ** 2) for a, c in zip(w, ws))
            return nbeta * Ln(w) + 0.5 * gamma * loc

        res = run_chains(key, ws, potential, n_steps=n_steps, step_size=eta, burn_in=burn_in,
                         thin=thin, n_chains=n_chains, draw_fn=Ln)  # fmt: skip
        return res.draws, Ln(ws), eta, lam, res.finite

    return jax.vmap(one)(keys, w_star, tokens, mask, W_E, b)


def llc_sweep(res, key, settings: dict | None = None) -> dict:
    r"""devinterp-default $\hat\lambda$ of every run of a kept-weights reduced sweep ``res``:
    arrays ``[P, seed]`` (value, mcse, R-hat and ESS of L_n, eta, lambda_max, nbeta)."""
    s = LLC | (settings or {})
    cfg = res.config
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    cls, obj = head_class(cfg.model.attention), Objective.from_config(cfg)
    inp = sweep_inputs(cfg, None)
    train, mask = np.asarray(inp.train), np.asarray(inp.mask)
    prm = {k: res[f"params/{k}"] for k in ("W_E", "b", "W_G", "W_O_hat")}
    names = ("value", "mcse", "rhat", "ess", "eta", "lambda_max", "nbeta", "finite_frac")
    out = {k: np.full((nP, nS), np.nan) for k in names}
    t0 = time.time()
    for i, P in enumerate(cfg.sweep.P):
        if P < 2:  # beta = 1 / log n needs n >= 2
            continue
        rows = slice(i * nS, (i + 1) * nS)
        tok = jnp.asarray(train[rows][:, :P])
        m = jnp.asarray(mask[rows][:, :P], jnp.float32)
        keys = jax.random.split(jax.random.fold_in(key, int(P)), nS)
        draws, L0, eta, lam, fin = _llc_chains(
            keys, (jnp.asarray(prm["W_G"][i]), jnp.asarray(prm["W_O_hat"][i])), tok, m,
            jnp.asarray(prm["W_E"][i]), jnp.asarray(prm["b"][i]), 1.0 / math.log(P),
            s["gamma"], s["eta_frac"], cls=cls, chi=float(cfg.posterior.chi),
            w_lik=float(obj.likelihood_weight), n_steps=s["n_steps"],
            burn_in=s["burn_in"], thin=s["thin"], n_chains=s["n_chains"],
            power_iters=s["power_iters"],
        )  # fmt: skip
        draws, L0 = np.asarray(draws, np.float64), np.asarray(L0, np.float64)
        fin = np.asarray(fin) & np.isfinite(draws).all(-1)
        nbeta = P / math.log(P)
        for j in range(nS):
            ok = draws[j][fin[j]]
            if len(ok) < 2:
                continue
            out["value"][i, j] = nbeta * (ok.mean() - L0[j])
            out["mcse"][i, j] = nbeta * float(mcse_mean(ok))
            out["rhat"][i, j], out["ess"][i, j] = float(split_rhat(ok)), float(ess(ok))
            out["finite_frac"][i, j] = fin[j].mean()
        out["eta"][i], out["lambda_max"][i], out["nbeta"][i] = (
            np.asarray(eta),
            np.asarray(lam),
            nbeta,
        )
    out["settings"], out["seconds"] = s, time.time() - t0
    out["n"] = "P (sequences)"
    return out


def figure(res: dict):
    """lambda-hat against P: devinterp's default (beta = 1/log n, gamma = 100; localised SGLD
    from the MAP) beside the posterior's own (beta = 1, gamma = 0; from the collapsed-HMC draws),
    seed mean +- sd, per attention and start; ``None`` if the result has no devinterp LLC. A
    negative lambda-hat (the chains found loss below the MAP's: the estimate is invalid there)
    is shaded and said so."""
    import matplotlib
    import matplotlib.pyplot as plt

    from copyhead_jax.style import (
        BLACK,
        BLUE,
        GREY,
        KEY_COLORS,
        ORANGE,
        P_LABEL,
        RC,
        VERMILLION,
        legend,  # fmt: skip
        log_P_axis,
        num,
    )

    from .posterior_features import _band

    soft = res["softmax"]
    blocks = (
        ("linear", res["linear"], BLUE, "o"),
        ("softmax, pooling start", soft["pool"], ORANGE, "s"),
        ("softmax, copy start", soft.get("copy_high"), VERMILLION, "v"),
    )
    blocks = [(n, b, c, m) for n, b, c, m in blocks if b is not None and b.get("llc_dv")]
    if not blocks:
        return None
    with matplotlib.rc_context(RC):
        fig, ax = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
        Ps, neg = [], False
        for name, b, col, mk in blocks:
            for g, v in b["llc_dv"].items():
                _band(ax[0], b["P"], v["value"], f"{name} ({g.replace('gamma', 'γ')})",
                      color=col, marker=mk)  # fmt: skip
                neg |= bool(np.nanmin(np.asarray(v["value"], float)) < 0)
            _band(ax[1], b["P"], b["llc"]["value"], name, color=col, marker=mk)
            Ps += list(b["P"])
        th = res["theory"]["map"]
        for a in ax:
            for k in ("P_cG", "P_aG"):
                if th.get(k):
                    a.axvline(th[k], color=KEY_COLORS[k], ls="--", lw=0.8,
                              label=f"EK MAP $P^*_{{{k[2:]}}}$ = {num(th[k])}")  # fmt: skip
            log_P_axis(a, Ps)
            a.set_xlabel(P_LABEL)
        a = ax[0]
        if neg:
            a.set_yscale("symlog", linthresh=1.0)
            a.axhspan(
                a.get_ylim()[0],
                0,
                color=GREY,
                alpha=0.15,
                lw=0,
                label="$\\hat\\lambda < 0$: invalid (chains went below the MAP's loss)",
            )
            a.axhline(0, color=BLACK, lw=0.6)
        a.set(ylabel="$\\hat\\lambda$ (symmetric log scale)" if neg else "$\\hat\\lambda$",
              title="devinterp default: $n\\beta = n / \\log n$, $\\gamma = 100$")  # fmt: skip
        ax[1].set_yscale("log")
        ax[1].set(ylabel="$\\hat\\lambda$ (log scale)",
                  title="posterior: $n\\beta = n$, $\\gamma = 0$ (prior kept)")  # fmt: skip
        for a in ax:
            legend(a)
        fig.suptitle(f"learning coefficient $\\hat\\lambda$ ({res['preset']}); error bars: sd "
                     "over seeds")  # fmt: skip
    return fig
