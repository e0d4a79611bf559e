"""The main artefact's measurements: the branch runs (linear; softmax from the pooling and the
copy start) and the features :func:`experiments.common.adaptive` refines on them. The locators
are :mod:`copyhead_jax.compare.branches` (docs/theory.md §5's definitions)."""

from __future__ import annotations

from typing import Any

from copyhead_jax.compare import branches as B
from copyhead_jax.compare import locate as loc
from copyhead_jax.sweep import Feature, Runs, reach_cap

from . import common as C


def branch_runs(spec: C.Spec, **task) -> tuple[Runs, Runs, Runs]:
    """Linear runs (the preset's initialisation) and softmax runs started on the pooling branch
    (zero logits) and on the copy branch, each with its reach cap."""
    s = spec.settings
    soft = spec.engine_for("softmax", **task)
    cfgs = (
        spec.engine_for("linear", **task),
        soft.replace(train=dict(init_attention="zero")),
        soft.replace(train=dict(init_attention="copy")),
    )
    if s.get("n_seeds"):
        cfgs = tuple(c.replace(sweep=dict(n_seeds=s["n_seeds"])) for c in cfgs)
    return tuple(
        Runs(c, label, reach_cap(c, s["max_run_s"], spec.cost))
        for c, label in zip(cfgs, ("linear", "pool", "copy"))
    )


def features(lin: Runs, pool: Runs, copy: Runs, which=B.KEYS) -> list[Feature]:
    F = Feature
    out = []
    if "P_c1" in which:
        out.append(F("P_c1", lambda: B.onset(lin), [lin]))
    if "P_cG" in which:
        out.append(F("P_cG", lambda: B.copy_crossover(lin), [lin]))
        out.append(F("P_cG_half", lambda: loc.locate_level(lin.P, B.linear_psi(lin), 0.5), [lin]))
    if "P_aG" in which:
        out.append(F("P_aG", lambda: B.u_crossing(pool, copy), [pool, copy]))
        # the coexistence window's edges: refining them puts runs inside each seed's window
        out.append(F("window", lambda: B.window_interior(pool, copy), [pool, copy]))
        out.append(F("P_aG_single", lambda: B.single_jump(pool), [pool]))
    return out


def collect(spec: C.Spec) -> dict[str, Any]:
    """Every measurement of the main artefact (cached: a rerun only reloads)."""
    s = spec.settings
    lin, pool, copy = branch_runs(spec)
    C.log(f"main {spec.preset}: linear (cap P <= {lin.P_cap}), softmax (cap P <= {pool.P_cap})")
    C.measure(lin, s["P_linear"], spec)
    C.measure(pool, s["P_pool"], spec)
    C.measure(copy, s["P_copy"], spec)
    found = C.adaptive(features(lin, pool, copy), spec, rounds=s["rounds"], n_new=s["n_new"])
    out = {"lin": lin, "pool": pool, "copy": copy, "found": found}
    if spec.sgld is not None:
        C.log(f"main {spec.preset}: SGLD")
        out["post_lin"] = C.posterior(lin, s["sgld_linear"], spec)
        out["post_soft"] = C.posterior(pool, s["sgld_softmax"], spec)
    return out
