"""Posterior speed: effective draws per CPU-second and per gradient of the project's collapsed HMC
against NumPyro NUTS, BlackJAX NUTS and BlackJAX HMC (both with window adaptation), on the SAME
log density.

For each head (linear, softmax) and P (default 32 and 322; L = 25, V = 5, the paper preset's exact
MAP, width 10,000), one seed's fit defines the density: the readout integrated out exactly, the
marginal energy U_m(W^G) of docs/theory.md §9.1 in the whitened coordinates ``x = x_fit + C w`` of
its Hessian at the fit (``copyhead_jax.sampling.collapsed_hmc``), so that every sampler sees the
same function of w and the same conditioning. Every draw is completed with an exact readout draw and
recorded as the sweep sampler does (``copyhead_jax.sampling.Sampler.observe``): U and the order
parameters. Per candidate: CPU seconds of the process after compilation (warm-up / adaptation
included), the gradients of U taken (warm-up included; NUTS: the integration steps its trees
took, as NumPyro and BlackJAX count them), ESS of U and of each order parameter
(``copyhead_jax.sampling.ess``, equal to NumPyro's estimator), ESS per CPU-second and per
gradient, the ratios ours / theirs (> 1: ours is better) against each NUTS with the targets of
``TARGETS`` (the worst field counts), XLA temp memory where compiled ahead of time, and the
process's peak RSS.

    python benchmarks/bench_posterior.py [--quick] [--P 32 322] [--width 10000|inf]
        [--transition-seeds 10] [--transition-only]

With ``--transition-seeds N`` it also times ``copyhead transition`` (``ch.transition``, the
free-energy profile) on the paper preset for N seeds (target: 10 seeds in <= 60 CPU-min; one seed
took ~1.6 CPU-h here, so the default, 0, leaves it out).

Ours runs twice: as shipped (``copyhead_hmc``: ``HMCConfig``'s ``adapt_mass``) and with unit
mass (``copyhead_hmc_unit``), the mass adaptation's own A/B. ``--candidates`` picks a subset.

``--quick``: P = 32 only, 2 chains, 150 warm-up and 300 kept iterations. ``blackjax`` and
``numpyro`` are benchmark-only extras; the package imports neither for sampling.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import resource
import sys
import time
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.models import head_class
from copyhead_jax.objective import Objective
from copyhead_jax.sampling import (
    LEAPFROG,
    REDUCED_HMC,
    collapsed_target,
    draw_fields,
    draw_readout,
    ess,
    hmc_chains,
    marginal_energy,
    marginal_whitening,
    sampler_for,
    with_WG,
)

OUT = Path(__file__).parent / "results" / "bench_posterior.json"
BASELINE = "numpyro_nuts"
#: ours / theirs, worst field: per CPU-second against each NUTS, and per gradient against both
TARGETS = {
    "per_cpu_s": {"numpyro_nuts": 5.0, "blackjax_nuts": 2.0},
    "per_grad": {"numpyro_nuts": 1.0, "blackjax_nuts": 1.0},
}
CANDIDATES = ("copyhead_hmc", "copyhead_hmc_unit", "numpyro_nuts", "blackjax_nuts", "blackjax_hmc")


def maxrss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return kb / 1024 / (1024 if sys.platform == "darwin" else 1)


def make_problem(attention: str, P: int, width):
    """The exact MAP of one seed at ``P`` and the whitened marginal density around it."""
    cfg = ch.preset("paper-map").replace(
        model=dict(attention=attention, width=width),
        solver=dict(continuation=False),
        sweep=dict(P=(P,), n_seeds=1),
    )
    t0 = time.process_time()
    res = ch.run_sweep(cfg, keep_params=True, progress=False)
    fit_cpu = time.process_time() - t0
    obj = Objective.from_config(cfg)
    arrays = res.head_arrays((0, 0))
    tok = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0][:P])
    mask = jnp.ones((P,), jnp.float32)
    cls = head_class(attention)
    with jax.enable_x64(True):
        h64 = cls.from_arrays(cfg, {k: jnp.asarray(v, jnp.float64) for k, v in arrays.items()})
        C = np.asarray(marginal_whitening(h64, tok, jnp.ones((P,), jnp.float64), obj))
    head = cls.from_arrays(cfg, {k: jnp.asarray(v, jnp.float32) for k, v in arrays.items()})
    return cfg, head, tok, mask, jnp.asarray(C, jnp.float32), fit_cpu


def candidates(cfg, head, tok, mask, C, *, n_chains, n_warmup, n_samples):
    """name -> ``run(key) -> (draws [C, S, k], gradients)``: the density's samplers, each
    recording the sweep sampler's fields at every kept draw, with the gradients of U it took over
    all chains, warm-up included (HMC: leapfrog steps, one new gradient each, plus one per chain
    at its start; NUTS: the integration steps its trees took, as the libraries count them)."""
    obj = Objective.from_config(cfg)
    x_fit = head.W_G.ravel()
    sampler = sampler_for(cfg, REDUCED_HMC)
    observe = lambda h: sampler.observe(h, tok, mask)  # noqa: E731
    U_w = lambda w: marginal_energy(with_WG(head, x_fit + C @ w), tok, mask, obj)  # noqa: E731
    logdensity = lambda w: -U_w(w)  # noqa: E731
    w0 = jnp.zeros_like(x_fit)

    def record(key, ws):  # ws [C, S, n] -> [C, S, k], readout drawn exactly given W_G
        def one(k, w):
            return observe(draw_readout(k, with_WG(head, x_fit + C @ w), tok, mask, obj))

        # a few draws at a time: every draw's pass holds P x L x L arrays (vmapped over all
        # 4 x 1,000 draws, softmax P = 322 took 24 GB and was killed)
        keys = jax.random.split(key, ws.shape[:2]).reshape(-1)
        flat = ws.reshape(-1, ws.shape[-1])
        out = jax.lax.map(lambda kw: one(*kw), (keys, flat), batch_size=32)
        return jax.tree.map(lambda o: o.reshape(*ws.shape[:2], *o.shape[1:]), out)

    def ours(adapt_mass: bool):  # the project's sampler: n_adapt adaptation iterations, HMC
        def run(key):
            keys = jax.random.split(key, n_chains)
            xs = jnp.broadcast_to(x_fit, (n_chains, x_fit.size))
            potential, rec, value_and_grad = collapsed_target(head, tok, mask, obj, C, observe)
            st = hmc_chains(
                keys,
                potential,
                jnp.zeros_like(xs),
                rec,
                n_iter=n_samples,
                thin=1,
                step_size=REDUCED_HMC.step_size,
                n_adapt=n_warmup,
                adapt_mass=adapt_mass,
                chain_args=(xs,),
                value_and_grad=value_and_grad,
            )
            return st.records[0], n_chains * ((n_warmup + n_samples) * LEAPFROG + 1)

        return run

    def blackjax_run(algorithm, **extra):
        import blackjax

        def chain(key):
            k_adapt, k_run = jax.random.split(key)
            warm = blackjax.window_adaptation(algorithm, logdensity, **extra)
            (state, params), warm_info = warm.run(k_adapt, w0, num_steps=n_warmup)
            kernel = algorithm(logdensity, **params).step  # params carry the extra settings

            def step(s, k):
                s, info = kernel(k, s)
                return s, (s.position, info.num_integration_steps)

            _, (ws, n) = jax.lax.scan(step, state, jax.random.split(k_run, n_samples))
            return ws, jnp.sum(n) + jnp.sum(warm_info.info.num_integration_steps) + 1

        def run(key):
            k_chains, k_rec = jax.random.split(key)
            ws, n = jax.vmap(chain)(jax.random.split(k_chains, n_chains))
            return record(k_rec, ws), jnp.sum(n)

        return run

    def numpyro_run(key):  # not jit-able as a whole: MCMC compiles its own kernel
        from numpyro.infer import MCMC, NUTS

        mcmc = MCMC(
            NUTS(potential_fn=U_w),
            num_warmup=n_warmup,
            num_samples=n_samples,
            num_chains=n_chains,
            chain_method="sequential",
            progress_bar=False,
        )
        k_warm, k_run, k_rec = jax.random.split(key, 3)
        steps = ("num_steps",)  # leapfrog steps per transition: one gradient each
        init = jnp.zeros((n_chains, x_fit.size), x_fit.dtype)
        mcmc.warmup(k_warm, init_params=init, extra_fields=steps, collect_warmup=True)
        n_grad = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
        mcmc.run(k_run, extra_fields=steps)  # from the warm-up's state and step size
        n_grad += int(np.sum(mcmc.get_extra_fields()["num_steps"])) + n_chains
        return _record_jit(k_rec, mcmc.get_samples(group_by_chain=True)), n_grad

    _record_jit = jax.jit(record)
    import blackjax

    return {
        "copyhead_hmc": ours(REDUCED_HMC.adapt_mass),
        "copyhead_hmc_unit": ours(False),
        "numpyro_nuts": numpyro_run,
        "blackjax_nuts": blackjax_run(blackjax.nuts),
        "blackjax_hmc": blackjax_run(blackjax.hmc, num_integration_steps=LEAPFROG),
    }


def measure(name, run, key, fields, order):
    """CPU seconds after compilation, ESS per field, per CPU-second and per gradient of U, XLA
    temp memory."""
    mem = None
    if name == "numpyro_nuts":  # MCMC compiles inside run: the second call is the timed one
        run(key)
        fn = run
    else:
        compiled = jax.jit(run).lower(key).compile()
        ma = compiled.memory_analysis()
        mem = getattr(ma, "temp_size_in_bytes", None) if ma is not None else None
        fn = compiled
    t0, w0 = time.process_time(), time.perf_counter()
    draws, n_grad = jax.block_until_ready(fn(key))
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    draws = np.asarray(draws, np.float64)  # [C, S, k]
    out = {"cpu_s": cpu, "wall_s": wall, "xla_temp_bytes": mem, "maxrss_mb": maxrss_mb()}
    out["n_grad"] = int(n_grad)
    out["ess"] = {f: float(ess(draws[..., fields.index(f)])) for f in ("U", *order)}
    out["ess_per_cpu_s"] = {f: v / cpu for f, v in out["ess"].items()}
    out["ess_per_grad"] = {f: v / out["n_grad"] for f, v in out["ess"].items()}
    out["mean"] = {f: float(draws[..., fields.index(f)].mean()) for f in ("U", *order)}
    return out


#: The target: the paper preset's Bayesian P*_aG for 10 seeds in <= 60 CPU-min.
TRANSITION_TARGET_CPU_S = 3600.0


def transition_time(n_seeds: int, memory_gb: float, out: Path | None = None) -> dict:
    """The CPU time of ``ch.transition`` (``copyhead transition``, its default free-energy
    profile) on the paper preset (softmax, L = 25, V = 5, width 10,000, reduced engine, default
    settings) for ``n_seeds`` seeds, each measured on its own, in this process (all threads; the
    MAP sweeps included), and its P*_aG. Fewer than 10 seeds: the 10-seed time is extrapolated
    from the per-seed time (marked ``extrapolated``); ``out``: a folder for its window rounds
    (resumable)."""
    if n_seeds <= 0:
        return {"status": "not measured: --transition-seeds 0"}
    cfg = ch.preset("paper").replace(
        model=dict(attention="softmax"), sweep=dict(memory_budget_gb=memory_gb)
    )
    c0, w0 = time.process_time(), time.time()
    res = ch.transition(cfg, n_seeds=n_seeds, ckpt_dir=out, progress=True)
    cpu, wall = time.process_time() - c0, time.time() - w0
    per_seed = cpu / n_seeds
    ten = per_seed * 10
    lo, hi = res["interval"]
    fmt = lambda x: "none" if x is None else f"{x:,.1f}"  # noqa: E731
    status = (
        f"paper preset, {n_seeds} seed(s): {cpu / 60:,.1f} CPU-min "
        f"({per_seed / 60:,.1f} per seed; 10 seeds "
        f"{'extrapolated ' if n_seeds < 10 else ''}{ten / 60:,.0f} CPU-min, target "
        f"{TRANSITION_TARGET_CPU_S / 60:.0f}), {res['verdict']}, P*_aG = {fmt(res['P_star'])} "
        f"[{fmt(lo)}, {fmt(hi)}]"
    )
    return {
        "status": status,
        "method": res["method"],
        "n_seeds": n_seeds,
        "cpu_s": cpu,
        "wall_s": wall,
        "cpu_s_per_seed": per_seed,
        "cpu_s_10_seeds": ten,
        "extrapolated": n_seeds < 10,
        "target_cpu_s_10_seeds": TRANSITION_TARGET_CPU_S,
        "met": bool(ten <= TRANSITION_TARGET_CPU_S),
        "verdict": res["verdict"],
        "P_star": res["P_star"],
        "interval": res["interval"],
        "per_seed": res["summary"]["per_seed"],
        "probes_per_seed": [[p["P"] for p in sd["probes"]] for sd in res["seeds"]],
        "n_flagged": len(res["flagged"]),
        "memory_budget_gb": memory_gb,
    }


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--P", type=int, nargs="+", default=None, help="default 32 322 (quick: 32)")
    p.add_argument("--attention", nargs="+", default=["linear", "softmax"])
    p.add_argument("--width", default="10000", help="an int, or inf")
    p.add_argument("--chains", type=int, default=None, help="default 4 (quick: 2)")
    p.add_argument("--warmup", type=int, default=None, help="default 500 (quick: 150)")
    p.add_argument("--samples", type=int, default=None, help="default 1000 (quick: 300)")
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--candidates",
        nargs="+",
        choices=CANDIDATES,
        default=list(CANDIDATES),
        help="samplers to run (default: all; the ratio needs numpyro_nuts)",
    )
    p.add_argument(
        "--under-load",
        action="store_true",
        help="record that the machine was shared with other jobs",
    )
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--transition-seeds",
        type=int,
        default=None,
        help="seeds of the timed paper-preset `copyhead transition` (default 0: not "
        "timed; fewer than 10: the 10-seed time is extrapolated)",
    )
    p.add_argument(
        "--transition-memory-gb",
        type=float,
        default=32.0,
        help="its memory_budget_gb (its refusal bound is a worst case at 4x the "
        "grid's top P; the measured peak RSS is maxrss_mb)",
    )
    p.add_argument(
        "--transition-out",
        type=Path,
        default=None,
        help="keep its checkpoints here (resumable; default: none)",
    )
    p.add_argument(
        "--transition-only",
        action="store_true",
        help="time the transition only (no sampler rows; an existing --out keeps "
        "its sampler rows, its transition block is replaced)",
    )
    a = p.parse_args(argv)
    q = a.quick
    a.P = a.P or ([32] if q else [32, 322])
    a.chains = a.chains or (2 if q else 4)
    a.warmup = a.warmup or (150 if q else 500)
    a.samples = a.samples or (300 if q else 1000)
    a.transition_seeds = a.transition_seeds or 0
    width = math.inf if a.width == "inf" else int(a.width)
    load0 = os.getloadavg()
    assemble = lambda rows, trans: _assemble(a, load0, rows, trans)  # noqa: E731
    rows = []
    for att in () if a.transition_only else a.attention:
        for P in a.P:
            cfg, head, tok, mask, C, fit_cpu = make_problem(att, P, width)
            fields = draw_fields(cfg)
            order = tuple(fields[2:4])  # the head's (c1, cG) or (a1, aG)
            runs = candidates(
                cfg, head, tok, mask, C, n_chains=a.chains, n_warmup=a.warmup, n_samples=a.samples
            )
            row = {
                "attention": att,
                "P": P,
                "dim": int(head.W_G.size),
                "fit_cpu_s": fit_cpu,
                "candidates": {},
            }
            for name, run in ((n, runs[n]) for n in a.candidates):
                try:
                    row["candidates"][name] = m = measure(
                        name, run, jax.random.key(1), fields, order
                    )
                    print(
                        f"{att} P={P} {name}: {m['cpu_s']:.1f} CPU s, {m['n_grad']:,} "
                        "gradients, ESS " + ", ".join(f"{f} {v:.0f}" for f, v in m["ess"].items()),
                        flush=True,
                    )
                except Exception as e:  # noqa: BLE001 - one failing candidate is reported
                    row["candidates"][name] = {"error": f"{type(e).__name__}: {e}"}
                    print(f"{att} P={P} {name}: FAILED {e}", flush=True)
            ours = row["candidates"].get("copyhead_hmc", {})
            for per, key in (("per_cpu_s", "ess_per_cpu_s"), ("per_grad", "ess_per_grad")):
                for nuts in TARGETS[per]:
                    base = row["candidates"].get(nuts, {})
                    row[f"ratio_{per}_vs_{nuts}"] = {
                        f: ours[key][f] / base[key][f]
                        for f in ours.get(key, {})
                        if f in base.get(key, {})
                    }
            rows.append(row)
            # this row's compiled programs go (a run of every row kept them all: 21 GB RSS at
            # softmax P = 322); the rows so far are written, so a killed run keeps them
            jax.clear_caches()
            gc.collect()
            if not a.transition_only:
                _write(a.out, assemble(rows, {"status": "not measured yet: run stopped"}))
    trans = transition_time(a.transition_seeds, a.transition_memory_gb, a.transition_out)
    result = assemble(rows, trans)
    if a.transition_only and a.out.is_file():  # keep the file's sampler rows
        kept = json.loads(a.out.read_text())
        kept["transition"] = dict(
            result["transition"],
            date=result["date"],
            load_average=result["load_average"],
            command="python benchmarks/bench_posterior.py --transition-only "
            f"--transition-seeds {a.transition_seeds}",
        )
        result = kept
    _write(a.out, result)
    print(f"wrote {a.out}")
    return result


def _write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def _assemble(a, load0, rows: list, trans: dict) -> dict:
    """The result file's content: settings, targets, rows so far, the transition block."""
    return {
        "benchmark": "posterior ESS per CPU-second: collapsed HMC vs NumPyro NUTS, BlackJAX "
        "NUTS and HMC (window adaptation), same whitened marginal density",
        "quick": a.quick,
        "measured_under_load": bool(a.under_load),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "settings": {
            "chains": a.chains,
            "warmup": a.warmup,
            "samples": a.samples,
            "width": a.width,
            "L": 25,
            "V": 5,
            "preset": "paper-map",
            "seed": 0,
            "copyhead_hmc": f"{LEAPFROG} leapfrog steps, step adapted from "
            f"{REDUCED_HMC.step_size} and (adapt_mass={REDUCED_HMC.adapt_mass}) a "
            f"diagonal mass over the warm-up (production: {REDUCED_HMC.n_adapt} "
            "adaptation iterations after its Langevin warm-up)",
            "copyhead_hmc_unit": "the same, unit mass (adapt_mass=False)",
            "numpyro": "chain_method sequential",
        },
        "targets": TARGETS,
        "ratio": "ESS per CPU-second (per_cpu_s) or per gradient of U (per_grad) of "
        "copyhead_hmc / the same of the named NUTS, per field; a target holds for the worst field",
        "load_average": {"start": load0, "end": os.getloadavg()},
        "complete": trans.get("status") != "not measured yet: run stopped",
        "rows": rows,
        "transition": trans,
        "transition_only": bool(a.transition_only),
        "maxrss_mb": maxrss_mb(),
        "platform": {
            "system": platform.platform(),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
        },
        "device": {"backend": jax.default_backend(), "kind": jax.devices()[0].device_kind},
        "versions": {m: version(m) for m in ("jax", "jaxlib", "numpyro", "blackjax", "arviz")},
    }


if __name__ == "__main__":
    main()
