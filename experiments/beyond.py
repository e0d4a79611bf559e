"""Artefacts ``markov`` / ``causal``: the copy head beyond the paper's limits:
Markov tokens without / with the causal mask, over the sticky family (stickiness ``rho``) and the
Dirichlet family (``alpha``: each row of the transition matrix ~ Dirichlet(alpha 1_V), drawn from
``chain_seed``).

Per (chain, mask): exact-MAP sweeps of the reduced engine (quenched embeddings, width N) for
linear attention and for softmax from both branches (zero logits, copy logits), measured P*
per seed (:mod:`copyhead_jax.compare.pstar`: geometric mean over seeds, 95% bootstrap CI)
beside the EK theory of docs/theory.md §12 (:func:`copyhead_jax.theory.beyond.beyond_points`:
full L x L minimisers, and the two-parameter ansatz for its coverage). Settings: ``markov`` /
``causal`` of ``configs/MODE.py`` over :data:`DEFAULTS`; every sweep and theory point is cached.
Output: ``results/{markov,causal}.json`` (preset paper; plain: ``..._plain.json``) and the
figures of its ``rho`` rows (``report.pstar_figures.beyond_figures``). The variants
``markov-dirichlet``, ``markov-follow``, ``markov-cg``, ``causal-inf`` and ``causal-follow``
(no mask / the mask: the name's first word) run other rows of the same form into their own JSON
(``results/ARTEFACT.json``), only in the modes whose config sets them; ``markov-transition``
(:func:`transition`) the Bayesian P*_aG per rho; ``markov-finite`` (:func:`finite`) the
finite-P theory of the linear runs.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.cli import theory_options
from copyhead_jax.compare import follow as BF
from copyhead_jax.compare import group_means, group_points, point_summary, seed_groups
from copyhead_jax.fit import exact_solve_from, sweep_inputs
from copyhead_jax.plots import branch_follow_figure
from copyhead_jax.runner import run_mesh
from copyhead_jax.storage import environment, write_json
from copyhead_jax.sweep import finite_width
from copyhead_jax.theory import TheoryParams, beyond_points, transition_points
from copyhead_jax.transition import TISettings

from . import common as C

jsonable = theory_options.jsonable  # full precision (common's: 7 digits)

KEYS = ("P_c1", "P_cG", "P_aG")
#: the settings a mode's config does not set: theory and networks at every ``rho``, no ``alpha``
DEFAULTS = dict(
    preset=None,  # the engine preset; None: paper-map under the paper preset, else plain
    task={},  # TaskConfig overrides (L, V) on the preset's
    rho=[0.0, 0.25, 0.5, 0.75, 0.9],
    alpha=[],  # Dirichlet chains: rows keyed by alpha and chain_seed beside the rho rows
    chain_seed=0,
    seeds=3,
    width="10000",  # or "inf"
    P=[32, 64, 100, 160, 256, 400, 560, 700, 1000, 1500, 2250, 3500],
    n_P=41,  # theory grid: n_P log-spaced P in theory_P
    theory_P=[3.0, 3e4],
    networks_rho=None,  # measure networks only at these rho (None: every rho)
    networks_alpha=None,
    spaces=["full", "ansatz"],  # theory spaces (ansatz: its own P*, beside the full minimiser's;
    # none: no theory, e.g. rows whose theory another JSON holds)
    # extra sweeps on the first ``seeds`` seeds (same data and embeddings, nested), located on
    # the union of P with the main grid: dict(attention="linear" | "softmax", P=[...], seeds=k,
    # rho=[...] and/or alpha=[...]: the chains they extend)
    extra=[],
    # networks at width infinity (the prior's Gram) too, at these chains: dict(rho=[...],
    # alpha=[...], seeds=k) on the main P grid (row key ``measured_inf``); None: none
    width_inf=None,
    # softmax branch following up and down a fine P grid (hysteresis, copyhead_jax.compare.follow):
    # dict(P=[...], seeds=k, rho=[...] and/or alpha=[...]); row key ``followed`` (a list)
    follow=[],
    starts=["linear", "pool", "copy"],  # the networks measured (pool, copy: softmax's two starts)
)


def chains(s: dict) -> list[dict]:
    """The Markov chains of the settings, as ``TaskConfig`` fields."""
    return [{"rho": r} for r in s["rho"]] + [
        {"alpha": a, "chain_seed": s["chain_seed"]} for a in s["alpha"]
    ]


def config(s: dict, chain: dict, causal: bool, attention: str, init: str = "prior"):
    width = math.inf if s["width"] == "inf" else int(s["width"])
    return ch.preset(s["preset"]).replace(
        task=dict(s["task"], source="markov", **chain),
        model=dict(attention=attention, engine="reduced", width=width, causal=causal),
        # the exact MAP on quenched embeddings, as paper-map (the plain preset trains them)
        train=dict(train_embeddings=False, init_attention=init),
        solver=dict(kind="exact", continuation=init == "prior"),
        sweep=dict(P=tuple(s["P"]), n_seeds=s["seeds"]),
    )


def theory(s: dict, chain: dict, causal: bool) -> dict:
    """The EK theory of every space of ``s['spaces']`` for ``(chain, causal)`` (JSON-able)."""
    cfg = config(s, chain, causal, "linear")
    params = TheoryParams.from_config(cfg)
    out = {}
    for sp in s["spaces"]:
        r = beyond_points(
            params, cfg.task, causal=causal, space=sp, P_range=tuple(s["theory_P"]), n_P=s["n_P"]
        )
        out[sp] = jsonable(
            {
                k: r.get(k)
                for k in (
                    *KEYS,
                    "P_cG_half",
                    "spinodals",
                    "first_order",
                    "window_decades",
                    "P_aG_crossover",
                    "coverage_min",
                    "P",
                    "notes",
                    "aG_max_step",
                    "fine_step_decades",
                    "softmax_fine",
                )
            }
            | {
                "linear_up": r["linear"]["up"],
                "softmax_up": r["softmax"]["up"],
                "softmax_down": r["softmax"]["down"],
            }
        )
    return out


def extras(s: dict, chain: dict, causal: bool, attention: str, init: str, cache: Path) -> list:
    """The extra sweeps of ``s['extra']`` that extend ``chain``'s runs of one start."""
    (axis, value), *_ = chain.items()
    out = []
    for e in s["extra"]:
        if e["attention"] == attention and value in e.get(axis, []):
            sub = dict(s, P=e["P"], seeds=e["seeds"])
            out.append(C.cached_sweep(config(sub, chain, causal, attention, init), cache))
    return out


