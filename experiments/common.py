"""What every experiment shares: its settings (:class:`Spec`), the one cache, and JSON output.

* :class:`Spec` and :func:`load_spec`: an artefact's settings for a mode (``configs/*.py``) and a
  preset, the engine config built from the preset plus the mode's overrides.
* :func:`cache_path`, :func:`cached`, :func:`cached_sweep`: every stored result is keyed by what
  made it, the config and :func:`code_version` of the package.
* :func:`measure`, :func:`adaptive`, :func:`finite_width`, :func:`posterior`: the package's
  :mod:`copyhead_jax.sweep.refine`, :mod:`copyhead_jax.sweep.finite_theory` and ``run_sampler`` over
  the cache.
* JSON and figure output with provenance (:func:`save_artefact`), committed group records.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import copyhead_jax as ch
from copyhead_jax.config import reading_of, with_reading
from copyhead_jax.storage import environment, nulls_in_lists_to_nan, write_json
from copyhead_jax.sweep import Feature, Runs, computing, finite_theory, refine
from copyhead_jax.theory import TheoryParams, theory_curve, transition_points

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
MODES = ("paper", "quick", "full", "tiny")  # paper: the default (configs/paper.py)
#: the command-line flag of each mode (the default mode has none)
MODE_FLAGS = {"paper": "", "quick": " --quick", "full": " --full-network", "tiny": " --tiny"}
PRESET_NAMES = ("plain", "paper")
#: Every artefact: name -> (module of ``experiments``, kind, relative cost). ``spec``: its
#: ``main(spec, out)`` over ``configs/MODE.py`` (``all`` runs these in this order: main first,
#: the others reuse its runs; the cost orders ``--jobs``); ``cli``: a command with its own flags
#: (``python -m experiments NAME --help``). A new experiment is one file and one line here.
ARTEFACTS = {
    "main": ("main", "spec", 0.5),
    "coverage": ("coverage", "spec", 1.0),
    "scaling-L": ("scaling", "spec", 6.0),
    "scaling-V": ("scaling", "spec", 5.0),
    "hysteresis": ("hysteresis", "spec", 2.0),
    # no cost: on their own, not in all. beyond.py: Markov inputs and the causal mask, and the rows
    # beside them in their own JSON (settings: configs/paper.py and tiny.py)
    "markov": ("beyond", "spec", None),
    "causal": ("beyond", "spec", None),
    "markov-dirichlet": ("beyond", "spec", None),
    "causal-inf": ("beyond", "spec", None),
    "markov-follow": ("beyond", "spec", None),
    "markov-cg": ("beyond", "spec", None),
    "causal-follow": ("beyond", "spec", None),
    "markov-transition": ("beyond", "spec", None),
    "markov-finite": ("beyond", "spec", None),
    "reduction": ("reduction", "spec", None),
    "posterior-branches": ("posterior_branches", "spec", 8.0),
    "posterior": ("posterior", "spec", None),
    "posterior-smc": ("posterior_smc", "spec", None),
    "multistart": ("multistart", "spec", None),
    "embeddings": ("embeddings", "spec", None),
    "embeddings-protocol": ("embeddings_protocol", "spec", None),
    "embeddings-posterior": ("embeddings_posterior", "spec", None),
    # commands: three readings at once (conventions, with --render), four artefacts under the
    # paper-chi-lik reading's specs (reading), route B's early warning for the claims matrix,
    # the Bayesian transition's theory against measurement (a figure from committed results)
    "conventions": ("conventions", "cli", None),
    "reading": ("reading", "cli", None),
    "warning-theory": ("warning_theory", "cli", None),
    "bayes-figure": ("bayes_figure", "cli", None),
    "route-a": ("route_a", "cli", None),
    "linear-pooling": ("linear_pooling", "cli", None),
}
SPEC_ARTEFACTS = tuple(a for a, (_, kind, _) in ARTEFACTS.items() if kind == "spec")
#: the artefacts that build every configuration from their spec's engine, so that ``--reading``
#: (``load_spec(..., reading=)``) means for them what it means on every ``copyhead`` command
READING_ARTEFACTS = ("main", "coverage", "scaling-L", "scaling-V", "hysteresis")
#: why ``--reading`` means nothing for the others (one line each, the refusal's reason)
NO_READING = {
    "conventions": "it measures all three readings itself",
    "reading": "it is the chi-lik reading's runs by definition (python -m experiments main "
    "--preset paper --reading chi-lik runs one artefact under it)",
    "warning-theory": "it reads route B's early warning for the presets' own readings",
    "bayes-figure": "it draws committed results; it runs nothing",
    "route-a": "it is route A's theory at the plain reading (its preset's own)",
    "linear-pooling": "it measures the plain reading's linear head against route B there",
    **{
        a: "its configurations come from the preset's own settings and records, not from the "
        "spec's engine"
        for a in SPEC_ARTEFACTS
        if a not in READING_ARTEFACTS
    },
}


def artefact_main(name: str):
    """The ``main(spec, out, **kw)`` of the registered artefact ``name`` (a script that runs
    another artefact calls it through the registry, not by importing it)."""
    return importlib.import_module(f"experiments.{ARTEFACTS[name][0]}").main


def log(msg: str) -> None:
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Spec:
    """One artefact's settings: mode, preset, engine config, SGLD, cost model, cache folder."""

    mode: str
    preset: str
    artefact: str
    engine: ch.Config  # the preset with the mode's overrides (L, V of the preset)
    settings: dict[str, Any]  # the artefact's own settings (grids, rounds, ...)
    softmax_solver: dict[str, Any]  # solver-config overrides for softmax sweeps
    linear_solver: dict[str, Any]  # solver-config overrides for linear sweeps
    sgld: dict[str, Any] | None  # SGLD settings (None: no posterior sampling)
    cost: dict[str, float]  # cost model for grouping P into compiled programs
    cache_dir: Path
    base: str | None = None  # the preset whose settings it runs (default ``preset``)
    reading: str | None = None  # the reading it runs under (None: the preset's own)

    def engine_for(self, attention: str, **task) -> ch.Config:
        """The engine config of one attention (with that attention's solver overrides)."""
        cfg = self.engine.replace(model=dict(attention=attention))
        if task:
            cfg = cfg.replace(task=task)
        solver = getattr(self, f"{attention}_solver", None)  # the paper's heads have their own
        return cfg.replace(solver=solver) if solver else cfg

    def theory_params(self) -> TheoryParams:
        return TheoryParams.from_config(self.engine)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def mode_config(mode: str) -> dict[str, Any]:
    """The ``CONFIG`` dict of ``configs/{mode}.py``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    path = CONFIG_DIR / f"{mode}.py"
    spec = importlib.util.spec_from_file_location(f"_copyhead_cfg_{mode}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CONFIG


def load_spec(
    mode: str, preset: str, artefact: str, cache_dir: str | Path, reading: str | None = None
) -> Spec:
    """The :class:`Spec` of ``artefact`` for ``preset`` (``plain``/``paper``) in ``mode``; with
    ``reading`` (one of ``copyhead_jax.config.READINGS``), its engine under that reading (as
    ``--reading`` of every ``copyhead`` command: the convention fields replaced, the preset's
    grids and settings kept) and named ``PRESET-READING`` where that is not the preset's own."""
    if reading is not None and artefact not in READING_ARTEFACTS:
        raise ValueError(f"--reading: {artefact} takes none: {NO_READING[artefact]}")
    if preset not in PRESET_NAMES:
        raise ValueError(f"preset must be one of {', '.join(PRESET_NAMES)}; got {preset!r}")
    if artefact not in SPEC_ARTEFACTS:
        raise ValueError(f"artefact must be one of {', '.join(SPEC_ARTEFACTS)}; got {artefact!r}")
    c = mode_config(mode)
    per = c["presets"][preset]
    train = lambda k: _merge(c.get(k, {}), per.get(k, {}))  # noqa: E731
    engine = ch.preset(preset).replace(**train("engine"))
    name = preset
    if reading is not None and reading != reading_of(engine):  # checked by with_reading
        engine, name = with_reading(engine, reading), f"{preset}-{reading}"
    return Spec(
        mode=mode,
        preset=name,
        artefact=artefact,
        engine=engine,
        settings=per.get(artefact.replace("-", "_"), {}),
        softmax_solver=train("softmax_solver"),
        linear_solver=train("linear_solver"),
        sgld=None if c.get("sgld") is None else _merge(c["sgld"], per.get("sgld", {})),
        cost=dict(c.get("cost", {})),
        cache_dir=Path(cache_dir),
        base=preset,
        reading=None if name == preset else reading,
    )


