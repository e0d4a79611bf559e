"""The main table's posterior column: per mechanism the early-warning verdict
(``experiments.posterior``) and the posterior's own transition point where measured (linear:
posterior psi = 1/2; softmax: F_copy = F_pool, ``experiments.posterior_branches``, and SMC's
w_copy = 1/2, ``experiments.posterior_smc``), read from ``results/posterior_PRESET.json`` and
its :data:`COMPANIONS`; absent files leave the column to the main artefact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from copyhead_jax.compare import GROWTH_NULL, disagrees, rel_err, signal_of, text

gP = text.fmt_P  # short: table cells

#: main-table key -> (attention block, early-warning entry, observable)
VERDICTS = {
    "P_c1": ("linear", "theory_map_P_c1", "c1"),
    "P_cG": ("linear", "theory_map_P_cG", "cG"),
    "P_aG": ("softmax", "theory_map_P_aG", "cG"),
}


#: preset -> (key, artefact) attached to its posterior result where the artefact exists
COMPANIONS = {
    "plain": (("branches", "posterior_branches.json"), ("smc", "posterior_smc.json")),
    "paper": (("branches", "posterior_branches_paper.json"),),
}


def load(out_dir: Path, preset: str) -> dict | None:
    """The preset's posterior result, with its :data:`COMPANIONS` attached; None if not run."""
    p = Path(out_dir) / "results" / f"posterior_{preset}.json"
    if not p.exists():
        return None
    post = json.loads(p.read_text())
    for name, f in COMPANIONS.get(preset, ()):
        b = Path(out_dir) / "results" / f
        if b.exists():
            post[name] = json.loads(b.read_text())
    return post


def _entry(post: dict | None, key: str) -> dict | None:
    """The row's ``growth_verdict`` dict as stored (None if absent)."""
    if post is None or key not in VERDICTS:
        return None
    block, entry, obs = VERDICTS[key]
    return (((post.get(block) or {}).get("early_warning") or {}).get(entry) or {}).get(obs)


def verdict(post: dict | None, key: str) -> dict | None:
    """The early-warning verdict of the row's order parameter, where it has a CI."""
    v = _entry(post, key)
    return v if v and v.get("var_ratio_ci") else None


def cell(post: dict | None, key: str) -> str | None:
    """The column's text for one main-table row, or None (no posterior for it)."""
    if post is None or key not in VERDICTS:
        return None
    block, _, obs = VERDICTS[key]
    b = post.get(block) or {}
    v = _entry(post, key)
    parts = []
    if verdict(post, key):
        lo, hi = v["var_ratio_ci"]
        name = "aG" if block == "softmax" else obs
        parts.append(
            f"Var({name}) x{gP(v['var_ratio'])} [{gP(lo)}, {gP(hi)}] from 0.5 to 0.9 P*"
            f" ({v['n_seeds']} seeds): {v['verdict']}, {signal_of(v['var_ratio_ci'])}"
            f" (signal: CI above x{GROWTH_NULL:g})"
        )
    elif v:
        parts.append(f"{v['verdict']} ({v.get('reason') or 'P* outside the sampled grid'})")
    if key == "P_cG":
        half = (b.get("transitions") or {}).get("post", {}).get("P_cG_half") or {}
        if half.get("P_star"):
            lo, hi = half["bracket"]
            parts.append(f"posterior psi = 1/2 at {gP(half['P_star'])} [{gP(lo)}, {gP(hi)}]")
    if key == "P_aG" and post.get("branches"):
        c = (post["branches"].get("crossing_F") or {}).get("located") or {}
        if c.get("P_star") and c.get("bracket"):
            lo, hi = c["bracket"]
            parts.append(
                f"Bayesian P*_aG (F_copy = F_pool) {gP(c['P_star'])} [{gP(lo)}, {gP(hi)}]"
                f" ({post['branches']['n_seeds']} seeds)"
            )
            ps = post["branches"]["crossing_F"].get("per_seed_ci") or {}
            if ps.get("lo") is not None:
                parts.append(
                    f"per seed {gP(ps['mean'])} [{gP(ps['lo'])}, {gP(ps['hi'])}] "
                    f"(95% t-interval, {ps['n']} seeds)"
                )
    if key == "P_aG" and post.get("smc"):
        ww = post["smc"]["weight_window"]
        if ww.get("P_equal"):
            parts.append(
                f"tempered SMC: seed-mean w_copy = 1/2 at {gP(ww['P_equal'])} "
                f"({post['smc']['n_seeds']} seeds)"
            )
    return "; ".join(parts) or None


#: the posterior result's blocks whose lambda-hat is reported, with their names
LLC_BLOCKS = (("linear",), ("softmax", "pool"), ("softmax", "copy_high"))
LLC_NAMES = {"linear": "linear", "pool": "softmax pooling start", "copy_high": "softmax copy start"}


def _mean(xs) -> float | None:
    ok = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    return sum(ok) / len(ok) if ok else None


