"""What ``copyhead transition`` prints: the profile method's summary (verdict, P* with its
interval, per seed the evidence, the MAP beside it) and the branch-TI method's, with each
root's error budget; an interval side that the crossing rule leaves open reads "unbounded".
:func:`report` prints a result and saves its figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..config import TRANSITION_RUN


def format_profile(res: dict) -> str:
    """The printed summary of the profile method: verdict, P* with its interval, per seed the
    evidence, the MAP beside it, flags, CPU time."""
    s = res["summary"]
    lines = [
        f"# Bayesian transition ({res['attention']}, L={res['L']}, V={res['V']}, "
        f"{res['source']}{', causal' if res['causal'] else ''}) from the posterior's "
        f"free-energy profile in a_G, {_seeds(res)}: {res['verdict']}"
    ]
    for sd in res["seeds"]:
        cr = sd["crossing"] or {}
        br = cr.get("bracket")
        lines.append(
            f"seed {sd['seed']}: {sd['verdict']}, P* = {_f(sd['P_star'])}"
            + (f"  bracket [{br[0]:g}, {br[1]:g}], {_errors(cr)}" if br else "")
        )
        if sd.get("coexistence"):
            o = sd["coexistence_outer"]
            lines.append(
                f"  both basins at P in [{sd['coexistence'][0]}, "
                f"{sd['coexistence'][1]}] (unimodal at {_f(o[0])} and {_f(o[1])})"
            )
        lines.append(
            f"  posterior mean of a_G passes midway at {_f(sd['P_mid'])}, steepest "
            f"at {_f(sd['P_steepest'])}"
        )
        lines += [f"  {e}" for e in sd["evidence"]]
    lo, hi = res["interval"]
    lines.append(
        f"P*_aG = {_f(res['P_star'])}  {_iv(lo, hi)} "
        f"({100 * s.get('level', 0.95):.0f}% interval over {s.get('n', 0)} seed(s): "
        "seed spread, replicas, quadrature and interpolation)"
    )
    for i, m in enumerate(res.get("map", [])):
        lines.append(
            f"MAP seed {m.get('seed', i)}: switch at {_f(m['P_switch'])}, coexistence "
            + (
                "yes (distinct minima at P = "
                + ", ".join(f"{p:g}" for p in m["coexistence_P"])
                + ")"
                if m["coexistence"]
                else "no (one minimum at every P of its grid)"
            )
        )
    if res.get("theory_point"):
        lines.append(theory_line(res))
    if res.get("theory_bayes_point"):
        lines.append(
            f"route B (theory of the Bayesian transition, placed the first probes): "
            f"{_f(res['theory_bayes_point'])}"
        )
    for f in res["flagged"]:
        lines.append(f"flagged: {f}")
    lines.append(f"({res['cpu_seconds']:.0f} CPU-s)")
    return "\n".join(lines)


def _seeds(res: dict) -> str:
    """``10 seed(s)``, or a part's ``seeds 3, 4 of 10`` (``--only-seeds``)."""
    got, n = res.get("seeds_measured"), res["n_seeds"]
    if got is None or len(got) == n:
        return f"{n} seed(s)"
    return f"seed{'s' if len(got) > 1 else ''} {', '.join(map(str, got))} of {n}"


def theory_line(res: dict) -> str:
    """The EK theory's point that placed the probes, named by what it is (a result written
    before ``theory_point_kind`` existed holds the posterior point)."""
    what = {"map (full)": "MAP", "map (ansatz)": "MAP in the two-parameter ansatz"}
    kind = what.get(res.get("theory_point_kind"), "posterior")
    return f"EK theory: {kind} {_f(res['theory_point'])}"


def _f(x, nd=4) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{nd}g}"