def sibling_spec(spec: Spec, artefact: str) -> Spec:
    """The spec of ``artefact`` for the preset and reading of ``spec`` (e.g. the ``main`` whose
    runs an ablation reuses)."""
    return load_spec(
        spec.mode, spec.base or spec.preset, artefact, spec.cache_dir, reading=spec.reading
    )


# ---------------------------------------------------------------------------------------------
# The cache: one key, the config and the code version


@functools.cache
def code_version(part: str = "") -> str:
    """Hash of the package source that can change a number: every module but the command lines
    and the plots. Every cached result is keyed by it (``part``: accepted, one version)."""
    root = Path(ch.__file__).resolve().parent
    skip = ("cli", "plots", "sampling/arviz.py")  # the commands, the figures, the ArviZ export
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root)
        if rel.parts[0] not in skip and rel.as_posix() not in skip:
            h.update(str(rel).encode() + f.read_bytes())
    return h.hexdigest()[:12]


def cache_path(cache_dir: Path, name: str, key: Any, suffix: str) -> Path:
    """Where the result ``name`` made from ``key`` (JSON-able) by this code version is stored."""
    return Path(cache_dir) / f"{name}-{refine.digest([key, code_version()])}{suffix}"


def cached(cache_dir: Path, name: str, key: Any, fn):
    """``fn()`` stored (pickled) at :func:`cache_path`; a second process waits for the first."""
    path = cache_path(cache_dir, name, key, ".pkl")
    if not path.exists():
        with computing(path):
            if not path.exists():  # else another process made it while this one waited
                out = fn()
                tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
                tmp.write_bytes(pickle.dumps(out))
                tmp.replace(path)
                return out
    return pickle.loads(path.read_bytes())


