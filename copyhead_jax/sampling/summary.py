r"""Per-run summaries of a reduced sweep's posterior (arrays ``[P, seed]``): MAP and posterior
means with MCSE, susceptibilities ``P Var``, the learning coefficient from the draws, chain
health; merged across seed blocks (:func:`merge_seeds`) and disjoint P grids
(:func:`merge_blocks`), the early-warning verdict of each observable at a given P*, each head's
transitions (:func:`linear_summary`, :func:`softmax_summary`), and their markdown tables
(:func:`per_P_markdown`, :func:`health_markdown`, :func:`verdicts_markdown`).
"""

from __future__ import annotations

import functools

import numpy as np

from ..compare.crossing import growth_verdict, quiet, start_crossing
from ..compare.locate import locate_level, locate_max_slope
from ..compare.paper import PAPER_MEASURED
from ..compare.pstar import AT_ORIGIN
from ..compare.text import fmt, mean_sd
from ..config import FINAL, HMC_RUN
from ..objective import Objective
from .estimators import run_mean, run_susceptibility

#: The health summary's counts: runs past the run's bar (config.HMC_RUN) and past the final one
#: (config.FINAL); the keys carry the bars (``n_rhat_gt_1.05``, ``n_rhat_gt_1.01``,
#: ``n_ess_lt_400``).
RHAT_RUN_KEY = f"n_rhat_gt_{HMC_RUN.rhat_max:g}"
RHAT_FINAL_KEY = f"n_rhat_gt_{FINAL.rhat_max:g}"
ESS_KEY = f"n_ess_lt_{HMC_RUN.ess_min:g}"

#: the observables whose susceptibility is summarised
OBSERVABLES = ("c1", "cG", "r", "U")
#: the chain-health arrays of a posterior result kept per run
HEALTH = ("rhat", "ess", "rhat_c1", "ess_c1", "rhat_cG", "ess_cG", "accept_mean", "step")


#: the per-run parts of a branch summary (arrays [P, seed] under them are merged)
RUN_PARTS = ("map", "post_mean", "post_mcse", "susceptibility", "llc", "health", "llc_dv")


def llc_summary(res, post) -> dict:
    r"""Item 2 from the posterior draws: $\hat\lambda=n\beta(\mathbb E[L_n]-L_n(w^*))$ at
    $n\beta=n$ (the posterior, beta = 1) and gamma = 0, i.e. ``E[D] - D(w*)`` with ``D`` the
    data energy ``w P train_loss`` and ``w*`` the exact MAP; MCSE from the ESS of the loss."""
    w = Objective.from_config(res.config).likelihood_weight
    m, se, n_eff = run_mean(post, "train_loss")
    scale = w * res.P.astype(float)[:, None]
    return {
        "value": scale * (m - res["train_loss"]),
        "mcse": scale * se,
        "ess": n_eff,
        "D_star": scale * res["train_loss"],
        "nbeta": "n (beta = 1)",
        "gamma": 0.0,
    }


def branch_summary(res, post) -> dict:
    """MAP and posterior-mean order parameters, susceptibilities with MCSE, LLC, chain health."""
    out = {
        "P": res.P.tolist(),
        "n_seeds": int(res.config.sweep.n_seeds),
        "map": {k: res[k] for k in ("c1", "cG", "r", "psi", "U")},
    }
    out["map"]["converged"], out["map"]["min_eig"] = res["converged"], res["min_eig"]
    out["post_mean"], out["post_mcse"], out["susceptibility"] = {}, {}, {}
    for k in ("c1", "cG", "r", "psi", "U"):
        m, se, _ = run_mean(post, k)
        out["post_mean"][k], out["post_mcse"][k] = m, se
    for k in OBSERVABLES:
        s = run_susceptibility(post, k)
        out["susceptibility"][k] = {"value": s.value, "mcse": s.mcse, "ess_sq": s.ess_sq}
    out["llc"] = llc_summary(res, post)
    out["health"] = {k: post[k] for k in HEALTH if k != "step"}
    out["health"]["step"] = np.nanmean(post["step"], -1)  # adapted leapfrog step, chain mean
    out["health"]["finite_chains"] = post["finite"].sum(-1)
    out["health"]["var_U_ratio"] = post["var_U_ratio"]
    for k in ("n_draws", "target_met"):  # draws per chain; a run sampled until a target: met?
        if k in post.arrays:
            out["health"][k] = post[k]
    out["wall_seconds"] = post.meta.get("wall_seconds")
    return health_line(out)


