r"""devinterp's default local learning coefficient per run (issue 12, item 2):
$\hat\lambda=n\beta(\mathbb E[L_n]-L_n(w^*))$ at $\beta=1/\log n$, $\gamma=100$, localised SGLD
from the run's exact MAP on the quenched reduced head, no prior term
(:func:`copyhead_jax.llc_runs.llc_runs`; conventions in :mod:`copyhead_jax.bayes.llc`, the
mapping to the posterior's own lambda-hat in docs/reports/posterior.md).
"""

from __future__ import annotations

import time

import numpy as np

from copyhead_jax.llc_runs import LLCSettings, llc_runs

#: devinterp's defaults (beta = 1/log n, gamma = 100); chains: at gamma = 100 the slowest
#: direction relaxes in ~(1 + lambda_max / gamma) / eta_frac <= 70 steps on the plain grid
#: (lambda_max <= 250 measured at P <= 8 linear, <= 6 softmax), so 1,500 kept steps are >= 20
#: relaxation times per chain
LLC = dict(gamma=100.0, n_chains=4, n_steps=2000, burn_in=500, thin=5, eta_frac=0.05,
           power_iters=30)  # fmt: skip


def llc_sweep(res, key, settings: dict | None = None) -> dict:
    r"""devinterp-default $\hat\lambda$ of every run of a kept-weights reduced sweep ``res``:
    arrays ``[P, seed]`` (value, mcse, R-hat and ESS of L_n, eta, lambda_max, nbeta), from
    :func:`copyhead_jax.llc_runs.llc_runs` (its ``devinterp`` estimator, centred at the run's
    own fit)."""
    s = LLC | (settings or {})
    t0 = time.time()
    r = llc_runs(res, settings=LLCSettings(**s), estimators=("devinterp",), key=key)
    a = {k.removeprefix("devinterp_"): v for k, v in r.arrays.items() if k.startswith("devinterp")}
    P = np.asarray(res.config.sweep.P, float)
    with np.errstate(all="ignore"):
        nbeta = np.where(P > 1, P / np.log(np.maximum(P, 2)), np.nan)
    out = {"value": a["devinterp"], "mcse": a["mcse"], "rhat": a["rhat"], "ess": a["ess"],
           "eta": a["eta"], "lambda_max": a["lambda_max"], "finite_frac": a["finite"],
           "nbeta": np.broadcast_to(nbeta[:, None], a["mcse"].shape).copy()}  # fmt: skip
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

    from copyhead_jax import style as st

    from .posterior_features import band

    soft = res["softmax"]
    blocks = (
        ("linear", res["linear"], st.BLUE, "o"),
        ("softmax, pooling start", soft["pool"], st.ORANGE, "s"),
        ("softmax, copy start", soft.get("copy_high"), st.VERMILLION, "v"),
    )
    blocks = [(n, b, c, m) for n, b, c, m in blocks if b is not None and b.get("llc_dv")]
    if not blocks:
        return None
    with matplotlib.rc_context(st.RC):
        fig, ax = plt.subplots(1, 2, figsize=(12, 5.6), layout="constrained")
        Ps, neg = [], False
        for name, b, col, mk in blocks:
            for g, v in b["llc_dv"].items():
                band(ax[0], b["P"], v["value"], f"{name} ({g.replace('gamma', 'γ')})",
                      color=col, marker=mk)  # fmt: skip
                neg |= bool(np.nanmin(np.asarray(v["value"], float)) < 0)
            band(ax[1], b["P"], b["llc"]["value"], name, color=col, marker=mk)
            Ps += list(b["P"])
        th = res["theory"]["map"]
        for a in ax:
            for k in ("P_cG", "P_aG"):
                if th.get(k):
                    a.axvline(th[k], color=st.KEY_COLORS[k], ls="--", lw=0.8,
                              label=f"EK MAP $P^*_{{{k[2:]}}}$ = {st.num(th[k])}")  # fmt: skip
            st.log_P_axis(a, Ps)
            a.set_xlabel(st.P_LABEL)
        a = ax[0]
        if neg:
            a.set_yscale("symlog", linthresh=1.0)
            bad = "$\\hat\\lambda < 0$: invalid (chains went below the MAP's loss)"
            a.axhspan(a.get_ylim()[0], 0, color=st.GREY, alpha=0.15, lw=0, label=bad)
            a.axhline(0, color=st.BLACK, lw=0.6)
        a.set(ylabel="$\\hat\\lambda$ (symmetric log scale)" if neg else "$\\hat\\lambda$",
              title="devinterp default: $n\\beta = n / \\log n$, $\\gamma = 100$")  # fmt: skip
        ax[1].set_yscale("log")
        ax[1].set(ylabel="$\\hat\\lambda$ (log scale)",
                  title="posterior: $n\\beta = n$, $\\gamma = 0$ (prior kept)")  # fmt: skip
        for a in ax:
            st.legend(a)
        fig.suptitle(f"learning coefficient $\\hat\\lambda$ ({res['preset']}); error bars: sd "
                     "over seeds")  # fmt: skip
    return fig
