"""``python -m experiments bayes-figure [--results DIR] [--figures DIR]``: the Bayesian transition's
theory against its measurement, from committed results only (no run).

Per softmax configuration (reading, L, V): the measured Bayesian ``P*_aG`` with its 95% interval
and its flagged runs (the free-energy profile, ``transition_profile_L*_V*.json``; the branch TI,
``posterior_branches*.json``, through ``compare.bayesian_interval``; ``copyhead transition``,
``transition_<reading>.json``), the other measurements of the same point, the EK MAP and EK +
readout points and route B with its replica interval (``bayes_theory_softmax.json``) and route A
(``bayes_theory_route_a.json``); the linear head's posterior copy crossover against route B
(``posterior_plain.json``, ``transition_linear_L*_V*.json``, ``bayes_theory_linear.json``); the
joint law in ``L`` and ``V`` of the measured plain points beside route B's on the same
configurations and the paper's ``ln^2 L``
(``compare.laws.measured_law``); the Markov-token measurements beside the i.i.d. ones of the same
``(L, V)`` (no route covers them). Writes ``DIR/bayes_compare.json`` and
``FIGURES/bayes_theory_vs_measured.png`` (each prediction over the measured point). Seconds.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np

from copyhead_jax.compare import bayesian_interval, measured_law, profile_verdict
from copyhead_jax.config import TRANSITION_RUN
from copyhead_jax.plots import bayes_compare_figure, save_figure
from copyhead_jax.storage import write_json

RULE = f"R-hat > {TRANSITION_RUN.rhat_max:g} or ESS < {TRANSITION_RUN.ess_min:g}"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "reports" / "results"
FIGURES = ROOT / "docs" / "reports" / "figures"
FIGURE = "bayes_theory_vs_measured.png"
#: where each softmax configuration's measured Bayesian P* is read (as the report's table does)
SOFTMAX = (
    ("plain", 25, 5, "profile", "transition_profile_L25_V5.json"),
    ("paper", 25, 5, "profile", "transition_profile_paper.json"),
    ("paper-chi-lik", 25, 5, "profile", "transition_profile_paper-chi-lik.json"),
    ("plain", 12, 6, "profile", "transition_profile_L12_V6.json"),
    ("plain", 15, 7, "profile", "transition_profile_L15_V7.json"),
    ("plain", 8, 3, "profile", "transition_profile_L8_V3.json"),
    ("plain", 8, 5, "profile", "transition_profile_L8_V5.json"),
    ("plain", 8, 7, "profile", "transition_profile_L8_V7.json"),
    ("plain", 12, 3, "profile", "transition_profile_L12_V3.json"),
    ("plain", 12, 5, "profile", "transition_profile_L12_V5.json"),
    ("plain", 40, 5, "profile", "transition_profile_L40_V5.json"),
)
#: committed numbers of the report's tables that have no JSON source: left out of the figure
NO_SOURCE = [
    "plain (12, 6): the flagged `copyhead transition` run and the outside review's NUTS",
    "plain (15, 7): the outside review's measurement",
    "plain (25, 5), Markov rho = 0.5: measured by the branch TI (markov.md), no route covers it",
]
#: Markov-token measurements (reading, L, V, rho, file): no route covers them (docs/theory.md
#: §13 assumes i.i.d. tokens); each is set beside the i.i.d. measurement of the same (L, V)
MARKOV = (
    ("plain", 15, 7, 0.5, "transition_profile_L15_V7_markov.json"),
    ("plain", 25, 5, 0.25, "transition_profile_L25_V5_markov025.json"),
    ("plain", 25, 5, 0.375, "transition_profile_L25_V5_markov0375.json"),
    ("plain", 25, 5, 0.45, "transition_profile_L25_V5_markov045.json"),
    ("plain", 25, 5, 0.5, "transition_profile_L25_V5_markov.json"),
    ("plain", 25, 5, 0.75, "transition_profile_L25_V5_markov075.json"),
    ("plain", 25, 5, 0.9, "transition_profile_L25_V5_markov09.json"),
)


def _load(results: Path, name: str) -> dict | list:
    return json.loads((results / name).read_text())


def _measured(results: Path, kind: str, name: str) -> dict:
    """The measured point, its 95% interval and its flagged runs (R-hat, ESS past
    ``TRANSITION_RUN``) from one committed result."""
    d = _load(results, name)
    if kind == "branch":
        b = bayesian_interval(d)
        return dict(
            P_star=b["P_star"],
            lo=b["lo"],
            hi=b["hi"],
            n_seeds=d["n_seeds"],
            n_flagged=len(b["flagged"]),
            n_runs=b["n_runs"],
            source=name,
            flag_rule=RULE,
            method="branch TI (F_copy = F_pool), " + b["rule"],
        )
    if kind == "transition":
        return _command_measured(
            d,
            n_runs=sum(2 * len(s["probes"]) for s in d["seeds"]),
            source=name,
            flag_rule=RULE,
            method="copyhead transition (branch TI per seed)",
        )
    n_win = profile_verdict.window_count(d)
    lim = d["settings"]["profile"]
    lo, hi = _profile_interval(d)
    return dict(
        P_star=d["P_star"],
        lo=lo,
        hi=hi,
        printed=d["interval"],
        n_seeds=len(d["seeds"]),  # the seeds measured (a part of a run names fewer)
        n_flagged=len(profile_verdict.flagged_windows(d["flagged"])),
        n_runs=n_win,
        verdict=d["verdict"],
        source=name,
        unit="windows",
        flag_rule=f"R-hat > {lim['rhat_max']:g} or ESS < {lim['ess_min']:g} "
        "(the profile's own limits; its errors widened there)",
        method="free-energy profile in a_G",
    )


def _command_measured(d: dict, **more) -> dict:
    """The point, interval, seeds and flagged runs of a ``copyhead transition`` result (branch TI
    or the linear crossover), with ``more``."""
    return dict(
        P_star=d["P_star"],
        lo=d["interval"][0],
        hi=d["interval"][1],
        n_seeds=d["summary"]["n"],
        n_flagged=len(d["flagged"]),
        **more,
    )


def _profile_interval(d: dict) -> tuple[float, float]:
    """A profile run's interval: the hull of the one it printed and the package's crossing rule
    applied to its stored probes (``compare.profile_verdict.from_record``); a run printed before
    the rule may have propagated a bracket end's error linearly, which the rule does not."""
    o = profile_verdict.from_record(d)[1]
    return min(o["lo"], d["interval"][0]), max(o["hi"], d["interval"][1])


