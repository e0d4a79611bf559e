r"""The ``[P, seed]`` tables of branch runs (``P``, ``seed``, ``branch``, ``F``, t = 1 draws of
aG) and their crossings (docs/theory.md §9.11).

``branch_tables``: each branch's F and MCSE, the copy weight and its window, the F crossing and
chain health; ``threshold_shift`` moves the branches' F to another split threshold of aG from
the t = 1 draws alone; ``smc_tables``: tempered-SMC log Z and copy weights against the TI's,
``smc_against_ti``: SMC's sign change of the log-odds paired per seed with the TI's crossing;
``branch_markdown``, ``smc_markdown``: their tables in markdown.
"""

from __future__ import annotations

import math

import numpy as np

from .crossing import (
    bayesian_interval,
    branch_crossing,
    copy_weight,
    interval_text,
    quiet,
    t_interval,
    weight_window,
)
from .text import fmt


def run_table(runs, P_all, nS, field, branch):
    """``[P, seed]`` of ``field`` over the runs of ``branch`` (NaN where none)."""
    out = np.full((len(P_all), nS), np.nan)
    for r in runs:
        if r["branch"] == branch and r[field] is not None:
            out[P_all.index(r["P"]), r["seed"]] = r[field]
    return out


def t1_below(run: dict, a: float) -> tuple[float, int]:
    """The fraction of a run's t = 1 draws with aG < ``a`` and their number; a record rebuilt
    from an assembled result holds these fractions at the thresholds it had (``t1_below``,
    ``n_t1``) instead of the draws."""
    if "aG_t1" in run:
        o = np.asarray(run["aG_t1"], float)
        return float(np.mean(o < a)), o.size
    if str(a) not in run["t1_below"]:
        raise ValueError(
            f"a_alt = {a}: run {run['P'], run['seed'], run['branch']} is a rebuilt "
            f"record with t = 1 fractions at {sorted(run['t1_below'])} only"
        )
    return float(run["t1_below"][str(a)]), int(run["n_t1"])


def threshold_shift(runs, P_all, nS, a_old, a_new):
    """``(F_pool, F_copy, moved, F_bound)`` at threshold ``a_new`` from the ``a_old`` results and
    the t = 1 draws: ``moved`` is the fraction of the shrinking branch's draws that change
    region. If all of them move, the shrinking branch's F is not estimable (NaN) and
    ``F_bound`` = F + log(n_draws) is the lower bound that its mass fraction < 1/n_draws gives."""
    Fp, Fc, mv, bd = (np.full((len(P_all), nS), np.nan) for _ in range(4))
    by = {(r["P"], r["seed"], r["branch"]): r for r in runs}
    for i, P in enumerate(P_all):
        for s in range(nS):
            rp, rc = by.get((P, s, "pool")), by.get((P, s, "copy"))
            if rp is None or rc is None:
                continue
            lp, lc = -rp["F"], -rc["F"]
            up = a_new > a_old  # up: part of the copy region moves to pool, else the reverse
            below, n_t1 = t1_below(rc if up else rp, a_new)
            f = below if up else 1.0 - below
            l_src, l_dst = (lc, lp) if up else (lp, lc)
            l_dst = np.logaddexp(l_dst, l_src + math.log(f)) if f > 0 else l_dst
            if f < 1:
                l_src = l_src + math.log(1 - f)
            else:
                bd[i, s], l_src = -(l_src - math.log(n_t1)), np.nan
            (lc, lp) = (l_src, l_dst) if up else (l_dst, l_src)
            Fp[i, s], Fc[i, s], mv[i, s] = -lp, -lc, f
    return Fp, Fc, mv, bd


def branch_tables(runs, P_all, nS, a_thr: float, a_alt=()) -> dict:
    """The ``[P, seed]`` tables of branch-TI runs (``P``, ``seed``, ``branch``, ``F``, ``mcse``,
    ``rhat_g``, ``ess_g``, ...): each branch's F and MCSE, their difference, the copy weight
    (per seed, seed mean) with its window, the F crossing (``branch_crossing(P, F_pool, F_copy)``:
    F_copy < F_pool above it), chain health per branch, and the same weights and crossing at each
    threshold of ``a_alt`` (:func:`threshold_shift` from ``a_thr``). Each run gains its
    ``rhat_max`` and ``ess_min``."""
    for r in runs:
        r["rhat_max"] = float(np.nanmax(np.r_[r["rhat_g"], -np.inf]))
        r["ess_min"] = float(np.nanmin(np.r_[r["ess_g"], np.inf]))
    F = {b: run_table(runs, P_all, nS, "F", b) for b in ("pool", "copy")}
    se = {b: run_table(runs, P_all, nS, "mcse", b) for b in ("pool", "copy")}
    Pa = np.asarray(P_all, float)
    w = copy_weight(F["copy"], F["pool"])
    with quiet():
        w_mean = np.nanmean(w, 1)
    alt = {}
    for a in a_alt:
        Fp, Fc, moved, bound = threshold_shift(runs, P_all, nS, a_thr, a)
        wa = copy_weight(Fc, Fp)
        with quiet():
            alt[str(a)] = {
                "dF": Fc - Fp,
                "w_copy": wa,
                "w_copy_mean": np.nanmean(wa, 1),
                "moved_fraction": moved,
                "F_lower_bound": bound,
                "crossing": branch_crossing(Pa, Fp, Fc),
            }
    health = {
        b: {
            k: run_table(runs, P_all, nS, k, b)
            for k in ("rhat_max", "ess_min", "quad_corr", "p_ref", "ref_P")
        }
        for b in ("pool", "copy")
    }
    return {
        "F_pool": F["pool"],
        "F_copy": F["copy"],
        "mcse_pool": se["pool"],
        "mcse_copy": se["copy"],
        "dF": F["copy"] - F["pool"],
        "dF_mcse": np.hypot(se["copy"], se["pool"]),
        "w_copy": w,
        "w_copy_mean": w_mean,
        "crossing_F": branch_crossing(Pa, F["pool"], F["copy"]),
        "weight_window": weight_window(Pa, w_mean),
        "weight_window_per_seed": [weight_window(Pa, w[:, s]) for s in range(nS)],
        "threshold_sensitivity": alt,
        "health": health,
    }