def measure(s: dict, chain: dict, causal: bool, cache: Path) -> dict:
    starts = {
        "linear": ("linear", "prior"),
        "pool": ("softmax", "zero"),
        "copy": ("softmax", "copy"),
    }
    groups, checks = {}, {}
    for name, (att, init) in ((k, v) for k, v in starts.items() if k in s["starts"]):
        main = C.cached_sweep(config(s, chain, causal, att, init), cache)
        groups[name], checks[name] = seed_groups(main, extras(s, chain, causal, att, init, cache))
    pts = group_points(groups.get("linear", []), groups.get("pool", []), groups.get("copy", []))
    curves, ok, P = {}, {}, {}
    for name, gs in groups.items():
        P[name] = [int(p) for p in gs[0][1].P]  # the widest grid (the extended seeds)
        curves[name] = group_means(gs, ("c1", "cG", "U", "coverage"))
        ok[name] = int(sum(np.sum(g.ok) for _, g in gs))
    out = {
        "P": P["linear"],
        "points": {k: point_summary(v) for k, v in pts.items()},
        "curves": jsonable(curves),
        "ok_runs": ok,
    }
    if any(checks.values()):
        out["P_of"] = P  # each start's P (extended seeds): the curves are means on these
        out["extended"] = {k: v for k, v in checks.items() if v}
    return out


