"""The study artefacts' markdown tables (``posterior``, ``posterior-branches``, ``posterior-smc``,
``embeddings``, ``multistart``), each from its result JSON:

    python -m experiments.report.studies posterior docs/reports/results/posterior_plain.json

(a report folder's ``posterior_PRESET.json`` with its branch and SMC companions attached).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from copyhead_jax.compare import branch_tables as BT
from copyhead_jax.compare import crossing as CX
from copyhead_jax.compare import text
from copyhead_jax.sampling import summary as PS
from copyhead_jax.storage import nulls_in_lists_to_nan

from . import posterior_column

fmt, ps, pci = text.fmt, text.located, text.per_seed_ci  # short: table cells


def posterior_tables(res: dict) -> str:
    """docs/reports/posterior.md's tables of a ``posterior_PRESET.json`` (with the companions
    :func:`~experiments.report.posterior_column.load` attaches, where run)."""
    lin, soft, th = res["linear"], res["softmax"], res["theory"]
    cr, fe = soft["crossings"], soft.get("free_energy")
    sm, t, pap = res["sampler"], lin["transitions"], res["paper"]
    out = [
        f"Preset **{res['preset']}**; sampler: {sm['kind']}, {sm['n_chains']} chains x "
        f"{sm['hmc_iterations_kept']} HMC iterations (after {sm['burn_in']} warm-up steps and "
        f"{sm['adapt_iterations']} adaptation iterations), a draw every {sm['thin']}; "
        f"sampling wall time {res['sampling_seconds'] / 60:.1f} min (cached blocks count "
        "their first run).",
        "",
        "### Transition points",
        "",
        "| transition | exact MAP (measured) | posterior (measured) | EK MAP | EK post |"
        " paper (its per-position units) |",
        "|---|---|---|---|---|---|",
    ]
    ek = lambda k: f"{fmt(th['map'][k])} | {fmt(th['post'][k])}"  # noqa: E731
    fcr = (cr.get("free_energy") or {}).get("located")
    mu = f"{ps(cr['map_U'])} {pci(cr['map_U_per_seed'])}" if cr.get("map_U") else "-"
    out += [
        f"| linear P*_cG (max dpsi/dlogP) | {ps(t['map']['P_cG'])} | {ps(t['post']['P_cG'])}"
        f" | {ek('P_cG')} | {pap['P_cG']:g} |",
        f"| linear psi = 1/2 | {ps(t['map']['P_cG_half'])} | {ps(t['post']['P_cG_half'])}"
        f" | {ek('P_cG_half')} | - |",
        f"| linear P*_c1 (MAP: seed-mean r passes 0.05) | {ps(t.get('map_P_c1_r005'))} | - |"
        f" {ek('P_c1')} | {pap['P_c1']:g} |",
        f"| softmax P*_aG (branch crossing: MAP U / TI F) | {mu} | {ps(fcr) if fe else '-'} |"
        f" {ek('P_aG')} | {cr['paper']:g} |",
    ]
    if res.get("branches"):  # the companions ``posterior_column.load`` attaches
        br = res["branches"]
        out.append(
            f"| softmax P*_aG (branch TI, `posterior_branches`: F_copy = F_pool) |"
            f" {ps(br['map_U_crossing'].get('located'))} (these references' MAP U) |"
            f" {ps(br['crossing_F'].get('located'))} ({br['n_seeds']} seeds) |"
            f" {ek('P_aG')} | {cr['paper']:g} |"
        )
    if (res.get("smc") or {}).get("weight_window", {}).get("P_equal"):
        smc = res["smc"]
        out.append(
            f"| softmax: tempered SMC seed-mean w_copy = 1/2 | - | "
            f"{fmt(smc['weight_window']['P_equal'])} ({smc['n_seeds']} seeds) | - | - | - |"
        )
    pc = soft.get("posterior_copies")
    out += [
        f"| softmax: posterior mean aG passes 1 ({pc['start']} start) | - | {ps(pc)} | - | - | - |",
        "",
        "### Chain health (split R-hat and ESS of U, c1, cG per run)",
        "",
    ]
    blocks = (
        ("linear", lin),
        ("softmax, pooling start (zero logits)", soft["pool"]),
        ("softmax, copy start", soft.get("copy")),
        ("softmax, copy start (second grid)", soft.get("copy_high")),
    )
    out += [*PS.health_markdown(blocks), ""]
    for title, b in blocks:
        if b is not None:
            out += [*PS.per_P_markdown(title, b), ""]
    if fe is not None:
        ww = fe["weight_window"]
        out += [
            f"### Free energy per softmax branch ({fe['n_seeds']} seeds, {fe['sweeps']}; per"
            " P: mean ± sd over seeds)",
            "",
            *CX.ti_markdown(fe),
            "",
            f"Crossings (seed mean; per-seed 95% t-interval): free energy "
            f"{ps(fcr)} {pci(cr['free_energy'])}; WBIC {ps(cr['wbic']['located'])} "
            f"{pci(cr['wbic'])}; Laplace (U* + 1/2 log det H) {ps(cr['laplace']['located'])};"
            f" MAP U on the same runs {ps(cr['map_U_same_runs']['located'])}. Copy weight"
            f" (seed-mean w): 5% at {fmt(ww['P_w05'])}, 1/2 at {fmt(ww['P_equal'])}, 95% at "
            f"{fmt(ww['P_w95'])}.",
            "",
        ]
    ew = (("linear", lin["early_warning"]), ("softmax (pooling start)", soft["early_warning"]))
    out += [
        "### Early-warning verdicts (growth of P Var from 0.5 P* to 0.9 P*)",
        "",
        *PS.verdicts_markdown(ew),
    ]
    return "\n".join(out) + "\n"


def _pstar(s: dict | None) -> str:
    if not s:
        return "-"
    if s["P_star"] is None:
        return "not located" + (
            f" ({', '.join(s['unlocated'])} the grid)" if s["unlocated"] else ""
        )
    br = s["bracket"]
    ci = f" [{s['lo']:.0f}, {s['hi']:.0f}]" if s["n"] > 1 else ""
    return f"{s['P_star']:.0f}{ci} (grid {br[0]:.0f}-{br[1]:.0f}, {s['n']}/{s['n_seeds']} seeds)"


def _num(v) -> str:
    return "-" if v is None else f"{v:.0f}"


def embeddings_tables(r: dict) -> str:
    """Markdown: P* of the quenched and the joint MAP per width, EK theory beside."""
    th = r["theory_ek"]
    rows = [
        "| width N | P* | quenched MAP | joint MAP | EK theory (N = inf, quenched) |",
        "|---|---|---|---|---|",
    ]
    for w, per in r["widths"].items():
        for att, keys in (("softmax", ("P_aG",)), ("linear", ("P_c1", "P_cG"))):
            p = per[att]["points"]
            for k in keys:
                rows.append(
                    f"| {int(w):,} | {k} | {_pstar(p['quenched'].get(k))} | "
                    f"{_pstar(p['joint'].get(k))} | {_num(th[k])} |"
                )
    return "\n".join(rows)


def _ci(ci: dict) -> str:
    if ci["estimate"] is None:
        return "not located"
    return f"{ci['estimate']:.3g} [{ci['lo']:.3g}, {ci['hi']:.3g}] ({ci['n']} seeds)"


def multistart_table(out: dict) -> str:
    """Per preset: how often each start reaches the lowest U, P*_cG and psi = 1/2 of the
    prior start, the lowest-U start and the continuation, and the per-P table."""
    lines = []
    for preset, d in out["presets"].items():
        lines.append(
            f"{preset}: lowest U of the six starts reached by the prior start in "
            f"{d['reaches_lowest']['prior']}/{d['n_runs']} runs, by the continuation in "
            f"{d['continuation_reaches_lowest']}/{d['n_runs']} (below all six in "
            f"{d['continuation_below_all']}); cost {d['continuation_seconds']:.0f} s "
            f"vs {d['prior_seconds']:.0f} s"
        )
        for name in ("prior", "best", "continuation"):
            lc = d[f"located_{name}"]
            lines.append(f"  {name}: P*_cG {_ci(lc['P_cG'])}; psi = 1/2 {_ci(lc['P_cG_half'])}")
        lines += [
            "| P | seeds improved | max U gap | psi prior / lowest U / continuation | "
            "r prior / lowest U / continuation |",
            "|---|---|---|---|---|",
        ]
        for i, p in enumerate(d["P"]):
            lines.append(
                f"| {p} | {d['seeds_improved'][i]}/{d['n_seeds']} | {d['max_U_gap'][i]:.3g} | "
                f"{d['psi_prior'][i]:.3f} / {d['psi_best'][i]:.3f} / "
                f"{d['psi_continuation'][i]:.3f} | {d['r_prior'][i]:.3f} / {d['r_best'][i]:.3f}"
                f" / {d['r_continuation'][i]:.3f} |"
            )
        lines.append("")
    return "\n".join(lines)


def _posterior(path: Path) -> str:
    res = json.loads(path.read_text())
    if path.name == f"posterior_{res['preset']}.json" and path.parent.name == "results":
        res = posterior_column.load(path.parent.parent, res["preset"])
    return posterior_tables(nulls_in_lists_to_nan(res))


#: artefact -> its tables from the path of its result JSON
TABLES = {
    "posterior": _posterior,
    "posterior-branches": lambda p: BT.branch_markdown(json.loads(p.read_text())),
    "posterior-smc": lambda p: BT.smc_markdown(json.loads(p.read_text())),
    "embeddings": lambda p: embeddings_tables(json.loads(p.read_text())),
    "multistart": lambda p: multistart_table(json.loads(p.read_text())),
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.report.studies", description=__doc__.split("\n")[0]
    )
    ap.add_argument("artefact", choices=TABLES)
    ap.add_argument("json", type=Path, help="its result JSON")
    a = ap.parse_args(argv)
    print(TABLES[a.artefact](a.json))


if __name__ == "__main__":
    main()
