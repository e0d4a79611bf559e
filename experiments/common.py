"""Shared machinery of the reproduction experiments (``experiments/*.py``).

* :class:`Spec` and :func:`load_spec`: an artefact's settings for a mode (``configs/*.py``) and a
  preset, with the engine config built from the preset plus the mode's overrides.
* :class:`Runs` and :func:`measure`: MAP sweeps at any set of ``P``, grouped into few compiled
  programs by a cost model, cached on disk by content hash, merged by ``P`` (the datasets of a
  seed are nested prefixes, so sweeps over different ``P`` subsets are one experiment).
* :func:`adaptive`: measure, locate, refine the grid near each feature, measure again.
* :func:`finite_theory`: the finite-width, finite-P theory (docs/theory.md §2b) of each
  seed's realised embeddings and training set, batched (one compiled program for any number
  of ``P``).
* :func:`ek_curves`, :func:`posterior`: EK theory curves, SGLD posterior moments.
* JSON output and timing helpers.

Experiments import the public API (``import copyhead_jax as ch``), ``copyhead_jax.compare`` and
the theory package; nothing here edits engine or theory code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import json
import math
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare import locate as loc
from copyhead_jax.theory.params import TheoryParams

HERE = Path(__file__).resolve().parent
CONFIG_DIR = HERE / "configs"
MODES = ("paper", "quick", "full", "tiny")  # paper: the default (configs/paper.py)
#: the command-line flag of each mode (the default mode has none)
MODE_FLAGS = {"paper": "", "quick": " --quick", "full": " --full-network", "tiny": " --tiny"}
PRESET_NAMES = ("plain", "paper")
ARTEFACTS = ("main", "coverage", "scaling-L", "scaling-V", "hysteresis")


def log(msg: str) -> None:
    print(f"[reproduce {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Specs


@dataclass(frozen=True)
class Spec:
    """One artefact's settings: mode, preset, engine config, SGLD, cost model, cache folder."""

    mode: str
    preset: str
    artefact: str
    engine: ch.Config  # the preset with the mode's overrides (L, V of the preset)
    settings: dict[str, Any]  # the artefact's own settings (grids, rounds, ...)
    softmax_train: dict[str, Any]  # TrainConfig overrides for softmax sweeps
    linear_train: dict[str, Any]  # TrainConfig overrides for linear sweeps
    sgld: dict[str, Any] | None  # SGLD settings (None: no posterior sampling)
    cost: dict[str, float]  # cost model for grouping P into compiled programs
    cache_dir: Path

    def engine_for(self, attention: str, **task) -> ch.Config:
        """The engine config of one attention (softmax gets its train overrides)."""
        cfg = self.engine.replace(model=dict(attention=attention))
        if task:
            cfg = cfg.replace(task=task)
        if attention == "softmax" and self.softmax_train:
            cfg = cfg.replace(train=self.softmax_train)
        if attention == "linear" and self.linear_train:
            cfg = cfg.replace(train=self.linear_train)
        return cfg

    def theory_params(self, **task) -> TheoryParams:
        p = TheoryParams.from_config(self.engine)
        return p.replace(**task) if task else p