def main(spec: C.Spec, out_dir: str | Path) -> dict:
    """Theory and networks of every chain of the settings; writes the JSON and the figures."""
    which, causal = spec.artefact, spec.artefact.startswith("causal")
    if which not in ("markov", "causal") and not spec.settings:  # a variant this mode lacks
        C.log(f"{which} ({spec.preset}, {spec.mode}): no settings in this mode; nothing run")
        return {}
    if which == "markov-transition":
        return transition(spec, out_dir)
    if which == "markov-finite":
        return finite(spec, out_dir)
    s = {**DEFAULTS, **spec.settings}
    s["preset"] = s["preset"] or {"paper": "paper-map"}.get(spec.preset, spec.preset)
    t0 = time.time()
    rows = []
    for chain in chains(s):
        t1 = time.time()
        cfg = config(s, chain, causal, "linear")  # the theory's key: what it reads
        key = [
            TheoryParams.from_config(cfg).to_dict(),
            cfg.to_dict()["task"],
            causal,
            s["spaces"],
            s["n_P"],
            s["theory_P"],
        ]
        th = C.cached(spec.cache_dir, "beyond-theory", key, lambda: theory(s, chain, causal))
        row = {**chain, "causal": causal, "theory": th}
        (axis, value), *_ = chain.items()
        if s[f"networks_{axis}"] is None or value in s[f"networks_{axis}"]:
            row["measured"] = measure(s, chain, causal, spec.cache_dir)
        if (wi := s["width_inf"]) and value in wi.get(axis, []):
            inf = dict(s, width="inf", seeds=wi["seeds"], extra=[])
            row["measured_inf"] = measure(inf, chain, causal, spec.cache_dir)
        for f in s["follow"]:
            if value in f.get(axis, []):
                fol = follow(s, chain, causal, f, spec.cache_dir, config)
                row.setdefault("followed", []).append(fol)
        row["wall_s"] = time.time() - t1
        rows.append(row)
        C.log(format_row(row))
    res = {
        "artefact": which,
        "preset": s["preset"],
        "width": s["width"],
        "seeds": s["seeds"],
        "P_grid": s["P"],
        "theory_n_P": s["n_P"],
        "settings": s,
        "rows": rows,
        "wall_s": time.time() - t0,
        "environment": environment(),
    }
    name = which if spec.preset == "paper" else f"{which}_{spec.preset}"
    path = Path(out_dir) / "results" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(res), indent=1))
    from .report.pstar_figures import beyond_figures

    if any("followed" in r for r in rows):
        C.save_figure(branch_follow_figure(rows), Path(out_dir) / "figures" / f"{name}.png")
    if any("rho" in r and r["theory"] for r in rows):  # the figures: against rho, with theory
        beyond_figures(
            dict(res, rows=[r for r in rows if "rho" in r and r["theory"]]),
            Path(out_dir) / "figures",
            name,
        )
    return res


def follow(s: dict, chain: dict, causal: bool, f: dict, cache, config) -> dict:
    """The two passes of ``f = dict(P=[...], seeds=k)`` at ``chain`` (softmax; ``config``:
    :func:`config`), cached; JSON-able: per pass and key ``[nP][seed]``, and
    :func:`copyhead_jax.compare.follow.coexistence`."""
    P = sorted(int(p) for p in f["P"])
    sub = dict(s, P=P, seeds=f["seeds"])
    cfg = config(sub, chain, causal, "softmax", "zero")

    def run():
        first = {}
        for name, init, p in (("up", "zero", P[0]), ("down", "copy", P[-1])):
            res = C.cached_sweep(config(dict(sub, P=[p]), chain, causal, "softmax", init), cache)
            kept = ("params/W_G", "params/W_O_hat")
            first[name] = {k: res.arrays[k][0] for k in kept} | {k: res[k][0] for k in BF.KEEP}
        inputs = sweep_inputs(cfg, None)  # P-major, pools cut at P_max (nested)
        solve_runs, nS = exact_solve_from(cfg, run_mesh(cfg.sweep.n_devices)), f["seeds"]

        def solve(i, w):
            rows = np.arange(i * nS, (i + 1) * nS)
            return solve_runs(jax.tree_util.tree_map(lambda a: np.asarray(a)[rows], inputs), w)

        return BF.passes(P, first["up"], first["down"], solve)

    br = C.cached(cache, "beyond-follow", [cfg.to_dict()], run)
    out = {
        "P": P,
        "seeds": f["seeds"],
        "coexistence": BF.coexistence(br, P),
        # the branches of the jump itself (a_G apart by > 0.5, as markov.md's "starts distinct")
        "coexistence_large": BF.coexistence(br, P, BF.LARGE_AG),
    }
    for name in ("up", "down"):
        out[name] = {k: np.asarray(v, float).tolist() for k, v in br[name].items()}
    return out


TRANSITION_KEEP = (
    "P_star",
    "interval",
    "per_seed",
    "cross_check",
    "map_U_crossing",
    "theory",
    "a_thr",
    "map_grid",
    "flagged",
    "wall_seconds",
)


