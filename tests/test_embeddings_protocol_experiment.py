"""``experiments.embeddings_protocol`` and the embeddings report: the driver runs on a tiny
configuration, and the report's tables have a row per run."""

import pytest


@pytest.mark.heavy  # compiles a full Adam program and the exact solver: ~1 min on a loaded CPU
def test_protocol_driver_runs_tiny(tmp_path):
    from experiments import embeddings_protocol as E
    from experiments.common import load_spec

    spec = load_spec("tiny", "paper", "embeddings-protocol", tmp_path / "cache")
    res = E.main(spec, tmp_path, runs=[("softmax", 16, 8, 0, 20, True)])
    assert (tmp_path / "results" / "embeddings_protocol_tiny.json").exists()
    (run,) = res["runs"]
    assert run["epochs"] == 20 and run["finite"]
    # Adam's bound on each weight's move (docs/theory.md §2e) holds for the embeddings
    assert 0.0 < run["max_entry_move"] <= run["adam_bound"]
    assert set(res["exact_map"]["softmax/16"]["8/0"]) >= {"a1", "aG", "ok"}


def test_report_tables_have_a_row_per_run():
    """The tables of docs/reports/embeddings_protocol.md, from its committed JSON."""
    import json
    from pathlib import Path

    from experiments.report.embeddings import posterior_table, protocol_table

    results = Path(__file__).resolve().parents[1] / "docs" / "reports" / "results"
    for name, render in (
        ("embeddings_protocol", protocol_table),
        ("embeddings_posterior", posterior_table),
    ):
        path = results / f"{name}.json"
        if not path.exists():
            pytest.skip(f"no {path}")
        res = json.loads(path.read_text())
        lines = render(res).splitlines()
        assert len(lines) == 2 + len(res["runs"]) and lines[1].startswith("|---|")
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines[2:])
