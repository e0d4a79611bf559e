"""cli/transition.py: ``copyhead transition`` writes its result and figure by default, into a
folder named after the configuration; a folder holding another run is refused, the same run's
result is printed again without work; ``--json`` keeps stdout to the JSON alone. The
computation is replaced by a committed result (the numbers are not what is tested here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from copyhead_jax.cli import build_parser, main
from copyhead_jax.cli.transition import out_folder
from tests.helpers import one_line_error

RESULT = Path(__file__).resolve().parents[2] / "docs/reports/results/transition_paper-chi-lik.json"
ARGV = "transition --method ti --preset plain --L 4 --V 3 --width inf --quiet".split()


def test_the_default_folder_is_named_after_the_configuration():
    p = build_parser()
    f = lambda *a: out_folder(p.parse_args(["transition", "--preset", "plain", *a]))  # noqa: E731
    assert f() == Path("results/transition_softmax_L25_V5_plain")
    assert f("--L", "15", "--V", "7") == Path("results/transition_softmax_L15_V7_plain")
    wide, other = f("--width", "inf"), f("--width", "inf", "--seed", "1")
    assert re.fullmatch(r"transition_softmax_L25_V5_plain-[0-9a-f]{8}", wide.name)
    assert other != wide and f("--width", "inf") == wide  # other flags, another folder
    assert f("--json", "--no-plot") == f()  # output flags change no number
    assert f("--out", "x") == Path("x")


def test_default_output_written_kept_and_another_run_refused(tmp_path, monkeypatch, capsys):
    from copyhead_jax.transition import search
    from copyhead_jax.transition.store import write_checkpoint

    canned, calls = json.loads(RESULT.read_text()), []

    def fake(cfg, *, out, record, **kw):
        calls.append(out)
        res = dict(canned, **record)
        write_checkpoint(out / "transition.json", res)
        return res

    monkeypatch.setattr(search, "transition", fake)
    # the figure as the writer's file alone (drawing it is the plots' tests' job; seconds)
    monkeypatch.setattr("copyhead_jax.plots.transition.transition_figure", lambda res: "figure")
    monkeypatch.setattr(
        "copyhead_jax.plots.style.save_figure",
        lambda fig, path, *a, **k: Path(path).write_text(fig) and Path(path),
    )
    monkeypatch.chdir(tmp_path)
    assert main([*ARGV, "--json"]) == 0
    first = capsys.readouterr()
    res = json.loads(first.out)  # nothing but the JSON on stdout
    (folder,) = (tmp_path / "results").iterdir()
    assert folder.name.startswith("transition_softmax_L4_V3_plain-") and "saved" in first.err
    assert (folder / "transition.png").is_file()
    assert json.loads((folder / "transition.json").read_text())["fingerprint"] == res["fingerprint"]
    assert main([*ARGV, "--json"]) == 0  # the same run: printed again, no work
    again = capsys.readouterr()
    assert len(calls) == 1 and json.loads(again.out) == res and "kept" in again.err
    one_line_error(
        capsys,
        main([*ARGV, "--seed", "1", "--out", str(folder)]),
        "holds the result of another run",
    )
    assert len(calls) == 1


def test_edge_guard_reaches_the_search_and_its_range_is_one_line(capsys):
    """``--edge-guard`` sets the profile search's guard (0 places probes as the runs committed
    before it did); outside [0, 0.5) a one-line error names the flag before any work."""
    from copyhead_jax.cli.transition_settings import profile_settings_from_args

    base = "transition --preset plain --L 4 --V 3 --width inf".split()
    for given, want in (([], 0.25), (["--edge-guard", "0"], 0.0)):
        args = build_parser().parse_args(base + given)
        args.L_eff = 4
        assert profile_settings_from_args(args).edge_guard == want
    rc = main(base + ["--edge-guard", "0.5"])
    one_line_error(capsys, rc, re.escape("--edge-guard must lie in [0, 0.5), got 0.5"))


def test_placement_reaches_the_search_and_fixed_keeps_the_fingerprints_of_runs_before_it():
    """``--placement`` sets what the probes refine once one is bimodal. ``fixed`` runs as the
    command did before the flag existed, so it stays out of the fingerprint (results saved then
    still match their command); the default ``basins`` is another run, with its own fingerprint
    and default folder."""
    from copyhead_jax.cli.transition_folder import run_fingerprint, shaping_flags
    from copyhead_jax.cli.transition_settings import config_from_args, profile_settings_from_args
    from copyhead_jax.runner import fingerprint
    from copyhead_jax.transition.store import resume_identity

    base = "transition --preset plain --L 4 --V 3 --width inf".split()
    parsed = {}
    for given in ([], ["--placement", "fixed"]):
        args = build_parser().parse_args(base + given)
        args.L_eff = 4
        parsed[args.placement] = args
        assert profile_settings_from_args(args).placement == args.placement
    fixed, basins = parsed["fixed"], parsed["basins"]
    cfg = config_from_args(fixed)
    flags = {k: v for k, v in shaping_flags(fixed).items() if k not in ("placement", "only_seeds")}
    before = fingerprint({"config": resume_identity(cfg), "flags": flags})
    assert run_fingerprint(fixed, cfg) == before
    assert run_fingerprint(basins, cfg) != before
    assert out_folder(fixed) != out_folder(basins)
