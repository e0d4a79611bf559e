"""``python -m benchmarks``: the table renderer (ratios from raw timings), the block of
docs/reports/benchmarks.md, the flags, the suite runner.

No benchmark is run: the renderer is fed small synthetic result dictionaries, the runner tiny
stand-in scripts.
"""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import __main__ as bc  # noqa: E402
from benchmarks.render import render  # noqa: E402


def _sweep(fused_ms=2.0, loop_ms=4.0, torch_ms=6.0, roofline_ms=0.5, width=128, runs=64):
    row = {
        "attention": "softmax",
        "width": width,
        "runs": runs,
        "P": 100,
        "fused_ms": fused_ms,
        "loop_ms": loop_ms,
        "torch_ms": torch_ms,
        "roofline_ms": roofline_ms,
        "peak_bytes_per_run": 3 * 2**20,
        # stale derived fields that the renderer must not trust
        "loop_over_fused": 99.0,
        "torch_over_fused": 99.0,
        "roofline_eff_fused": 0.99,
    }
    return {
        "quick": True,
        "date": "2030-01-02T03:04:05+00:00",
        "environment": {
            "platform": "TestOS-1",
            "backend": "cpu",
            "devices": ["cpu:0"],
            "versions": {"jax": "9.9"},
            "torch": "7.7",
        },
        "peaks": {"peak_flops": 1e11, "peak_bandwidth": 4e10},
        "rows": [row],
        "per_run_memory": {"10000": {"peak": 8 * 4e8, "W_G_bytes": 4e8}},
    }


def _sgld():
    walls = {
        "blackjax": [3.0, 2.0],
        "copyhead": [1.5, 1.0],
        "copyhead_lean": [0.8, 2.0],
        "gradient_only": [0.5, 0.6],
    }
    return {
        "quick": True,
        "target_ratio": 1.2,
        "problem": {"n_params": 11, "n_data": 50},
        "platform": {"system": "TestOS-1", "cpu_count": 3},
        "results": [
            {
                "n_chains": 4,
                "n_steps": 10,
                "chain_steps_per_s": {"blackjax": 20.0, "copyhead": 40.0},
                "ratio_vs_blackjax": {"copyhead": 99.0},  # stale: not used
                "wall_s": walls,
                "cpu_s": {"blackjax": [4.0], "copyhead": [1.0]},
                "compiled_memory": {"copyhead": {"temp_bytes": 2**20}},
                "maxrss_mb": 123.0,
            }
        ],
    }


def _theory():
    return {
        "grid": {"L": [10, 59, 50], "P": [1.0, 1e5, 200], "preset": "paper"},
        "baseline_stride": 10,
        "linear": {"jax_s": 0.25, "scipy_s": 30.0, "ratio": 1.0},
        "softmax": {"jax_s": 0.25, "scipy_s": 10.0, "ratio": 1.0},
        "maxrss_mb": 200.0,
    }


def _sample():
    return {"seconds": {"fused": 2.0, "run_by_run": 5.0}, "roofline_eff_fused": 0.04}


def _results(**over):
    res = {
        "bench_sweep": _sweep(),
        "bench_sgld": _sgld(),
        "bench_theory": _theory(),
        "bench_sample_sweep": _sample(),
    }
    res.update(over)
    return res


def _line(text, start):
    hits = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(hits) == 1, (start, hits)
    return hits[0]


def test_ratios_are_recomputed_from_raw_timings():
    out = render(_results())
    # sweep: loop 4 / fused 2 = 2.00x, torch 6 / 2 = 3.00x, roofline 0.5 / 2 = 25%
    row = _line(out, "| softmax | 128 | 64 |")
    assert "| 2.000 | 2.00x | 3.00x | 25% (12%, 8%) | 3.0 MiB |" in row
    assert "2.00x | - | - |" in _line(out, "| sweep: fused vs per-run JAX loop")
    assert "| 3.00x | >= 3x | yes |" in _line(out, "| sweep: fused vs eager PyTorch, width <= 256")
    assert "| 25% | >= 25% | yes |" in _line(out, "| sweep: roofline efficiency, width <= 256")
    # per-run memory: 8 x the bytes of W^G, target 4.2x
    assert "8.00x the bytes of W^G | <= 4.2x | **no** |" in _line(out, "| sweep: per-run memory")
    # SGLD: best blackjax wall 2.0 / best copyhead wall 1.0 = 2.00x; lean 2.0 / 0.8 = 2.50x
    assert "| 4 | 10 | 20 | 2.00x | 2.50x | 4.00x | 4.00x | 1.0 MiB |" in out
    assert "2.00x at 4 | >= 1.2x | yes |" in _line(out, "| SGLD:")
    # theory: (30 + 10) / (0.25 + 0.25) = 80x; per attention 120x and 40x
    assert "| 80x, 0.50 s after compile | >= 50x, < 1 s | yes |" in _line(out, "| theory:")
    assert "| 120x |" in _line(out, "| linear | 0.250 |")
    assert "| 40x |" in _line(out, "| softmax | 0.250 |")
    assert "every 10th L" in out
    # sampler: 5 / 2 = 2.50x
    assert "| 2.50x (roofline 4%) |" in _line(out, "| sweep sampler:")


