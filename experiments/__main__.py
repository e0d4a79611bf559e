"""``python -m experiments ARTEFACT``: the paper's claims put to the test, one command per artefact.

Every artefact is a line of ``common.ARTEFACTS`` (the registry); run from the repository root:

python -m experiments all                         # the paper's configuration (width 10,000 and
                                                  # inf, exact MAP, 10 seeds) + its report
python -m experiments main --preset paper         # one artefact, one preset
python -m experiments all --quick                 # small and fast (width 128, Adam, 1-2 seeds)
python -m experiments report --publish            # refresh the committed docs/reports/
python -m experiments main --full-network --preset paper --out results/full   # GPU protocol
python -m experiments posterior-branches --cluster tcp://10.0.0.1:8786   # groups on Dask
python -m experiments posterior --tiny            # a study run on request only (not in all)
python -m experiments main --preset paper --reading chi-lik   # its grids under another reading

Output goes to ``--out`` (default ``results/experiments/MODE``); ``--publish`` writes into
``docs/reports/`` instead (the committed reports, their JSON and figures) and refreshes the
generated table of ``docs/reports/README.md``.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import resource
import sys
import time
from pathlib import Path

import jax

import copyhead_jax as ch
from copyhead_jax.config import READINGS
from copyhead_jax.runner import run_dependent
from copyhead_jax.transition import cpu_seconds

from . import common

ARTEFACTS, SPEC_ARTEFACTS = common.ARTEFACTS, common.SPEC_ARTEFACTS
#: run only when named (hours of chains; their records are committed)
ON_REQUEST = ("posterior-branches",)
#: what ``all`` runs: the spec artefacts with a cost, less those run only on request
ALL = tuple(a for a in SPEC_ARTEFACTS if ARTEFACTS[a][2] is not None and a not in ON_REQUEST)
WIDTH_COST = 6.0  # one width of main (its own job when main has extra widths)
PRESETS = common.PRESET_NAMES
ROOT = Path(__file__).resolve().parents[1]
#: the committed reports (``--publish``) and the page that holds the generated summary table
REPORTS = ROOT / "docs" / "reports"
SUMMARY = REPORTS / "README.md"


def run_artefact(
    artefact: str,
    *,
    mode: str,
    preset: str,
    out: Path,
    cache: Path,
    reading: str | None = None,
    **kw,
) -> dict:
    """Run one artefact for one preset (under ``reading``: ``common.load_spec``) and return its
    result dict (``kw``: its own options)."""
    spec = common.load_spec(mode, preset, artefact, cache, reading)
    module = importlib.import_module(f"experiments.{ARTEFACTS[artefact][0]}")
    try:
        return module.main(spec, out, **kw)
    finally:  # a worker runs many artefacts: its compiled programs must not pile up (scaling.py)
        jax.clear_caches()


def run_command(name: str, argv: list[str]) -> int:
    """A ``cli`` artefact: its module run as ``__main__`` with ``argv`` as its flags (and the
    artefact's name as the global ``COMMAND``)."""
    import runpy
    import warnings

    saved, sys.argv = sys.argv, [f"python -m experiments {name}", *argv]
    try:
        with warnings.catch_warnings():  # runs it as __main__ even if imported
            warnings.filterwarnings("ignore", "'experiments\\..*' found in sys.modules")
            runpy.run_module(
                f"experiments.{ARTEFACTS[name][0]}",
                {"COMMAND": name},
                run_name="__main__",
                alter_sys=True,
            )
    finally:
        sys.argv = saved
    return 0


def use_compile_cache(cache: Path) -> None:
    """XLA's persistent compilation cache in ``CACHE/xla``: a program compiled once (e.g. the
    same P grid solved at another width, where only the Gram, an input, differs) is loaded, not
    compiled again, by this process and by the other workers (``--jobs``). Same executables,
    same numbers."""
    jax.config.update("jax_compilation_cache_dir", str(Path(cache) / "xla"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def run_job(job: tuple, *, mode: str, out: Path, cache: Path, reading: str | None = None) -> dict:
    """One job of :func:`plan` (in a worker process): ``("width", preset, width)`` measures the
    main artefact at one width into the cache, ``(artefact, preset)`` runs an artefact."""
    if mode == "paper":
        use_compile_cache(cache)
    t0, c0 = time.time(), cpu_seconds()
    if job[0] == "width":
        from . import analysis

        spec = common.load_spec(mode, job[1], "main", cache, reading)
        analysis.measure_width(analysis.width_spec(spec, job[2]))
    else:
        run_artefact(job[0], mode=mode, preset=job[1], out=out, cache=cache, reading=reading)
    return {"cpu_s": cpu_seconds() - c0, "wall_s": time.time() - t0, "pid": os.getpid()}


def job_name(job: tuple) -> str:
    if job[0] == "width":
        from .analysis import width_label

        return f"main ({job[1]}) width {width_label(job[2])}"
    return f"{job[0]} ({job[1]})"


def plan(
    artefacts, presets, mode: str, cache: Path, reading: str | None = None
) -> list[tuple[tuple, list[tuple], float]]:
    """Independent jobs with their dependencies: ``(job, deps, cost)``. Each width of the main
    artefact is a job of its own (its runs and theory go to the cache; ``main`` then only
    assembles them); every other artefact waits for ``main`` of its preset (it reuses main's
    runs and JSON). Every job computes exactly what the serial order does."""
    out = []
    for preset in presets:
        main_deps = []
        if "main" in artefacts:
            spec = common.load_spec(mode, preset, "main", cache, reading)
            widths = [spec.engine.model.width, *spec.settings.get("extra_widths", [])]
            if len(widths) > 1:
                for w in widths:
                    main_deps.append(("width", preset, w))
                    out.append((main_deps[-1], [], WIDTH_COST * (1.5 if preset == "paper" else 1)))
            out.append((("main", preset), main_deps, ARTEFACTS["main"][2]))
        for a in artefacts:
            if a != "main":
                deps = [("main", preset)] if "main" in artefacts else []
                out.append(((a, preset), deps, ARTEFACTS[a][2] or 1.0))
    return out


def run_parallel(
    jobs: int, artefacts, presets, *, mode: str, out: Path, cache: Path, reading: str | None = None
) -> None:
    """Run :func:`plan`'s jobs in ``jobs`` worker processes (``copyhead_jax.runner.run_dependent``:
    longest ready job first, one job per process). The results are those of the serial order:
    every job reads and writes the same content-addressed cache, and a result two jobs need is
    computed once (``sweep.computing``)."""
    worker = importlib.import_module("experiments.__main__").run_job  # picklable by name
    t0, c0 = time.time(), cpu_seconds() + cpu_seconds(resource.RUSAGE_CHILDREN)
    per: dict[int, float] = {}

    def done(job, t):
        per[t["pid"]] = per.get(t["pid"], 0.0) + t["cpu_s"]
        print(
            f"{job_name(job)}: {t['wall_s']:.0f} s wall, {t['cpu_s']:.0f} s CPU "
            f"(worker {t['pid']})",
            flush=True,
        )

    fn = functools.partial(worker, mode=mode, out=out, cache=cache, reading=reading)
    n = len(
        run_dependent(
            fn, plan(artefacts, presets, mode, cache, reading), workers=jobs, on_done=done
        )
    )
    # the workers have exited: their CPU time (start-up included) is the children's
    cpu = cpu_seconds() + cpu_seconds(resource.RUSAGE_CHILDREN) - c0
    print(
        f"{n} jobs in {jobs} workers: {time.time() - t0:.0f} s wall, {cpu:.0f} s CPU in all "
        f"(jobs per worker: {', '.join(f'{v:.0f}' for v in sorted(per.values(), reverse=True))}"
        " s CPU)",
        flush=True,
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.split("\n")[0])
    p.add_argument(
        "artefact",
        choices=(*SPEC_ARTEFACTS, "all", "report"),
        help="an artefact, all of them (then the report), or only the report; "
        f"with their own flags: {', '.join(sorted(set(ARTEFACTS) - set(SPEC_ARTEFACTS)))}",
    )  # noqa: E501
    g = p.add_mutually_exclusive_group()
    for flags, const, text in (
        (
            ("--quick",),
            "quick",
            "small and fast: width 128, full-width Adam, 1-2 seeds (<= ~15 min per artefact)",
        ),
        (
            ("--full-network", "--full"),
            "full",
            "the paper's full-network protocol (width 10,000, "
            "trained embeddings, Adam, 10 seeds): a GPU job",
        ),
        (("--tiny",), "tiny", "seconds-sized smoke run"),
    ):
        g.add_argument(*flags, dest="mode", action="store_const", const=const, help=text)
    # the default: the paper's configuration through the exact width reduction (a CPU job)
    p.set_defaults(mode="paper")
    p.add_argument(
        "--preset",
        choices=(*PRESETS, "both"),
        default="both",
        help="theory/engine conventions (default: both, plain first)",
    )
    p.add_argument(
        "--reading",
        choices=tuple(READINGS),
        default=None,
        help="the reading of the paper's conventions the preset runs under, as on "
        "every copyhead command: "
        + "; ".join(
            f"{r}: " + ", ".join(f"{k}={v}" for sec in f.values() for k, v in sec.items())
            for r, f in READINGS.items()
        )
        + "; the preset's grids and settings kept, outputs named PRESET-READING; "
        f"one --preset, artefacts {', '.join(common.READING_ARTEFACTS)} (the others "
        "refuse it); default: the preset's own",
    )
    o = p.add_mutually_exclusive_group()
    o.add_argument(
        "--out",
        default=None,
        help="output folder (default: results/experiments/MODE; never docs/ unless --publish)",
    )
    o.add_argument(
        "--publish",
        action="store_true",
        help="write into docs/reports/ (the committed reports) and refresh the table "
        "of docs/reports/README.md",
    )
    p.add_argument(
        "--cache", default=None, help="sweep/sampler cache (default: results/reproduce/cache/MODE)"
    )
    p.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="posterior-branches: run its groups without a record on a Dask cluster: a "
        "scheduler address tcp://host:port, or local:N (N local worker processes); "
        "same records as without",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes for independent (artefact, preset, width) jobs (default: "
        "2 in the default mode on a machine with 2 or more cores, else 1; XLA runs one "
        "thread per process on a small machine, so 2 workers use both cores); same "
        "results as 1",
    )
    return p


def output_dir(args) -> Path:
    """``--out``, ``docs/reports`` under ``--publish``, else ``results/experiments/MODE``."""
    if args.publish:
        return REPORTS
    return Path(args.out) if args.out else ROOT / "results" / "experiments" / args.mode


def run(args) -> int:
    from . import report

    out = output_dir(args)
    cache = Path(args.cache) if args.cache else ROOT / "results" / "reproduce" / "cache" / args.mode
    ch.check_output_folder("--out", out)  # before any work
    ch.check_output_folder("--cache", cache)
    presets = PRESETS if args.preset == "both" else (args.preset,)
    artefacts = {"all": ALL, "report": ()}.get(args.artefact, (args.artefact,))
    kw = {"cluster": args.cluster} if args.cluster else {}
    if kw and artefacts != ("posterior-branches",):
        raise ValueError("--cluster is an option of posterior-branches only")
    reading = args.reading
    if reading is not None:  # before any work: one preset, artefacts it means something for
        if args.artefact in ("all", "report"):
            raise ValueError(
                f"--reading: {args.artefact} writes the report of the presets' "
                "own readings; run its artefacts one by one under a reading"
            )
        if args.preset == "both":
            raise ValueError(
                "--reading runs one preset's grids under a reading: give --preset "
                "paper or --preset plain"
            )
        for a in artefacts:
            common.load_spec(args.mode, args.preset, a, cache, reading)
    if artefacts and args.mode == "paper":  # the exact solver's programs (Adam modes: --quick)
        use_compile_cache(cache)
    jobs = args.jobs
    if jobs is None:  # a cluster runs the groups: one job at a time here
        jobs = min(2, len(os.sched_getaffinity(0))) if args.mode == "paper" and not kw else 1
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1; got {jobs}")
    n_jobs = len(plan(artefacts, presets, args.mode, cache, reading)) if artefacts else 0
    if jobs > 1 and n_jobs > 1:
        run_parallel(
            jobs, artefacts, presets, mode=args.mode, out=out, cache=cache, reading=reading
        )
        artefacts = ()  # done; the report below
    for preset in presets:  # main first: the others reuse its runs
        for a in artefacts:
            t0, c0 = time.time(), cpu_seconds()
            run_artefact(
                a, mode=args.mode, preset=preset, out=out, cache=cache, reading=reading, **kw
            )
            name = preset if reading is None else f"{preset} under {reading}"
            print(
                f"{a} ({name}, {args.mode}): {time.time() - t0:.0f} s wall, "
                f"{cpu_seconds() - c0:.0f} s CPU",
                flush=True,
            )
    if args.artefact in ("all", "report"):
        path = report.main(out, mode=args.mode)
        print(f"wrote {path}")
        if out.resolve() == REPORTS.resolve():
            print(f"wrote {report.write_readme_block(out, SUMMARY)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else list(argv)
    if raw and ARTEFACTS.get(raw[0], (None, None))[1] == "cli":
        if any(a == "--reading" or a.startswith("--reading=") for a in raw[1:]):
            print(
                f"python -m experiments: error: --reading: {raw[0]} takes none: "
                f"{common.NO_READING[raw[0]]}",
                file=sys.stderr,
            )
            return 2
        return run_command(raw[0], raw[1:])
    args = build_parser().parse_args(raw)
    if argv is None:  # the command, not a call from Python
        ch.catch_sigterm()  # SIGTERM ends like Ctrl-C (exit 143)
    from copyhead_jax.cli import console

    try:
        with console():  # the package's warnings and progress notes on stderr
            return run(args)
    except ValueError as e:
        print(f"python -m experiments: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        print(
            "\npython -m experiments: interrupted; finished runs are kept in the cache; rerun "
            "the same command to resume",
            file=sys.stderr,
        )
        if argv is None:
            ch.exit_now(ch.interrupt_status(e))  # no teardown under XLA's running threads
        return ch.interrupt_status(e)


if __name__ == "__main__":
    sys.exit(main())
