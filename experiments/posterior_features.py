r"""Pieces of the posterior artefact (issue 12, items 0, 1, 3, 4): early-warning verdict, branch
free energies by thermodynamic integration from the branch's Laplace Gaussian, crossings, weights.

**Free energy of one branch.** In the whitened coordinates of
:mod:`copyhead_jax.sample_reduced` ($\theta=\theta^*+Cw$, $CC^\top=H_c^{-1}$ at the branch fit)
the reference $U_0(w)=U^*+\tfrac12|w|^2$ is the branch's Laplace Gaussian, and the path
$U_t=(1-t)\,U_0+t\,U$ stays centred on the branch at every $t$ (the prior-referenced path
$\beta\in[0,1]$ of :func:`copyhead_jax.bayes.thermodynamic_integration` passes through the prior,
where the two softmax branches merge and the data-pinned whitened directions have curvature
$\sim10^{-3}$, i.e. ~$10^4$ SGLD steps per rung). With $g=U-U_0$,
$$\log\frac{Z_1}{Z_0}=-\int_0^1\mathbb E_t[g]\,dt,\qquad
F\equiv-\log\!\int\varphi(\theta)\,e^{-D(\theta)}d\theta
=U^*+\tfrac12\log\det H_c-\log\frac{Z_1}{Z_0},$$
with $\varphi$ the normalised $\mathcal N(0,I)$ prior of $(W^G,\hat W^O)$ (theory §2c) and $D$
the data energy ($F$ omits the likelihood's normalisation $\tfrac{PLV}2\log(2\pi\sigma^2/\chi)$,
common to both branches at a given $P$). The integral uses :func:`bayes.ti_quadrature`
(trapezoid plus the Euler-Maclaurin end correction from $\mathrm{Var}_t[g]$).
WBIC (Watanabe 2013) estimates the same $F$: $\mathbb E_{\beta_0}[D]$ at $\beta_0=1/\log P$.

All chains of all runs, rungs and the WBIC temperature run in one compiled program
(``vmap`` over runs x rungs of :func:`copyhead_jax.sgld.run_chains`), each started at the fit.
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from copyhead_jax.bayes import mcse_mean, split_rhat, susceptibility, ti_quadrature
from copyhead_jax.compare.locate import locate_crossing
from copyhead_jax.compare.warning import early_warning
from copyhead_jax.data import masked_mean
from copyhead_jax.observables import attention_matrices, order_parameters
from copyhead_jax.posterior import Objective, embedding_prior_energy, log_prior_energy
from copyhead_jax.sample_reduced import whitened_potential
from copyhead_jax.sgld import run_chains

# ---------------------------------------------------------------------------------------------
# Statistics over seeds


@contextlib.contextmanager
def quiet():
    """NaN-aware means of all-NaN rows (runs without a value) stay NaN, silently."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def check_only(only: int | None, groups) -> None:
    """A driver's ``--only``: None or one of its group indices ``groups`` (else ValueError)."""
    if only is not None and only not in list(groups):
        raise ValueError(f"only must be one of the group indices {list(groups)}, got {only}")