def _others(results: Path, reading: str, L: int, V: int, primary: str) -> dict:
    """The same point measured another way, where a committed result has it."""
    out = {}
    prof = results / f"transition_profile_L{L}_V{V}.json"
    if reading == "plain" and primary != "profile" and prof.exists():
        d = _load(results, prof.name)
        lo, hi = _profile_interval(d)
        out["profile"] = dict(
            P=d["P_star"],
            lo=lo,
            hi=hi,
            n_flagged=len(profile_verdict.flagged_windows(d["flagged"])),
            source=prof.name,
        )
    if (reading, L, V) == ("plain", 25, 5):
        w = _load(results, "posterior_smc.json")["weight_window"]
        out["smc"] = dict(P=w["P_equal"], source="posterior_smc.json (w_copy = 1/2)")
    if primary == "transition":
        c = _load(results, f"transition_{reading}.json")["cross_check"]
        out["smc"] = dict(P=c["P_star"], source=f"transition_{reading}.json ({c['method']})")
        br = results / f"posterior_branches_{reading}.json"
        if br.exists():
            b = bayesian_interval(_load(results, br.name))
            out["branch_ti"] = dict(P=b["P_star"], lo=b["lo"], hi=b["hi"], source=br.name)
    return out


def _route_a(ra: list[dict], reading: str, L: int, V: int, rho: float | None = None) -> dict | None:
    """Route A's point of one configuration: the mean over its token samples (records of
    ``bayes_theory_route_a.json``, ``python -m experiments route-a``; ``rho``: its Markov
    records, ``None`` the i.i.d. shift-closed ones) that found a root and whose expansion held
    (``trusted``); None where none did."""
    key = (reading, L, V, rho)
    reps = [
        r
        for r in ra
        if (r["preset"], r["L"], r["V"], r.get("rho")) == key
        and r["P_star"]
        and r.get("trusted", True)
    ]
    if not reps:
        return None
    P = [r["P_star"] for r in reps]
    return {"P": float(np.mean(P)), "replicas": P, "seeds": [r["seed"] for r in reps]}


