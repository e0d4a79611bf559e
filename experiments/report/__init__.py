"""Every rendered page of the experiments: ``results.md`` and the generated block of
``docs/reports/README.md`` (here), their sections (:mod:`.sections`, the per-width P* tables
:mod:`.widths`), the claims x readings matrix (:mod:`.claims`), the conventions page
(:mod:`.conventions`), the embedding studies' tables (:mod:`.embeddings`), the study artefacts'
tables (:mod:`.studies`), one table writer and one set of number formats (:mod:`.tables`); the
figures are the package's (``copyhead_jax.plots*``, redrawn from JSON by ``python -m
experiments.report.redraw``).

``results.md`` lists disagreements by fixed reporting thresholds (stated in the page), never
hidden: a relative error above ``REL_TOL`` between a measured and a theoretical P*, a coverage
below the paper's claim, a fitted exponent whose confidence interval excludes the paper's, a
window edge off its spinodal, a linear hysteresis gap, or an early-warning signal that
contradicts the paper.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from copyhead_jax.compare import (
    GROWTH_NULL,
    REL_TOL,
    bayesian_interval,
    claims_matrix,
    interval_text,
    profile_verdict,
)
from copyhead_jax.compare import readings as RD

from ..common import MODE_FLAGS
from . import claims, posterior_column, widths
from . import sections as sec
from .tables import table

#: the readings whose artefacts are rendered (``paper-chi-lik``: ``python -m experiments.reading``)
PRESETS = ("plain", "paper", "paper-chi-lik")
ARTEFACT_FILES = ("main", "coverage", "scaling-L", "scaling-V", "hysteresis")
README_START = "<!-- reproduce:start -->"
README_END = "<!-- reproduce:end -->"

QUICK_SETUP = (
    "- Quick mode: width 128 (paper: 10,000), quenched embeddings and muP Adam (lr 1, cosine, "
    "4,000 epochs linear / 2,000 softmax), 2 seeds (plain) or 1 seed (paper preset), a coarse "
    "grid of P refined near each located transition, SGLD chains of 1,500 steps; each run is "
    "compared with the finite-width theory (docs/theory.md §2b) on its own embeddings and "
    "training set, and with the large-width EK theory. `--full` is the paper's configuration "
    "(GPU).\n"
)
PAPER_SETUP = (
    "- Default mode (the paper's configuration on a CPU): width 10,000 through the exact width "
    "reduction (docs/theory.md §2c, `engine='reduced'`, the realised embedding Gram of each "
    "seed), and width infinity (the prior's Gram) as an extra column; quenched embeddings; every "
    "run fitted by the exact float64 solver (`ExactConfig`) to a converged minimum, not an "
    "optimiser's approximation of one; linear attention from a prior draw and, by continuation "
    "in P, from the kept fits of each run's neighbouring P (same seed), keeping the lowest U "
    "(`ExactConfig.continuation`; a single start missed the lowest minimum near the linear "
    "transitions, `docs/reports/multistart.md`); 10 seeds; both softmax branches started "
    "explicitly (zero logits / the copy pattern); the P grid of `--full-network` refined near "
    "each located P*; no SGLD (the posterior is `docs/reports/posterior.md`). P* with "
    "confidence intervals: each seed's P* located on its own runs, geometric mean over seeds, "
    "95% percentile bootstrap over seeds (`copyhead_jax.compare.bootstrap_ci`).\n"
)
THRESHOLDS = (
    f"- Reporting thresholds: a relative error above {REL_TOL:.0%} is listed as a disagreement. "
    "Early warning (one definition, `copyhead_jax.compare.early_warning`, docs/theory.md "
    "§9.10): the ratio of the posterior variance at 0.9 P* to that at 0.5 P*, with its 95% "
    "t-interval over seeds; a **signal** when the whole interval lies above "
    f"x{GROWTH_NULL:g} (a basin that only sharpens cannot grow its variance, §13.9), **no "
    "signal** when it lies below, else inconclusive. Relative errors are "
    "(measured - theory) / theory.\n"
    "\n- Measured P* use docs/theory.md §5's definitions (`copyhead_jax.compare.locate`): P_c1 "
    "= onset of the row sum r of the linear attention matrix; P_cG = argmax dpsi/dlog P; P_aG = "
    "where U of runs started on the pooling branch and on the copy branch cross (only where "
    "they stayed distinct); the single-start jump is compared with the upper spinodal.\n"
)
SCALING_NOTE = (
    "The paper's laws are stated for its conventions (the paper preset: per-position "
    "likelihood, A = s/L). Under the plain conventions docs/theory.md §5 predicts other "
    "leading-order laws (P_c1 ~ V^2/L^2, P_aG ~ ln^2 L), so there a difference from the "
    "paper's exponent is expected from the theory itself; it is listed all the same. The "
    "paper exponent column is the effective exponent of the paper's law over the measured "
    "range (for L ln^2 L it is not constant). Fits use the bracketed measurements only.\n"
)


def _load(out_dir: Path, name: str) -> dict[str, Any] | None:
    p = Path(out_dir) / "results" / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def _runtime_row(a: str, p: str, r: dict) -> list[str]:
    """Runtime of one artefact's invocation, its sweeps' compute and the command to rerun it."""
    sw = r.get("sweep_seconds")
    if sw is None and r.get("rows"):  # scaling: its own points (main's is in main's)
        sw = sum(x.get("sweep_seconds") or 0.0 for x in r["rows"])
    cmd = (
        f"python -m experiments {a}{MODE_FLAGS[r['header']['mode']]} --preset {p}"
        if p in ("plain", "paper")
        else f"python -m experiments.reading {a}"
    )
    return [a, p, f"{r['header']['runtime_s']:.0f}", "-" if sw is None else f"{sw:.0f}", f"`{cmd}`"]


def render(out_dir: Path, mode: str) -> str:
    """``results.md`` from the artefacts' JSON under ``out_dir/results``."""
    dis: list[str] = []
    reach: list[str] = []
    loaded = {(a, p): _load(out_dir, f"{a}_{p}") for a in ARTEFACT_FILES for p in PRESETS}
    runtimes = [_runtime_row(a, p, r) for (a, p), r in loaded.items() if r]
    matrix = claims.render(claims_matrix(out_dir / "results"))
    parts = [
        "# Reproducing the paper: results\n",
        f"Generated by `python -m experiments all{MODE_FLAGS[mode]}` (renderer "
        f"`experiments/report/`) on {time.strftime('%Y-%m-%d')}. Every number below is read "
        "from `results/*.json` next to this page; every figure is in `figures/`. Rerun a single "
        "artefact with the command in the runtime table, then `python -m experiments report` to "
        "re-render this page (`--publish`: the committed copy in `docs/reports/`).\n",
        "## Claims x readings\n",
        "Every claim of the paper against every reading of its conventions tried (docs/theory.md "
        "§2b: `paper`, `plain`, `paper-chi-lik` = chi in the likelihood only), width 10,000, "
        "exact MAP unless the row says otherwise; built by `copyhead_jax.compare.readings` from "
        "`results/*.json`.\n",
        matrix,
        "## Setup\n",
        sec.environment_text([r for r in loaded.values() if r]),
        {"quick": QUICK_SETUP, "paper": PAPER_SETUP}.get(mode, ""),
        THRESHOLDS,
        _mode_note(loaded, mode),
        "### Runtimes\n",
        "Runtime = this invocation (cached runs load in seconds); sweep compute = the wall time "
        "the runs it uses took when they were computed (cached ones included, so runs shared "
        "between artefacts count in each). Sweeps ran on this 2-core CPU (`--jobs 2`: two "
        "artefacts at a time).\n",
        table(["artefact", "preset", "runtime (s)", "sweep compute (s)", "command"], runtimes)
        + "\n",
        "## 1. Main: theory versus measured P* (L = 25, V = 5)\n",
    ]
    for p in PRESETS:
        if res := loaded[("main", p)]:
            post = posterior_column.load(out_dir, p)
            parts += [sec.section_main(res, p, dis, reach, post), widths.section_ci(res, p, dis)]
    parts.append("## 2. Coverage ablation\n")
    parts += [sec.section_coverage(r, p, dis) for p in PRESETS if (r := loaded[("coverage", p)])]
    parts += ["## 3. Scaling\n", SCALING_NOTE]
    parts += [
        sec.section_scaling(r, p, dis, reach)
        for a in ("scaling-L", "scaling-V")
        for p in PRESETS
        if (r := loaded[(a, p)])
    ]
    parts.append("## 4. Hysteresis (first-order evidence)\n")
    parts += [
        sec.section_hysteresis(r, p, dis) for p in PRESETS if (r := loaded[("hysteresis", p)])
    ]
    width_tables = [w for p in PRESETS if (w := _load(out_dir, f"width_{p}"))]
    if width_tables:
        parts.append("## 5. Width (finite size): 128, 1,024, 10,000, infinity\n")
        parts.append(
            "Made by `python -m experiments report` from the main artefact's extra "
            "widths (`docs/reports/results/width_*.json`).\n"
        )
        parts += [widths.section_width(w, dis) for w in width_tables]
    parts += [posterior_column.section(out_dir, dis), bayes_section(out_dir)]
    parts.append("## 6. Disagreements (theory vs experiment vs paper)\n")
    parts.append("\n".join(f"- {d}" for d in dis) or "- none above the thresholds")
    parts.append("\n## 7. Out of reach on this CPU, or outside the measured grid\n")
    parts.append("\n".join(f"- {r}" for r in reach) or "- nothing")
    return "\n".join(x for x in parts if x) + "\n"