def _load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"_copyhead_cfg_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def mode_config(mode: str) -> dict[str, Any]:
    """The ``CONFIG`` dict of ``configs/{mode}.py``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return _load_module(CONFIG_DIR / f"{mode}.py").CONFIG


def load_spec(mode: str, preset: str, artefact: str, cache_dir: str | Path) -> Spec:
    """The :class:`Spec` of ``artefact`` for ``preset`` (``plain``/``paper``) in ``mode``."""
    if preset not in PRESET_NAMES:
        raise ValueError(f"preset must be one of {', '.join(PRESET_NAMES)}; got {preset!r}")
    if artefact not in ARTEFACTS:
        raise ValueError(f"artefact must be one of {', '.join(ARTEFACTS)}; got {artefact!r}")
    c = mode_config(mode)
    per = c["presets"][preset]
    over = _merge(c.get("engine", {}), per.get("engine", {}))
    engine = ch.preset(preset).replace(**over)
    settings = per.get(artefact.replace("-", "_"), {})
    return Spec(
        mode=mode,
        preset=preset,
        artefact=artefact,
        engine=engine,
        settings=settings,
        softmax_train=_merge(c.get("softmax_train", {}), per.get("softmax_train", {})),
        linear_train=_merge(c.get("linear_train", {}), per.get("linear_train", {})),
        sgld=None if c.get("sgld") is None else _merge(c["sgld"], per.get("sgld", {})),
        cost=dict(c.get("cost", {})),
        cache_dir=Path(cache_dir),
    )


# ---------------------------------------------------------------------------------------------
# Cached sweeps, merged by P


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _module_file(parts: list[str]) -> Path | None:
    p = Path(ch.__file__).resolve().parent.parent.joinpath(*parts)
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    return p / "__init__.py" if (p / "__init__.py").exists() else None


def _package_imports(path: Path) -> list[Path]:
    """The ``copyhead_jax`` modules ``path`` imports (any nesting, relative or absolute; the
    top-level ``copyhead_jax/__init__.py`` re-exports only and is never counted)."""
    import ast

    root = Path(ch.__file__).resolve().parent.parent
    pkg = list(path.relative_to(root).with_suffix("").parts[:-1])
    out = []
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import):
            names = [a.name.split(".") for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = pkg[: len(pkg) - (n.level - 1)] if n.level else []
            base = base + (n.module.split(".") if n.module else [])
            names = [base + [a.name] for a in n.names] + ([base] if n.module else [])
        else:
            continue
        for parts in names:
            if parts[:1] == ["copyhead_jax"] and len(parts) > 1:
                f = _module_file(parts)
                if f is not None:
                    out.append(f)
    return out


def import_closure(*entry: str) -> list[Path]:
    """Every ``copyhead_jax`` source file the modules ``entry`` (paths inside the package)
    import, transitively: what can change the numbers they compute."""
    root = Path(ch.__file__).resolve().parent
    seen: set[Path] = set()
    todo = [root / e for e in entry]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo += _package_imports(f)
    return sorted(seen)


@functools.cache
def code_version(part: str) -> str:
    """Hash of the source a cached result depends on: ``'engine'`` (the files ``run_sweep``
    imports, transitively: editing the sampler, the CLI or the plots keeps the sweeps),
    ``'sampler'`` (those of ``run_sampler``), ``'theory'`` or ``'exp'`` (the experiments' own
    finite-width minimiser). Cached results are keyed by it."""
    root = Path(ch.__file__).resolve().parent
    if part == "exp":
        files = [HERE / "common.py"]
    elif part == "theory":
        skip = {"cli.py", "plots.py"}  # the command line and plots cannot change a number
        files = sorted(f for f in (root / "theory").glob("*.py") if f.name not in skip)
    elif part == "sampler":
        files = import_closure("sample.py")
    else:
        files = import_closure("sweep.py")
    h = hashlib.sha256()
    for f in files:
        h.update((str(f.relative_to(root)) if f.is_relative_to(root) else f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


@contextlib.contextmanager
def computing(path: Path):
    """Hold ``PATH.busy`` (an exclusive ``flock``) while ``path`` is computed: a second process
    (``--jobs``) asking for the same result waits for the first and then loads it, instead of
    computing it again. The lock dies with its process (no stale locks)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".busy"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached(cache_dir: Path, name: str, key: Any, fn, *, part: str = "theory"):
    """``fn()`` stored under ``name`` and a hash of ``key`` and the code version of ``part``."""
    path = Path(cache_dir) / f"{name}-{_digest([key, code_version(part), code_version('exp')])}.pkl"
    if not path.exists():
        with computing(path):
            if not path.exists():  # else another process made it while this one waited
                out = fn()
                tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
                with open(tmp, "wb") as f:
                    pickle.dump(out, f)
                tmp.replace(path)
                return out
    with open(path, "rb") as f:
        return pickle.load(f)


def cached_sweep(cfg: ch.Config, cache_dir: Path) -> ch.SweepResult:
    """``run_sweep(cfg)`` with fitted weights kept, stored under a hash of the config and the
    engine's code (a rerun loads it; an interrupted one resumes from its checkpointed chunks)."""
    key = _digest([cfg.to_dict(), code_version("engine")])
    path = Path(cache_dir) / f"sweep-{cfg.model.attention}-{key}.npz"
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


