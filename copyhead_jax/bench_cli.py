"""``copyhead bench [--quick]``: run the benchmark suite, tabulate it, regenerate README's section.

Each script in ``benchmarks/`` runs as its own subprocess from the repository root (so that one
failing benchmark is reported and the others still run) and writes
``benchmarks/results/<name>.json``; this command adds to each file a ``bench_run`` record (wall
time, the subprocess's peak resident memory from ``wait4``, exit status, date, arguments). It then
renders one markdown summary, ``benchmarks/results/README.md``, from the JSON files and copies it
between the ``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers of the top-level README.
Every ratio is recomputed here from the raw timings in the JSON files (baseline time / our time,
so > 1 means copyhead_jax is faster). ``--render-only`` re-renders from the existing files.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


@dataclass(frozen=True)
class Bench:
    name: str  # results/<name>.json
    script: str
    what: str
    full_args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ("--quick",)


BENCHES = (
    Bench("bench_sweep", "bench_sweep.py", "sweep: fused vs per-run JAX loop vs eager PyTorch"),
    Bench("bench_sgld", "bench_sgld.py", "SGLD: run_chains vs blackjax.sgld"),
    Bench("bench_theory", "bench_theory.py", "theory phase diagram vs a scipy loop"),
    Bench("bench_sample_sweep", "bench_sample_sweep.py", "sweep sampler: one run vs all at once"),
)
NAMES = tuple(b.name.removeprefix("bench_") for b in BENCHES)


def add_bench_subparser(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="run the benchmark suite, write benchmarks/results/*.json and the README table",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--quick", action="store_true", help="the small settings (< 10 min, 2 cores)")
    p.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: re-render the table and README block from existing JSON",
    )
    p.add_argument(
        "--only",
        nargs="+",
        choices=NAMES,
        default=None,
        metavar="NAME",
        help=f"run only these benchmarks ({', '.join(NAMES)})",
    )
    p.add_argument(
        "--bench-dir",
        type=Path,
        default=None,
        help="the benchmarks folder (default: the repository's, else ./benchmarks)",
    )
    p.add_argument(
        "--readme",
        type=Path,
        default=None,
        help="README with the bench markers (default: next to benchmarks/)",
    )
    p.add_argument("--no-readme", action="store_true", help="do not touch the README")
    p.set_defaults(func=cmd_bench)


def find_bench_dir(given: Path | None = None) -> Path:
    if given is not None:
        cands = [Path(given)]
    else:
        cands = [Path(__file__).resolve().parent.parent / "benchmarks", Path.cwd() / "benchmarks"]
    for c in cands:
        if (c / BENCHES[0].script).exists():
            return c
    raise ValueError(
        f"no benchmarks folder with {BENCHES[0].script} found (tried "
        f"{', '.join(map(str, cands))}); run from the repository checkout or pass --bench-dir"
    )


# ---- running -------------------------------------------------------------------------------


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def run_one(bench: Bench, bench_dir: Path, quick: bool) -> dict:
    """Run one script as a subprocess from the repository root, streaming its output with a
    prefix; return wall time, peak RSS (``wait4``, this child only), exit status."""
    args = list(bench.quick_args if quick else bench.full_args)
    cmd = [sys.executable, "-u", str(bench_dir / bench.script), *args]
    root = bench_dir.parent
    load0 = _load()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)  # fmt: skip
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            print(f"  [{bench.name} {time.perf_counter() - t0:6.0f}s] {line.rstrip()}", flush=True)
    maxrss = None
    if hasattr(os, "wait4"):  # POSIX: this child's own resource usage
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        maxrss = usage.ru_maxrss / 1024 / (1024 if sys.platform == "darwin" else 1)  # KiB/bytes
    else:
        proc.wait()
    return {
        "returncode": proc.returncode,
        "wall_s": time.perf_counter() - t0,
        "maxrss_mb": maxrss,
        "load_average_1min": [load0, _load()],  # other jobs on the machine, start and end
        "date": _now(),
        "quick": quick,
        "command": ["python", f"benchmarks/{bench.script}", *args],
    }


def run_suite(bench_dir: Path, quick: bool, only=None) -> dict[str, dict]:
    results_dir = bench_dir / "results"
    todo = [b for b in BENCHES if only is None or b.name.removeprefix("bench_") in only]
    runs = {}
    t_start = time.perf_counter()
    for i, b in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {b.name}: {b.what} "
              f"(elapsed {time.perf_counter() - t_start:.0f} s)", flush=True)  # fmt: skip
        path = results_dir / f"{b.name}.json"
        before = path.stat().st_mtime_ns if path.exists() else None
        try:
            run = run_one(b, bench_dir, quick)
        except OSError as e:
            run = {"returncode": None, "error": str(e), "wall_s": 0.0, "date": _now()}
        fresh = path.exists() and path.stat().st_mtime_ns != before
        ok = run["returncode"] == 0 and fresh
        if run["returncode"] == 0 and not fresh:
            run["error"] = f"exited 0 but did not write {path.name}"
        if ok:
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as e:
                ok, run["error"] = False, f"unreadable {path.name}: {e}"
            else:
                data["bench_run"] = {**run, "ok": True}
                path.write_text(json.dumps(data, indent=2) + "\n")
        run["ok"] = ok
        runs[b.name] = run
        state = "ok" if ok else f"FAILED ({run.get('error') or 'exit ' + str(run['returncode'])})"
        rss = run.get("maxrss_mb")
        rss_s = "" if rss is None else f", peak RSS {rss:.0f} MB"
        print(f"[{i}/{len(todo)}] {b.name}: {state} in {run['wall_s']:.0f} s{rss_s}", flush=True)
    total = time.perf_counter() - t_start
    print(f"suite: {sum(r['ok'] for r in runs.values())}/{len(runs)} ok in {total:.0f} s",
          flush=True)  # fmt: skip
    return runs


# ---- rendering -----------------------------------------------------------------------------


def load_results(results_dir: Path) -> dict[str, dict | None]:
    out = {}
    for name in (*(b.name for b in BENCHES), "gpu_paper_config"):
        p = results_dir / f"{name}.json"
        try:
            out[name] = json.loads(p.read_text()) if p.exists() else None
        except json.JSONDecodeError:
            out[name] = None
    return out


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _range(vals, fmt) -> str:
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    lo, hi = min(vals), max(vals)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} - {fmt(hi)}"


def _met(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "**no**")


def _mib(b: float | None) -> str:
    if b is None:
        return "-"
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"


def sweep_rows(d: dict) -> list[dict]:
    """Per configuration, ratios recomputed from the raw per-run-step times (ms)."""
    out = []
    for r in d.get("rows", []):
        f, lp, tt, rl = r["fused_ms"], r["loop_ms"], r.get("torch_ms"), r.get("roofline_ms")
        out.append({
            "attention": r["attention"], "width": r["width"], "runs": r["runs"],
            "fused_ms": f, "loop_ms": lp, "torch_ms": tt,
            "loop_over_fused": lp / f,
            "torch_over_fused": None if tt is None else tt / f,
            "eff_fused": None if rl is None else rl / f,
            "eff_loop": None if rl is None else rl / lp,
            "eff_torch": None if rl is None or tt is None else rl / tt,
            "peak_per_run": r.get("peak_bytes_per_run"),
        })  # fmt: skip
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
        out.append({
            "chains": r["n_chains"], "steps": r["n_steps"],
            "blackjax_cs": r["chain_steps_per_s"]["blackjax"],
            "copyhead": ratio.get("copyhead"), "lean": ratio.get("copyhead_lean"),
            "gradient_only": ratio.get("gradient_only"), "cpu": cpu,
            "temp_bytes": mem.get("temp_bytes"),
        })  # fmt: skip
    return out


def theory_rows(d: dict) -> dict:
    out = {}
    for att in ("linear", "softmax"):
        if att in d:
            r = d[att]
            out[att] = {"jax_s": r["jax_s"], "scipy_s": r["scipy_s"],
                        "ratio": r["scipy_s"] / r["jax_s"],
                        "agree": r.get("max_rel_value_excess_jax")}  # fmt: skip
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
    v = ", ".join(f"{k} {versions[k]}" for k in ("jax", "numpy", "scipy", "blackjax", "torch")
                  if k in versions)  # fmt: skip
    return "; ".join(parts) + (f"; {v}" if v else "")


def _target_row(label, rows, key, fmt, target=None, target_s="-") -> str:
    """One summary line: the range of ``key`` over ``rows`` against a lower-bound target."""
    vals = [r[key] for r in rows if r[key] is not None]
    if not vals:
        return f"| {label} | not measured | {target_s} | - |"
    met = None if target is None else all(v >= target for v in vals)
    return f"| {label} | {_range(vals, fmt)} | {target_s} | {_met(met)} |"


def render(
    res: dict[str, dict | None],
    runs: dict[str, dict] | None = None,
    detail: bool = True,
    source: str = "benchmarks/results",
) -> str:
    """The generated markdown (no title). ``detail=False`` (README's block) leaves out the
    per-chain SGLD and per-attention theory tables of ``benchmarks/results/README.md``."""
    runs = runs or {}
    dates = sorted(x for x in (_date(d) for d in res.values()) if x)
    modes = {_quick(d) for d in res.values() if d} - {None}
    mode = {frozenset({True}): "`--quick` settings", frozenset({False}): "full settings"}.get(
        frozenset(modes), "mixed quick and full settings"
    )
    when = dates[-1][:10] if dates else "unknown date"
    L = [
        f"_Generated by `copyhead bench` from `{source}/*.json` (last measured {when}, "
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
    sw, sg, th_, sp = (res.get(b.name) for b in BENCHES)
    rows = sweep_rows(sw) if sw else []
    multi = [r for r in rows if r["runs"] > 1]
    if rows:
        small64 = [r for r in rows if r["width"] <= 256 and r["runs"] >= 64]
        wide64 = [r for r in rows if r["width"] >= 1024 and r["runs"] > 1]
        specs = [  # label, rows, key, format, target (lower bound), target as text
            ("fused vs per-run JAX loop (> 1 run)", multi, "loop_over_fused", _x, None, "-"),
            ("fused vs eager PyTorch, width <= 256, >= 64 runs", small64, "torch_over_fused", _x,
             3.0, ">= 3x"),
            ("roofline efficiency, width <= 256, >= 64 runs", small64, "eff_fused", _pct, 0.25,
             ">= 25%"),
            ("fused vs eager PyTorch, width >= 1024 (> 1 run)", wide64, "torch_over_fused", _x,
             1.0, ">= 1x"),
            ("roofline efficiency, width >= 1024 (> 1 run)", wide64, "eff_fused", _pct, 0.5,
             ">= 50%"),
        ]  # fmt: skip
        L += [_target_row("sweep: " + s[0], *s[1:]) for s in specs]
        mem = sw.get("per_run_memory") or {}
        if mem:
            N = max(mem, key=int)
            m = mem[N]
            x = m["peak"] / m["W_G_bytes"]
            L.append(f"| sweep: per-run memory at width {int(N):,} (XLA plan) | {_mib(m['peak'])}"
                     f" = {x:.2f}x the bytes of W^G | <= 4x | {_met(x <= 4.005)} |")  # fmt: skip
    srows = sgld_rows(sg) if sg else []
    if srows:
        tgt = sg.get("target_ratio", 1.2)
        per = ", ".join(f"{r['copyhead']:.2f}x at {r['chains']}" for r in srows)
        met = [r["copyhead"] >= tgt for r in srows]
        L.append(f"| SGLD: run_chains vs blackjax.sgld (chains) | {per} | >= {tgt}x | "
                 f"{_met(all(met)) if all(met) or not any(met) else 'partly'} |")  # fmt: skip
    if sp:
        s = sp["seconds"]
        L.append(f"| sweep sampler: one program vs run by run | {s['run_by_run'] / s['fused']:.2f}x"
                 f" (roofline {_pct(sp.get('roofline_eff_fused'))}) | - | - |")  # fmt: skip
    trows = theory_rows(th_) if th_ else {}
    if trows:
        t = trows["total"]
        ok = t["ratio"] >= 50 and t["jax_s"] < 1
        L.append(f"| theory: phase diagram vs scipy loop (both attentions) | {t['ratio']:.0f}x, "
                 f"{t['jax_s']:.2f} s after compile | >= 50x, < 1 s | {_met(ok)} |")  # fmt: skip

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
                f"{_x(r['loop_over_fused'])} | {_x(r['torch_over_fused'])} | "
                f"{_pct(r['eff_fused'])} ({_pct(r['eff_loop'])}, {_pct(r['eff_torch'])}) | "
                f"{_mib(r['peak_per_run'])} |"
            )
        pk = sw.get("peaks") or {}
        if pk:
            L.append("")
            L.append(f"Measured peaks: {pk['peak_flops'] / 1e9:.0f} GFLOP/s dense float32 matmul, "
                     f"{pk['peak_bandwidth'] / 1e9:.0f} GB/s memory bandwidth.")  # fmt: skip
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
            L.append(f"| {r['chains']} | {r['steps']} | {r['blackjax_cs']:,.0f} | "
                     f"{_x(r['copyhead'])} | {_x(r['lean'])} | {_x(r['gradient_only'])} | "
                     f"{_x(r['cpu'])} | {_mib(r['temp_bytes'])} |")  # fmt: skip
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
                L.append(f"| {att} | {r['jax_s']:.3f} | {r['scipy_s']:.1f} | {r['ratio']:.0f}x | "
                         f"{'-' if agree is None else f'{agree:.1e}'} |")  # fmt: skip

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
        la = [x for x in br.get("load_average_1min") or [] if x is not None]
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
        L.append(f"| Adam, {att} | {r['runs']} ({r['chunk_runs']}) | {r['wall_s']:.0f} s | "
                 f"{r['steady_ms_per_run_epoch']:.2f} | {comp:.0f} s | "
                 f"{_mib(r['peak_device_bytes'])} | {r['finite']}/{r['runs']} |")  # fmt: skip
    g = pc.get("sgld") or {}
    if "wall_s" in g:
        L.append(f"| SGLD, {g['chains']} chains x {g['steps']} steps | - | {g['wall_s']:.0f} s | "
                 f"- | incl. | {_mib(g['peak_device_bytes'])} | {g['finite_chains']}/"
                 f"{g['chains']} |")  # fmt: skip
    r = pc.get("softmax") or {}
    if "steady_ms_per_run_epoch" in r:
        full = r["runs"] * 2000 * r["steady_ms_per_run_epoch"] / 1e3
        L += ["", f"At this rate the paper's protocol (at least 2,000 epochs per run, early "
                  f"stopping) takes at least {full / 60:.0f} minutes per attention for the "
                  f"{r['runs']} runs on this device."]  # fmt: skip
    return L


def render_file(body: str) -> str:
    return (
        "# Benchmark results\n\n"
        "Written by `copyhead bench` (see `copyhead bench --help`); the top-level README's "
        "benchmark section is a copy of this table.\n\n" + body
    )


def markers(tag: str | None = None) -> tuple[str, str]:
    """README markers of the main block (``tag=None``) or of a device's block (``bench:TAG``)."""
    if tag is None:
        return START, END
    return f"<!-- bench:{tag}:start -->", f"<!-- bench:{tag}:end -->"


def replace_block(text: str, block: str, tag: str | None = None) -> str:
    """Replace what lies between the bench markers with ``block``; the rest is kept as is."""
    START, END = markers(tag)
    i, j = text.find(START), text.find(END)
    if i < 0 or j < 0 or j < i:
        raise ValueError(f"README has no {START} ... {END} block to regenerate")
    if text.find(START, i + 1) >= 0 or text.find(END, j + 1) >= 0:
        raise ValueError("README has more than one bench block")
    return text[: i + len(START)] + "\n" + block.strip("\n") + "\n" + text[j:]


def write_outputs(bench_dir: Path, readme: Path | None, runs=None) -> tuple[Path, Path | None]:
    results_dir = bench_dir / "results"
    res = load_results(results_dir)
    table = results_dir / "README.md"
    table.write_text(render_file(render(res, runs)))
    text = readme.read_text() if readme is not None else ""
    new = text if readme is None else replace_block(text, render(res, runs, detail=False))
    # results measured elsewhere (benchmarks/results/<device>/, e.g. h200): their own table, and
    # README's <!-- bench:<device>:start/end --> block where README has one
    for sub in sorted(d for d in results_dir.iterdir() if d.is_dir()):
        res_sub = load_results(sub)
        if not any(res_sub.values()):
            continue
        src = f"benchmarks/results/{sub.name}"
        (sub / "README.md").write_text(render_file(render(res_sub, source=src)))
        if readme is not None and markers(sub.name)[0] in new:
            new = replace_block(new, render(res_sub, detail=False, source=src), sub.name)
    if readme is None:
        return table, None
    if new != text:
        readme.write_text(new)
    return table, readme


def cmd_bench(args) -> int:
    bench_dir = find_bench_dir(args.bench_dir)
    runs = None
    if not args.render_only:
        runs = run_suite(bench_dir, args.quick, args.only)
    readme = None if args.no_readme else (args.readme or bench_dir.parent / "README.md")
    if readme is not None and not readme.exists():
        raise ValueError(f"README {readme} does not exist (pass --readme or --no-readme)")
    table, rd = write_outputs(bench_dir, readme, runs)
    print(f"wrote {table}" + (f"\nupdated the bench block of {rd}" if rd else ""))
    return 0 if runs is None or all(r["ok"] for r in runs.values()) else 1