def t_interval(x, level: float = 0.95) -> dict:
    """Mean and Student-t confidence interval of the finite entries of ``x`` (``n - 1`` df)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "method": "t"}
    m = float(x.mean())
    if n < 2:
        return {"mean": m, "lo": None, "hi": None, "n": 1, "method": "t"}
    h = float(sps.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return {"mean": m, "lo": m - h, "hi": m + h, "n": int(n), "method": "t"}


def growth_verdict(P, chi, P_star: float, *, lo: float = 0.5, hi: float = 0.9) -> dict:
    r"""Early warning from the susceptibility $\chi=P\,\mathrm{Var}$ (``chi[nP, n_seeds]``):
    :func:`copyhead_jax.compare.early_warning` (the one definition: growth of the variance from
    ``lo P*`` to ``hi P*``, its t-interval over seeds, ``signal`` against ``GROWTH_TOL``) on
    ``chi / P``, plus ``ratio``: the growth of $\chi$ itself (the variance's times ``hi / lo``).
    ``verdict``: ``grows`` / ``flat`` / ``shrinks`` (the interval against 1) or
    ``undetermined``."""
    P = np.asarray(P, float)
    var = np.asarray(chi, float).reshape(P.size, -1) / P[:, None]
    out = early_warning(P, var, P_star, window=(lo, hi))
    k = hi / lo
    out["ratio"] = None if out["var_ratio"] is None else out["var_ratio"] * k
    out["ratio_ci"] = None if out["var_ratio_ci"] is None else [x * k for x in out["var_ratio_ci"]]
    return out


# ---------------------------------------------------------------------------------------------
# Branch crossing and weights


def crossing(P, F_a, F_b, valid=None) -> dict:
    """Where branch ``a`` stops being preferred: ``(F_a - F_b)/P`` turns from < 0 to >= 0
    (log-linear interpolation, :func:`copyhead_jax.compare.locate.locate_crossing`), on the seed
    mean and per seed (``[nP, n_seeds]``), with a t-interval over the seeds that cross."""
    P = np.asarray(P, float)
    Fa = np.asarray(F_a, float).reshape(P.size, -1)
    Fb = np.asarray(F_b, float).reshape(P.size, -1)
    v = np.ones_like(Fa, bool) if valid is None else np.asarray(valid, bool).reshape(Fa.shape)
    Fa_m = np.where(v, Fa, np.nan)
    with quiet():
        mean = locate_crossing(P, np.nanmean(Fa_m, 1), np.nanmean(np.where(v, Fb, np.nan), 1))
    per = []
    for s in range(Fa.shape[1]):
        r = locate_crossing(P, Fa[:, s], Fb[:, s], valid=v[:, s])
        per.append(r.P_star if r.P_star is not None else float("nan"))
    return {"P_star": mean.P_star, "located": mean.to_dict(), "per_seed": per,
            "per_seed_ci": t_interval(per)}  # fmt: skip


def copy_weight(F_copy, F_pool):
    r"""$w_{\rm copy}=1/(1+e^{F_{\rm copy}-F_{\rm pool}})$ (stable for large differences)."""
    from scipy.special import expit

    return expit(np.asarray(F_pool, float) - np.asarray(F_copy, float))


def weight_window(P, w, lo: float = 0.05, hi: float = 0.95) -> dict:
    """``P`` where ``w`` crosses ``lo``, 1/2 and ``hi`` going up (log-linear interpolation)."""
    P, w = np.asarray(P, float), np.asarray(w, float)
    ok = np.isfinite(w)
    P, w = P[ok], w[ok]

    def level(y0):
        for i in range(P.size - 1):
            if w[i] < y0 <= w[i + 1]:
                f = (y0 - w[i]) / (w[i + 1] - w[i])
                return float(np.exp((1 - f) * np.log(P[i]) + f * np.log(P[i + 1])))
        return None

    return {"P_w05": level(lo), "P_equal": level(0.5), "P_w95": level(hi)}


# ---------------------------------------------------------------------------------------------
# Tempered chains in whitened coordinates (one program for runs x temperatures)

#: Recorded at every draw: data energy D, prior energy, 0.5|w|^2, and c1, cG (aG), r.
TEMPERED_FIELDS = ("D", "prior", "half_w2", "c1", "cG", "r")


def _one_run(cfg, n_steps, burn_in, thin, n_chains, eta, keys, head, train, mask, theta, C, coef):
    """Chains of one run at one temperature: potential ``a D + b prior + c U_0`` with
    ``coef = (a, b, c)`` and ``U_0 = U* + |w|^2/2`` (``U*`` = U at the fit)."""
    obj = Objective.from_config(cfg)
    U_w, head_of = whitened_potential(head, obj)
    linear = cfg.model.attention == "linear"

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
        o = order_parameters(masked_mean(attention_matrices(h, t), m), gauge_fix=linear)
        return jnp.stack([D, pr, 0.5 * jnp.sum(w**2), o.c1, o.cG, o.r])

    res = run_chains(
        keys, w0, potential, n_steps=n_steps, step_size=eta, burn_in=burn_in, thin=thin,
        n_chains=n_chains, args=(theta, C, train, mask, coef), draw_fn=draw,
    )  # fmt: skip
    return res.draws, res.finite, U_star


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4, 5))
def tempered_chains(cfg, n_steps, burn_in, thin, n_chains, eta, keys, heads, train, mask, theta,
                    C, coef):  # fmt: skip
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
        "F": float(U_star + half_logdet_H - logz), "mcse": se, "U_star": float(U_star),
        "half_logdet_H": float(half_logdet_H), "log_Z_ratio": logz,
        "quadrature_correction": logz - trap, "mean_g": (-mean).tolist(),
        "var_g": var.tolist(), "rhat_g": rhat.tolist(),
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Figures: result dict in, matplotlib Figures out


def _band(ax, P, y, label, **kw):
    y = np.asarray(y, float).reshape(len(P), -1)
    with quiet():
        m, s = np.nanmean(y, 1), np.nanstd(y, 1)
    kw.setdefault("marker", "o")
    ax.errorbar(P, m, yerr=s, ms=4, capsize=2, label=label, **kw)


def figures(res: dict, curves: dict) -> dict:
    """``orderparams``, ``susceptibility``, ``llc`` and (plain) ``free_energy`` figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from copyhead_jax.style import RC

    with quiet(), matplotlib.rc_context(RC):
        return _figures(plt, res, curves)


def _stars(a, marks) -> None:
    """EK P* as vertical lines, each with its legend entry: ``marks`` = (name, P, colour)."""
    for name, v, col in marks:
        if v:
            a.axvline(v, color=col, ls="--", lw=1, label=f"EK MAP {name} = {v:,.1f}")


def _figures(plt, res, curves):
    from copyhead_jax.style import (
        BLACK,
        BLUE,
        GREEN,
        GREY,
        KEY_COLORS,
        ORANGE,
        P_LABEL,
        PURPLE,  # fmt: skip
        SKY,
        VERMILLION,
        legend,
        log_P_axis,
    )

    lin, soft, th = res["linear"], res["softmax"], res["theory"]
    pre = res["preset"]
    Pc = np.asarray(curves["P"])
    figs = {}
    # order parameters: MAP (filled) against the posterior mean (open), EK theory as lines
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.8), layout="constrained")
    a = ax[0]
    for k, name, col in (("cG", "$c_G$", BLUE), ("r", "$r$", GREEN)):
        _band(a, lin["P"], lin["map"][k], f"MAP {name}", color=col)
        _band(a, lin["P"], lin["post_mean"][k], f"posterior mean {name}", color=col, mfc="none",
              marker="s", ls=":")  # fmt: skip
    _band(a, lin["P"], lin["post_mean"]["psi"], "posterior mean $\\psi$", color=ORANGE,
          marker="^", ls=":")  # fmt: skip
    a.plot(Pc, curves["map"]["cG"], "-", color=BLACK, lw=1, label="EK theory $c_G$ (MAP)")
    a.plot(Pc, curves["post"]["cG"], "--", color=BLACK, lw=1, label="EK theory $c_G$ (posterior)")
    a.plot(Pc, curves["map"]["c1"], "-", color=SKY, lw=1, label="EK theory $c_1$ (MAP)")
    a.set(ylabel="order parameter (dimensionless)", title=f"linear attention ({pre})")
    a = ax[1]
    cols = {"pool": ORANGE, "copy": PURPLE, "copy_high": VERMILLION}
    names = {"pool": "pooling start", "copy": "copy start", "copy_high": "copy start, high P"}
    for br in ("pool", "copy", "copy_high"):
        if soft.get(br) is None:
            continue
        _band(a, soft[br]["P"], soft[br]["map"]["cG"], f"MAP $a_G$, {names[br]}", color=cols[br])
        _band(a, soft[br]["P"], soft[br]["post_mean"]["cG"], f"posterior mean $a_G$, {names[br]}",
              color=cols[br], mfc="none", marker="s", ls=":")  # fmt: skip
    a.plot(Pc, curves["map"]["aG"], "-", color=BLACK, lw=1, label="EK theory $a_G$ (MAP)")
    a.plot(Pc, curves["post"]["aG"], "--", color=BLACK, lw=1, label="EK theory $a_G$ (posterior)")
    fe = soft.get("free_energy")
    if fe is not None:
        top = np.nanmax(np.asarray(soft["pool"]["map"]["cG"], float))
        a.plot(fe["P"], np.nanmean(np.asarray(fe["w_copy"], float), 1) * top, "D:", color=GREY,
               ms=4, label=f"posterior weight of copying $w_{{copy}}$ x {top:.2g}")  # fmt: skip
    a.set(ylabel="copy logit $a_G$ (dimensionless)", title=f"softmax attention ({pre})")
    for a in ax:
        log_P_axis(a, Pc)
        a.set_xlabel(P_LABEL)
        legend(a)
    fig.suptitle("posterior (collapsed HMC) against MAP; error bars: sd over seeds")
    figs["orderparams"] = fig
    # susceptibilities P Var(x) over the draws
    fig, ax = plt.subplots(1, 2, figsize=(12, 5.4), layout="constrained")
    syms = {"c1": "c_1", "cG": "c_G", "r": "r", "U": "U"}
    for a, b, att, stars, title in (
        (ax[0], lin, "linear", (("$P^*_{c1}$", th["map"]["P_c1"], KEY_COLORS["P_c1"]),
                                ("$P^*_{cG}$", th["map"]["P_cG"], KEY_COLORS["P_cG"])),
         "linear attention"),
        (ax[1], soft["pool"], "softmax", (("$P^*_{aG}$", th["map"]["P_aG"], KEY_COLORS["P_aG"]),),
         "softmax attention, pooling start"),
    ):  # fmt: skip
        P = np.asarray(b["P"], float)
        for (k, sym), col, mk in zip(syms.items(), (SKY, BLUE, GREEN, ORANGE), "osD^"):
            if att == "softmax":
                sym = sym.replace("c_", "a_")
            v = np.asarray(b["susceptibility"][k]["value"], float)
            e = np.asarray(b["susceptibility"][k]["mcse"], float)
            with quiet():
                m = np.nanmean(v, 1)
                lab = f"$P\\,\\mathrm{{Var}}({sym})$"
                if not (m > 0).any():  # nothing a log axis can show: say so, draw nothing
                    a.plot([], [], marker=mk, color=col, ls="", label=lab + " = 0 (not drawn)")
                    continue
                # c1 and r nearly coincide in the linear head: c1 open, larger, on top
                big = dict(mfc="none", ms=8, ls="--", zorder=3) if k == "c1" else dict(ms=4)
                a.errorbar(P, m, yerr=np.sqrt(np.nanmean(e**2, 1)), marker=mk, capsize=2,
                           color=col, label=lab, **big)  # fmt: skip
        _stars(a, [(n, v, c) for n, v, c in stars if v and P[0] <= v <= P[-1]])
        a.set_yscale("log")
        log_P_axis(a, P)
        a.set(xlabel=P_LABEL, ylabel="susceptibility $P\\,\\mathrm{Var}$ over draws", title=title)
        legend(a)
    fig.suptitle(f"posterior susceptibilities ({pre}); error bars: MCSE over seeds")
    figs["susceptibility"] = fig
    # the learning coefficient
    fig, a = plt.subplots(figsize=(7, 5.4), layout="constrained")
    Ps = []
    for name, b, col, mk in (("linear", lin, BLUE, "o"),
                             ("softmax, pooling start", soft["pool"], ORANGE, "s"),
                             ("softmax, copy start", soft.get("copy"), PURPLE, "v"),
                             ("softmax, copy start (high P)", soft.get("copy_high"), VERMILLION,
                              "^")):  # fmt: skip
        if b is not None:
            _band(a, b["P"], b["llc"]["value"], name, color=col, marker=mk)
            Ps += list(b["P"])
    log_P_axis(a, Ps)
    a.set(
        xlabel=P_LABEL,
        ylabel="learning coefficient $\\hat\\lambda$ (dimensionless)",
        title=f"$\\hat\\lambda$ from the posterior draws ($n\\beta = n$, $\\gamma = 0$; {pre})",
    )
    legend(a)
    figs["llc"] = fig
    if fe is not None:
        fig, a = plt.subplots(figsize=(7, 5.6), layout="constrained")
        P = np.asarray(fe["P"], float)
        dF = (np.asarray(fe["F"][0], float) - np.asarray(fe["F"][1], float)) / P[:, None]
        err = np.hypot(np.asarray(fe["F_mcse"][0], float), np.asarray(fe["F_mcse"][1], float))
        a.errorbar(
            P,
            np.nanmean(dF, 1),
            yerr=np.nanstd(dF, 1),
            marker="o",
            capsize=2,
            color=VERMILLION,
            label="$(F_{pool} - F_{copy})/P$, TI (bars: sd over seeds)",
        )
        a.plot(P, np.nanmean(err / P[:, None], 1), ".", color=SKY, label="TI MCSE / P (mean)")
        dW = (np.asarray(fe["wbic"][0], float) - np.asarray(fe["wbic"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dW, 1), "s--", color=GREEN, label="WBIC difference / P")
        dU = (np.asarray(fe["U_star"][0], float) - np.asarray(fe["U_star"][1], float)) / P[:, None]
        a.plot(P, np.nanmean(dU, 1), "^--", color=ORANGE, label="MAP objective difference / P")
        a.axhline(0, color=BLACK, lw=0.5)
        for v, ls, lab in ((th["map"]["P_aG"], "-", "EK MAP"), (th["post"]["P_aG"], "--",
                                                                  "EK posterior")):  # fmt: skip
            if v:
                a.axvline(v, color=BLACK, ls=ls, lw=0.8, label=f"{lab} $P^*_{{aG}}$ = {v:.1f}")
        log_P_axis(a, P)
        a.set(xlabel=P_LABEL, ylabel="difference per sequence (nats)",
              title="softmax branches: free energy, pooling minus copying")  # fmt: skip
        legend(a)
        figs["free_energy"] = fig
    return figs