def transition(spec: C.Spec, out_dir: str | Path) -> dict:
    """Artefact ``markov-transition``: the Bayesian ``P*_aG`` (branch free energies,
    ``ch.transition``) at every (width, rho) of the settings ``markov_transition`` (``rho``,
    ``widths``, ``seeds``, ``task``, ``ti``: ``TISettings``, ``P_grid``: None for the theory's,
    or per rho, ``theory``, ``anchored``: later seeds from one probe, default True); the
    command's checkpoints are cached (a rerun resumes)."""
    s = spec.settings
    ti = TISettings(**s.get("ti", {}))
    rows = []  # per width, per rho
    for width in s.get("widths", ["inf"]):
        w = math.inf if width == "inf" else int(width)
        for rho in s["rho"]:
            cfg = ch.preset(spec.preset).replace(
                task=dict(s.get("task", {}), source="markov", rho=rho),
                model=dict(attention="softmax", engine="reduced", width=w),
                train=dict(train_embeddings=False),  # as ``copyhead transition`` builds it
            )
            grid = g.get(rho) if isinstance(g := s.get("P_grid"), dict) else g  # per rho or one
            folder = C.cache_path(
                spec.cache_dir, "transition", [cfg.to_dict(), repr(ti), s["seeds"], grid], ""
            )
            t0 = time.process_time()
            res = ch.transition(
                cfg,
                method="ti",
                n_seeds=s["seeds"],
                out=folder,
                settings=ti,
                P_grid=grid,
                theory=s.get("theory", True),
                anchored=s.get("anchored", True),
            )
            row = {
                "rho": rho,
                "width": width,
                **{k: res[k] for k in TRANSITION_KEEP},
                "brackets": [x["crossing"]["bracket"] for x in res["seeds"]],
                "probes": [[p["P"] for p in x["probes"]] for x in res["seeds"]],
                "cpu_s_this_call": time.process_time() - t0,
            }
            if rho == 0 and s.get("theory", True):  # i.i.d. tokens: the EK posterior point too
                row["ek_post_iid"] = transition_points(
                    TheoryParams.from_config(cfg), "softmax", "post"
                ).get("P_aG")
            rows.append(row)
            C.log(f"rho={rho:g} width={width}: P*_aG {row['P_star']} {row['interval']}")
    res = {
        "artefact": spec.artefact,
        "preset": spec.preset,
        "settings": s,
        "ti": repr(ti),
        "rows": rows,
        "environment": environment(),
    }
    name = spec.artefact if spec.preset == "paper" else f"{spec.artefact}_{spec.preset}"
    write_json(Path(out_dir) / "results" / f"{name}.json", res)
    return res


def finite(spec: C.Spec, out_dir: str | Path) -> dict:
    """Artefact ``markov-finite``: the finite-P theory (docs/theory.md §8: A1 and the ansatz on
    each run's own tokens and embedding Gram) of the linear runs of ``markov`` (same chains, seeds
    and grid), located as the networks' points: do the finite data's statistics move ``P*``?"""
    s = {**DEFAULTS, **spec.settings}
    s["preset"] = s["preset"] or {"paper": "paper-map"}.get(spec.preset, spec.preset)
    rows = []
    for chain in chains(s):
        t0, cfg = time.process_time(), config(s, chain, False, "linear")
        runs = SimpleNamespace(cfg=cfg, P=np.asarray(s["P"]))  # frozen embeddings: all it reads
        fn = lambda: finite_width(TheoryParams.from_config(cfg), runs, "linear", s["P"])  # noqa: E731
        ft = C.cached(spec.cache_dir, "finite-linear", [cfg.to_dict(), s["P"]], fn)
        rows.append(
            {
                **chain,
                "summary": ft["summary"],
                "cpu_s": time.process_time() - t0,
                "per_seed": [
                    {k: [p.P_star, p.bracket] for k, p in pts.items()} for pts in ft["points"]
                ],
            }
        )
        C.log(f"{chain}: finite-P theory {ft['summary']}")
    res = {
        "artefact": spec.artefact,
        "preset": s["preset"],
        "settings": s,
        "rows": rows,
        "environment": environment(),
    }
    write_json(Path(out_dir) / "results" / f"{spec.artefact}.json", res)
    return res


def format_row(row) -> str:
    th = row["theory"].get("full", {})
    chain = ", ".join(f"{k}={v:g}" for k, v in row.items() if k in ("rho", "alpha"))
    s = f"{chain} causal={row['causal']!s:<5}"
    for k in KEYS:
        m = row.get("measured", {}).get("points", {}).get(k, {}).get("mean")
        s += f"  {k}: theory {_g(th.get(k))} measured {_g(m)}"
    return s + f"  first_order={th.get('first_order')} coverage_min={_g(th.get('coverage_min'))}"


def _g(v) -> str:
    return "None" if v is None else f"{v:.4g}"