def test_readme_block_is_the_short_form():
    full, short = render(_results()), render(_results(), detail=False)
    assert "**SGLD**" in full and "**SGLD**" not in short and "| linear | 0.250 |" not in short
    for start in ("| sweep: fused vs per-run", "| SGLD:", "| theory:", "| softmax | 128 |"):
        assert _line(short, start) == _line(full, start)
    assert "benchmarks/results/README.md" in short


def test_targets_missed_are_flagged_and_platform_and_date_shown():
    slow = _sweep(fused_ms=4.0, loop_ms=2.0, torch_ms=4.0, roofline_ms=0.4)
    out = render(_results(bench_sweep=slow))
    assert "0.50x" in _line(out, "| sweep: fused vs per-run JAX loop")
    assert "| 1.00x | >= 3x | **no** |" in _line(
        out, "| sweep: fused vs eager PyTorch, width <= 256"
    )
    assert "| 10% | >= 25% | **no** |" in _line(out, "| sweep: roofline efficiency, width <= 256")
    assert "TestOS-1" in out and "3 CPUs" in out and "jax 9.9" in out and "torch 7.7" in out
    assert "2030-01-02" in out and "`--quick` settings" in out


def test_missing_and_failed_benchmarks_are_reported():
    res = _results(bench_theory=None)
    runs = {
        "bench_sgld": {"ok": False, "returncode": 3},
        "bench_theory": {"ok": False, "returncode": 1},
    }
    out = render(res, runs)
    assert "| theory:" not in out
    assert "**failed** (exit 3); figures above: previous run" in _line(out, "| bench_sgld |")
    assert _line(out, "| bench_theory |").endswith("| **failed** (exit 1) |")
    assert _line(out, "| bench_sample_sweep |").endswith("| ok |")
    assert "123 MB" in _line(out, "| bench_sgld |")  # peak memory falls back to the rows'


def test_readme_block_replacement_is_idempotent_and_local():
    before = "# Title\n\ntext before\n\n## Benchmarks\n\nprose\n\n"
    after = "\nmore prose\n\n## Next\n\ntail <!-- not a marker -->\n"
    text = before + bc.START + "\nold table\n" + bc.END + after
    block = render(_results())
    once = bc.replace_block(text, block)
    assert once.startswith(before) and once.endswith(bc.END + after)
    assert "old table" not in once and block.strip() in once
    assert bc.replace_block(once, block) == once
    with pytest.raises(ValueError, match="no <!-- bench:start -->"):
        bc.replace_block("no markers here", block)
    with pytest.raises(ValueError, match="more than one"):
        bc.replace_block(text + bc.START + bc.END, block)


def test_render_only_writes_table_and_readme(tmp_path):
    bench_dir = tmp_path / "benchmarks"
    (bench_dir / "results").mkdir(parents=True)
    (bench_dir / "bench_sweep.py").write_text("raise SystemExit('must not run')\n")
    for name, d in _results().items():
        (bench_dir / "results" / f"{name}.json").write_text(json.dumps(d))
    readme = tmp_path / bc.PAGE  # the default page, next to benchmarks/
    readme.parent.mkdir(parents=True)
    readme.write_text(f"head\n{bc.START}\n{bc.END}\nfoot\n")
    args = bc.build_parser().parse_args(["--render-only", "--bench-dir", str(bench_dir)])
    assert bc.cmd_bench(args) == 0
    table = (bench_dir / "results" / "README.md").read_text()
    assert table.startswith("# Benchmark results") and "| 2.00x |" in table
    text = readme.read_text()
    assert text.startswith(f"head\n{bc.START}\n") and text.endswith(f"{bc.END}\nfoot\n")
    assert bc.cmd_bench(args) == 0 and readme.read_text() == text