def cached_sweep(cfg: ch.Config, cache_dir: Path) -> ch.SweepResult:
    """``run_sweep(cfg)`` with fitted weights kept, at :func:`cache_path` (a rerun loads it; an
    interrupted one resumes from its checkpointed chunks)."""
    path = cache_path(cache_dir, f"sweep-{cfg.model.attention}", cfg.to_dict(), ".npz")
    if path.exists():
        return ch.SweepResult.load(path)
    with computing(path):
        if path.exists():  # swept by another process (--jobs) while this one waited
            return ch.SweepResult.load(path)
        t0 = time.time()
        res = ch.run_sweep(cfg, out=path, progress=sys.stderr.isatty(), keep_params=True)
    log(
        f"  swept {cfg.model.attention} L={cfg.task.L} V={cfg.task.V} P={list(cfg.sweep.P)} "
        f"x {cfg.sweep.n_seeds} seeds in {time.time() - t0:.0f} s"
    )
    return res


def measure(runs: Runs, P_new, spec: Spec, *, P_cap: int | None = None) -> list[int]:
    """:func:`copyhead_jax.sweep.refine.measure` through :func:`cached_sweep` (the continuation's
    steps, if on, under ``CACHE/continuation``)."""
    runs.cache_dir, runs.version = spec.cache_dir, code_version()
    sweep = lambda cfg: cached_sweep(cfg, spec.cache_dir)  # noqa: E731
    return refine.measure(runs, P_new, sweep=sweep, cost=spec.cost, P_cap=P_cap)


def adaptive(features: list[Feature], spec: Spec, *, rounds: int, n_new: int, factor=2.0):
    """:func:`copyhead_jax.sweep.refine.adaptive` with every new ``P`` measured by
    :func:`measure`."""
    return refine.adaptive(
        features, lambda r, P: measure(r, P, spec), rounds=rounds, n_new=n_new, factor=factor
    )


def finite_width(spec: Spec, runs: Runs, attention: str, P_grid) -> dict[str, Any]:
    """:func:`copyhead_jax.sweep.finite_theory.finite_width` of ``runs``, cached."""
    key = [runs.cfg.to_dict(), attention, np.asarray(P_grid).tolist(), runs.P.tolist()]
    fn = lambda: finite_theory.finite_width(spec.theory_params(), runs, attention, P_grid)  # noqa: E731
    return cached(spec.cache_dir, f"finite-{attention}", key, fn)


