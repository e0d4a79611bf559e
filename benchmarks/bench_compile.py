"""XLA's two CPU code emitters on the package's own commands: wall time, CPU time, memory, results.

XLA compiles a fusion for the CPU through its MLIR fusion emitters (the default) or through its
older elemental emitters (``--xla_cpu_use_fusion_emitters=false``). The test suite, which is
compile-bound, ran 1.5x faster with the elemental ones (tests/conftest.py). This script asks the
same of the commands a user runs: each command below runs in a fresh process (cold compilation
caches) with each emitter, in interleaved rounds (the machine is shared: a change of load hits
both alike), and the script records per command and emitter the wall and CPU seconds (the
minimum over rounds; medians saved), the process's peak resident memory (``wait4``) and, from
the files the two runs wrote, the largest relative difference of the saved numbers but the
solver's residual gradients (a code emitter may round differently; it must not change a result).

Commands: the README's main job at one seed (``paper-map``, exact MAP, both attentions:
compile-bound), a short Adam sweep (``tiny``), collapsed HMC on the main job's linear runs at
the paper's L = 25, V = 5 (run-time-bound: thousands of iterations), and the theory's points.

    python benchmarks/bench_compile.py [--quick] [--rounds N]

Writes ``benchmarks/results/bench_compile.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from copyhead_jax.storage import environment

OUT = Path(__file__).parent / "results" / "bench_compile.json"
EMITTERS = {"fusion": "", "elemental": "--xla_cpu_use_fusion_emitters=false"}


def commands(quick: bool) -> list[tuple[str, list[str], str]]:
    """``(name, copyhead argv, output file)``, run in this order; ``{dir}``: the round's folder,
    ``stdout``: the command's standard output is its output file."""
    P = "32,100,322,1000" if quick else "32,56,100,178,322,562,1000,1778,4000"
    its = "300" if quick else "1000"
    return [
        (
            "main job, 1 seed (exact MAP)",
            [
                "sweep",
                "--preset",
                "paper-map",
                "--attention",
                "both",
                "--n-seeds",
                "1",
                "--P",
                P,
                "--out",
                "{dir}/map",
                "--no-plot",
                "--no-theory",
                "--quiet",
            ],
            "map/sweep_linear.npz",
        ),
        (
            "Adam sweep (tiny)",
            [
                "sweep",
                "--preset",
                "tiny",
                "--attention",
                "both",
                "--out",
                "{dir}/tiny",
                "--no-plot",
                "--no-theory",
                "--quiet",
            ],
            "tiny/sweep_softmax.npz",
        ),
        (
            "exact MAP, linear, P = 100, 322",
            [
                "sweep",
                "--preset",
                "paper-map",
                "--attention",
                "linear",
                "--n-seeds",
                "1",
                "--P",
                "100,322",
                "--keep-params",
                "--out",
                "{dir}/hmc.npz",
                "--no-plot",
                "--no-theory",
                "--quiet",
            ],
            "hmc.npz",
        ),
        (
            f"collapsed HMC, {its} iterations, 4 chains (paper L, V)",
            [
                "sample",
                "{dir}/hmc.npz",
                "--out",
                "{dir}/post.npz",
                "--iterations",
                its,
                "--no-plot",
                "--no-progress",
            ],
            "post.npz",
        ),
        ("theory points (paper)", ["theory", "points", "--preset", "paper", "--json"], "stdout"),
    ]


def run_one(argv: list[str], flags: str, stdout: Path) -> dict:
    """Run ``copyhead argv`` in a fresh process, its output to ``stdout``; wall and CPU seconds
    and peak resident memory (GiB)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), flags) if f)
    cmd = [sys.executable, "-m", "copyhead_jax.cli", *argv]
    t0 = time.perf_counter()
    with open(stdout, "w") as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{err.read().decode()[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_gib": ru.ru_maxrss / 2**20,
    }


def numbers(path: Path) -> dict[str, np.ndarray]:
    """The floating-point arrays a command saved (npz) or the numbers of its JSON."""
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files if np.issubdtype(z[k].dtype, np.floating)}
    flat: dict[str, np.ndarray] = {}

    def walk(x, key):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{key}/{k}")
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{key}[{i}]")
        elif isinstance(x, float):
            flat[key] = np.asarray(x)

    walk(json.loads(path.read_text()), "")
    return flat


#: what the solver stops on, not a result: the gradient left at convergence (~1e-7, below the
#: stopping tolerance) is rounding noise, and differs between emitters by up to ~15%
RESIDUALS = ("grad_norm", "grad_norm_span", "rel_grad")


def max_rel_diff(a: dict, b: dict) -> tuple[float, str]:
    """Largest ``|a - b| / max(|a|, |b|, 1e-12)`` over the shared finite entries but the
    solver's residuals, and the array it occurs in."""
    worst, where = 0.0, ""
    for k in sorted((a.keys() & b.keys()) - set(RESIDUALS)):
        x, y = np.asarray(a[k], float), np.asarray(b[k], float)
        if x.shape != y.shape or np.any(np.isfinite(x) != np.isfinite(y)):
            return float("inf"), k
        ok = np.isfinite(x) & np.isfinite(y)
        d = np.abs(x - y)[ok] / np.maximum(np.maximum(np.abs(x), np.abs(y))[ok], 1e-12)
        if d.max(initial=0.0) > worst:
            worst, where = float(d.max()), k
    return worst, where


