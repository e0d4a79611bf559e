r"""Where two branches' free energies cross, and how sure that is (docs/theory.md §9.11).

``branch_crossing``: the P where ``F_a - F_b`` turns sign (seed mean and per seed, with a
t-interval); ``copy_weight`` and ``weight_window``: the posterior weight of a branch and where it
passes 5%, 1/2, 95%; ``growth_verdict``: the early warning of :mod:`.warning` on a
susceptibility ``P Var``; ``bayesian_interval``: the seed-mean crossing of an assembled branch-TI
result (``dF``, ``dF_mcse``, per-branch ``quad_corr``) by the package's one crossing rule
(:func:`.root.crossing` on ``mean dF / P``: the seed mean's MCSE, the quadrature's
Euler-Maclaurin term as a systematic bound, averaged over seeds, not divided by sqrt n, and the
interpolation error), hulled with the per-seed t-interval (``seeds``). Every root here is the
rule's. The ``[P, seed]`` tables of branch-TI and tempered-SMC runs are in
:mod:`.branch_tables`. Runs past ``config.TRANSITION_RUN`` (R-hat or ESS) are named and the
crossing recomputed without the seeds flagged at the bracket.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from typing import Any

import numpy as np
from scipy import stats as sps
from scipy.special import expit

from ..config import TRANSITION_RUN
from .locate import locate_crossing
from .root import crossing
from .text import fmt, mean_sd
from .warning import early_warning

#: R-hat above / ESS below: the chains did not agree / the MCSE itself is unreliable.
RHAT_MAX, ESS_MIN = TRANSITION_RUN.rhat_max, TRANSITION_RUN.ess_min
Z = 1.96  # two-sided 95% normal quantile, for the MC band


@contextlib.contextmanager
def quiet():
    """NaN-aware means of all-NaN rows (runs without a value) stay NaN, silently."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


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
    ``lo P*`` to ``hi P*``, its t-interval over seeds, ``signal`` against ``GROWTH_NULL``) on
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


def branch_crossing(P, F_a, F_b, valid=None) -> dict:
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
    return {
        "P_star": mean.P_star,
        "located": mean.to_dict(),
        "per_seed": per,
        "per_seed_ci": t_interval(per),
    }


def copy_weight(F_copy, F_pool):
    r"""$w_{\rm copy}=1/(1+e^{F_{\rm copy}-F_{\rm pool}})$ (stable for large differences)."""
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


def flagged_runs(res: dict) -> list[dict[str, Any]]:
    """Every run whose worst rung has R-hat > RHAT_MAX or ESS < ESS_MIN."""
    out = []
    for r in res.get("runs", []):
        rh, es = r.get("rhat_max"), r.get("ess_min")
        if (rh is not None and rh > RHAT_MAX) or (es is not None and es < ESS_MIN):
            out.append({k: r.get(k) for k in ("P", "seed", "branch", "rhat_max", "ess_min")})
    return out


def bayesian_interval(res: dict) -> dict[str, Any]:
    """The seed-mean crossing of an assembled branch-TI result and its interval (module
    docstring): the one crossing rule on ``mean dF / P`` with the seed mean's MCSE and
    quadrature term, hulled with the per-seed t-interval."""
    P = np.asarray(res["P"], float)
    dF = np.asarray(res["dF"], float)
    se = np.asarray(res["dF_mcse"], float)
    qc = sum(np.abs(np.asarray(res["health"][b]["quad_corr"], float)) for b in ("pool", "copy"))
    fin = np.isfinite(dF)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(dF, 1)
        e_mc = np.sqrt(np.nansum(np.where(fin, se, 0.0) ** 2, 1)) / fin.sum(1)
        e_q = np.nanmean(np.where(fin, qc, np.nan), 1)
    cr = crossing(P, m / P, e_mc / P, e_q / P)
    out: dict[str, Any] = {
        "P_star": cr.P_star,
        "rule": "hull of seeds and crossing",
        "crossing": cr.to_dict(),
    }
    flags = flagged_runs(res)
    out["flagged"], out["n_runs"] = flags, len(res.get("runs", []))
    if cr.P_star is None:
        return {**out, "reason": "the seed-mean dF does not change sign on the grid"}
    br = list(cr.bracket)
    ps = (res.get("crossing_F") or {}).get("per_seed_ci") or {}
    parts = {"seeds": [ps["lo"], ps["hi"]]} if ps.get("lo") is not None else {}
    parts["crossing"] = [cr.lo if cr.lo > 0 else None, cr.hi if math.isfinite(cr.hi) else None]
    lows = [p[0] for p in parts.values()]
    highs = [p[1] for p in parts.values()]
    out.update(
        bracket=br,
        parts=parts,
        lo=None if None in lows else min(lows),
        hi=None if None in highs else max(highs),
    )
    bad = {f["seed"] for f in flags if f["P"] in (int(br[0]), int(br[1]))}
    i = int(np.searchsorted(P, br[0]))
    keep = [s for s in range(dF.shape[1]) if s not in bad and np.isfinite(dF[i : i + 2, s]).all()]
    out["seeds_flagged_at_bracket"] = sorted(bad)
    if keep:
        with np.errstate(all="ignore"):
            out["P_star_unflagged"] = crossing(P, np.nanmean(dF[:, keep], 1) / P).P_star
        out["n_unflagged"] = len(keep)
    return out