def softmax_rows(results: Path) -> list[dict]:
    """One row per configuration of :data:`SOFTMAX`."""
    theory = {(r["preset"], r["L"], r["V"]): r for r in _load(results, "bayes_theory_softmax.json")}
    ra = _load(results, "bayes_theory_route_a.json")
    rows = []
    for reading, L, V, kind, name in SOFTMAX:
        t = theory[(reading, L, V)]
        series = {
            "ek_map": {"P": t["ek_map"]},
            "ek_post": {"P": t["ek_post"]},
            "route_B": {
                "P": t["P_aG_bayes"],
                "lo": t["replica_interval"][0],
                "hi": t["replica_interval"][1],
                "replicas": t["replicas"],
            },
            "route_A": _route_a(ra, reading, L, V),
        }
        rows.append(
            dict(
                reading=reading,
                L=L,
                V=V,
                measured=_measured(results, kind, name),
                series=series | _others(results, reading, L, V, kind),
            )
        )
    return rows


def _linear_flags(post: dict, bracket: list[float]) -> tuple[int, int]:
    """Runs at the bracketing P whose worst of R-hat / ESS (U, c1, cG) is past the limits."""
    h, P = post["health"], post["P"]
    n = bad = 0
    for j, p in enumerate(P):
        if p not in bracket:
            continue
        with warnings.catch_warnings():  # seeds not run at this P: all-NaN columns, left out
            warnings.simplefilter("ignore", RuntimeWarning)
            rh = np.nanmax([np.asarray(h[k][j], float) for k in ("rhat", "rhat_c1", "rhat_cG")], 0)
            es = np.nanmin([np.asarray(h[k][j], float) for k in ("ess", "ess_c1", "ess_cG")], 0)
        ok = np.isfinite(rh)
        n += int(ok.sum())
        bad += int(((rh > TRANSITION_RUN.rhat_max) | (es < TRANSITION_RUN.ess_min))[ok].sum())
    return bad, n


#: the linear head's measured posterior crossovers beyond ``posterior_plain.json``'s (25, 5):
#: ``copyhead transition --attention linear`` results, (L, V, file)
LINEAR = ((15, 7, "transition_linear_L15_V7.json"), (12, 6, "transition_linear_L12_V6.json"))


def _linear_measured(results: Path, L: int, V: int) -> dict | None:
    """The measured posterior copy crossover at (L, V), or ``None`` where none is committed."""
    if (L, V) == (25, 5):  # posterior_plain's configuration
        post = _load(results, "posterior_plain.json")["linear"]
        m = post["transitions"]["post"]["P_cG_half"]
        bad, n = _linear_flags(post, m["bracket"])
        return dict(
            P_star=m["P_star"],
            lo=m["bracket"][0],
            hi=m["bracket"][1],
            n_seeds=min(post["n_seeds_per_P"]),
            n_flagged=bad,
            n_runs=n,
            flag_rule=RULE + " (worst of U, c1, cG)",
            source="posterior_plain.json (linear, posterior psi = 1/2)",
            method="seed-mean psi = 1/2, bracket of the P grid",
        )
    name = next((f for l_, v_, f in LINEAR if (l_, v_) == (L, V)), None)
    if name is None:
        return None
    d = _load(results, name)
    c = d["config"]
    if (d["attention"], c["task"]["L"], c["task"]["V"]) != ("linear", L, V):
        raise ValueError(f"{name} is not the linear measurement at L={L} V={V}")
    return _command_measured(
        d,
        n_runs=len(d["P"]) * d["summary"]["n"],
        flag_rule=RULE + " (worst of U, c1, cG)",
        source=f"{name} (copyhead transition, posterior psi = 1/2)",
        method="psi = 1/2 per seed (log-P interpolation), seeds combined",
    )


def linear_rows(results: Path) -> list[dict]:
    """The linear head's measured posterior copy crossover (psi = 1/2) against route B; the
    configurations of ``bayes_theory_linear.json`` without a measurement are left out."""
    rows = []
    for t in _load(results, "bayes_theory_linear.json"):
        L, V = t["inputs"]["L"], t["inputs"]["V"]
        measured = _linear_measured(results, L, V)
        if measured is None:
            continue
        rows.append(
            dict(
                reading="plain",
                L=L,
                V=V,
                measured=measured,
                series={
                    "ek_map": {"P": t["ek_map"]["P_cG_half"]},
                    "ek_post": {"P": t["ek_post"]["P_cG_half"]},
                    "route_B": {"P": t["P_cG_half_bayes"]},
                },
            )
        )
    return rows