def posterior_z(a: Path, b: Path) -> float:
    """Largest ``|mean_a - mean_b| / sqrt(se_a^2 + se_b^2)`` over the runs and recorded
    observables of two posterior files: a rounding difference sends HMC trajectories apart
    (accept decisions flip), so two samplers agree only within Monte-Carlo error. ``se``: the
    draws' standard deviation over sqrt(the run's smallest ESS of U, c1, cG)."""
    with np.load(a) as za, np.load(b) as zb:
        ess = [np.minimum.reduce([f[k] for k in ("ess", "ess_c1", "ess_cG")]) for f in (za, zb)]
        mean, var = [], []
        for f, e in zip((za, zb), ess, strict=True):
            d = f["draws"]  # [P, seed, chain, draw, observable]
            flat = d.reshape(*d.shape[:2], -1, d.shape[-1])
            mean.append(flat.mean(2))
            var.append(flat.var(2, ddof=1) / np.maximum(e, 1.0)[..., None])
        with np.errstate(divide="ignore", invalid="ignore"):
            zs = np.abs(mean[0] - mean[1]) / np.sqrt(var[0] + var[1])
    return float(zs[np.isfinite(zs)].max(initial=0.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer P values and HMC iterations")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1, got {args.rounds}")
    cmds = commands(args.quick)
    timing = {name: {e: [] for e in EMITTERS} for name, _, _ in cmds}
    diffs: dict[str, tuple[float, str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        for r in range(args.rounds):
            order = list(EMITTERS) if r % 2 == 0 else list(EMITTERS)[::-1]
            for e in order:
                d = Path(tmp) / f"{e}-{r}"
                d.mkdir()
                for k, (name, argv, _) in enumerate(cmds):
                    a = [x.format(dir=d) for x in argv]
                    timing[name][e].append(run_one(a, EMITTERS[e], d / f"stdout{k}"))
                    print(
                        f"round {r} {e:9s} {name}: {timing[name][e][-1]['wall_s']:.1f} s",
                        flush=True,
                    )
        for k, (name, argv, out) in enumerate(cmds):
            out = f"stdout{k}" if out == "stdout" else out
            a, b = (Path(tmp) / f"{e}-0" / out for e in EMITTERS)
            if argv[0] == "sample":
                diffs[name] = posterior_z(a, b), "posterior means"
            else:
                diffs[name] = max_rel_diff(numbers(a), numbers(b))
    rows = []
    for name, _, _ in cmds:
        key = "max_z_mc" if name.startswith("collapsed HMC") else "max_rel_diff"
        row = {"command": name, key: diffs[name][0], "differs_most_in": diffs[name][1]}
        for e in EMITTERS:
            runs = timing[name][e]
            for q in ("wall_s", "cpu_s"):
                row[f"{e}_{q}"] = min(x[q] for x in runs)
                row[f"{e}_{q}_median"] = float(np.median([x[q] for x in runs]))
            row[f"{e}_peak_rss_gib"] = max(x["peak_rss_gib"] for x in runs)
        row["wall_ratio"] = row["fusion_wall_s"] / row["elemental_wall_s"]
        rows.append(row)
    res = {
        "what": "XLA CPU emitters (fusion = XLA's default, elemental = "
        "--xla_cpu_use_fusion_emitters=false) on copyhead commands, fresh process each",
        "ratio": "fusion wall / elemental wall (> 1: elemental faster)",
        "quick": args.quick,
        "rounds": args.rounds,
        "rows": rows,
        "load_avg": os.getloadavg(),
        "environment": environment(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(
        "| command | fusion s | elemental s | ratio | CPU s (f / e) | peak GiB (f / e) | "
        "results differ by |\n|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['command']} | {r['fusion_wall_s']:.1f} | {r['elemental_wall_s']:.1f} | "
            f"{r['wall_ratio']:.2f} | {r['fusion_cpu_s']:.0f} / {r['elemental_cpu_s']:.0f} | "
            f"{r['fusion_peak_rss_gib']:.2f} / {r['elemental_peak_rss_gib']:.2f} | "
            + (
                f"{r['max_rel_diff']:.1e} (relative) |"
                if "max_rel_diff" in r
                else f"{r['max_z_mc']:.1f} MC standard errors |"
            )
        )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