def _g(x) -> str:
    return "-" if x is None else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def interval_text(d: dict[str, Any]) -> str:
    """One line: ``P* [lo, hi]`` with its parts and the flagged runs named."""
    if d.get("P_star") is None:
        return f"not located ({d.get('reason', 'no crossing')})"
    iv = lambda p: f"[{_g(p[0])}, {_g(p[1])}]" if None not in p else "[beyond the grid]"  # noqa: E731
    p, c = d["parts"], d["crossing"]
    seeds = f"seeds {iv(p['seeds'])}, " if "seeds" in p else ""
    e = lambda x: "unbounded" if x is None or not math.isfinite(x) else f"{x:.3f}"  # noqa: E731
    reach = "; a bracket end's error reaches across zero" if c.get("straddles") else ""
    txt = (
        f"{_g(d['P_star'])} {iv([d['lo'], d['hi']])} (hull of: {seeds}crossing "
        f"{iv(p['crossing'])}, log-P errors MC {e(c['err_mc'])} (1 s.e.), quadrature "
        f"{e(c['err_quad'])}, interpolation {e(c['err_interp'])}{reach})"
    )
    fl = d["flagged"]
    if fl:
        at = [f for f in fl if f["P"] in {int(x) for x in d["bracket"]}]
        named = "; ".join(
            f"P={f['P']} seed {f['seed']} {f['branch']} (R-hat {f['rhat_max']:.3g},"
            f" ESS {f['ess_min']:.3g})"
            for f in at
        )
        rest = {}
        for f in fl:
            if f not in at:
                rest[f["P"]] = rest.get(f["P"], 0) + 1
        txt += (
            f"; {len(fl)}/{d['n_runs']} runs with R-hat > {RHAT_MAX} or ESS < {ESS_MIN:g}; "
            f"at the bracketing P: {named or 'none'}"
        )
        if rest:
            txt += "; elsewhere: " + ", ".join(f"{n} at P={p}" for p, n in sorted(rest.items()))
        if d.get("P_star_unflagged") is not None and d["seeds_flagged_at_bracket"]:
            txt += (
                f"; without the {len(d['seeds_flagged_at_bracket'])} seeds flagged at the "
                f"bracket: {_g(d['P_star_unflagged'])} ({d['n_unflagged']} seeds)"
            )
        elif d["seeds_flagged_at_bracket"]:
            txt += "; every seed has a flagged run at the bracket"
    return txt


# ---------------------------------------------------------------------------------------------
# Two starts and the Laplace-referenced TI


def distinct_starts(P_a, a, P_b, b, gap: float = 0.5):
    """``(P, ia, ib, distinct)``: the P common to a pooling-start and a copy-start sweep (``a``,
    ``b``: mappings of ``cG`` [P, seed] on grids ``P_a``, ``P_b``), their rows in each, and
    where the two starts' cG differ by more than ``gap`` (two distinct minima) per seed."""
    P = [int(p) for p in P_a if p in list(P_b)]
    ia, ib = [list(P_a).index(p) for p in P], [list(P_b).index(p) for p in P]
    distinct = np.abs(np.asarray(b["cG"])[ib] - np.asarray(a["cG"])[ia]) > gap
    return P, ia, ib, distinct


