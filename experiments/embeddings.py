"""The joint MAP with trained embeddings versus width (docs/theory.md §2d);
results: docs/reports/embeddings.md.

    python -m experiments embeddings --preset paper [--tiny] [--publish | --out DIR]
    python -m experiments.report.studies embeddings docs/reports/results/embeddings.json

Per width N and attention (``paper-map`` conventions, ``configs/embeddings.py``): the quenched MAP
from each branch start, and the joint MAP (``train_embeddings=True``, exact at width N) from the
engine's own start and from each quenched MAP moved along the scale gauge
(:mod:`copyhead_jax.embeddings.joint_map`); per run the lowest converged U. P* per seed as
``copyhead sweep`` locates them (softmax: the jump of aG), EK theory beside. Settings:
``embeddings`` of ``configs/MODE.py``, paper preset: ``config``, a mode of ``configs/embeddings.py``
(default mode: ``full``; ``--tiny``: ``tiny``), and any of its keys to override (e.g. ``widths``).
Cached in ``results/embeddings/CONFIG/``; writes ``OUT/results/embeddings.json`` and
``OUT/figures/embeddings.png``.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import array_points
from copyhead_jax.embeddings import joint_map as J
from copyhead_jax.plots import embeddings_width_figure
from copyhead_jax.theory import TheoryParams, transition_points

from . import common as C
from .configs.embeddings import CONFIGS
from .report.studies import embeddings_tables

INITS = {"linear": ("prior",), "softmax": ("zero", "copy")}


def engine(c: dict, attention: str, width: int, *, trained: bool, init: str) -> ch.Config:
    """``paper-map`` at ``width``, one start, quenched or joint (no continuation: starts are
    chosen here)."""
    P = c[f"P_{attention}"]
    cfg = ch.preset("paper-map").replace(
        task=c.get("task", {}),
        model=dict(attention=attention, width=width, gram=c["gram"]),
        train=dict(train_embeddings=trained, init_attention=init),
        solver=dict(continuation=False),
        sweep=dict(P=tuple(P), n_seeds=c["n_seeds"]),
    )
    return cfg


def run_width(c: dict, attention: str, width: int, cache: Path) -> dict:
    """Quenched and joint MAP of one attention at one width (cached)."""
    q, j, start = {}, {}, {}
    for init in INITS[attention]:
        cq = engine(c, attention, width, trained=False, init=init)
        q[init] = C.cached_sweep(cq, cache)
        if init != "copy":  # the engine's copy start falls to the zero branch (probe, N = 256)
            cj = engine(c, attention, width, trained=True, init=init)
            j[init] = J.order_arrays(C.cached_sweep(cj, cache))
        cj = engine(c, attention, width, trained=True, init=init)
        start["q-" + init] = J.quenched_as_joint(cj, q[init]).tolist()
        j["q-" + init] = C.cached(
            cache,
            f"joint-from-quenched-{attention}-{width}-{init}",
            [cj.to_dict(), C.code_version("engine")],
            lambda cj=cj, r=q[init]: J.joint_from_quenched(cj, r),
        )
    quenched, _ = J.lowest_start(*(J.order_arrays(r) for r in q.values()))
    starts = list(j)
    joint, pick = J.lowest_start(*j.values())
    P = list(next(iter(q.values())).P)
    tolist = lambda d: {k: np.asarray(v).tolist() for k, v in d.items()}  # noqa: E731
    return dict(
        P=[int(p) for p in P],
        quenched=tolist(quenched),
        joint=tolist(joint),
        joint_start=[[starts[k] for k in row] for row in pick],
        starts=starts,
        quenched_function_U=start,
        points=dict(
            quenched=array_points(attention, P, quenched, c["min_jump"]),
            joint=array_points(attention, P, joint, c["min_jump"]),
        ),
    )


def main(spec, out: str | Path) -> dict:
    """Quenched and joint MAP at every width of the settings' config (nothing where the mode
    has no ``embeddings`` settings for the preset)."""
    if not spec.settings:
        C.log(f"no embeddings settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    mode = spec.settings["config"]
    c = dict(CONFIGS[mode]) | {k: v for k, v in spec.settings.items() if k != "config"}
    cache = Path("results") / "embeddings" / mode
    out = Path(out)
    t0, cpu0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
    th = transition_points(
        TheoryParams.from_config(engine(c, "softmax", 10**4, trained=False, init="zero"))
    )
    theory = {k: th[k] for k in ("P_c1", "P_cG", "P_aG", "spinodals")}  # None: no such P*
    widths = {}
    for width in c["widths"]:
        widths[str(width)] = {att: run_width(c, att, width, cache) for att in ("softmax", "linear")}
        C.log(f"embeddings: width {width} done ({time.time() - t0:.0f} s)")
    ru = resource.getrusage(resource.RUSAGE_SELF)
    result = dict(
        object="MAP of U over every weight (joint) vs W^G, W^O at the prior-draw embeddings "
        "(quenched), exact (float64 L-BFGS, docs/theory.md §2c, §2d)",
        mode=mode,
        settings=c,
        theory_ek=theory,
        widths=widths,
        seconds=dict(
            wall=time.time() - t0, cpu=ru.ru_utime + ru.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        ),
    )
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "results" / "embeddings.json").write_text(json.dumps(result, indent=1) + "\n")
    C.save_figure(embeddings_width_figure(result), out / "figures" / "embeddings.png")
    print(embeddings_tables(result))
    return result
