"""Run the benchmark scripts, each in its own process, and record how each run went.

Each script in ``benchmarks/`` runs as a subprocess from the repository root (so that one failing
benchmark is reported and the others still run) and writes ``benchmarks/results/<name>.json``;
:func:`run_suite` adds to each file a ``bench_run`` record (wall time, the subprocess's peak
resident memory from ``wait4``, exit status, date, arguments).
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


@dataclass(frozen=True)
class Bench:
    name: str  # results/<name>.json
    script: str
    what: str
    full_args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ("--quick",)


BENCHES = (
    Bench("bench_sweep", "bench_sweep.py", "sweep: fused vs per-run JAX loop vs eager PyTorch"),
    Bench("bench_sgld", "bench_sgld.py", "SGLD: sgld_chains vs blackjax.sgld"),
    Bench("bench_theory", "bench_theory.py", "theory phase diagram vs a scipy loop"),
    Bench("bench_sample_sweep", "bench_sample_sweep.py", "sweep sampler: one run vs all at once"),
    Bench("bench_reduced", "bench_reduced.py", "paper config via the exact width reduction"),
    Bench(
        "bench_posterior",
        "bench_posterior.py",
        "posterior: collapsed HMC vs NumPyro NUTS, BlackJAX NUTS/HMC (ESS per CPU-s)",
    ),
    Bench(
        "bench_paper_posterior",
        "bench_paper_posterior.py",
        "the paper config's posterior sweep until ESS >= 400, measured on 4 P and scaled",
        quick_args=("--P", "4", "64", "--attention", "softmax", "--target", "100"),
    ),
    Bench(
        "bench_pooled",
        "bench_pooled.py",
        "collapsed HMC: pooled vs per-chain adaptation, gradients to ESS 400",
        quick_args=("--P", "16", "--attention", "softmax", "--seeds", "2", "--iterations", "50"),
    ),
)
NAMES = tuple(b.name.removeprefix("bench_") for b in BENCHES)


def find_bench_dir(given: Path | None = None) -> Path:
    if given is not None:
        cands = [Path(given)]
    else:
        cands = [Path(__file__).resolve().parent, Path.cwd() / "benchmarks"]
    for c in cands:
        if (c / BENCHES[0].script).exists():
            return c
    raise ValueError(
        f"no benchmarks folder with {BENCHES[0].script} found (tried "
        f"{', '.join(map(str, cands))}); run from the repository checkout or pass --bench-dir"
    )


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
    proc = subprocess.Popen(
        cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
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
        print(
            f"[{i}/{len(todo)}] {b.name}: {b.what} (elapsed {time.perf_counter() - t_start:.0f} s)",
            flush=True,
        )
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
    print(
        f"suite: {sum(r['ok'] for r in runs.values())}/{len(runs)} ok in {total:.0f} s", flush=True
    )
    return runs


# ---- rendering -----------------------------------------------------------------------------
