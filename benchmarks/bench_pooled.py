"""Pooled against per-chain adaptation of the collapsed HMC: gradients to a target ESS.

    python benchmarks/bench_pooled.py [--attention linear softmax] [--P 64 322] [--seeds 3]
        [--iterations 400] [--out FILE]

The paper preset (L = 25, V = 5, width 10,000 quenched through the exact reduction), each head's
default collapsed HMC at a fixed length (``--iterations`` after its warm-up and adaptation, no
target), adaptations on the same fits, seeds and chain keys (``--variants``; by default three):
each chain its own step and mass (the default), one step and mass pooled over the chains of a
start group (``pooled_adaptation``), the pooled one with half the adaptation iterations; also
half the adaptation alone and a Langevin warm-up of 100 steps instead of 500, and with those
short phases longer trajectories (7 leapfrog steps, not 5) or a lower acceptance target (0.65,
not 0.75). Per run: the
smallest ESS of U and the two order parameters (ArviZ's rank-normalised estimator over the
chains), per 1,000 gradients of the run (each chain: ``n_warmup`` Langevin steps, then
``(n_adapt + n_iter) x n_leapfrog`` leapfrog steps), and what decides the cost of a run that
stops when enough: the gradients to ESS 400, the warm-up and adaptation plus the iterations at
which the run's measured ESS per iteration reaches 400 (the rounds' granularity left out). The
ratio quoted is the first variant's gradients to 400 over each other's. The variants are
compared with the first run by run (same data, same keys; their chains part at the first
adaptation that differs), so the seed-to-seed spread of the data does not enter the ratios;
their spread over runs is the error quoted. CPU seconds of each ``run_sampler`` call
(compilation included) are printed beside.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.sampling import default_sampler, run_sampler
from copyhead_jax.storage import environment

sys.path.insert(0, str(Path(__file__).parent))
from bench_reduced import paper_config  # noqa: E402
from bench_rounds import cpu  # noqa: E402

#: The adaptations compared (``--variants``), each a change of the head's default sampler;
#: ``half_adapt``: half its adaptation iterations. The first named is the reference.
VARIANTS = {
    "per-chain": dict(pooled_adaptation=False),
    "pooled": dict(pooled_adaptation=True),
    "pooled, half adaptation": dict(pooled_adaptation=True, half_adapt=True),
    "half adaptation": dict(half_adapt=True),
    "half adaptation, warm-up 100": dict(half_adapt=True, n_warmup=100),
    "pooled, half adaptation, warm-up 100": dict(
        pooled_adaptation=True, half_adapt=True, n_warmup=100
    ),
    "half adaptation, warm-up 100, 7 leapfrog": dict(half_adapt=True, n_warmup=100, n_leapfrog=7),
    "half adaptation, warm-up 100, accept 0.65": dict(
        half_adapt=True, n_warmup=100, target_accept=0.65
    ),
}
DEFAULT_VARIANTS = ("per-chain", "pooled", "pooled, half adaptation")


def gradients(mc) -> int:
    """Gradients of one run: every chain's Langevin warm-up, adaptation and draws."""
    return mc.n_chains * (mc.n_warmup + (mc.n_adapt + mc.n_iter) * mc.n_leapfrog)


def to_target(mc, ess: np.ndarray, target: float = 400.0) -> np.ndarray:
    """Gradients a run needs to reach ESS ``target``: its warm-up and adaptation, then the
    iterations at which its measured ESS per iteration reaches the target."""
    per_iter = ess / mc.n_iter
    return mc.n_chains * (mc.n_warmup + (mc.n_adapt + target / per_iter) * mc.n_leapfrog)


def measure(attention: str, P_list, seeds: int, n_iter: int, variants) -> dict:
    fit = ch.run_sweep(
        paper_config(attention, P=tuple(P_list), n_seeds=seeds), progress=False, keep_params=True
    )
    out = {}
    for name in variants:
        v = VARIANTS[name]
        base = default_sampler(fit)
        changes = {k: x for k, x in v.items() if k != "half_adapt"}
        if v.get("half_adapt"):
            changes["n_adapt"] = base.n_adapt // 2
        mc = dataclasses.replace(base, n_iter=n_iter, ess_target=0.0, **changes)
        c0, t0 = cpu(), time.time()
        post = run_sampler(fit, mc, progress=False)
        e = post.arrays["ess_reached"]  # [P, seed]: the smallest ESS of U and the orders
        out[name] = {
            "ess_min": e.tolist(),
            "gradients": gradients(mc),
            "ess_per_1k_gradients": (1000 * e / gradients(mc)).tolist(),
            "gradients_to_400": to_target(mc, e).tolist(),
            "step": np.asarray(post.arrays["step"]).mean(-1).tolist(),
            "cpu_s": cpu() - c0,
            "wall_s": time.time() - t0,
            "n_adapt": mc.n_adapt,
        }
        print(
            f"{attention} {name:>24}: ESS/1k grad "
            + "  ".join(
                f"P={P}: " + " ".join(f"{x:.2f}" for x in row)
                for P, row in zip(P_list, out[name]["ess_per_1k_gradients"])
            )
            + f"  ({out[name]['cpu_s']:.0f} CPU-s)",
            flush=True,
        )
    ref = np.asarray(out[variants[0]]["gradients_to_400"])
    for name in variants[1:]:
        r = ref / np.asarray(out[name]["gradients_to_400"])
        out[name]["ratio_to_per_chain"] = r.tolist()
        out[name]["ratio_geomean"] = float(np.exp(np.mean(np.log(r))))
        out[name]["ratio_log_sd"] = float(np.std(np.log(r), ddof=1)) if r.size > 1 else None
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--attention", nargs="+", default=["linear", "softmax"])
    ap.add_argument("--P", nargs="+", type=int, default=[64, 322])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(DEFAULT_VARIANTS))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_pooled.json"))
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore", ch.RunHealthWarning)  # short fixed runs: ESS < 400 expected
    start = {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    start["load"] = os.getloadavg()[0]
    res = {h: measure(h, a.P, a.seeds, a.iterations, a.variants) for h in a.attention}
    for h, r in res.items():
        for name in a.variants[1:]:
            g, s = r[name]["ratio_geomean"], r[name]["ratio_log_sd"]
            n = len(a.P) * a.seeds
            err = "" if s is None else f" (x/÷ {np.exp(s / np.sqrt(n)):.2f}, {n} runs)"
            print(f"{h} {name}: {g:.2f}x fewer gradients to ESS 400 than {a.variants[0]}{err}")
    out = {
        "start": start,
        "end_load": os.getloadavg()[0],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "args": vars(a),
        "results": res,
        "environment": environment(),
    }
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"saved {a.out}")
    return out


if __name__ == "__main__":
    main()