def group_P(P_values, *, n_seeds: int, epochs: int, L: int, cost: dict[str, float]) -> list:
    """Split sorted ``P`` into consecutive groups, one compiled program each, minimising
    ``sum(compile_s + n_seeds * n * P_group_max * epochs * seq_epoch_us * (L/25)^2)``."""
    P = sorted(int(p) for p in P_values)
    if not P:
        return []
    c0 = float(cost.get("compile_s", 8.0))
    c1 = float(cost.get("seq_epoch_us", 8.0)) * 1e-6 * epochs * n_seeds * (L / 25.0) ** 2
    n = len(P)
    best = [0.0] + [math.inf] * n
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            c = best[i] + c0 + c1 * (j - i) * P[j - 1]
            if c < best[j]:
                best[j], cut[j] = c, i
    groups, j = [], n
    while j > 0:
        groups.append(P[cut[j] : j])
        j = cut[j]
    return groups[::-1]


class Runs:
    """MAP runs of one engine config at a growing set of ``P`` (all seeds of each ``P``);
    ``P_cap``: the largest ``P`` in reach (see :func:`reach_cap`).

    With ``cfg.train.exact_continuation`` the sweeps are single-start and the continuation in P
    (``copyhead_jax.continuation``) runs over the union of the ``P`` measured so far, again
    whenever it grows (its steps cached in ``CACHE/continuation``, keyed by their start, so a
    refined grid recomputes only the steps whose start changed): every reader sees the kept
    lowest-U fits; the sweeps' own fits stay in ``parts``."""

    def __init__(self, cfg: ch.Config, label: str = "", P_cap: int | None = None):
        self.cfg = cfg
        self.label = label
        self.P_cap = P_cap
        self.parts: list[ch.SweepResult] = []
        self._where: dict[int, tuple[int, int]] = {}
        self.cache_dir: Path | None = None  # set by `measure`: where the continuation is cached
        self._continued: tuple[tuple[int, ...], dict[str, np.ndarray]] | None = None

    def add(self, res: ch.SweepResult) -> None:
        k = len(self.parts)
        self.parts.append(res)
        for i, p in enumerate(res.P):
            self._where[int(p)] = (k, i)

    def row(self, P) -> dict[str, np.ndarray]:
        """Every per-run array at ``P``, ``[n_seeds, ...]`` (continued where that is on)."""
        cont = self.continued()
        if cont is not None:
            i = int(np.searchsorted(self.P, int(P)))
            return {k: v[i] for k, v in cont.items()}
        return self.own_row(P)

    def own_row(self, P) -> dict[str, np.ndarray]:
        """Every per-run array at ``P`` as its sweep fitted it (never continued)."""
        k, i = self._where[int(P)]
        return {key: v[i] for key, v in self.parts[k].arrays.items() if key != "curve_epoch"}

    def continued(self) -> dict[str, np.ndarray] | None:
        """``[nP, n_seeds, ...]`` arrays after the continuation over all measured ``P`` (sorted),
        or ``None`` where it is off."""
        if not self.cfg.train.exact_continuation or len(self._where) < 2:
            return None
        P = tuple(int(p) for p in self.P)
        if self._continued is None or self._continued[0] != P:
            self._continued = (P, continue_runs(self, P))
        return self._continued[1]

    @property
    def P(self) -> np.ndarray:
        return np.asarray(sorted(self._where), dtype=int)

    def __contains__(self, P) -> bool:
        return int(P) in self._where

    def get(self, key: str, P=None) -> np.ndarray:
        """``key`` at the given ``P`` (default all, sorted): ``[nP, n_seeds, ...]``."""
        P = self.P if P is None else np.atleast_1d(P)
        cont = self.continued()
        if cont is not None:
            return cont[key][np.searchsorted(self.P, np.asarray(P, int))]
        rows = []
        for p in P:
            k, i = self._where[int(p)]
            rows.append(self.parts[k][key][i])
        return np.stack(rows)

    def masked(self, key: str, P=None) -> np.ndarray:
        """``key`` as float with diverged runs set to NaN."""
        x = self.get(key, P).astype(float)
        ok = self.get("finite", P).astype(bool)
        return np.where(ok.reshape(ok.shape + (1,) * (x.ndim - 2)), x, np.nan)

    def wall_seconds(self) -> float:
        return float(sum(p.meta.get("wall_seconds", 0.0) for p in self.parts))