def _iv(lo, hi) -> str:
    """An interval; a side the crossing rule could not bound (0, inf or null) is named."""
    ok = lambda x: x is not None and math.isfinite(x) and x > 0  # noqa: E731
    return f"[{_f(lo) if ok(lo) else 'unbounded'}, {_f(hi) if ok(hi) else 'unbounded'}]"


def _errors(c: dict, anchored: bool = False) -> str:
    """A crossing's log-P error budget in words (an unbounded part, JSON null, named)."""
    e = lambda x: "unbounded" if x is None or not math.isfinite(x) else f"{x:.3f}"  # noqa: E731
    txt = (
        f"log-P errors: MC {e(c['err_mc'])}, quadrature {e(c['err_quad'])}, "
        f"{'slope' if anchored else 'interpolation'} {e(c['err_interp'])}"
    )
    if c.get("straddles"):
        txt += " (a bracket end's error reaches across zero: followed past it)"
    return txt


def format_result(res: dict) -> str:
    """The printed summary: per seed, the mean with its interval, cross-check, theory, flags."""
    q = res["quantity"]
    s = res["summary"]
    lines = [
        f"# Bayesian {q} ({res['attention']}), {s.get('n', 0)} seed(s)"
        + (f", {s['n_missing']} unbracketed" if s.get("n_missing") else "")
    ]
    for i, v in enumerate(res["per_seed"]):
        c = res["seeds"][i].get("crossing", res["seeds"][i])  # two branches: their crossing
        br, an = c.get("bracket"), c.get("anchor")
        where = (
            f"bracket [{br[0]:g}, {br[1]:g}]"
            if br
            else f"one probe at {an['P']:g}, slope {an['slope']:.4g} from {an['n_slopes']} "
            "earlier bracket(s)"
            if an
            else ""
        )
        lines.append(
            f"seed {i}: {_f(v)}"
            + (
                f"  {where}, {_errors(c, bool(an))}"
                if where
                else f"  not bracketed ({c.get('side')})"
            )
        )
    lo, hi = res["interval"]
    lines.append(
        f"{q} = {_f(res['P_star'])}  {_iv(lo, hi)} "
        f"({100 * s.get('level', 0.95):.0f}% interval: seed spread, Monte-Carlo, "
        "quadrature and interpolation)"
    )
    cc = res.get("cross_check")
    if cc:
        per = ", ".join(_f(x) for x in cc["per_seed"])
        lines.append(f"cross-check ({cc['method']}): {_f(cc['P_star'])} (per seed: {per})")
    if res.get("map_U_crossing"):
        lines.append(
            f"MAP U crossing (exact MAP of both branches): {_f(res['map_U_crossing']['mean'])}"
        )
    th = res["theory"]
    lines.append(f"EK theory: MAP {_f(th.get('map'))}, posterior {_f(th.get('post'))}")
    for f in res["flagged"]:  # a rung's chains, or a collapsed SMC (which names its reason)
        lines.append(
            f"flagged: {f}" if "SMC collapsed" in f else f"flagged ({TRANSITION_RUN.bar()}): {f}"
        )
    gs = res.get("group_seconds")
    lines.append(
        f"({res['wall_seconds']:.0f} s"
        + (
            ""
            if gs is None
            else f"; groups and cross-checks {gs:.0f} s as they ran, resumed ones included"
        )
        + ")"
    )
    return "\n".join(lines)


def report(args, res: dict, out: Path, fmt, draw, name: str, kept: bool) -> None:
    """Print the result (``--json``: the JSON alone on stdout, every note on stderr) and save
    its figure (``--plot``; a kept result's only where missing)."""
    import contextlib
    import sys

    from ..transition.store import json_default
    from ._common import save_figure

    print(json.dumps(res, default=json_default, indent=1) if args.json else fmt(res))
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        print(f"{'kept (this run, already done)' if kept else 'saved'} {out / 'transition.json'}")
        if args.plot and not (kept and (out / name).is_file()):
            save_figure(draw(res), out / name)


__all__ = ["format_profile", "format_result", "report"]
