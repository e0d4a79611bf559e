"""benchmarks/bench_posterior.py's block of the benchmark tables: ratios recomputed from the raw
ESS and CPU seconds (no benchmark is run: the renderer is fed a synthetic result)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.render import render  # noqa: E402
from benchmarks.suite import NAMES  # noqa: E402


def _cand(cpu_s, ess_U, ess_1, ess_G, n_grad=None):
    return {
        "cpu_s": cpu_s,
        "ess": {"U": ess_U, "c1": ess_1, "cG": ess_G},
        "xla_temp_bytes": 2**20,
        "ess_per_cpu_s": {"U": 999.0},
        **({} if n_grad is None else {"n_grad": n_grad}),
    }  # stale: the renderer must recompute


TARGETS = {
    "per_cpu_s": {"numpyro_nuts": 5.0, "blackjax_nuts": 2.0},
    "per_grad": {"numpyro_nuts": 1.0, "blackjax_nuts": 1.0},
}


def _posterior(under_load=True):
    return {
        "targets": TARGETS,
        "measured_under_load": under_load,
        "quick": True,
        "date": "2030-01-02T03:04:05+00:00",
        "settings": {"L": 25, "V": 5, "width": "10000", "chains": 2, "warmup": 10, "samples": 20},
        "rows": [
            {
                "attention": "linear",
                "P": 32,
                "dim": 900,
                "candidates": {
                    "copyhead_hmc": _cand(1.0, 100.0, 50.0, 80.0, n_grad=1000),
                    "numpyro_nuts": _cand(10.0, 200.0, 100.0, 40.0, n_grad=4000),
                    "blackjax_nuts": _cand(2.0, 100.0, 100.0, 160.0, n_grad=500),
                    "blackjax_hmc": {"error": "TypeError: boom"},
                    "copyhead_hmc_unit": _cand(4.0, 100.0, 50.0, 80.0),
                },
            }
        ],
        "transition": {"status": "not measured: hook"},
    }


def _line(text, start):
    hits = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(hits) == 1, (start, hits)
    return hits[0]


def test_posterior_ratios_are_ess_per_cpu_second_and_per_gradient_ours_over_theirs():
    out = render({"bench_posterior": _posterior()})
    # ours: U 100/1, c1 50/1, cG 80/1; NumPyro: 200/10, 100/10, 40/10 -> 5x, 5x, 20x
    row = _line(out, "| posterior: collapsed HMC vs NumPyro NUTS, ESS/CPU-s")
    assert "linear P=32: 5.00x - 20.00x | >= 5x | yes |" in row
    assert "(measured under load)" in row
    # BlackJAX NUTS: 100/2, 100/2, 160/2 -> 2x, 1x, 1x: the worst field decides
    row = _line(out, "| posterior: collapsed HMC vs BlackJAX NUTS, ESS/CPU-s")
    assert "linear P=32: 1.00x - 2.00x | >= 2x | **no** |" in row
    # per gradient: ours 0.1, 0.05, 0.08; NumPyro 0.05, 0.025, 0.01 -> 2x, 2x, 8x;
    # BlackJAX 0.2, 0.2, 0.32 -> 0.5x, 0.25x, 0.25x
    row = _line(out, "| posterior: collapsed HMC vs NumPyro NUTS, ESS per gradient")
    assert "linear P=32: 2.00x - 8.00x | >= 1x | yes |" in row
    row = _line(out, "| posterior: collapsed HMC vs BlackJAX NUTS, ESS per gradient")
    assert "linear P=32: 0.25x - 0.50x | >= 1x | **no** |" in row
    # HMC failed; unit mass: 4x slower and counted no gradients
    detail = _line(out, "| linear | 32 | 900 |")
    assert (
        "| 100 | 5.00x - 20.00x | 1.00x - 2.00x | failed | 4.00x | 2.00x - 8.00x | "
        "0.25x - 0.50x | 1.0 MiB |" in detail
    )
    assert "Bayesian transition (`copyhead transition`): not measured: hook." in out
    assert "| bench_posterior |" in out  # a row of the runs table


def test_posterior_block_is_absent_without_results_and_registered_in_the_suite():
    assert "posterior" in NAMES
    out = render({"bench_posterior": None})
    assert "| posterior:" not in out and "**Posterior**" not in out
    short = render({"bench_posterior": _posterior(under_load=False)}, detail=False)
    assert "**Posterior**" not in short and "under load" not in short
    assert "| posterior: collapsed HMC" in short
    old = _posterior(under_load=False)  # a file from before the gradient counts and targets
    old["target_ratio"] = 10.0
    del old["targets"]
    for c in old["rows"][0]["candidates"].values():
        c.pop("n_grad", None)
    rows = [ln for ln in render({"bench_posterior": old}).splitlines() if "| posterior:" in ln]
    assert len(rows) == 1 and "5.00x - 20.00x | >= 10x | **no** |" in rows[0]


def test_transition_timing_calls_the_real_transition_and_extrapolates(monkeypatch):
    """The bench's transition hook calls ``ch.transition`` (its default method, the free-energy
    profile) on the paper preset (softmax) with the seeds asked for, and extrapolates the
    10-seed time from fewer seeds (marked so)."""
    import copyhead_jax as ch
    from benchmarks import bench_posterior as bp

    seen = {}

    def fake(cfg, *, n_seeds, ckpt_dir, progress):
        seen.update(
            L=cfg.task.L,
            V=cfg.task.V,
            width=cfg.model.width,
            n_seeds=n_seeds,
            att=cfg.model.attention,
            budget=cfg.sweep.memory_budget_gb,
        )
        return {
            "method": "profile",
            "verdict": "first order",
            "P_star": 1248.0,
            "interval": [1200.0, 1300.0],
            "summary": {"per_seed": [1248.0] * n_seeds},
            "seeds": [{"probes": [{"P": 1036}, {"P": 1213}]}] * n_seeds,
            "flagged": [],
        }

    monkeypatch.setattr(ch, "transition", fake)
    r = bp.transition_time(2, 32.0)
    assert seen == {
        "L": 25,
        "V": 5,
        "width": 10_000,
        "n_seeds": 2,
        "att": "softmax",
        "budget": 32.0,
    }
    assert r["extrapolated"] and r["cpu_s_10_seeds"] == r["cpu_s_per_seed"] * 10
    assert r["probes_per_seed"] == [[1036, 1213]] * 2 and "extrapolated" in r["status"]
    assert "first order" in r["status"]
    assert bp.transition_time(0, 32.0)["status"].startswith("not measured")


def _paper_posterior(total_h: float, all_met: bool) -> dict:
    head = {"fit_P": [4, 1000], "per_run_cpu_s": [2.0, 300.0], "compile_cpu_s": 40.0}
    return {
        "heads": {"softmax": {**head, "scaled_cpu_s": total_h * 3600, "all_met": all_met}},
        "target": {"ess": 400.0, "cpu_h": 2.0},
        "config": {"measured_seeds": 1, "P_grid": list(range(16)), "n_seeds": 10},
        "scaled_total_cpu_h": total_h,
        "met": total_h <= 2.0 and all_met,
        "load_average": {"start": [1.0], "end": [1.1]},
    }


def test_paper_posterior_row_says_met_only_within_the_budget_with_every_target_reached():
    assert "bench_paper_posterior" in {f"bench_{n}" for n in NAMES}
    fast = render({"bench_paper_posterior": _paper_posterior(1.5, True)}, detail=False)
    assert "| <= 2 CPU-h | yes |" in fast and "both heads ~1.5 CPU-h" in fast
    slow = render({"bench_paper_posterior": _paper_posterior(7.25, True)}, detail=False)
    assert "| <= 2 CPU-h | **no** |" in slow and "~7.2 CPU-h" in slow
    short = render({"bench_paper_posterior": _paper_posterior(1.5, False)}, detail=False)
    assert "short of the target" in short


def test_the_short_phase_sweep_has_its_own_row_naming_what_it_changed():
    """A run with other lengths (``SHORT_PHASES``) is shown beside the default's, never in its
    place, and its row says which sampler settings it changed and its round length."""
    from benchmarks.render import SHORT_PHASES

    fast = _paper_posterior(1.9, True)
    fast["config"]["changes"] = {"n_warmup": 100, "n_adapt": 100}
    fast["heads"]["softmax"]["sampler"] = {"round_iter": 50}
    both = render(
        {"bench_paper_posterior": _paper_posterior(2.9, True), SHORT_PHASES: fast}, detail=False
    )
    rows = [r for r in both.splitlines() if "posterior sweep of the paper config" in r]
    assert len(rows) == 2
    assert "default lengths" in rows[0] and "~2.9 CPU-h" in rows[0] and "**no**" in rows[0]
    assert "n_warmup 100, n_adapt 100, rounds of 50" in rows[1] and "| yes |" in rows[1]
