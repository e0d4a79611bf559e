"""``python -m benchmarks [--quick]``: run the benchmark suite, tabulate it, regenerate the
benchmark report ``docs/reports/benchmarks.md``.

Each script runs as its own subprocess (:mod:`benchmarks.suite`) and writes
``benchmarks/results/<name>.json``. One markdown summary, ``benchmarks/results/README.md``, is
rendered from the JSON files (:mod:`benchmarks.render`) and copied between the
``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers of ``docs/reports/benchmarks.md``.
``--render-only`` re-renders from the existing files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .render import load_results, render, render_file
from .suite import NAMES, find_bench_dir, run_suite

START, END = "<!-- bench:start -->", "<!-- bench:end -->"
#: the page with the bench markers, relative to the repository root (next to benchmarks/)
PAGE = Path("docs") / "reports" / "benchmarks.md"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
    )
    p.add_argument("--quick", action="store_true", help="the small settings (< 10 min, 2 cores)")
    p.add_argument(
        "--render-only",
        action="store_true",
        help="run nothing: re-render the table and the report's block from existing JSON",
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
        metavar="PAGE",
        help=f"the markdown page with the bench markers (default: {PAGE} next to benchmarks/)",
    )
    p.add_argument("--no-readme", action="store_true", help="do not touch that page")
    return p


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
        raise ValueError(f"the page has no {START} ... {END} block to regenerate")
    if text.find(START, i + 1) >= 0 or text.find(END, j + 1) >= 0:
        raise ValueError("the page has more than one bench block")
    return text[: i + len(START)] + "\n" + block.strip("\n") + "\n" + text[j:]


def write_outputs(bench_dir: Path, readme: Path | None, runs=None) -> tuple[Path, Path | None]:
    results_dir = bench_dir / "results"
    res = load_results(results_dir)
    table = results_dir / "README.md"
    table.write_text(render_file(render(res, runs)))
    text = readme.read_text() if readme is not None else ""
    new = text if readme is None else replace_block(text, render(res, runs, detail=False))
    # results measured elsewhere (benchmarks/results/<device>/, e.g. h200): their own table, and
    # the page's <!-- bench:<device>:start/end --> block where it has one
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
    readme = None if args.no_readme else (args.readme or bench_dir.parent / PAGE)
    if readme is not None and not readme.exists():
        raise ValueError(f"{readme} does not exist (pass --readme PAGE or --no-readme)")
    table, rd = write_outputs(bench_dir, readme, runs)
    print(f"wrote {table}" + (f"\nupdated the bench block of {rd}" if rd else ""))
    return 0 if runs is None or all(r["ok"] for r in runs.values()) else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return cmd_bench(args)
    except ValueError as e:
        print(f"python -m benchmarks: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
