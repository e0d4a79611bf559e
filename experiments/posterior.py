"""The posterior of the copy head (issue 12, items 0, 1, 3, 4), on the reduced engine.

    python -m experiments.posterior [--mode quick|tiny] [--out docs]
    python -m experiments.posterior --tables docs/results/posterior_plain.json  # docs tables

* 0: posterior-mean order parameters against P (whitened SGLD, ``sample.default_sgld``, warm
  started at the exact MAP), both attentions; the posterior's P* next to the MAP's and the EK
  theory's (``objective='map'`` and ``'post'``, the latter with the Occam term D);
* 1: susceptibilities ``P Var`` of c1, cG (aG), r, U with MCSE (``bayes.run_susceptibility``)
  and the early-warning verdict (growth from 0.5 P* to 0.9 P*, 95% t-interval over seeds);
* 3: the free energy of each softmax branch (Laplace-referenced TI, WBIC as a cross-check,
  ``posterior_features``) and the Bayesian P*_aG where they cross;
* 4: the posterior weight of the copy branch ``1 / (1 + exp(F_copy - F_pool))`` in the window.

Sweeps and posteriors are cached in ``results/posterior/MODE/`` under a hash of their config.
Writes ``OUT/results/posterior_plain.json`` and ``OUT/figures/posterior_*.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import pickle
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.bayes import run_mean, run_susceptibility
from copyhead_jax.compare import paper
from copyhead_jax.compare.locate import locate_level, locate_max_slope
from copyhead_jax.models import head_class
from copyhead_jax.sample import PosteriorResult, default_sgld, run_sampler, whiten_runs
from copyhead_jax.sweep import _all_inputs
from copyhead_jax.theory import TheoryParams
from copyhead_jax.theory.minima import theory_curve
from copyhead_jax.theory.points import transition_points

from . import posterior_features as PF
from .common import jsonable, save_figure, write_json
from .configs.posterior import CONFIGS

OBSERVABLES = ("c1", "cG", "r", "U")
HEALTH = ("rhat", "ess", "rhat_cG", "ess_cG", "accept_mean")


def log(msg: str) -> None:
    print(f"[posterior {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _key(*objs) -> str:
    return hashlib.sha256(json.dumps(jsonable(objs), sort_keys=True).encode()).hexdigest()[:12]


def _pickled(path: Path, fn):
    """``fn()``, cached in ``path`` (theory curves and TI: minutes on this CPU)."""
    if path.exists():
        return pickle.loads(path.read_bytes())
    out = fn()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(out))
    return out


def branch_config(mc: dict, attention: str, P, init: str | None = None) -> ch.Config:
    cfg = ch.SMALL.replace(**mc["engine"]).replace(
        model=dict(attention=attention), sweep=dict(P=tuple(int(p) for p in P),
                                                    n_seeds=mc["n_seeds"]))  # fmt: skip
    return cfg if init is None else cfg.replace(train=dict(init_attention=init))


def fit_and_sample(cfg: ch.Config, sgld: dict | None, cache: Path):
    """Exact MAP sweep (kept weights) and its whitened-SGLD posterior, cached by config."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"sweep-{_key(cfg.to_dict())}.npz"
    t0 = time.time()
    res = ch.SweepResult.load(path) if path.exists() else ch.run_sweep(
        cfg, keep_params=True, out=path, progress=False)  # fmt: skip
    sg = default_sgld(res)
    sg = dataclasses.replace(sg, **(sgld or {}))
    ppath = cache / f"post-{_key(cfg.to_dict(), dataclasses.asdict(sg))}.npz"
    post = PosteriorResult.load(ppath) if ppath.exists() else run_sampler(
        res, sg, out=ppath, progress=False)  # fmt: skip
    log(f"{cfg.model.attention} init={cfg.train.init_attention}: {time.time() - t0:.0f} s")
    return res, post


def branch_summary(res, post) -> dict:
    """MAP and posterior-mean order parameters, susceptibilities with MCSE, chain health."""
    out = {"P": res.P.tolist(), "map": {k: res[k] for k in ("c1", "cG", "r", "psi", "U")}}
    out["map"]["converged"], out["map"]["min_eig"] = res["converged"], res["min_eig"]
    out["post_mean"], out["post_mcse"], out["susceptibility"] = {}, {}, {}
    for k in ("c1", "cG", "r", "psi", "U"):
        m, se, _ = run_mean(post, k)
        out["post_mean"][k], out["post_mcse"][k] = m, se
    for k in OBSERVABLES:
        s = run_susceptibility(post, k)
        out["susceptibility"][k] = {"value": s.value, "mcse": s.mcse, "ess_sq": s.ess_sq}
    out["health"] = {k: post[k] for k in HEALTH}
    out["health"]["finite_chains"] = post["finite"].sum(-1)
    return out