def continue_runs(runs: Runs, P: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The continuation in P of ``runs``' single-start fits at ``P`` (their union grid):
    ``[nP, n_seeds, ...]`` arrays with ``start_source`` and ``U_own_start`` added."""
    from copyhead_jax.continuation import continue_in_P
    from copyhead_jax.sweep import exact_solve_from, run_mesh, sweep_inputs

    cfg = runs.cfg.replace(sweep=dict(P=P))
    nS = cfg.sweep.n_seeds
    rows = [runs.own_row(p) for p in P]
    arrays = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}  # P-major runs
    grid_free = cfg.replace(sweep=dict(P=(1,))).to_dict()  # the steps' key: all but the grid
    fp = _digest([grid_free, code_version("engine")])
    ckpt = None if runs.cache_dir is None else Path(runs.cache_dir) / "continuation"
    t0 = time.time()
    with contextlib.ExitStack() as stack:
        if ckpt is not None:  # a second worker process waits, then loads the steps
            stack.enter_context(computing(ckpt / f"{runs.cfg.model.attention}-{fp}"))
        out = continue_in_P(
            cfg,
            sweep_inputs(cfg, None),
            arrays,
            exact_solve_from(cfg, run_mesh(cfg.sweep.n_devices)),
            ckpt,
            fp,
        )
    log(f"  continued {runs.label or cfg.model.attention} L={cfg.task.L} V={cfg.task.V} over "
        f"{len(P)} P x {nS} seeds in {time.time() - t0:.0f} s "
        f"({int((out['start_source'] != 0).sum())} runs moved to a lower minimum)")  # fmt: skip
    return {k: v.reshape((len(P), nS) + v.shape[1:]) for k, v in out.items()}


def reach_cap(cfg: ch.Config, max_run_s: float, cost: dict[str, float]) -> int:
    """The largest ``P`` whose estimated run time (cost model, ``max_epochs``) is ``max_run_s``."""
    per = float(cost.get("seq_epoch_us", 8.0)) * 1e-6 * cfg.train.max_epochs
    return max(1, int(max_run_s / (per * (cfg.task.L / 25.0) ** 2)))


def measure(runs: Runs, P_new, spec: Spec, *, P_cap: int | None = None) -> list[int]:
    """Sweep ``runs.cfg`` at the ``P_new`` not measured yet (up to ``P_cap``, default
    ``runs.P_cap``); returns them."""
    new = sorted({int(p) for p in np.atleast_1d(P_new) if int(p) >= 1 and int(p) not in runs})
    P_cap = runs.P_cap if P_cap is None else P_cap
    if P_cap is not None:
        new = [p for p in new if p <= P_cap]
    # single-start sweeps; a continuation (if on) runs over the union in `Runs.continued`
    cfg = runs.cfg.replace(train=dict(exact_continuation=False))
    runs.cache_dir = spec.cache_dir
    groups = group_P(
        new, n_seeds=cfg.sweep.n_seeds, epochs=cfg.train.max_epochs, L=cfg.task.L, cost=spec.cost
    )
    for g in groups:
        runs.add(cached_sweep(cfg.replace(sweep=dict(P=tuple(g), padding="max")), spec.cache_dir))
    return new


@dataclass
class Feature:
    """A feature to locate on a :class:`Runs`: ``fn(runs) -> Located``."""

    name: str
    fn: Any
    runs: list[Runs] = field(default_factory=list)


def adaptive(
    features: list[Feature], spec: Spec, *, rounds: int, n_new: int, factor: float = 2.0
) -> dict[str, loc.Located]:
    """Locate every feature, then for ``rounds`` rounds measure new ``P`` inside each bracket
    (or beyond the grid edge for an unbracketed feature, up to the runs' ``P_cap``) and locate
    again."""
    found = {f.name: f.fn() for f in features}
    for r in range(rounds):
        todo: dict[int, set[int]] = {}
        for f in features:
            L = found[f.name]
            if L.bracketed:
                P_all = np.unique(np.concatenate([x.P for x in f.runs]))
                new = loc.refine_grid(L.bracket, n_new=n_new, existing=P_all)
            else:
                caps = [x.P_cap for x in f.runs if x.P_cap is not None]
                new = loc.extend_grid(L, factor=factor, P_max=min(caps) if caps else math.inf)
            for x in f.runs:
                todo.setdefault(id(x), set()).update(int(p) for p in new)
        runs_by_id = {id(x): x for f in features for x in f.runs}
        added = 0
        for key, P_new in todo.items():
            added += len(measure(runs_by_id[key], sorted(P_new), spec))
        if not added:
            break
        log(f"  refinement round {r + 1}: {added} new runs")
        found = {f.name: f.fn() for f in features}
    return found


# ---------------------------------------------------------------------------------------------
# The run's own data and embeddings


def seed_tokens(cfg: ch.Config, seed_index: int, P: int) -> np.ndarray:
    """The first ``P`` training sequences of seed ``seed_index`` of a sweep of ``cfg``
    (``run_sweep`` draws seed ``s`` from ``key(sweep.seed + s)``, data from its first half)."""
    k = jax.random.split(jax.random.key(cfg.sweep.seed + seed_index))
    d = ch.sources.task_data(k[0], cfg.task, P_max=int(P), n_test=1)  # the task's source
    return np.asarray(d.train)


def seed_gram(cfg: ch.Config, seed_index: int) -> np.ndarray:
    """The embedding Gram ``U U^T / N`` of seed ``seed_index``'s initial (quenched) embeddings
    (reduced engine: ``T T^T`` of the run's Gram root, the prior's ``Sigma`` at width inf)."""
    k = jax.random.split(jax.random.key(cfg.sweep.seed + seed_index))
    if cfg.model.engine == "reduced":
        from copyhead_jax.models import embedding_root

        with jax.enable_x64(True):
            T = np.asarray(embedding_root(k[1], cfg), dtype=np.float64)
        return T @ T.T
    head = ch.init_head(k[1], cfg.model, L=cfg.task.L, V=cfg.task.V, chi=cfg.posterior.chi)
    U = np.asarray(head.embeddings(), dtype=np.float64)
    return U @ U.T / cfg.model.width


def run_gram(runs: Runs, P: int, seed_index: int) -> np.ndarray:
    """The embedding Gram of a fitted run (differs from :func:`seed_gram` if embeddings train)."""
    row = runs.row(P)
    W_E = np.asarray(row["params/W_E"][seed_index], np.float64)
    b = np.asarray(row["params/b"][seed_index], np.float64)
    U = np.concatenate([W_E.T, b.T], axis=0)
    return U @ U.T / W_E.shape[0]


# ---------------------------------------------------------------------------------------------
# Finite-width, finite-P theory (docs/theory.md §2b), batched


FINITE_KEYS = {
    "linear": ("c1", "cG", "r", "psi", "minima_c1", "minima_cG"),
    "softmax": ("beta", "aG", "a1", "minima_beta", "minima_aG"),
}


def finite_theory(
    params: TheoryParams,
    attention: str,
    tokens: list[np.ndarray],
    grams: list[np.ndarray],
    P_values,
) -> dict[str, np.ndarray]:
    """Every local minimum of the exact finite-P action (i) at finite width (MAP) on the ansatz,
    for each seed (its ``tokens`` and embedding ``gram``) and each ``P`` (nested prefixes):
    :func:`copyhead_jax.theory.finite_minima` per seed.

    Returns arrays ``[nP, n_seeds]`` of the global minimiser (linear: ``c1, cG, r, psi``;
    softmax: ``beta, aG, a1``), ``n_min``, and ``minima_*[nP, n_seeds, k]`` (value, valid, and
    ``c1, cG`` or ``beta, aG``), slot 0 the global one.
    """
    from copyhead_jax.theory import finite_minima

    P = np.asarray(sorted(int(p) for p in P_values))
    per_seed = [
        finite_minima(t[: P[-1]], P, gram=g, params=params, attention=attention)
        for t, g in zip(tokens, grams)
    ]
    keys = ("n_min", "minima_value", "minima_valid", *FINITE_KEYS[attention])
    return {"P": P, **{k: np.stack([x[k] for x in per_seed], axis=1) for k in keys}}


def finite_branch_values(ft: dict[str, np.ndarray], *, split: float) -> tuple[np.ndarray, ...]:
    """Softmax finite theory: the action of the weak (``aG < split``) and strong (``aG >=
    split``) local minima, ``[nP, n_seeds]`` (NaN where a branch does not exist)."""
    aG, val, ok = ft["minima_aG"], ft["minima_value"], ft["minima_valid"].astype(bool)
    weak = np.where(ok & (aG < split), val, np.inf).min(-1)
    strong = np.where(ok & (aG >= split), val, np.inf).min(-1)
    return np.where(np.isinf(weak), np.nan, weak), np.where(np.isinf(strong), np.nan, strong)


# ---------------------------------------------------------------------------------------------
# EK theory


def ek_curves(
    params: TheoryParams, P_grid, attention: str, objectives=("map",), cache_dir: Path | None = None
) -> dict:
    """``theory_curve`` for each objective (float64, NumPy), keyed by objective."""
    from copyhead_jax.theory.minima import theory_curve

    def fn():
        return {o: theory_curve(params, P_grid, attention, o) for o in objectives}

    if cache_dir is None:
        return fn()
    key = [params.to_dict(), np.asarray(P_grid, float).tolist(), attention, list(objectives)]
    return cached(cache_dir, "ek-curve", key, fn)


def ek_points(params: TheoryParams, objective: str = "map", cache_dir: Path | None = None):
    """Every EK ``P*`` of docs/theory.md §5 (``transition_points``, both attentions)."""
    from copyhead_jax.theory.points import transition_points

    def fn():
        return transition_points(params, "both", objective)

    if cache_dir is None:
        return fn()
    return cached(cache_dir, "ek-points", [params.to_dict(), objective], fn)


# ---------------------------------------------------------------------------------------------
# SGLD posterior of selected runs


def _sub_sweep(runs: Runs, P_list, seed_index: int) -> ch.SweepResult:
    """The runs at ``P_list`` (one seed) as a sweep of their own (for ``run_sampler``)."""
    P_list = sorted(int(p) for p in P_list)
    arrays: dict[str, list] = {}
    for p in P_list:
        for k, v in runs.row(p).items():
            arrays.setdefault(k, []).append(v[seed_index : seed_index + 1])
    arr = {k: np.stack(v) for k, v in arrays.items()}
    arr["curve_epoch"] = runs.parts[0]["curve_epoch"]
    c = runs.cfg
    cfg = c.replace(sweep=dict(P=tuple(P_list), n_seeds=1, seed=c.sweep.seed + seed_index))
    return ch.SweepResult(config=cfg, arrays=arr, meta={})


def posterior(runs: Runs, P_list, spec: Spec, *, seeds=(0,)) -> dict[str, np.ndarray]:
    """SGLD posterior moments at ``P_list`` (warm-started from the fits), ``[nP, n_seeds]``:
    mean and variance of ``c1, cG, r, psi, coverage, train_loss, U`` and chain health.

    The step size of each compiled group is ``min(eta_max, eta_seq / P_eff)`` with ``P_eff``
    the group's largest effective ``P`` (``P/L`` for the per-position likelihood): the
    likelihood curvature grows like ``P_eff``.
    """
    from copyhead_jax.results import PosteriorResult
    from copyhead_jax.sample import run_sampler

    sg = dict(spec.sgld)
    eta_max, eta_seq = sg.pop("eta_max"), sg.pop("eta_seq")
    P_list = sorted(int(p) for p in P_list if int(p) in runs)
    cfg = runs.cfg
    groups = group_P(
        P_list, n_seeds=1, epochs=sg["n_steps"] * sg["n_chains"], L=cfg.task.L, cost=spec.cost
    )
    fields = ("c1", "cG", "r", "psi", "coverage", "train_loss", "U")
    out = {
        f"{f}_{m}": np.full((len(P_list), len(seeds)), np.nan)
        for f in fields
        for m in ("mean", "var")
    }
    for h in ("rhat_cG", "ess_cG", "accept_mean", "step_size"):
        out[h] = np.full((len(P_list), len(seeds)), np.nan)
    index = {p: i for i, p in enumerate(P_list)}
    for j, s in enumerate(seeds):
        for g in groups:
            lik = cfg.posterior.likelihood
            P_eff = ch.conventions.effective_P(g[-1], L=cfg.task.L, likelihood=lik)
            eta = float(min(eta_max, eta_seq / max(P_eff, 1e-12)))
            sgld = ch.SGLDConfig(step_size=eta, **sg)
            sub = _sub_sweep(runs, g, s)
            key = _digest([sub.config.to_dict(), dataclasses.asdict(sgld), code_version("sampler")])
            path = spec.cache_dir / f"post-{cfg.model.attention}-{key}.npz"
            if path.exists():
                post = PosteriorResult.load(path)
            else:
                t0 = time.time()
                with _quiet_stderr():
                    post = run_sampler(sub, sgld, out=path, progress=False)
                log(
                    f"  sampled {cfg.model.attention} P={g} seed {s} (eta={eta:.2g}) in "
                    f"{time.time() - t0:.0f} s"
                )
            for f in fields:
                m, v = post.moments(f)
                for i, p in enumerate(g):
                    out[f"{f}_mean"][index[p], j] = m[i, 0]
                    out[f"{f}_var"][index[p], j] = v[i, 0]
            for h in ("rhat_cG", "ess_cG", "accept_mean"):
                a = np.asarray(post[h], float).reshape(len(g), 1, -1).mean(-1)
                for i, p in enumerate(g):
                    out[h][index[p], j] = a[i, 0]
            for p in g:
                out["step_size"][index[p], j] = eta
    out["P"] = np.asarray(P_list)
    return out


@contextlib.contextmanager
def quiet_nan():
    """Ignore NumPy's all-NaN / empty-slice warnings (diverged or absent runs are NaN)."""
    import warnings

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@contextlib.contextmanager
def _quiet_stderr():
    """Chain-health warnings are kept in the result (R-hat, ESS, acceptance), not printed."""
    import io

    old = sys.stderr
    sys.stderr = io.StringIO()
    try:
        yield
    finally:
        sys.stderr = old


# ---------------------------------------------------------------------------------------------
# Output


def jsonable(x: Any) -> Any:
    """NumPy/JAX values to JSON (NaN and inf become ``None``)."""
    if isinstance(x, loc.Located):
        return jsonable(x.to_dict())
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if isinstance(x, np.ndarray | jax.Array):
        return jsonable(np.asarray(x).tolist())
    if isinstance(x, np.bool_ | bool):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):  # 7 significant digits keep the files small
        return float(f"{float(x):.7g}") if math.isfinite(float(x)) else None
    return x


def write_json(path: Path, obj: Any) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(jsonable(obj), indent=1, sort_keys=False) + "\n")
    tmp.replace(path)
    return path


