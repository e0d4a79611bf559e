"""Markdown tables from ``benchmarks/results/*.json``: every ratio is recomputed from the raw
timings (baseline time / our time, so > 1 means copyhead_jax is faster)."""

from __future__ import annotations

import json
from pathlib import Path

from .cells import fmt_met, fmt_mib, fmt_pct, fmt_range, fmt_x
from .render_posterior import paper_posterior_row, pooled_row, posterior_lines
from .suite import BENCHES

#: The paper posterior sweep with shorter warm-up phases and rounds on today's sampler (a
#: ``bench_paper_posterior`` run with ``--out`` at this name's JSON in ``benchmarks/results``;
#: ``bench_paper_posterior_short.json`` holds the same run of the sampler before it): its own row.
SHORT_PHASES = "bench_paper_posterior_moments"


def _own_load(d: dict | None) -> list[float]:
    """The 1-minute load average at start and end as a script run alone records it
    (``load_average: {"start": [1, 5, 15 min], "end": [...]}``), where the suite's record is
    missing."""
    la = (d or {}).get("load_average")
    if not isinstance(la, dict):
        return []
    return [float(la[k][0]) for k in ("start", "end") if la.get(k)]


def load_results(results_dir: Path) -> dict[str, dict | None]:
    out = {}
    for name in (*(b.name for b in BENCHES), "gpu_paper_config", SHORT_PHASES):
        p = results_dir / f"{name}.json"
        try:
            out[name] = json.loads(p.read_text()) if p.exists() else None
        except json.JSONDecodeError:
            out[name] = None
    return out


def sweep_rows(d: dict) -> list[dict]:
    """Per configuration, ratios recomputed from the raw per-run-step times (ms)."""
    out = []
    for r in d.get("rows", []):
        f, lp, tt, rl = r["fused_ms"], r["loop_ms"], r.get("torch_ms"), r.get("roofline_ms")
        out.append(
            {
                "attention": r["attention"],
                "width": r["width"],
                "runs": r["runs"],
                "fused_ms": f,
                "loop_ms": lp,
                "torch_ms": tt,
                "loop_over_fused": lp / f,
                "torch_over_fused": None if tt is None else tt / f,
                "eff_fused": None if rl is None else rl / f,
                "eff_loop": None if rl is None else rl / lp,
                "eff_torch": None if rl is None or tt is None else rl / tt,
                "peak_per_run": r.get("peak_bytes_per_run"),
            }
        )
    return out


def sgld_rows(d: dict) -> list[dict]:
    """Per chain count: blackjax time / our time, from the best wall time of the rounds."""
    out = []
    for r in d.get("results", []):
        if "wall_s" in r:
            best = {k: min(v) for k, v in r["wall_s"].items()}
            ratio = {k: best["blackjax"] / v for k, v in best.items()}
        else:
            cs = r["chain_steps_per_s"]
            ratio = {k: v / cs["blackjax"] for k, v in cs.items()}
        cpu = None
        if "cpu_s" in r:
            bc = {k: min(v) for k, v in r["cpu_s"].items()}
            cpu = bc["blackjax"] / bc["copyhead"]
        mem = r.get("compiled_memory", {}).get("copyhead", {})
        out.append(
            {
                "chains": r["n_chains"],
                "steps": r["n_steps"],
                "blackjax_cs": r["chain_steps_per_s"]["blackjax"],
                "copyhead": ratio.get("copyhead"),
                "lean": ratio.get("copyhead_lean"),
                "gradient_only": ratio.get("gradient_only"),
                "cpu": cpu,
                "temp_bytes": mem.get("temp_bytes"),
            }
        )
    return out


def theory_rows(d: dict) -> dict:
    out = {}
    for att in ("linear", "softmax"):
        if att in d:
            r = d[att]
            out[att] = {
                "jax_s": r["jax_s"],
                "scipy_s": r["scipy_s"],
                "ratio": r["scipy_s"] / r["jax_s"],
                "agree": r.get("max_rel_value_excess_jax"),
            }
    if out:
        j = sum(r["jax_s"] for r in out.values())
        s = sum(r["scipy_s"] for r in out.values())
        out["total"] = {"jax_s": j, "scipy_s": s, "ratio": s / j}
    return out