def health_line(b: dict) -> dict:
    h = b["health"]
    with PF.quiet():
        return {"rhat_max": float(np.nanmax(h["rhat"])),
            "rhat_cG_max": float(np.nanmax(h["rhat_cG"])),
            "ess_min": float(np.nanmin(h["ess"])), "ess_cG_min": float(np.nanmin(h["ess_cG"])),
            "n_runs": int(np.size(h["rhat"])),
            "n_rhat_gt_1.05": int(np.sum((h["rhat"] > 1.05) | (h["rhat_cG"] > 1.05))),
            "n_ess_lt_400": int(np.sum((h["ess"] < 400) | (h["ess_cG"] < 400)))}  # fmt: skip


def verdicts(b: dict, P_star: float | None) -> dict | None:
    if P_star is None:
        return None
    P = np.asarray(b["P"], float)
    return {k: PF.growth_verdict(P, b["susceptibility"][k]["value"], P_star) for k in OBSERVABLES}


# ---------------------------------------------------------------------------------------------
# Item 3: free energy per softmax branch


def _heads(res, idx):
    cfg = res.config
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    h = {k: res[f"params/{k}"].reshape((n_runs,) + res[f"params/{k}"].shape[2:])[idx]
         for k in ("W_E", "b", "W_G", "W_O_hat")}  # fmt: skip
    return head_class(cfg.model.attention)(**h, chi=cfg.posterior.chi)


def free_energies(pool, copy, P_ti, ti: dict, key) -> dict:
    """F and WBIC of both branches at every ``P_ti`` and seed, in one compiled program."""
    cfg = pool.config
    nS = cfg.sweep.n_seeds
    P_ti = [int(p) for p in P_ti if p in pool.P and p in copy.P]
    Pm = max(P_ti)
    runs, heads, trains, masks = [], [], [], []
    for br, res in (("pool", pool), ("copy", copy)):
        inp = _all_inputs(res.config, None)
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
    coef = np.stack([PF.ti_coefficients(ts, b) for b in beta0])
    R, K, nC = len(runs), len(ts) + 1, ti["n_chains"]
    keys = jax.random.split(key, R * K * nC).reshape(R, K, nC)
    head32 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), head)
    t0 = time.time()
    draws, finite, U_star = PF.tempered_chains(
        cfg, ti["n_steps"], ti["burn_in"], ti["thin"], nC, ti["step_size"], keys, head32, train,
        mask, jnp.asarray(theta, jnp.float32), jnp.asarray(C, jnp.float32), jnp.asarray(coef),
    )  # fmt: skip
    draws, finite, U_star = np.asarray(draws, np.float64), np.asarray(finite), np.asarray(U_star)
    log(f"TI: {R} runs x {K} temperatures x {nC} chains in {time.time() - t0:.0f} s")
    iG = PF.TEMPERED_FIELDS.index("cG")
    out = {k: np.full((2, len(P_ti), nS), np.nan) for k in (
        "F", "F_mcse", "U_star", "half_logdet_H", "log_Z_ratio", "quad_corr", "wbic",
        "wbic_mcse", "aG_t1", "aG_wbic", "rhat_g_max")}  # fmt: skip
    for r, (br, p, s) in enumerate(runs):
        b, i = ("pool", "copy").index(br), P_ti.index(p)
        fe = PF.branch_free_energy(ts, draws[r, :-1], finite[r, :-1], U_star[r, 0],
                                   half_logdet[r])  # fmt: skip
        for k, v in (("F", fe["F"]), ("F_mcse", fe["mcse"]), ("U_star", fe["U_star"]),
                     ("half_logdet_H", fe["half_logdet_H"]), ("log_Z_ratio", fe["log_Z_ratio"]),
                     ("quad_corr", fe["quadrature_correction"]),
                     ("rhat_g_max", np.nanmax(np.r_[fe["rhat_g"], -np.inf]))):  # fmt: skip
            out[k][b, i, s] = v
        w = draws[r, -1][finite[r, -1]]  # WBIC temperature
        D = w[..., PF.TEMPERED_FIELDS.index("D")]
        out["wbic"][b, i, s] = D.mean()
        out["wbic_mcse"][b, i, s] = float(ch.bayes.mcse_mean(D)) if D.shape[1] >= 4 else np.nan
        out["aG_wbic"][b, i, s] = w[..., iG].mean()
        out["aG_t1"][b, i, s] = draws[r, len(ts) - 1][finite[r, len(ts) - 1]][..., iG].mean()
    out.update(P=P_ti, ts=ts, same_data=same, same_embeddings=same_emb,
               finite_frac=float(finite.mean()), seconds=time.time() - t0)  # fmt: skip
    return out


