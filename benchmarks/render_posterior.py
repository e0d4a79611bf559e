"""The ``bench_posterior`` block of the benchmark tables (:mod:`.render`): ESS per CPU-second of
the collapsed HMC against NumPyro NUTS and BlackJAX NUTS/HMC, ratios recomputed from the raw ESS
and CPU seconds of ``benchmarks/results/bench_posterior.json``; and the rows of the paper
configuration's posterior sweep (``bench_paper_posterior``) and of the adaptation variants
(``bench_pooled``)."""

from __future__ import annotations

import math

from .cells import fmt_met, fmt_mib, fmt_range, fmt_x


def posterior_rows(d: dict) -> list[dict]:
    """Per (head, P): each candidate's ESS per CPU-second of U and the order parameters, and
    ours / theirs (> 1: the collapsed HMC is faster), recomputed from the raw ESS and CPU s;
    the same per gradient of U where the file counts gradients (``grad_ratios``)."""
    out = []
    for r in d.get("rows", []):
        c = r["candidates"]
        ours = c.get("copyhead_hmc", {})
        if "ess" not in ours:
            continue
        ratios = _ratios(c, "cpu_s")
        grad_ratios = _ratios(c, "n_grad") if ours.get("n_grad") else {}
        fails = {n: m["error"] for n, m in c.items() if "error" in m}
        out.append(
            {
                "attention": r["attention"],
                "P": r["P"],
                "dim": r.get("dim"),
                "ours": _rates(ours, "cpu_s"),
                "ours_cpu_s": ours["cpu_s"],
                "ratios": ratios,
                "grad_ratios": grad_ratios,
                "fails": fails,
                "temp_bytes": ours.get("xla_temp_bytes"),
            }
        )
    return out


def _rates(m: dict, per: str) -> dict:
    """A candidate's ESS of each quantity per ``per`` (``cpu_s`` or ``n_grad``)."""
    return {f: e / m[per] for f, e in m["ess"].items()}


def _ratios(c: dict, per: str) -> dict:
    """Ours / each other candidate's ESS per ``per``, by quantity (those that counted it)."""
    mine = _rates(c["copyhead_hmc"], per)
    return {
        n: {f: mine[f] / v for f, v in _rates(m, per).items() if v > 0}
        for n, m in c.items()
        if n != "copyhead_hmc" and "ess" in m and m.get(per)
    }