def start_crossing(P_a, a, P_b, b) -> tuple[list[int], np.ndarray, dict]:
    """``(P, distinct, crossing)``: the MAP objective ``U`` crossing of the two starts of
    :func:`distinct_starts` (per seed only where they sit on distinct minima)."""
    P, ia, ib, distinct = distinct_starts(P_a, a, P_b, b)
    U_a, U_b = np.asarray(a["U"])[ia], np.asarray(b["U"])[ib]
    return P, distinct, branch_crossing(np.asarray(P, float), U_a, U_b, distinct)


def ti_crossings(fe: dict, distinct) -> dict:
    """The crossings of a Laplace-referenced TI result ``fe`` (``[branch, P, seed]`` arrays of
    ``transition.laplace_sgld.free_energies`` on the grid ``fe["P"]``) over the runs whose
    two starts are ``distinct`` minima ``[P, seed]`` and whose chains kept their branch at t = 1
    (``stayed_distinct_t1``): of F, WBIC, the Laplace approximation ``U* + 1/2 log det H`` and
    ``U*`` alone. ``fe`` gains the runs kept, the copy weight per run (NaN elsewhere), its seed
    mean and its windows."""
    P = np.asarray(fe["P"], float)
    stayed = (np.abs(fe["aG_t1"][1] - fe["aG_t1"][0]) > 0.5) & np.asarray(distinct, bool)
    w = np.where(stayed, copy_weight(fe["F"][1], fe["F"][0]), np.nan)
    with quiet():
        w_mean = np.nanmean(w, 1)
    fe.update(
        stayed_distinct_t1=stayed,
        w_copy=w,
        w_copy_mean=w_mean,
        weight_window=weight_window(P, w_mean),
        weight_window_per_seed=[weight_window(P, w[:, s]) for s in range(w.shape[1])],
    )
    laplace = fe["U_star"] + fe["half_logdet_H"]
    return {
        k: branch_crossing(P, x[0], x[1], valid=stayed)
        for k, x in (
            ("free_energy", fe["F"]),
            ("wbic", fe["wbic"]),
            ("laplace", laplace),
            ("map_U_same_runs", fe["U_star"]),
        )
    }


def ti_markdown(fe: dict) -> list[str]:
    """Lines of a markdown table of a TI result after :func:`ti_crossings`, per P (mean ± sd over
    seeds): pool minus copy of F and its parts (U*, the Occam term, -log Z1/Z0), WBIC, the copy
    weight, aG at t = 1 and at the WBIC temperature per branch."""
    out = [
        "| P | (F_pool - F_copy) | TI MCSE | (U*_pool - U*_copy) | Occam 1/2 dlogdet H |"
        " -d log(Z1/Z0) | WBIC_pool - WBIC_copy | w_copy | aG at t=1 pool / copy |"
        " aG at WBIC pool / copy |",
        "|" + "---|" * 10,
    ]
    for i, p in enumerate(fe["P"]):
        d = lambda k: np.asarray(fe[k][0][i], float) - np.asarray(fe[k][1][i], float)  # noqa
        mc = np.hypot(np.asarray(fe["F_mcse"][0][i]), np.asarray(fe["F_mcse"][1][i]))
        out.append(
            f"| {p} | {mean_sd(d('F'))} | {fmt(float(np.nanmax(mc)), 2)} |"
            f" {mean_sd(d('U_star'))} | {mean_sd(d('half_logdet_H'))} |"
            f" {mean_sd(-d('log_Z_ratio'))} | {mean_sd(d('wbic'))} |"
            f" {mean_sd(fe['w_copy'][i], 2)} |"
            f" {mean_sd(fe['aG_t1'][0][i], 2)} / {mean_sd(fe['aG_t1'][1][i], 2)} |"
            f" {mean_sd(fe['aG_wbic'][0][i], 2)} / {mean_sd(fe['aG_wbic'][1][i], 2)} |"
        )
    return out