def law(rows: list[dict]) -> dict:
    """The joint law of the measured plain softmax ``P*`` (each with its 95% interval) and of
    route B on the same configurations (its replica intervals), by ``measured_law``."""
    plain = [r for r in rows if r["reading"] == "plain"]
    L, V = [r["L"] for r in plain], [r["V"] for r in plain]
    m = [[r["measured"][k] for r in plain] for k in ("P_star", "lo", "hi")]
    b = [[r["series"]["route_B"][k] for r in plain] for k in ("P", "lo", "hi")]
    return {
        "configurations": [[r["L"], r["V"]] for r in plain],
        "measured": measured_law(L, V, *m),
        "route_B": measured_law(L, V, *b),
    }


def markov_rows(results: Path) -> list[dict]:
    """Each Markov measurement of :data:`MARKOV` with the i.i.d. one of the same (L, V) and
    their ratio (the Markov shift of the Bayesian point, measured on both sides)."""
    rows, ra = [], _load(results, "bayes_theory_route_a.json")
    for reading, L, V, rho, name in MARKOV:
        d = _load(results, name)
        if (d["source"], d["L"], d["V"]) != ("markov", L, V):
            raise ValueError(f"{name} is not the Markov measurement at L={L} V={V}")
        iid = f"transition_profile_L{L}_V{V}.json"
        m, i = _measured(results, "profile", name), _measured(results, "profile", iid)
        a = _route_a(ra, reading, L, V, rho)
        rows.append(
            dict(
                reading=reading,
                L=L,
                V=V,
                rho=rho,
                measured=m,
                iid=i,
                ratio_over_iid=m["P_star"] / i["P_star"],
                map_switch=[s["P_switch"] for s in d["map"]],
                series={"route_A": a},
                ratio={} if a is None else {"route_A": a["P"] / m["P_star"]},
            )
        )
    return rows


def compare(results: Path) -> dict:
    """Every row with its ratios over the measured point, and the law of the plain rows."""
    doc = {
        "kind": "bayes_compare",
        "softmax": softmax_rows(results),
        "linear": linear_rows(results),
        "markov": markov_rows(results),
        "no_json_source": NO_SOURCE,
    }
    for r in doc["softmax"] + doc["linear"]:
        P = r["measured"]["P_star"]
        r["ratio"] = {k: v["P"] / P for k, v in r["series"].items() if v is not None}
    doc["law"] = law(doc["softmax"])
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments bayes-figure", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="folder of the committed results; bayes_compare.json goes there",
    )
    ap.add_argument("--figures", type=Path, default=FIGURES, help="folder of the figure")
    args = ap.parse_args(argv)
    doc = compare(args.results)
    write_json(args.results / "bayes_compare.json", doc)
    save_figure(bayes_compare_figure(doc), args.figures / FIGURE)
    for r in doc["softmax"] + doc["linear"]:
        m = r["measured"]
        ratios = ", ".join(f"{k} {v:.3f}" for k, v in r["ratio"].items())
        print(
            f"{r['reading']} L={r['L']} V={r['V']}: measured {m['P_star']:.4g} "
            f"[{m['lo']:.4g}, {m['hi']:.4g}] ({m['n_flagged']}/{m['n_runs']} flagged); "
            f"over it: {ratios}"
        )
    for r in doc["markov"]:
        m, i = r["measured"], r["iid"]
        print(
            f"Markov rho={r['rho']:g} L={r['L']} V={r['V']}: measured {m['P_star']:.4g} "
            f"[{m['lo']:.4g}, {m['hi']:.4g}] ({m['verdict']}), i.i.d. {i['P_star']:.4g}: "
            f"x{r['ratio_over_iid']:.3f}; no route covers Markov tokens"
        )
    for name, f in doc["law"].items():
        if name == "configurations":
            continue
        j = f["fit"]
        print(
            f"law, {name} ({j['n']} plain configurations): k_L {j['k_L']:.3f} "
            f"[{f['k_L_ci'][0]:.3f}, {f['k_L_ci'][1]:.3f}], k_V {j['k_V']:.3f} "
            f"[{f['k_V_ci'][0]:.3f}, {f['k_V_ci'][1]:.3f}], C {j['C']:.3g}, R^2 {j['r2']:.3f}; "
            f"ln^2 L: R^2 {f['paper_law']['r2']:.2f}"
        )
    print(f"wrote {args.results / 'bayes_compare.json'} and {args.figures / FIGURE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