def ek_curves(params: TheoryParams, P_grid, attention: str, objectives, cache_dir: Path):
    """``theory_curve`` for each objective (float64, NumPy), keyed by objective, cached."""
    fn = lambda: {o: theory_curve(params, P_grid, attention, o) for o in objectives}  # noqa: E731
    key = [params.to_dict(), np.asarray(P_grid, float).tolist(), attention, list(objectives)]
    return cached(cache_dir, "ek-curve", key, fn)


def ek_points(params: TheoryParams, objective: str, cache_dir: Path):
    """Every EK ``P*`` of docs/theory.md §5 (``transition_points``, both attentions), cached."""
    fn = lambda: transition_points(params, "both", objective)  # noqa: E731
    return cached(cache_dir, "ek-points", [params.to_dict(), objective], fn)


# ---------------------------------------------------------------------------------------------
# SGLD posterior of selected runs


def posterior(runs: Runs, P_list, spec: Spec, *, seeds=(0,)) -> dict[str, np.ndarray]:
    """:func:`copyhead_jax.sweep.refine.posterior_moments` of ``runs`` with ``spec.sgld``, each
    compiled group's chains stored at :func:`cache_path`."""
    att = runs.cfg.model.attention
    path_of = lambda sub, sgld: cache_path(  # noqa: E731
        spec.cache_dir, f"post-{att}", [sub.config.to_dict(), dataclasses.asdict(sgld)], ".npz"
    )
    return refine.posterior_moments(
        runs, P_list, spec.sgld, cost=spec.cost, path_of=path_of, seeds=seeds
    )


# ---------------------------------------------------------------------------------------------
# Output


def group_record(path: Path, compute, **meta: Any) -> dict:
    """One group of chains as a JSON record at ``path`` (``{"runs": [...], "cpu_s": ...}``): read
    if it exists, else ``compute()`` written with ``meta`` and returned as a later call reads it
    (7 significant digits). Records live under the output folder and are committed: a fresh
    checkout assembles without rerunning a chain (``results/`` is a checkout's own cache)."""
    path = Path(path)
    if not path.exists():
        write_json(path, dict(compute(), **meta))
    return nulls_in_lists_to_nan(json.loads(path.read_text()))  # the runs' lists with NaN


def save_figure(fig, path: Path, dpi: int = 150) -> Path:
    """:func:`copyhead_jax.plots.style.save_figure` (matplotlib loads on use)."""
    from copyhead_jax.plots import save_figure as save

    return save(fig, path, dpi)


def header(spec: Spec, t0: float) -> dict[str, Any]:
    """Provenance of an artefact: mode, preset, engine config, settings, runtime, environment."""
    return {
        "artefact": spec.artefact,
        "mode": spec.mode,
        "preset": spec.preset,
        "engine": spec.engine.to_dict(),
        "softmax_solver": spec.softmax_solver,
        "linear_solver": spec.linear_solver,
        "sgld": spec.sgld,
        "settings": spec.settings,
        "runtime_s": time.time() - t0,
        "environment": environment(),
        "command": f"python -m experiments {spec.artefact}{MODE_FLAGS[spec.mode]} --preset "
        f"{spec.preset}",
    }


def save_artefact(
    spec: Spec, res: dict[str, Any], figure, out_dir: Path, t0: float, drop: tuple = ()
) -> dict[str, Any]:
    """Stamp ``res`` with its provenance, draw ``figure(res)`` into ``figures/``, drop the keys
    only the figure needed, and write ``results/ARTEFACT_PRESET.json``."""
    name = f"{spec.artefact}_{spec.preset}"
    res["header"] = header(spec, t0)
    png = save_figure(figure(res), out_dir / "figures" / f"{name}.png")
    for k in drop:
        res.pop(k)
    res["figure"] = str(png.relative_to(out_dir))
    res["header"]["runtime_s"] = time.time() - t0
    path = write_json(out_dir / "results" / f"{name}.json", res)
    log(f"{spec.artefact} {spec.preset}: wrote {path} and {png} ({time.time() - t0:.0f} s)")
    return res