def smc_tables(runs, P_all, nS, n_particles: int, n_reps: int, ti: dict) -> dict:
    """The ``[P, seed]`` tables of tempered-SMC runs (``P``, ``seed``, ``log_Z`` and ``w_copy``
    per population, ``log_Z_pilot``) against the constrained TI's runs ``ti`` (``(P, seed,
    branch)`` -> run with ``F``): log Z and the copy weight (mean and SE over populations), the
    log-odds of copying clipped at the populations' resolution ``1 / (2 n_particles n_reps)``
    (a branch whose particles all died is at most that) and where it changes sign, the TI's
    log Z and weight, the pilot's log-Z bias and one population's log-Z spread."""
    shape = (len(P_all), nS)
    lz, lz_se, w, w_se, lz_ti, w_ti = (np.full(shape, np.nan) for _ in range(6))
    for r in runs:
        i, s = P_all.index(r["P"]), r["seed"]
        z, ww = np.asarray(r["log_Z"], float), np.asarray(r["w_copy"], float)
        lz[i, s], w[i, s] = z.mean(), ww.mean()
        k = len(z)
        lz_se[i, s] = z.std(ddof=1) / math.sqrt(k) if k > 1 else np.nan
        w_se[i, s] = ww.std(ddof=1) / math.sqrt(k) if k > 1 else np.nan
        tp, tc = ti.get((r["P"], s, "pool")), ti.get((r["P"], s, "copy"))
        if tp and tc:
            lz_ti[i, s] = np.logaddexp(-tp["F"], -tc["F"])
            w_ti[i, s] = 1 / (1 + math.exp(min(tc["F"] - tp["F"], 700)))
    with quiet():
        w_mean = np.nanmean(w, 1)
    eps = 1 / (2 * n_particles * n_reps)
    wc = np.clip(w, eps, 1 - eps)
    odds = np.log(wc / (1 - wc))  # = F_pool - F_copy
    Pa = np.asarray(P_all, float)
    # the adaptive pilot's log Z against the fixed-schedule populations' (its O(1/N) bias), and
    # the spread of one population's log Z (2 populations: sd of their difference / sqrt 2)
    bias = np.array([r["log_Z_pilot"] - np.mean(r["log_Z"]) for r in runs])
    diff = np.array([r["log_Z"][0] - r["log_Z"][1] for r in runs if len(r["log_Z"]) > 1])
    return {
        "log_Z": lz,
        "log_Z_se": lz_se,
        "w_copy": w,
        "w_copy_se": w_se,
        "w_copy_mean": w_mean,
        "log_odds_copy": odds,
        "log_odds_clip": math.log((1 - eps) / eps),
        "weight_window": weight_window(Pa, w_mean),
        # where the log-odds change sign: branch_crossing(P, F_a, F_b) with F_a = 0, F_b = -log-odds
        "crossing_log_odds": branch_crossing(Pa, np.zeros_like(odds), -odds, np.isfinite(odds)),
        "log_Z_ti": lz_ti,
        "w_copy_ti": w_ti,
        "dlog_Z_smc_minus_ti": lz - lz_ti,
        "pilot_log_Z_bias": {
            "mean": bias.mean(),
            "se": bias.std(ddof=1) / math.sqrt(bias.size),
            "n": bias.size,
        },
        "population_log_Z_sd": diff.std(ddof=1) / math.sqrt(2) if diff.size > 1 else None,
    }