def merge_blocks(a: dict, b: dict) -> dict:
    """Two branch summaries on disjoint P grids, concatenated along P; the seed axis is padded
    with NaN to the larger seed count (seed s is the same data in every sweep of a preset)."""
    nS = max(a["n_seeds"], b["n_seeds"])
    a, b = dict(a), dict(b)
    for k in RUN_PARTS:  # a part only one side has (e.g. llc_dv below a max_P): NaN on the other
        if (k in a) != (k in b):
            have, miss = (a, b) if k in a else (b, a)
            miss[k] = _nan_like(have[k], len(have["P"]), len(miss["P"]), miss["n_seeds"])

    def cat(x, y):
        if isinstance(x, dict):
            return {k: cat(x[k], y[k]) for k in x if k in y}
        if not isinstance(x, np.ndarray) or x.ndim < 2:
            return x
        pad = (
            lambda z: np.concatenate(  # noqa: E731
                [z.astype(float), np.full((z.shape[0], nS - z.shape[1]) + z.shape[2:], np.nan)], 1
            )
        )
        return np.concatenate([pad(x), pad(y)], 0)

    out = {k: cat(a[k], b[k]) for k in RUN_PARTS if k in a and k in b}
    per_P = [x.get("n_seeds_per_P") or [x["n_seeds"]] * len(x["P"]) for x in (a, b)]
    out.update(P=a["P"] + b["P"], n_seeds=nS, n_seeds_per_P=per_P[0] + per_P[1])
    out["wall_seconds"] = (a.get("wall_seconds") or 0) + (b.get("wall_seconds") or 0)
    return health_line(out)