# ---------------------------------------------------------------------------------------------


def theory(mc: dict) -> dict:
    params = TheoryParams.from_config(branch_config(mc, "linear", [1]))
    keys = ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "notes")
    pts = {o: {k: transition_points(params, "both", o).get(k) for k in keys}
           for o in ("map", "post")}  # fmt: skip
    Pg = np.geomspace(0.5, 100, 30)
    curves = {"P": Pg}
    for o in ("map", "post"):
        lin, soft = theory_curve(params, Pg, "linear", o), theory_curve(params, Pg, "softmax", o)
        curves[o] = {"cG": lin["cG"], "c1": lin["c1"], "psi": lin["psi"], "aG": soft["aG"]}
    return {"points": pts, "curves": curves}


def main(spec="quick", out_dir: str | Path = "docs") -> dict:
    """``spec``: a mode name of ``configs/posterior.py`` or a config dict of that shape."""
    t0 = time.time()
    mode = spec if isinstance(spec, str) else "custom"
    mc = CONFIGS[spec] if isinstance(spec, str) else spec
    out_dir = Path(out_dir)
    cache = Path("results") / "posterior" / mode
    th = _pickled(cache / f"theory-{_key(mc['engine'])}.pkl", lambda: theory(mc))
    res = {"mode": mode, "config": mc, "theory": th["points"], "paper": paper.PAPER_MEASURED}
    sgld = mc.get("sgld")
    # --- linear -----------------------------------------------------------------------------
    lcfg = branch_config(mc, "linear", mc["P_linear"])
    lr, lp = fit_and_sample(lcfg, mc.get("sgld_linear", sgld), cache)
    lin = branch_summary(lr, lp)
    P = lr.P.astype(float)
    with PF.quiet():
        psi_post, psi_map = np.nanmean(lin["post_mean"]["psi"], 1), np.nanmean(lr["psi"], 1)
    lin["transitions"] = {
        "map": {"P_cG": locate_max_slope(P, psi_map).to_dict(),
                "P_cG_half": locate_level(P, psi_map, 0.5).to_dict()},
        "post": {"P_cG": locate_max_slope(P, psi_post).to_dict(),
                 "P_cG_half": locate_level(P, psi_post, 0.5).to_dict()},
        "P_c1_note": "EK MAP P*_c1 ~ 0.17 < 1: MAP r > 0 at every P; the posterior r is |r|",
    }  # fmt: skip
    Ps_post = lin["transitions"]["post"]["P_cG"]["P_star"]
    lin["early_warning"] = {
        "theory_map_P_cG": verdicts(lin, th["points"]["map"]["P_cG"]),
        "posterior_P_cG": verdicts(lin, Ps_post) if Ps_post else None,
        "P_c1": "undetermined: 0.5 P*_c1 lies below P = 1 (MAP and post theory)",
    }
    lin["health_summary"] = health_line(lin)
    res["linear"] = lin
    # --- softmax: the two branches ----------------------------------------------------------
    pr, pp = fit_and_sample(branch_config(mc, "softmax", mc["P_pool"], "zero"), sgld, cache)
    cr, cp = fit_and_sample(branch_config(mc, "softmax", mc["P_copy"], "copy"), sgld, cache)
    pool, copy = branch_summary(pr, pp), branch_summary(cr, cp)
    common = [p for p in pr.P if p in cr.P]
    ip = [int(np.flatnonzero(pr.P == p)[0]) for p in common]
    ic = [int(np.flatnonzero(cr.P == p)[0]) for p in common]
    distinct = np.abs(cr["cG"][ic] - pr["cG"][ip]) > 0.5  # the two starts on distinct minima
    # per seed, only where that seed's two starts sit on distinct minima
    map_cross = PF.crossing(np.asarray(common, float), pr["U"][ip], cr["U"][ic], distinct)
    soft = {"pool": pool, "copy": copy, "common_P": common, "distinct_map": distinct}
    if mc.get("P_copy_high"):  # where the posterior copies: copy-start chains above the window
        hr, hp = fit_and_sample(branch_config(mc, "softmax", mc["P_copy_high"], "copy"), sgld,
                                cache)  # fmt: skip
        soft["copy_high"] = branch_summary(hr, hp)
        soft["copy_high"]["health_summary"] = health_line(soft["copy_high"])
    Pall = np.r_[cr.P, hr.P] if mc.get("P_copy_high") else cr.P
    aGall = np.concatenate(
        [copy["post_mean"]["cG"]]
        + ([soft["copy_high"]["post_mean"]["cG"]] if mc.get("P_copy_high") else [])
    )
    with PF.quiet():  # the posterior copies where its mean aG (copy start) passes 1
        soft["posterior_copies"] = locate_level(Pall.astype(float), np.nanmean(aGall, 1),
                                                1.0).to_dict()  # fmt: skip
    soft["pool"]["health_summary"] = health_line(pool)
    soft["copy"]["health_summary"] = health_line(copy)
    # --- free energies, weights, crossings --------------------------------------------------
    P_ti = [p for k, p in enumerate(common) if distinct[k].any()]  # per-seed masks below
    ti_key = _key(pr.config.to_dict(), cr.config.to_dict(), P_ti, mc["ti"])
    fe = None
    if P_ti:
        fe = _pickled(
            cache / f"ti-{ti_key}.pkl",
            lambda: free_energies(pr, cr, P_ti, mc["ti"], jax.random.key(12)),
        )
    cross = {"map_U": map_cross["located"], "map_U_per_seed": map_cross,
             "theory_map": th["points"]["map"]["P_aG"],
             "theory_post": th["points"]["post"]["P_aG"],
             "theory_map_spinodals": th["points"]["map"]["spinodals"],
             "theory_post_spinodals": th["points"]["post"]["spinodals"],
             "paper": paper.PAPER_MEASURED["P_aG"]}  # fmt: skip
    if fe is not None:
        Pt = np.asarray(fe["P"], float)
        # per run: distinct fits and chains that kept their branch at t = 1
        dmap = distinct[[common.index(p) for p in fe["P"]]]
        stayed = (np.abs(fe["aG_t1"][1] - fe["aG_t1"][0]) > 0.5) & dmap
        fe["stayed_distinct_t1"] = stayed
        cross["free_energy"] = PF.crossing(Pt, fe["F"][0], fe["F"][1], valid=stayed)
        cross["wbic"] = PF.crossing(Pt, fe["wbic"][0], fe["wbic"][1], valid=stayed)
        cross["laplace"] = PF.crossing(
            Pt,
            fe["U_star"][0] + fe["half_logdet_H"][0],
            fe["U_star"][1] + fe["half_logdet_H"][1],
            valid=stayed,
        )
        cross["map_U_same_runs"] = PF.crossing(Pt, fe["U_star"][0], fe["U_star"][1],
                                               valid=stayed)  # fmt: skip
        w = np.where(stayed, PF.copy_weight(fe["F"][1], fe["F"][0]), np.nan)  # [nP, seeds]
        fe["w_copy"] = w
        with PF.quiet():
            fe["w_copy_mean"] = np.nanmean(w, 1)
        fe["weight_window"] = PF.weight_window(Pt, fe["w_copy_mean"])
        fe["weight_window_per_seed"] = [PF.weight_window(Pt, w[:, s]) for s in range(w.shape[1])]
    soft["free_energy"] = fe
    soft["crossings"] = cross
    P_bayes = (cross.get("free_energy") or {}).get("P_star")
    soft["early_warning"] = {
        "theory_map_P_aG": verdicts(pool, th["points"]["map"]["P_aG"]),
        "posterior_P_aG": verdicts(pool, P_bayes) if P_bayes else None,
    }
    res["softmax"] = soft
    res["runtime_s"] = time.time() - t0
    res["command"] = f"python -m experiments.posterior --mode {mode} --out {out_dir}"
    for name, fig in PF.figures(res, th["curves"]).items():
        save_figure(fig, out_dir / "figures" / f"posterior_{name}.png")
    path = write_json(out_dir / "results" / "posterior_plain.json", res)
    log(f"wrote {path} ({time.time() - t0:.0f} s)")
    return res