def _maxrss(d: dict | None) -> float | None:
    if not d:
        return None
    run = d.get("bench_run") or {}
    if run.get("maxrss_mb") is not None:
        return run["maxrss_mb"]
    if d.get("maxrss_mb") is not None:
        return d["maxrss_mb"]
    rows = d.get("results") or []
    vals = [r["maxrss_mb"] for r in rows if isinstance(r, dict) and "maxrss_mb" in r]
    return max(vals) if vals else None


def _date(d: dict | None) -> str | None:
    if not d:
        return None
    run = d.get("bench_run") or {}
    return run.get("date") or d.get("date")


def _quick(d: dict | None) -> bool | None:
    if not d:
        return None
    run = d.get("bench_run") or {}
    return run.get("quick", d.get("quick"))


def platform_line(res: dict[str, dict | None]) -> str:
    plat = cpus = backend = devices = None
    versions: dict[str, str] = {}
    for d in res.values():
        if not d:
            continue
        env = d.get("environment") or {}
        p = d.get("platform") or {}
        plat = plat or env.get("platform") or p.get("system")
        cpus = cpus or env.get("cpu_count") or p.get("cpu_count")
        backend = backend or env.get("backend") or (d.get("device") or {}).get("backend")
        devs = env.get("devices") or env.get("device")
        if devices is None and isinstance(devs, list):
            devices = devs
        for src in (env.get("versions") or {}, d.get("versions") or {}):
            for k, v in src.items():
                if v and k in ("jax", "numpy", "scipy", "blackjax", "torch"):
                    versions.setdefault(k, v)
        if env.get("torch"):
            versions.setdefault("torch", env["torch"])
    dev = ""
    if devices:
        kinds = sorted({s.split(":")[0].split("(")[0].strip() for s in devices})
        dev = f" on {len(devices)} {'/'.join(kinds)} device{'s' if len(devices) > 1 else ''}"
    parts = [plat or "unknown platform"]
    if cpus:
        parts.append(f"{cpus} CPUs")
    parts.append(f"JAX backend {backend or '?'}{dev}")
    v = ", ".join(
        f"{k} {versions[k]}"
        for k in ("jax", "numpy", "scipy", "blackjax", "torch")
        if k in versions
    )
    return "; ".join(parts) + (f"; {v}" if v else "")


def _target_row(label, rows, key, fmt, target=None, target_s="-") -> str:
    """One summary line: the range of ``key`` over ``rows`` against a lower-bound target."""
    vals = [r[key] for r in rows if r[key] is not None]
    if not vals:
        return f"| {label} | not measured | {target_s} | - |"
    met = None if target is None else all(v >= target for v in vals)
    return f"| {label} | {fmt_range(vals, fmt)} | {target_s} | {fmt_met(met)} |"