def nulls_in_lists_to_nan(x: Any) -> Any:
    """JSON writes NaN as null (:func:`jsonable`): back to NaN inside lists, at any depth."""
    if isinstance(x, dict):
        return {k: nulls_in_lists_to_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [np.nan if v is None else nulls_in_lists_to_nan(v) for v in x]
    return x


def read_record(path: Path) -> dict:
    """A group record of :func:`group_record` (the runs' lists with NaN, not None)."""
    return nulls_in_lists_to_nan(json.loads(Path(path).read_text()))


def group_record(path: Path, compute, legacy: Path | None = None, **meta: Any) -> dict:
    """One group of chains as a JSON record at ``path`` (``{"runs": [...], "cpu_s": ...}``): read
    if it exists; else an older checkout's pickle ``legacy`` if that exists, else ``compute()``,
    written with ``meta`` and returned as a later call reads it (7 significant digits). Records
    live under the output folder and are committed: a fresh checkout assembles without rerunning
    a chain (``results/`` is a checkout's own cache)."""
    path = Path(path)
    if not path.exists():
        g = pickle.loads(legacy.read_bytes()) if legacy and legacy.exists() else compute()
        write_json(path, dict(g, **meta))
    return read_record(path)


def save_figure(fig, path: Path, dpi: int = 80) -> Path:
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def header(spec: Spec, t0: float) -> dict[str, Any]:
    """Provenance of an artefact: mode, preset, engine config, settings, runtime, environment."""
    from copyhead_jax.storage import environment

    return {
        "artefact": spec.artefact,
        "mode": spec.mode,
        "preset": spec.preset,
        "engine": spec.engine.to_dict(),
        "softmax_train": spec.softmax_train,
        "linear_train": spec.linear_train,
        "sgld": spec.sgld,
        "settings": spec.settings,
        "runtime_s": time.time() - t0,
        "environment": environment(),
        "command": (
            f"python -m experiments {spec.artefact}{MODE_FLAGS[spec.mode]} --preset {spec.preset}"
        ),
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


def P_grid_dense(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` log-spaced ``P`` in ``[lo, hi]`` (floats; the theory takes continuous ``P``)."""
    return np.geomspace(lo, hi, n)


def integer_grid(lo: float, hi: float, n: int) -> np.ndarray:
    """About ``n`` distinct log-spaced integers in ``[max(lo, 1), hi]``."""
    return np.unique(np.round(np.geomspace(max(lo, 1.0), max(hi, 1.0), n)).astype(int))