def posterior_lines(d: dict, detail: bool = True) -> list[str]:
    """The summary row(s) against NumPyro NUTS and the per-(head, P) table."""
    rows = posterior_rows(d)
    if not rows:
        return []
    targets = d.get("targets") or {"per_cpu_s": {"numpyro_nuts": d.get("target_ratio", 10.0)}}
    load = " (measured under load)" if d.get("measured_under_load") else ""
    names = {"numpyro_nuts": "NumPyro NUTS", "blackjax_nuts": "BlackJAX NUTS"}
    what = {"per_cpu_s": ("ratios", "ESS/CPU-s"), "per_grad": ("grad_ratios", "ESS per gradient")}
    L = []
    for per, by in targets.items():
        key, unit = what[per]
        for n, tgt in by.items():
            got = [r[key].get(n) for r in rows]
            if not any(got):
                continue
            worst = min(min(g.values()) for g in got if g)
            cells = ", ".join(
                f"{r['attention']} P={r['P']}: {fmt_range(g.values(), fmt_x) if g else '-'}"
                for r, g in zip(rows, got)
            )
            L.append(
                f"| posterior: collapsed HMC vs {names.get(n, n)}, {unit} of U and order "
                f"parameters{load} | {cells} | >= {tgt:g}x | {fmt_met(worst >= tgt)} |"
            )
    if not detail:
        return L
    st = d.get("settings", {})
    L += [
        "",
        f"**Posterior** (reduced posterior, whitened marginal density of W^G, same for "
        f"every sampler; L = {st.get('L')}, V = {st.get('V')}, width {st.get('width')}; "
        f"{st.get('chains')} chains x {st.get('warmup')} warm-up + {st.get('samples')} "
        "draws; ratio = ESS per CPU-second (per gradient of U) of the collapsed HMC / the "
        "candidate's, worst to best over U and the order parameters):",
        "",
        "| head | P | dim | collapsed HMC ESS/CPU-s (U) | vs NumPyro NUTS | vs BlackJAX "
        "NUTS | vs BlackJAX HMC | vs ours, unit mass | per gradient: vs NumPyro NUTS | vs "
        "BlackJAX NUTS | XLA temp (ours) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def cell(n, key="ratios"):
            if n in r[key]:
                return fmt_range(r[key][n].values(), fmt_x)
            return "failed" if n in r["fails"] else "-"

        L.append(
            f"| {r['attention']} | {r['P']} | {r['dim']} | {r['ours'].get('U', 0):,.0f} | "
            f"{cell('numpyro_nuts')} | {cell('blackjax_nuts')} | {cell('blackjax_hmc')} | "
            f"{cell('copyhead_hmc_unit')} | {cell('numpyro_nuts', 'grad_ratios')} | "
            f"{cell('blackjax_nuts', 'grad_ratios')} | {fmt_mib(r['temp_bytes'])} |"
        )
    t = d.get("transition") or {}
    if t.get("status"):
        when = f", measured {t['date'][:10]}" if t.get("date") else ""
        note = f" ({t['note']})" if t.get("note") else ""
        L += ["", f"Bayesian transition (`copyhead transition`{when}): {t['status']}{note}."]
    return L


def paper_posterior_row(d: dict) -> str:
    """The paper configuration's posterior sweep until enough (``bench_paper_posterior``)."""
    heads = d["heads"]
    per = "; ".join(
        f"{att}: "
        + ", ".join(f"{t:.0f} s at P = {p}" for p, t in zip(m["fit_P"], m["per_run_cpu_s"]))
        + f" per run, compile {m['compile_cpu_s']:.0f} s (mean), its runs ~"
        + f"{m['scaled_cpu_s'] / 3600:.1f} h"
        for att, m in heads.items()
    )
    met_all = all(m["all_met"] for m in heads.values())
    load = d["load_average"]
    changes = d["config"].get("changes") or {}
    rounds = next(iter(heads.values())).get("sampler", {}).get("round_iter")
    how = (", ".join(f"{k} {v}" for k, v in changes.items()) or "default lengths") + (
        "" if rounds is None else f", rounds of {rounds}"
    )
    return (
        f"| posterior sweep of the paper config until ESS >= {d['target']['ess']:g} (collapsed "
        f"HMC, {how}, {d['config']['measured_seeds']} seed(s) per P measured, scaled to "
        f"{len(d['config']['P_grid'])} P x {d['config']['n_seeds']} seeds) | CPU {per}; "
        f"both heads ~{d['scaled_total_cpu_h']:.1f} CPU-h"
        f"{'' if met_all else ' (a measured run stopped at the cap short of the target)'}; "
        f"load {load['start'][0]:.1f}-{load['end'][0]:.1f} | <= {d['target']['cpu_h']:g} CPU-h | "
        f"{fmt_met(d['met'])} |"
    )


def pooled_row(d: dict) -> str:
    """Pooled against per-chain adaptation of the collapsed HMC (``bench_pooled``)."""
    a = d["args"]
    n = len(a["P"]) * a["seeds"]
    per = "; ".join(
        f"{att}: "
        + ", ".join(
            f"{name} {v['ratio_geomean']:.2f}x"
            + (f" (x/÷ {math.exp(v['ratio_log_sd'] / math.sqrt(n)):.2f})" if n > 1 else "")
            for name, v in r.items()
            if "ratio_geomean" in v
        )
        for att, r in d["results"].items()
    )
    return (
        f"| collapsed HMC, pooled vs per-chain adaptation: per-chain gradients to ESS 400 over "
        f"the variant's (paper config, P = {', '.join(map(str, a['P']))}, {n} runs per head, "
        f"geometric mean) | {per}; load {d['start']['load']:.1f}-{d['end_load']:.1f} | - | - |"
    )