def render(
    res: dict[str, dict | None],
    runs: dict[str, dict] | None = None,
    detail: bool = True,
    source: str = "benchmarks/results",
) -> str:
    """The generated markdown (no title). ``detail=False`` (the report's block) leaves out the
    per-chain SGLD and per-attention theory tables of ``benchmarks/results/README.md``."""
    runs = runs or {}
    dates = sorted(x for x in (_date(d) for d in res.values()) if x)
    modes = {_quick(d) for d in res.values() if d} - {None}
    mode = {frozenset({True}): "`--quick` settings", frozenset({False}): "full settings"}.get(
        frozenset(modes), "mixed quick and full settings"
    )
    when = dates[-1][:10] if dates else "unknown date"
    L = [
        f"_Generated by `python -m benchmarks` from `{source}/*.json` (last measured {when}, "
        f"{mode}); do not edit by hand._",
        "",
        f"Platform: {platform_line(res)}.",
        "Ratios are baseline time / copyhead_jax time (> 1: copyhead_jax is faster), recomputed "
        "from the raw timings; each time is the best of several rounds (interleaved between "
        "candidates where the script allows) on a machine that may be shared with other jobs.",
        "",
        "| benchmark | measured | target | met |",
        "|---|---|---|---|",
    ]
    names = ("bench_sweep", "bench_sgld", "bench_theory", "bench_sample_sweep", "bench_reduced")
    sw, sg, th_, sp, rd = (res.get(n) for n in names)
    po = res.get("bench_posterior")
    rows = sweep_rows(sw) if sw else []
    multi = [r for r in rows if r["runs"] > 1]
    if rows:
        small64 = [r for r in rows if r["width"] <= 256 and r["runs"] >= 64]
        wide64 = [r for r in rows if r["width"] >= 1024 and r["runs"] > 1]
        specs = [  # label, rows, key, format, target (lower bound), target as text
            ("fused vs per-run JAX loop (> 1 run)", multi, "loop_over_fused", fmt_x, None, "-"),
            (
                "fused vs eager PyTorch, width <= 256, >= 64 runs",
                small64,
                "torch_over_fused",
                fmt_x,
                3.0,
                ">= 3x",
            ),
            (
                "roofline efficiency, width <= 256, >= 64 runs",
                small64,
                "eff_fused",
                fmt_pct,
                0.25,
                ">= 25%",
            ),
            (
                "fused vs eager PyTorch, width >= 1024 (> 1 run)",
                wide64,
                "torch_over_fused",
                fmt_x,
                1.0,
                ">= 1x",
            ),
            (
                "roofline efficiency, width >= 1024 (> 1 run)",
                wide64,
                "eff_fused",
                fmt_pct,
                0.5,
                ">= 50%",
            ),
        ]
        L += [_target_row("sweep: " + s[0], *s[1:]) for s in specs]
        mem = sw.get("per_run_memory") or {}
        if mem:
            N = max(mem, key=int)
            m = mem[N]
            x = m["peak"] / m["W_G_bytes"]
            L.append(
                f"| sweep: per-run memory at width {int(N):,} (XLA plan) | "
                f"{fmt_mib(m['peak'])} = {x:.2f}x the bytes of W^G | <= 4.2x | "
                f"{fmt_met(x <= 4.2)} |"
            )
    srows = sgld_rows(sg) if sg else []
    if srows:
        tgt = sg.get("target_ratio", 1.2)
        per = ", ".join(f"{r['copyhead']:.2f}x at {r['chains']}" for r in srows)
        met = [r["copyhead"] >= tgt for r in srows]
        L.append(
            f"| SGLD: sgld_chains vs blackjax.sgld (chains) | {per} | >= {tgt}x | "
            f"{fmt_met(all(met)) if all(met) or not any(met) else 'partly'} |"
        )
    if sp:
        s = sp["seconds"]
        L.append(
            f"| sweep sampler: one program vs run by run | {s['run_by_run'] / s['fused']:.2f}x"
            f" (roofline {fmt_pct(sp.get('roofline_eff_fused'))}) | - | - |"
        )
    if rd and "map_cpu_s" in rd:
        n_runs = sum(r["map"]["runs"] for r in rd["rows"].values())
        ok_map = rd["map_cpu_s"] < rd["targets"]["map_s"]
        L.append(
            f"| reduced engine: exact MAP of the paper config ({n_runs} runs, width 10,000) | "
            f"{rd['map_cpu_s']:.0f} s CPU ({rd['map_wall_s']:.0f} s wall) | < 60 s | "
            f"{fmt_met(ok_map)} |"
        )
        for att, r in rd["rows"].items():
            s = r["sample"]
            per = ", ".join(
                f"{t:.0f} s at P = {p:.0f}" for p, t in zip(s["fit_P"], s["fit_run_cpu_s"])
            )
            ext = s.get("extrapolated_cpu_s_all_runs")
            n_ext = s.get("extrapolated_runs", 160)  # 16 P x 10 seeds (older files)
            tot = f"; all {n_ext} runs ~{ext / 3600:.1f} h CPU (extrapolated)" if ext else ""
            L.append(
                f"| reduced engine: {att} posterior (collapsed HMC, {s['sgld']['n_chains']} "
                f"chains x {s['sgld']['n_steps']} steps) per run | {per} CPU, compile "
                f"{s['compile_cpu_s']:.0f} s{tot} | whole benchmark < 300 s | "
                f"{fmt_met(None if not ext else ext + rd['map_cpu_s'] < 300)} |"
            )
        L.append(
            f"| full-width Adam at width 10,000 (for scale) | "
            f"{rd['full_width_ms_per_run_epoch']:.0f} ms per run-epoch here, H200 "
            f"{rd['h200_ms_per_run_epoch']} ms | - | - |"
        )
    pp = res.get("bench_paper_posterior")
    if pp:
        L.append(paper_posterior_row(pp))
    if res.get(SHORT_PHASES):
        L.append(paper_posterior_row(res[SHORT_PHASES]))
    if res.get("bench_pooled"):
        L.append(pooled_row(res["bench_pooled"]))
    trows = theory_rows(th_) if th_ else {}
    if trows:
        t = trows["total"]
        ok = t["ratio"] >= 50 and t["jax_s"] < 1
        L.append(
            f"| theory: phase diagram vs scipy loop (both attentions) | {t['ratio']:.0f}x, "
            f"{t['jax_s']:.2f} s after compile | >= 50x, < 1 s | {fmt_met(ok)} |"
        )
    if po:
        L += posterior_lines(po, detail=False)

    if rows:
        P = sw["rows"][0].get("P")
        L += [
            "",
            f"**Sweep throughput** (P = {P}, L = 25, V = 5; ms per run-step = one full-batch Adam "
            "epoch of one run; roofline efficiency = lower bound from measured peak FLOP/s and "
            "bandwidth / measured time):",
            "",
            "| attention | width | runs | fused ms | loop / fused | PyTorch / fused | "
            "roofline eff. fused (loop, PyTorch) | XLA peak per run |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            L.append(
                f"| {r['attention']} | {r['width']} | {r['runs']} | {r['fused_ms']:.3f} | "
                f"{fmt_x(r['loop_over_fused'])} | {fmt_x(r['torch_over_fused'])} | "
                f"{fmt_pct(r['eff_fused'])} "
                f"({fmt_pct(r['eff_loop'])}, {fmt_pct(r['eff_torch'])}) | "
                f"{fmt_mib(r['peak_per_run'])} |"
            )
        pk = sw.get("peaks") or {}
        if pk:
            L.append("")
            load = (
                f" (fresh process, load {pk['load_before']:.1f} before, "
                f"{pk['load_after']:.1f} after)"
                if "load_before" in pk
                else ""
            )
            L.append(
                f"Measured peaks{load}: {pk['peak_flops'] / 1e9:.0f} GFLOP/s dense float32 "
                f"matmul, {pk['peak_bandwidth'] / 1e9:.0f} GB/s memory bandwidth (read + "
                "write bytes)."
            )
            nom = sw.get("nominal_peaks")
            effs = [r.get("roofline_eff_nominal") for r in sw["rows"]]
            if nom and any(e is not None for e in effs):
                L.append(
                    f"Against the datasheet ({nom['source']}: {nom['flops'] / 1e12:.0f} "
                    f"TFLOP/s, {nom['bandwidth'] / 1e12:.1f} TB/s) the fused efficiencies "
                    f"are {', '.join(fmt_pct(e) for e in effs)} (rows in order)."
                )
    if srows and detail:
        L += [
            "",
            "**SGLD** (Bayesian logistic regression, "
            f"{sg['problem']['n_params']} parameters, {sg['problem']['n_data']} data; "
            "ratio vs blackjax.sgld):",
            "",
            "| chains | steps | blackjax chain-steps/s | copyhead | copyhead, gradient only "
            "| gradient descent alone | copyhead, CPU time | XLA temp (copyhead) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in srows:
            L.append(
                f"| {r['chains']} | {r['steps']} | {r['blackjax_cs']:,.0f} | "
                f"{fmt_x(r['copyhead'])} | {fmt_x(r['lean'])} | {fmt_x(r['gradient_only'])} | "
                f"{fmt_x(r['cpu'])} | {fmt_mib(r['temp_bytes'])} |"
            )
    if po and detail:  # the summary rows went into the table above
        L += posterior_lines(po)[len(posterior_lines(po, detail=False)) :]
    if trows and detail:
        g, k = th_.get("grid", {}), th_.get("baseline_stride")
        rows_b = "every L" if k == 1 else (f"every {k}th L, time scaled" if k else "a subset of L")
        L += [
            "",
            f"**Theory phase diagram** ({g.get('L', [0, 0, '?'])[2]} L x "
            f"{g.get('P', [0, 0, '?'])[2]} P, preset {g.get('preset', '?')}, float64; scipy "
            f"L-BFGS-B from several starts on {rows_b}):",
            "",
            "| attention | JAX s | scipy s | ratio | JAX value above scipy's (max rel.) |",
            "|---|---|---|---|---|",
        ]
        for att in ("linear", "softmax", "total"):
            if att in trows:
                r = trows[att]
                agree = r.get("agree")
                L.append(
                    f"| {att} | {r['jax_s']:.3f} | {r['scipy_s']:.1f} | {r['ratio']:.0f}x | "
                    f"{'-' if agree is None else f'{agree:.1e}'} |"
                )

    L += [
        "",
        "**Runs** (peak memory = the benchmark process's peak resident set size; load = the "
        "machine's 1-minute load average at start and end, other jobs included):",
        "",
        "| benchmark | measured (UTC) | settings | wall | peak memory | load | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in BENCHES:
        d, run = res.get(b.name), runs.get(b.name)
        if run is not None and not run.get("ok"):
            why = run.get("error") or f"exit {run.get('returncode')}"
            status = f"**failed** ({why})" + ("; figures above: previous run" if d else "")
        else:
            status = "ok" if d else "no results"
        br = (d or {}).get("bench_run") or {}
        q, rss = _quick(d), _maxrss(d)
        date = (_date(d) or "-").replace("T", " ").replace("+00:00", "")
        setting = "-" if q is None else ("quick" if q else "full")
        wall = f"{br['wall_s']:.0f} s" if "wall_s" in br else "-"
        mem = "-" if rss is None else f"{rss:.0f} MB"
        la = [x for x in br.get("load_average_1min") or [] if x is not None] or _own_load(d)
        load = " - ".join(f"{x:.1f}" for x in la) or "-"
        L.append(f"| {b.name} | {date} | {setting} | {wall} | {mem} | {load} | {status} |")
    pc = res.get("gpu_paper_config")
    if pc:
        L += ["", *paper_config_lines(pc)]
    if not detail:
        L += ["", f"Per-chain SGLD and per-attention theory tables: `{source}/README.md`."]
    return "\n".join(L) + "\n"


def paper_config_lines(pc: dict) -> list[str]:
    """The paper configuration (``benchmarks/gpu_paper_config.py``): throughput and memory."""
    L = [
        f"**Paper configuration** (`benchmarks/gpu_paper_config.sh`: width {pc['width']:,}, "
        f"{len(pc['grid']['P'])} P x {pc['grid']['n_seeds']} seeds, Adam capped at "
        f"{pc['max_epochs']} epochs per run; steady = chunks after the first, i.e. without "
        "compilation; peak = the device's peak bytes in use):",
        "",
        "| stage | runs (per chunk) | wall | steady ms per run-epoch | compile | peak device "
        "memory | finite |",
        "|---|---|---|---|---|---|---|",
    ]
    for att in ("softmax", "linear"):
        r = pc.get(att) or {}
        if "wall_s" not in r:
            L.append(f"| Adam, {att} | - | - | - | - | - | {r.get('error') or r.get('skipped')} |")
            continue
        comp = r.get("first_chunk_minus_steady_s (compile)")
        L.append(
            f"| Adam, {att} | {r['runs']} ({r['chunk_runs']}) | {r['wall_s']:.0f} s | "
            f"{r['steady_ms_per_run_epoch']:.2f} | {comp:.0f} s | "
            f"{fmt_mib(r['peak_device_bytes'])} | {r['finite']}/{r['runs']} |"
        )
    g = pc.get("sgld") or {}
    if "wall_s" in g:
        L.append(
            f"| SGLD, {g['chains']} chains x {g['steps']} steps | - | {g['wall_s']:.0f} s | "
            f"- | incl. | {fmt_mib(g['peak_device_bytes'])} | {g['finite_chains']}/"
            f"{g['chains']} |"
        )
    r = pc.get("softmax") or {}
    if "steady_ms_per_run_epoch" in r:
        full = r["runs"] * 2000 * r["steady_ms_per_run_epoch"] / 1e3
        L += [
            "",
            f"At this rate the paper's protocol (at least 2,000 epochs per run, early "
            f"stopping) takes at least {full / 60:.0f} minutes per attention for the "
            f"{r['runs']} runs on this device.",
        ]
    return L


def render_file(body: str) -> str:
    return (
        "# Benchmark results\n\n"
        "Written by `python -m benchmarks` (see `python -m benchmarks --help`); "
        "`docs/reports/benchmarks.md` holds a copy of this table.\n\n" + body
    )