def smc_against_ti(smc: dict, ti: dict, below: float = 9, above: float = 5) -> dict:
    """An :func:`smc_tables` result ``smc`` (with ``P``, ``n_seeds``) set against the branch TI's
    result ``ti`` (``P``, ``dF``, ``crossing_F``): the TI's log-odds of copying ``-dF`` at its P
    within ``[min P - below, max P + above]`` of SMC's, its per-seed crossings, and SMC's minus
    the TI's crossing per seed (t-interval and sd over the seeds where both are finite)."""
    near = [i for i, p in enumerate(ti["P"]) if min(smc["P"]) - below <= p <= max(smc["P"]) + above]
    d = (
        np.asarray(smc["crossing_log_odds"]["per_seed"], float)
        - np.asarray(ti["crossing_F"]["per_seed"], float)[: smc["n_seeds"]]
    )
    d = d[np.isfinite(d)]
    return {
        "ti_log_odds": {
            "P": [ti["P"][i] for i in near],
            "values": -np.asarray(ti["dF"], float)[near],
        },
        "ti_crossing_per_seed": ti["crossing_F"]["per_seed"],
        "crossing_minus_ti_per_seed": t_interval(d)
        | {"sd": float(d.std(ddof=1)) if d.size > 1 else None},
    }


def branch_markdown(res: dict) -> str:
    """A :func:`branch_tables` result as a markdown table per P (F_copy - F_pool per seed and its
    seed mean, the copy weight, chain health of each branch, the quadrature term) and the
    Bayesian interval of its crossing below."""
    P = res["P"]
    dF, se, w = (np.asarray(res[k], float) for k in ("dF", "dF_mcse", "w_copy"))
    hp, hc = res["health"]["pool"], res["health"]["copy"]
    L = [
        "| P | F_copy - F_pool per seed (± MCSE) | seed mean ± sd | w_copy per seed | "
        "w_copy mean | max R-hat pool / copy | min ESS pool / copy | P_ref(R) pool / copy |"
        " Euler-Maclaurin term max |",
        "|" + "---|" * 9,
    ]
    for i, p in enumerate(P):
        ok = np.isfinite(dF[i])
        per = ", ".join(f"{dF[i, s]:.2f} ± {se[i, s]:.2f}" for s in range(dF.shape[1]) if ok[s])
        ms = (
            f"{dF[i, ok].mean():.2f} ± {dF[i, ok].std(ddof=1):.2f}"
            if ok.sum() > 1
            else fmt(dF[i, ok].mean() if ok.any() else None)
        )
        ws = ", ".join(fmt(x, 2) for x in w[i] if np.isfinite(x))
        with quiet():
            qc = np.nanmax(
                np.abs(
                    np.r_[
                        np.asarray(hp["quad_corr"][i], float), np.asarray(hc["quad_corr"][i], float)
                    ]
                )
            )
            h = lambda d, k: np.asarray(d[k][i], float)  # noqa: E731  (JSON: None = missing seed)
            L.append(
                f"| {p} | {per} | {ms} | {ws} | {fmt(res['w_copy_mean'][i], 2)} |"
                f" {fmt(np.nanmax(h(hp, 'rhat_max')))} / {fmt(np.nanmax(h(hc, 'rhat_max')))} |"
                f" {fmt(np.nanmin(h(hp, 'ess_min')))} / {fmt(np.nanmin(h(hc, 'ess_min')))} |"
                f" {fmt(np.nanmin(h(hp, 'p_ref')), 2)} / {fmt(np.nanmin(h(hc, 'p_ref')), 2)} |"
                f" {fmt(qc, 2)} |"
            )
    L.append(f"\nBayesian P*_aG (docs/theory.md §9.11): {interval_text(bayesian_interval(res))}")
    return "\n".join(L) + "\n"


def smc_markdown(res: dict) -> str:
    """An :func:`smc_tables` result as a markdown table per P: w_copy per seed (SMC ± its SE over
    populations; the TI's), its seed mean, and log Z of SMC minus the TI's."""
    w, wse, wti, d = (
        np.asarray(res[k], float)
        for k in ("w_copy", "w_copy_se", "w_copy_ti", "dlog_Z_smc_minus_ti")
    )
    L = [
        "| P | w_copy per seed, SMC ± SE | seed mean | w_copy per seed, TI | "
        "log Z SMC - TI, seed mean ± sd (n) |",
        "|" + "---|" * 5,
    ]
    for i, p in enumerate(res["P"]):
        ok = np.isfinite(w[i])
        per = ", ".join(
            f"{w[i, s]:.2g}" + (f" ± {wse[i, s]:.1g}" if wse[i, s] > 1e-9 else "")
            for s in range(w.shape[1])
            if ok[s]
        )
        ti = ", ".join(fmt(x, 2) for x in wti[i] if np.isfinite(x)) or "-"
        dd = d[i][np.isfinite(d[i])]
        ds = f"{dd.mean():+.2f} ± {dd.std(ddof=1):.2f} ({dd.size})" if dd.size > 1 else "-"
        L.append(f"| {p} | {per} | {fmt(res['w_copy_mean'][i], 2)} | {ti} | {ds} |")
    return "\n".join(L) + "\n"