def _nan_like(x, nP: int, nP_new: int, nS: int):
    """``x`` with every ``[nP, seed, ...]`` array replaced by NaN of ``[nP_new, nS, ...]``."""
    if isinstance(x, dict):
        return {k: _nan_like(v, nP, nP_new, nS) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[0] == nP:
        return np.full((nP_new, nS) + x.shape[2:], np.nan)
    return x


def health_line(b: dict) -> dict:
    """``b`` with ``health_summary``: worst R-hat and ESS (of U, c1, cG), acceptance range, runs
    over the R-hat thresholds and under ESS 400."""
    h = b["health"]
    with quiet():
        rh = np.fmax(np.fmax(h["rhat"], h["rhat_cG"]), h["rhat_c1"])
        es = np.fmin(np.fmin(h["ess"], h["ess_cG"]), h["ess_c1"])
        b["health_summary"] = {
            "rhat_max": float(np.nanmax(rh)),
            "rhat_U_max": float(np.nanmax(h["rhat"])),
            "rhat_cG_max": float(np.nanmax(h["rhat_cG"])),
            "rhat_c1_max": float(np.nanmax(h["rhat_c1"])),
            "ess_min": float(np.nanmin(es)),
            "ess_U_min": float(np.nanmin(h["ess"])),
            "ess_cG_min": float(np.nanmin(h["ess_cG"])),
            "ess_c1_min": float(np.nanmin(h["ess_c1"])),
            "accept_range": [
                float(np.nanmin(h["accept_mean"])),
                float(np.nanmax(h["accept_mean"])),
            ],
            "n_runs": int(np.sum(np.isfinite(h["rhat"]))),
            RHAT_RUN_KEY: int(np.sum(rh > HMC_RUN.rhat_max)),
            RHAT_FINAL_KEY: int(np.sum(rh > FINAL.rhat_max)),
            ESS_KEY: int(np.sum(es < HMC_RUN.ess_min)),
            "finite_chains_min": int(np.nanmin(h["finite_chains"])),
        }
    return b


def verdicts(b: dict, P_star: float | None) -> dict | None:
    """The early-warning verdict of each of :data:`OBSERVABLES` at ``P_star`` (None: none)."""
    if P_star is None:
        return None
    P = np.asarray(b["P"], float)
    return {k: growth_verdict(P, b["susceptibility"][k]["value"], P_star) for k in OBSERVABLES}


def merge_seeds(a: dict, b: dict) -> dict:
    """Two branch summaries on the same P grid and disjoint seeds, concatenated along seeds."""
    if a["P"] != b["P"]:
        raise ValueError(f"merge_seeds needs one P grid, got {a['P']} and {b['P']}")
    nP = len(a["P"])

    def cat(x, y):
        if isinstance(x, dict):
            return {k: cat(x[k], y[k]) for k in x if k in y}
        if isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[0] == nP:
            return np.concatenate([x, y], 1)
        return x

    out = {k: cat(a[k], b[k]) for k in RUN_PARTS if k in a and k in b}
    out.update(P=a["P"], n_seeds=a["n_seeds"] + b["n_seeds"])
    out["wall_seconds"] = (a.get("wall_seconds") or 0) + (b.get("wall_seconds") or 0)
    return health_line(out)


def map_psi(b: dict) -> np.ndarray:
    """The MAP's copy fraction psi, 0 where the fit sits at G = 0 (psi's convention there: the
    ratio of the solver's ~1e-10 residues would be arbitrary, up to 0.9 on the paper preset)."""
    m = b["map"]
    at0 = (np.abs(m["r"]) < AT_ORIGIN) & (np.abs(m["cG"]) < AT_ORIGIN)
    return np.where(at0, 0.0, m["psi"])


def linear_transitions(P, psi_map, psi_post, r_map) -> dict:
    """The linear head's transitions from seed means on the grid ``P``: where the copy fraction
    psi of the MAP and of the posterior mean turns fastest in log P (``P_cG``) and passes 1/2
    (``P_cG_half``), and where the MAP's r (gauge-fixed >= 0) leaves 0, passing 0.05."""
    P = np.asarray(P, float)
    on = lambda psi: {
        "P_cG": locate_max_slope(P, psi).to_dict(),  # noqa: E731
        "P_cG_half": locate_level(P, psi, 0.5).to_dict(),
    }
    return {
        "map": on(psi_map),
        "post": on(psi_post),
        "map_P_c1_r005": locate_level(P, r_map, 0.05).to_dict(),
    }


def seed_mean_transitions(merged: dict, parts: list) -> dict:
    """:func:`linear_transitions` of a linear summary ``merged`` (of ``parts``, merged along P by
    :func:`merge_blocks`) from seed means: its posterior psi, each part's :func:`map_psi` and
    MAP r (a part's own seeds: some grids have fewer)."""
    with quiet():
        psi_post = np.nanmean(merged["post_mean"]["psi"], 1)
        psi_map = np.concatenate([np.nanmean(map_psi(b), 1) for b in parts])
        r_map = np.concatenate([np.nanmean(b["map"]["r"], 1) for b in parts])
    return linear_transitions(merged["P"], psi_map, psi_post, r_map)


def posterior_level(parts: list, level: float = 1.0, key: str = "cG") -> dict:
    """Where the seed-mean posterior mean of ``key`` passes ``level`` on the concatenated grids
    of the summaries ``parts`` (:func:`~copyhead_jax.compare.locate.locate_level`)."""
    P = np.concatenate([np.asarray(b["P"], float) for b in parts])
    with quiet():
        y = np.concatenate([np.nanmean(b["post_mean"][key], 1) for b in parts])
    return locate_level(P, y, level).to_dict()


def linear_summary(parts: list, points: dict) -> dict:
    """The linear head's summaries on disjoint grids (``parts``) merged along P, with their
    seed-mean transitions and the early-warning verdicts at the EK MAP P*_c1 and P*_cG
    (``points["map"]``) and at the posterior's own P*_cG and psi = 1/2."""
    lin = functools.reduce(merge_blocks, parts)
    t = lin["transitions"] = seed_mean_transitions(lin, parts) | {
        "note": "psi = seed mean (fewer seeds on the high grid); r is gauge-fixed >= 0"
    }
    lin["early_warning"] = {
        k: verdicts(lin, P)
        for k, P in (
            ("theory_map_P_c1", points["map"]["P_c1"]),
            ("theory_map_P_cG", points["map"]["P_cG"]),
            ("posterior_P_cG", t["post"]["P_cG"]["P_star"]),
            ("posterior_P_cG_half", t["post"]["P_cG_half"]["P_star"]),
        )
    }
    return lin


def softmax_summary(pool: dict, copy: dict | None, high: dict | None, points: dict) -> dict:
    """The softmax head's summaries from the pooling start (``pool``) and the copy start
    (``copy``, ``high``: a second grid; None: not run): the MAP ``U`` crossing of the two starts
    beside the EK P*_aG and spinodals (``points``, MAP and posterior) and the paper's; where the
    seed-mean posterior ``aG`` passes 1 (from the copy start where run); the early-warning
    verdict at the EK MAP P*_aG."""
    soft: dict = {"pool": pool}
    cross = {
        "theory_map": points["map"]["P_aG"],
        "theory_post": points["post"]["P_aG"],
        "theory_map_spinodals": points["map"]["spinodals"],
        "theory_post_spinodals": points["post"]["spinodals"],
        "paper": PAPER_MEASURED["P_aG"],
    }
    if copy is not None:
        common, distinct, mcr = start_crossing(pool["P"], pool["map"], copy["P"], copy["map"])
        cross.update(map_U=mcr["located"], map_U_per_seed=mcr)
        soft.update(copy=copy, common_P=common, distinct_map=distinct)
    if high is not None:
        soft["copy_high"] = high
    starts = [b for b in (copy, high) if b] or [pool]
    soft["posterior_copies"] = posterior_level(starts) | {
        "start": "copy" if starts[0] is not pool else "zero logits"
    }
    soft["posterior_copies_pool_start"] = posterior_level([pool])
    soft["crossings"] = cross
    soft["early_warning"] = {"theory_map_P_aG": verdicts(pool, points["map"]["P_aG"])}
    return soft


def per_P_markdown(title: str, b: dict) -> list[str]:
    """Lines of a markdown table of a branch summary ``b``, per P: MAP and posterior means (seed
    mean ± sd), susceptibilities and lambda-hat (seed mean, the largest MCSE over seeds in
    brackets; devinterp's per ``b["llc_dv"]`` entry) and chain health."""
    sus, llc = b["susceptibility"], b["llc"]
    gammas = list(b.get("llc_dv", {}))
    L = [
        f"#### {title}: order parameters, susceptibilities, lambda-hat (cG = aG for softmax)",
        "",
        "| P | seeds | MAP cG | post cG | MAP r | post r | P Var c1 | P Var cG | P Var r |"
        " P Var U | lambda-hat (beta 1) |"
        + "".join(f" devinterp {g} |" for g in gammas)
        + " finite chains | max R-hat (U, c1, cG) | min ESS (U, c1, cG) |",
        "|" + "---|" * (14 + len(gammas)),
    ]
    h = b["health"]
    err = lambda x, i: fmt(float(np.nanmax(np.asarray(x["mcse"][i], float))), 2)  # noqa: E731
    for i, p in enumerate(b["P"]):
        with quiet():
            nS = int(np.sum(np.isfinite(np.asarray(b["map"]["cG"][i], float))))
            row = [
                str(p),
                str(nS),
                mean_sd(b["map"]["cG"][i]),
                mean_sd(b["post_mean"]["cG"][i]),
                mean_sd(b["map"]["r"][i]),
                mean_sd(b["post_mean"]["r"][i]),
            ]
            row += [
                f"{fmt(float(np.nanmean(np.asarray(sus[k]['value'][i], float))))} "
                f"({err(sus[k], i)})"
                for k in OBSERVABLES
            ]
            row += [
                f"{mean_sd(x['value'][i])} ({err(x, i)})"
                for x in (llc, *(b["llc_dv"][g] for g in gammas))
            ]
            row += [
                str(int(np.nansum(h["finite_chains"][i]))),
                ", ".join(fmt(np.nanmax(h[k][i]), 4) for k in ("rhat", "rhat_c1", "rhat_cG")),
                ", ".join(fmt(np.nanmin(h[k][i])) for k in ("ess", "ess_c1", "ess_cG")),
            ]
        L.append("| " + " | ".join(row) + " |")
    return L


def health_markdown(blocks) -> list[str]:
    """Lines of the chain-health table, one row per ``(title, summary)`` of ``blocks`` (None
    summaries skipped) from its :func:`health_line` and ``wall_seconds``."""
    out = [
        f"| block | runs | max R-hat | runs R-hat > {FINAL.rhat_max:g} / > {HMC_RUN.rhat_max:g}"
        f" | min ESS | runs ESS < {HMC_RUN.ess_min:g} | HMC acceptance | sampling min |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for title, b in blocks:
        if b is None:
            continue
        h, ws = b["health_summary"], b.get("wall_seconds")
        out.append(
            f"| {title} | {h['n_runs']} | {fmt(h['rhat_max'], 4)} | {h[RHAT_FINAL_KEY]} /"
            f" {h[RHAT_RUN_KEY]} | {fmt(h['ess_min'], 3)} | {h[ESS_KEY]} |"
            f" {fmt(h['accept_range'][0], 2)}-{fmt(h['accept_range'][1], 2)} |"
            f" {round(ws / 60) if ws else '-'} |"
        )
    return out


def verdicts_markdown(blocks) -> list[str]:
    """Lines of the early-warning table: per ``(name, {which P*: verdicts(...)})`` of ``blocks``,
    one row per observable (entries that are not dicts skipped)."""
    out = [
        "| attention | P* used | observable | seeds | chi ratio [95% CI] | Var ratio [95% CI] |"
        " verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for att, ew in blocks:
        for which, vs in ew.items():
            for k, v in (vs if isinstance(vs, dict) else {}).items():
                ci, vc = v["ratio_ci"] or [None, None], v["var_ratio_ci"] or [None, None]
                out.append(
                    f"| {att} | {which} = {v['P_star']:.3g} | {k} | {v['n_seeds']} |"
                    f" {fmt(v['ratio'])} [{fmt(ci[0])}, {fmt(ci[1])}] |"
                    f" {fmt(v['var_ratio'])} [{fmt(vc[0])}, {fmt(vc[1])}] |"
                    f" {v['verdict']} |"
                )
    return out