def bayes_section(out_dir: Path) -> str:
    """The Bayesian P*_aG of each preset with the interval of ``compare.bayesian_interval``
    (seeds, MC, quadrature, interpolation) and the poorly mixing runs named."""
    profiles = [
        profile_row(p, pr)
        for p, name in RD.PROFILES.items()
        if (pr := _load(out_dir, name.removesuffix(".json")))
    ]
    rows = [
        f"- **{p}**: {interval_text(bayesian_interval(res))}."
        for p, name in RD.BRANCHES.items()
        if (res := _load(out_dir, name.removesuffix(".json")))
    ]
    rows += [
        transition_row(p, tr)
        for p, name in RD.TRANSITIONS.items()
        if (tr := _load(out_dir, name.removesuffix(".json")))
    ]
    if not rows and not profiles:
        return ""
    head = (
        "### Bayesian P*_aG from the posterior's free-energy profile\n\nThe default `copyhead "
        "transition` (transition_profile.md): first order where a probe's profile in aG is "
        "bimodal, P* where the basins weigh the same; each seed measured on its own, the interval "
        "95% t over seeds with the replicas', dividing surface's and interpolation errors "
        "(`compare.profile_verdict`, decided again here from the probes). The branch rows below "
        "are the older cross-checks.\n\n" + "\n".join(profiles) + "\n\n"
        if profiles
        else ""
    )
    return head + (
        "### Bayesian P*_aG with every error named\n\nWhere F_copy - F_pool changes sign "
        "(docs/theory.md §9.9, §9.11): the estimate, then [the hull of] the seed spread (95% t) "
        "and the package's one crossing rule on the seed mean (`compare.root.crossing`: 1.96 "
        "MCSE propagated, the quadrature's Euler-Maclaurin term as a bound, the interpolation "
        "error of the quadratics through each neighbouring point or the bracket itself; a bracket "
        "end whose own error straddles zero is followed past it). Runs with R-hat > 1.05 or "
        "ESS < 100 are named at the bracketing P and counted elsewhere.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def profile_row(reading: str, tr: dict) -> str:
    """One reading's free-energy profile result: the verdict, P* with its interval, each
    seed's P*, and the windows that did not mix (their errors widened)."""
    verdicts, m = profile_verdict.from_record(tr)
    per = ", ".join("-" if v.P_star is None else f"{v.P_star:,.1f}" for v in verdicts)
    n_windows = profile_verdict.window_count(tr)
    flagged = profile_verdict.flagged_windows(tr.get("flagged") or [])
    iv = "no interval" if m["P_star"] is None else f"[{m['lo']:,.1f}, {m['hi']:,.1f}]"
    point = "-" if m["P_star"] is None else f"{m['P_star']:,.1f}"
    spread = "one seed: no seed spread in the interval" if m["n"] == 1 else f"{m['n']} seeds"
    other = profile_verdict.other_flags(tr.get("flagged") or [])
    return (
        f"- **{reading}** ({m['kind']}, {spread}): {point} {iv}; per seed {per}; "
        f"{len(flagged)} window(s) not mixed"
        + (f" of {n_windows}" if n_windows else "")
        + (f"; other flags: {'; '.join(other)}" if other else "")
    )


def transition_row(reading: str, tr: dict) -> str:
    """One reading's ``copyhead transition`` result: the point with its interval and its parts
    in log P, the SMC cross-check, and every flagged run by name."""
    m, per = tr["summary"], tr["per_seed"]
    smc = tr["cross_check"]["P_star"]
    flagged = tr.get("flagged") or []
    runs = 2 * sum(len(s["probes"]) for s in tr.get("seeds", []))
    return (
        f"- **{reading}** (`copyhead transition`, {m['n']} seeds): {m['P_star']:,.0f} "
        f"[{m['lo']:,.0f}, {m['hi']:,.0f}] (95% t over seeds with, in log P, seed sd "
        f"{m['seed_sd_log']:.3f}, MC {m['mc_log']:.3f}, quadrature {m['sys_log']:.3f}); per "
        f"seed {', '.join(f'{p:,.0f}' for p in per)}; tempered-SMC cross-check "
        + ("none" if smc is None else f"{smc:,.0f}")
        + f"; {len(flagged)}/{runs} runs with R-hat > 1.05 or ESS < 100"
        + (f": {'; '.join(flagged)}" if flagged else "")
    )


def _mode_note(loaded: dict, mode: str) -> str:
    """Say which artefacts come from another mode than the page's (not rerun yet)."""
    other = sorted(
        f"{a} ({p}): `{r['header']['mode']}`"
        for (a, p), r in loaded.items()
        if r and r["header"]["mode"] != mode
    )
    if not other:
        return ""
    return (
        f"- **Mixed modes**: these artefacts were not rerun in this mode (`{mode}`) and come "
        f"from the mode named: {', '.join(other)}. Their setup is that mode's (see "
        "`experiments/README.md`).\n"
    )


def readme_block(out_dir: Path) -> str:
    """The generated table of ``docs/reports/README.md`` (theory vs measured P*), from
    ``results/main_*.json`` under ``out_dir``."""
    mains = {p: _load(out_dir, f"main_{p}") for p in PRESETS}
    modes = sorted({r["header"]["mode"] for r in mains.values() if r})
    cmd = "; ".join(f"`python -m experiments all{MODE_FLAGS[m]}`" for m in modes) or "n/a"
    body = widths.readme_table(mains) or "_No main artefact with per-width CIs yet._\n"
    return (
        f"{README_START}\n_Generated by `python -m experiments report` from "
        f"`results/main_*.json` (made by {cmd}; rendered {time.strftime('%Y-%m-%d')}); do not "
        f"edit by hand. P* by exact MAP: geometric mean over seeds [95% "
        f"{widths.interval_kind(widths.main_measured(mains.values()))}]; "
        "finite theory: docs/theory.md §2b on the same Grams and data, located the same way. "
        "Which reading of the paper's conventions reproduces which of its claims: the matrix "
        "below (from `results/*.json`, `copyhead_jax.compare.readings`)._\n\n"
        f"{body}\n**Claims x readings** (width 10,000, exact MAP unless the row says "
        "otherwise):\n\n"
        f"{claims.render(claims_matrix(Path(out_dir) / 'results'))}{README_END}"
    )


def write_readme_block(out_dir: str | Path, readme: str | Path) -> Path:
    """Replace the text between the reproduce markers of ``readme`` (nothing outside them
    changes)."""
    readme = Path(readme)
    text = readme.read_text()
    i, j = text.find(README_START), text.find(README_END)
    if i < 0 or j < i:
        raise ValueError(f"{readme} has no {README_START} ... {README_END} block")
    readme.write_text(text[:i] + readme_block(Path(out_dir)) + text[j + len(README_END) :])
    return readme


def write_width(out_dir: Path, mode: str) -> list[Path]:
    """The width table of each preset whose main artefact has several widths:
    ``results/width_PRESET.json`` and ``figures/width_PRESET.png`` (from ``main_PRESET.json``)."""
    from copyhead_jax.compare import width_result
    from copyhead_jax.plots import width_figure
    from copyhead_jax.storage import write_json

    from ..common import mode_config, save_figure

    ref = mode_config(mode).get("width_reference") or {}
    out = []
    for p in PRESETS:
        main = _load(out_dir, f"main_{p}")
        if not main or len(main.get("widths") or {}) < 2:
            continue
        res = width_result(main, ref.get(p))
        fig = save_figure(width_figure(res), out_dir / "figures" / f"width_{p}.png")
        res["figure"] = str(fig.relative_to(out_dir))
        out.append(write_json(out_dir / "results" / f"width_{p}.json", res))
    return out


def main(out_dir: str | Path, mode: str = "paper") -> Path:
    """Write the width tables and ``results.md`` under ``out_dir``."""
    out_dir = Path(out_dir)
    if not any((out_dir / "results").glob("*.json")):
        raise ValueError(
            f"{str(out_dir)!r} holds no artefact results (results/*.json): nothing to report; "
            "run an artefact first (python -m experiments ARTEFACT --out FOLDER)"
        )
    write_width(out_dir, mode)
    path = out_dir / "results.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(out_dir, mode))
    return path