def test_device_subfolder_gets_its_own_table_and_readme_block(tmp_path):
    # results measured on another machine (benchmarks/results/h200/) render separately, with
    # their own ratios, into README's bench:h200 block; the main block keeps the main results
    bench_dir = tmp_path / "benchmarks"
    sub = bench_dir / "results" / "h200"
    sub.mkdir(parents=True)
    for name, d in _results().items():
        (bench_dir / "results" / f"{name}.json").write_text(json.dumps(d))
    gpu = _results(bench_sweep=_sweep(fused_ms=1.0, loop_ms=5.0, torch_ms=50.0, width=4096))
    for name, d in gpu.items():
        (sub / f"{name}.json").write_text(json.dumps(d))
    s0, e0 = bc.markers("h200")
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{bc.START}\n{bc.END}\nb\n{s0}\n{e0}\nc\n")
    bc.write_outputs(bench_dir, readme)
    text = readme.read_text()
    main_block = text[text.index(bc.START) : text.index(bc.END)]
    gpu_block = text[text.index(s0) : text.index(e0)]
    assert "| 2.00x |" in main_block and "5.00x" not in main_block
    assert "50.00x" not in main_block and "| 5.00x | 50.00x |" in gpu_block
    assert "benchmarks/results/h200/*.json" in gpu_block
    assert (sub / "README.md").read_text().startswith("# Benchmark results")
    assert text.startswith("a\n") and text.endswith(f"{e0}\nc\n")


def test_parser_accepts_the_flags():
    p = bc.build_parser()
    a = p.parse_args([])
    assert (a.quick, a.render_only, a.only, a.no_readme) == (False, False, None, False)
    a = p.parse_args(["--quick", "--only", "sweep", "sgld", "--no-readme"])
    assert a.quick and a.only == ["sweep", "sgld"] and a.no_readme
    with pytest.raises(SystemExit):
        p.parse_args(["--only", "nonsense"])


def test_suite_reports_a_failing_benchmark_and_runs_the_others(tmp_path, capsys):
    """Tiny stand-in scripts (no JAX): one writes its JSON, one fails, one writes nothing."""
    bench_dir = tmp_path / "benchmarks"
    (bench_dir / "results").mkdir(parents=True)
    write = (
        "import json, sys, pathlib\n"
        "assert sys.argv[1:] == ['--quick'], sys.argv\n"
        "p = pathlib.Path(__file__).parent / 'results' / '{name}.json'\n"
        "p.write_text(json.dumps({data!r}))\n"
    )
    (bench_dir / "bench_sweep.py").write_text(write.format(name="bench_sweep", data=_sweep()))
    (bench_dir / "bench_sgld.py").write_text("raise SystemExit(3)\n")
    (bench_dir / "bench_theory.py").write_text("print('no output file')\n")
    (bench_dir / "bench_sample_sweep.py").write_text(
        write.format(name="bench_sample_sweep", data=_sample())
    )
    (bench_dir / "bench_reduced.py").write_text("print('no output file')\n")
    (bench_dir / "bench_posterior.py").write_text("print('no output file')\n")
    (bench_dir / "bench_paper_posterior.py").write_text("print('no output file')\n")
    (bench_dir / "bench_pooled.py").write_text("print('no output file')\n")
    readme = tmp_path / bc.PAGE
    readme.parent.mkdir(parents=True)
    readme.write_text(f"{bc.START}\n{bc.END}\n")
    argv = ["--quick", "--bench-dir", str(bench_dir)]
    args = bc.build_parser().parse_args(argv)
    assert bc.cmd_bench(args) == 1  # not every benchmark succeeded
    log = capsys.readouterr().out
    assert "[4/8] bench_sample_sweep: ok" in log and "suite: 2/8 ok" in log
    sweep = json.loads((bench_dir / "results" / "bench_sweep.json").read_text())
    run = sweep["bench_run"]
    assert run["returncode"] == 0 and run["quick"] and run["ok"] is True
    assert run["command"] == ["python", "benchmarks/bench_sweep.py", "--quick"]
    assert sweep["rows"] == _sweep()["rows"]  # the script's own results are kept beside the record
    assert len(run["load_average_1min"]) == 2
    text = readme.read_text()
    assert "| bench_sgld |" in text and "**failed** (exit 3)" in text
    assert "**failed** (exited 0 but did not write bench_theory.json)" in text
    assert _line(text, "| bench_sweep |").endswith("| ok |")