# ---------------------------------------------------------------------------------------------
# docs/posterior.md tables (every number from the JSON that ``main`` writes)


def _f(x, nd=3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{nd}g}"


def _ms(a, nd=3) -> str:
    """mean ± sd over seeds of a ``[seeds]`` row."""
    a = np.asarray(a, float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return "-"
    return f"{a.mean():.{nd}g} ± {a.std(ddof=1):.2g}" if a.size > 1 else f"{a.mean():.{nd}g}"


def _ps(loc: dict | None) -> str:
    if not loc or loc.get("P_star") is None:
        return f"outside grid ({(loc or {}).get('side')})"
    b = loc.get("bracket")
    return f"{loc['P_star']:.3g} [{b[0]:g}, {b[1]:g}]" if b else f"{loc['P_star']:.3g}"


def tables(res: dict) -> str:
    lin, soft, th = res["linear"], res["softmax"], res["theory"]
    cr, fe = soft["crossings"], soft["free_energy"]
    L = ["| transition | exact MAP (measured) | posterior (measured) | EK MAP | EK post |"
         " paper (its per-position units) |", "|---|---|---|---|---|---|"]  # fmt: skip
    t = lin["transitions"]
    L.append(
        f"| linear P*_cG (max dpsi/dlogP) | {_ps(t['map']['P_cG'])} | {_ps(t['post']['P_cG'])}"
        f" | {_f(th['map']['P_cG'])} | {_f(th['post']['P_cG'])} | {res['paper']['P_cG']:g} |"
    )
    L.append(
        f"| linear psi = 1/2 | {_ps(t['map']['P_cG_half'])} | {_ps(t['post']['P_cG_half'])}"
        f" | {_f(th['map']['P_cG_half'])} | {_f(th['post']['P_cG_half'])} | - |"
    )
    L.append(
        "| linear P*_c1 | < 1 (r > 0 at P = 1) | n/a (r gauge-fixed >= 0) |"
        f" {_f(th['map']['P_c1'])} | {_f(th['post']['P_c1'])} |"
        f" {res['paper']['P_c1']:g} |"
    )
    fcr = (cr.get("free_energy") or {}).get("located")
    L.append(
        f"| softmax P*_aG (branch crossing: U / F) | {_ps(cr['map_U'])}"
        f" {_ci(cr['map_U_per_seed'])} | {_ps(fcr)} |"
        f" {_f(th['map']['P_aG'])} | {_f(th['post']['P_aG'])} | {cr['paper']:g} |"
    )
    pc = soft.get("posterior_copies")
    L.append(
        f"| softmax: copy-start chains stay copying (mean aG > 1) | - | {_ps(pc)} | - | - | - |"
    )
    out = ["### Transition points", "", *L, ""]
    for title, b in (("linear", lin), ("softmax, pooling start (zero logits)", soft["pool"]),
                     ("softmax, copy start", soft["copy"]),
                     ("softmax, copy start above the window", soft.get("copy_high"))):  # fmt: skip
        if b is None:
            continue
        out += [*per_P_table(title, b), ""]
    if fe is not None:
        out += ["### Free energy per softmax branch (per P: mean ± sd over seeds)", "",
                "| P | (F_pool - F_copy) | TI MCSE | (U*_pool - U*_copy) | Occam 1/2 dlogdet H |"
                " -d log(Z1/Z0) | WBIC_pool - WBIC_copy | w_copy | aG at t=1 pool / copy |"
                " aG at WBIC pool / copy |", "|" + "---|" * 10]  # fmt: skip
        for i, p in enumerate(fe["P"]):
            d = lambda k: np.asarray(fe[k][0][i], float) - np.asarray(fe[k][1][i], float)  # noqa
            mc = np.hypot(np.asarray(fe["F_mcse"][0][i]), np.asarray(fe["F_mcse"][1][i]))
            out.append(
                f"| {p} | {_ms(d('F'))} | {_f(float(np.nanmax(mc)), 2)} | {_ms(d('U_star'))} |"
                f" {_ms(d('half_logdet_H'))} | {_ms(-d('log_Z_ratio'))} | {_ms(d('wbic'))} |"
                f" {_ms(fe['w_copy'][i], 2)} | {_ms(fe['aG_t1'][0][i], 2)} /"
                f" {_ms(fe['aG_t1'][1][i], 2)} | {_ms(fe['aG_wbic'][0][i], 2)} /"
                f" {_ms(fe['aG_wbic'][1][i], 2)} |"
            )  # fmt: skip
        ww = fe["weight_window"]
        out += ["", f"Crossings (seed mean; per-seed 95% t-interval): free energy "
                f"{_ps(fcr)} {_ci(cr['free_energy'])}; WBIC {_ps(cr['wbic']['located'])} "
                f"{_ci(cr['wbic'])}; Laplace (U* + 1/2 log det H) {_ps(cr['laplace']['located'])};"
                f" MAP U on the same runs {_ps(cr['map_U_same_runs']['located'])}. Copy weight"
                f" (seed-mean w): 5% at {_f(ww['P_w05'])}, 1/2 at {_f(ww['P_equal'])}, 95% at "
                f"{_f(ww['P_w95'])}.", ""]  # fmt: skip
    out += ["### Early-warning verdicts (growth of P Var from 0.5 P* to 0.9 P*)", "",
            "| attention | P* used | observable | chi ratio [95% CI] | Var ratio [95% CI] |"
            " verdict |", "|---|---|---|---|---|---|"]  # fmt: skip
    for att, ew in (("linear", lin["early_warning"]), ("softmax (pooling start)",
                                                         soft["early_warning"])):  # fmt: skip
        for which, vs in ew.items():
            if not isinstance(vs, dict):
                continue
            for k, v in vs.items():
                ci = v["ratio_ci"] or [None, None]
                vc = v["var_ratio_ci"] or [None, None]
                out.append(f"| {att} | {which} = {v['P_star']:.3g} | {k} | {_f(v['ratio'])} "
                           f"[{_f(ci[0])}, {_f(ci[1])}] | {_f(v['var_ratio'])} [{_f(vc[0])}, "
                           f"{_f(vc[1])}] | {v['verdict']} |")  # fmt: skip
    return "\n".join(out) + "\n"


def per_P_table(title: str, b: dict) -> list[str]:
    """Per P: MAP and posterior means (seed mean ± sd), susceptibilities (seed mean, with the
    largest MCSE over seeds in brackets) and chain health."""
    sus = b["susceptibility"]
    L = [f"#### {title}: order parameters and susceptibilities (3 decimals; cG = aG for softmax)",
         "", "| P | MAP cG | post cG | MAP r | post r | P Var c1 | P Var cG | P Var r | P Var U |"
         " finite chains | max R-hat (U, cG) | min ESS (U, cG) |", "|" + "---|" * 12]  # fmt: skip
    for i, p in enumerate(b["P"]):
        row = [str(p), _ms(b["map"]["cG"][i]), _ms(b["post_mean"]["cG"][i]),
               _ms(b["map"]["r"][i]), _ms(b["post_mean"]["r"][i])]  # fmt: skip
        for k in OBSERVABLES:
            v, e = np.asarray(sus[k]["value"][i], float), np.asarray(sus[k]["mcse"][i], float)
            with PF.quiet():
                row.append(f"{_f(float(np.nanmean(v)))} ({_f(float(np.nanmax(e)), 2)})")
        h = b["health"]
        with PF.quiet():
            row += [str(int(np.sum(h["finite_chains"][i]))),
                    f"{_f(np.nanmax(h['rhat'][i]))}, {_f(np.nanmax(h['rhat_cG'][i]))}",
                    f"{_f(np.nanmin(h['ess'][i]))}, {_f(np.nanmin(h['ess_cG'][i]))}"]  # fmt: skip
        L.append("| " + " | ".join(row) + " |")
    return L


def _ci(c: dict) -> str:
    ci = c["per_seed_ci"]
    return f"(per seed {_f(ci['mean'])} [{_f(ci['lo'])}, {_f(ci['hi'])}], n = {ci['n']})"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="quick", choices=sorted(CONFIGS))
    ap.add_argument("--out", default="docs")
    ap.add_argument("--tables", metavar="JSON", help="print the markdown tables of a result")
    a = ap.parse_args()
    if a.tables:
        print(tables(json.loads(Path(a.tables).read_text())))
    else:
        main(a.mode, a.out)