def llc_line(post: dict) -> str | None:
    """lambda-hat (beta = 1, w* the exact MAP) against P, the mean over the seeds that have it,
    per attention block (``copyhead_jax.sampling.summary.llc_summary``)."""
    parts = []
    for path in LLC_BLOCKS:
        b = post
        for k in path:
            b = (b or {}).get(k)
        if not b or not b.get("llc") or not b.get("P"):
            continue
        pts = [(P, _mean(v)) for P, v in zip(b["P"], b["llc"]["value"])]
        pts = ", ".join(f"{gP(m)} ({P:,})" for P, m in pts if m is not None)
        if pts:
            parts.append(f"{LLC_NAMES[path[-1]]} {pts}")
    if not parts:
        return None
    return "lambda-hat (beta = 1, w* the exact MAP; seed mean, at P in parentheses): " + "; ".join(
        parts
    )


def bayes_points(post: dict) -> list[tuple[str, float]]:
    """The other P*_aG to set the Bayesian one beside: the MAP U crossing of the main artefact,
    the EK theory without and with the Occam term, and the paper (its conventions: paper
    preset only). Empty without a branch free-energy result."""
    b = post.get("branches") or {}
    th = b.get("theory") or {}
    out = [
        (
            "MAP U crossing (main artefact: exact MAP, width 10,000)",
            b.get("map_U_crossing_main_P_star"),
        ),
        ("EK theory, MAP (no Occam term)", (th.get("map") or {}).get("P_aG")),
        ("EK theory, posterior (with the Occam term)", (th.get("post") or {}).get("P_aG")),
    ]
    if post.get("preset") == "paper":
        out.append(("the paper", b.get("paper_P_aG")))
    return [(n, float(v)) for n, v in out if v is not None]


def bayes_line(post: dict, dis: list[str] | None = None) -> str | None:
    """The Bayesian P*_aG (free-energy crossing and branch weights) beside :func:`bayes_points`;
    each reference that differs by more than the reporting threshold is appended to ``dis``."""
    b = post.get("branches") or {}
    c = (b.get("crossing_F") or {}).get("located") or {}
    if not c.get("P_star"):
        return None
    P = float(c["P_star"])
    head = f"Bayesian P*_aG {gP(P)} (F_copy = F_pool, {b['n_seeds']} seeds)"
    ww = b.get("weight_window") or {}
    if ww.get("P_equal"):
        head += (
            f"; branch weights: seed-mean w_copy = 1/2 at {gP(ww['P_equal'])} (0.05 at "
            f"{gP(ww.get('P_w05'))}, 0.95 at {gP(ww.get('P_w95'))})"
        )
    refs = bayes_points(post)
    for name, v in refs:
        if dis is not None and disagrees(rel_err(P, v)):
            dis.append(
                f"**{post.get('preset')}, Bayesian P*_aG vs {name}**: {gP(P)} vs {gP(v)}"
                f" ({P / v:.2f}x)."
            )
    if not refs:
        return head
    return head + "; beside " + ", ".join(f"{n} {gP(v)} ({P / v:.2f}x)" for n, v in refs)


def section(out_dir: Path, dis: list[str] | None = None) -> str:
    """The report's posterior and trained-embeddings section: headline numbers with links and
    figures, read from the artefacts' JSON (empty if none was run). Disagreements of the
    Bayesian P*_aG with the other P*_aG are appended to ``dis``."""
    out_dir = Path(out_dir)
    lines = []
    for preset in ("plain", "paper"):
        post = load(out_dir, preset)
        if post is None:
            continue
        lines.append(
            f"- **{preset}**: early warning (posterior Var ratio 0.5 P* -> 0.9 P*): "
            + "; ".join(f"{k} {cell(post, k)}" for k in VERDICTS if cell(post, k))
            + "."
        )
        for extra in (bayes_line(post, dis), llc_line(post)):
            if extra:
                lines.append(f"  - {extra}.")
        names = ("orderparams", "susceptibility", "llc", "llc_devinterp", "branches", "smc")
        figs = [f"posterior_{n}_{preset}.png" for n in names]
        lines += [f"  ![{f}](figures/{f})" for f in figs if (out_dir / "figures" / f).exists()]
    emb = out_dir / "results" / "embeddings.json"
    if emb.exists():
        lines.append(
            "- **Trained vs quenched embeddings** (full network, width 256, plain preset): "
            "`docs/reports/embeddings.md`, `python -m experiments.embeddings`."
        )
        if (out_dir / "figures" / "embeddings.png").exists():
            lines.append("  ![embeddings](figures/embeddings.png)")
    if not lines:
        return ""
    return (
        "## Posterior and trained embeddings\n\nFrom `docs/reports/posterior.md` "
        "(collapsed HMC, `python -m experiments.posterior`), "
        "`docs/reports/posterior_branches.md` (branch free energies and tempered SMC) and "
        "`docs/reports/embeddings.md`; the numbers are also in the main table's last "
        "column.\n\n" + "\n".join(lines) + "\n"
    )
