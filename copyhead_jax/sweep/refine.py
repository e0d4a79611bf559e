"""MAP runs of one config at a growing set of ``P``, refined adaptively near located features.

* :class:`Runs`: sweeps at any subsets of ``P`` merged by ``P`` (a seed's datasets are nested
  prefixes, so sweeps over different subsets are one experiment); with
  ``ExactConfig.continuation`` the continuation in P runs over their union.
* :func:`group_P`: ``P`` grouped into few compiled programs by a cost model; :func:`reach_cap`.
* :func:`measure` and :func:`adaptive`: sweep the new ``P``; locate every :class:`Feature`,
  measure inside each bracket (or beyond the grid edge), locate again.
* :func:`posterior_moments`: SGLD moments of selected runs, warm-started from their fits.

Sweeping is a callable ``cfg -> SweepResult`` (e.g. a cached ``run_sweep``), so a caller keeps
its own store.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..compare import locate as loc
from ..compare.branches import quiet_nan
from ..config import AdamConfig, Config, ExactConfig, single_start
from ..results import SweepResult
from ..runner import fingerprint


def log(msg: str) -> None:
    """A progress note (``logging``, shown by the command)."""
    logging.getLogger(__name__).info(msg)


def digest(obj: Any) -> str:
    """A short content hash of a JSON-able object (keys sorted; anything else by ``str``)."""
    return fingerprint(obj)


@contextlib.contextmanager
def computing(path: Path):
    """Hold ``PATH.busy`` (an exclusive ``flock``) while ``path`` is computed: a second process
    asking for the same result waits for the first and then loads it. The lock dies with its
    process (no stale locks)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".busy"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


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


def cost_epochs(cfg: Config) -> int:
    """The cost model's epochs per run: Adam's ``max_epochs``; the exact solver's stand-in is the
    default 20,000 (its ``seq_epoch_us`` was measured against it)."""
    return cfg.solver.max_epochs if isinstance(cfg.solver, AdamConfig) else AdamConfig().max_epochs


def reach_cap(cfg: Config, max_run_s: float, cost: dict[str, float]) -> int:
    """The largest ``P`` whose estimated run time (cost model, :func:`cost_epochs`) is
    ``max_run_s``."""
    per = float(cost.get("seq_epoch_us", 8.0)) * 1e-6 * cost_epochs(cfg)
    return max(1, int(max_run_s / (per * (cfg.task.L / 25.0) ** 2)))


class Runs:
    """MAP runs of one engine config at a growing set of ``P`` (all seeds of each ``P``);
    ``P_cap``: the largest ``P`` in reach (:func:`reach_cap`).

    With ``ExactConfig.continuation`` (``cfg.solver``) the sweeps are single-start and the
    continuation in P (:func:`copyhead_jax.fit.continuation.continue_in_P`) runs over the union of
    the ``P`` measured so far, again whenever it grows; its steps are checkpointed in
    ``cache_dir/continuation`` under ``version`` and the config (a refined grid recomputes only
    the steps whose start changed). Every reader sees the kept lowest-U fits; the sweeps' own
    fits stay in ``parts``."""

    def __init__(self, cfg: Config, label: str = "", P_cap: int | None = None):
        self.cfg = cfg
        self.label = label
        self.P_cap = P_cap
        self.parts: list[SweepResult] = []
        self._where: dict[int, tuple[int, int]] = {}
        self.cache_dir: Path | None = None  # where the continuation's steps are kept
        self.version = ""  # the code version its steps are keyed by
        self._continued: tuple[tuple[int, ...], dict[str, np.ndarray]] | None = None

    def add(self, res: SweepResult) -> None:
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
        s = self.cfg.solver
        if not (isinstance(s, ExactConfig) and s.continuation) or len(self._where) < 2:
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
        return np.stack(
            [self.parts[self._where[int(p)][0]][key][self._where[int(p)][1]] for p in P]
        )

    def masked(self, key: str, P=None) -> np.ndarray:
        """``key`` as float with diverged runs set to NaN."""
        x = self.get(key, P).astype(float)
        ok = self.get("finite", P).astype(bool)
        return np.where(ok.reshape(ok.shape + (1,) * (x.ndim - 2)), x, np.nan)

    def seed_stats(self, keys) -> dict[str, np.ndarray]:
        """Per ``P``: the mean and sd over seeds of each of ``keys`` there is (diverged runs left
        out); under the continuation also how many seeds moved to a lower minimum than their
        own start's, and the seed mean of that start's ``U``."""
        out: dict[str, np.ndarray] = {"P": self.P}
        for k in keys:
            try:
                x = self.masked(k)
            except KeyError:  # e.g. the exact solver's diagnostics in an Adam sweep
                continue
            with quiet_nan():
                out[k], out[k + "_sd"] = np.nanmean(x, axis=1), np.nanstd(x, axis=1)
        if self.continued() is not None:
            out["seeds_moved"] = (self.get("start_source") != 0).sum(axis=1)
            out["U_own_start"] = np.nanmean(self.masked("U_own_start"), axis=1)
        return out

    def wall_seconds(self) -> float:
        return float(sum(p.meta.get("wall_seconds", 0.0) for p in self.parts))


def continue_runs(runs: Runs, P: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The continuation in P of ``runs``' single-start fits at ``P`` (their union grid):
    ``[nP, n_seeds, ...]`` arrays with ``start_source`` and ``U_own_start`` added."""
    from ..fit.continuation import continue_in_P
    from ..fit.exact_sweep import exact_solve_from
    from ..fit.inputs import sweep_inputs
    from ..runner import run_mesh

    cfg = runs.cfg.replace(sweep=dict(P=P))
    nS = cfg.sweep.n_seeds
    rows = [runs.own_row(p) for p in P]
    arrays = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}  # P-major runs
    grid_free = cfg.replace(sweep=dict(P=(1,))).to_dict()  # the steps' key: all but the grid
    fp = digest([grid_free, runs.version])
    ckpt = None if runs.cache_dir is None else Path(runs.cache_dir) / "continuation"
    t0 = time.time()
    with contextlib.ExitStack() as stack:
        if ckpt is not None:  # a second worker process waits, then loads the steps
            stack.enter_context(computing(ckpt / f"{runs.cfg.model.attention}-{fp}"))
        solve = exact_solve_from(cfg, run_mesh(cfg.sweep.n_devices))
        out = continue_in_P(cfg, sweep_inputs(cfg, None), arrays, solve, ckpt, fp)
    log(
        f"  continued {runs.label or cfg.model.attention} L={cfg.task.L} V={cfg.task.V} over "
        f"{len(P)} P x {nS} seeds in {time.time() - t0:.0f} s "
        f"({int((out['start_source'] != 0).sum())} runs moved to a lower minimum)"
    )
    return {k: v.reshape((len(P), nS) + v.shape[1:]) for k, v in out.items()}


def measure(
    runs: Runs,
    P_new,
    *,
    sweep: Callable[[Config], SweepResult],
    cost: dict[str, float],
    P_cap: int | None = None,
) -> list[int]:
    """Sweep ``runs.cfg`` (``sweep(cfg)``, single start, one call per :func:`group_P` group) at
    the ``P_new`` not measured yet, up to ``P_cap`` (default ``runs.P_cap``); returns them."""
    new = sorted({int(p) for p in np.atleast_1d(P_new) if int(p) >= 1 and int(p) not in runs})
    P_cap = runs.P_cap if P_cap is None else P_cap
    if P_cap is not None:
        new = [p for p in new if p <= P_cap]
    # single-start sweeps; a continuation (if on) runs over the union in `Runs.continued`
    cfg = runs.cfg.replace(solver=single_start(runs.cfg.train.solver))
    groups = group_P(
        new, n_seeds=cfg.sweep.n_seeds, epochs=cost_epochs(cfg), L=cfg.task.L, cost=cost
    )
    for g in groups:
        runs.add(sweep(cfg.replace(sweep=dict(P=tuple(g), padding="max"))))
    return new


@dataclass
class Feature:
    """A feature to locate on some :class:`Runs`: ``fn() -> Located``."""

    name: str
    fn: Any
    runs: list[Runs] = field(default_factory=list)


def adaptive(
    features: list[Feature],
    measure_P: Callable[[Runs, list[int]], list[int]],
    *,
    rounds: int,
    n_new: int,
    factor: float = 2.0,
) -> dict[str, loc.Located]:
    """Locate every feature, then for ``rounds`` rounds measure (``measure_P(runs, P)``) new ``P``
    inside each bracket (or beyond the grid edge for an unbracketed feature, up to the runs'
    ``P_cap``) and locate again."""
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
        added = sum(len(measure_P(runs_by_id[k], sorted(P))) for k, P in todo.items())
        if not added:
            break
        log(f"  refinement round {r + 1}: {added} new runs")
        found = {f.name: f.fn() for f in features}
    return found


def _sub_sweep(runs: Runs, P_list, seed_index: int) -> SweepResult:
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
    return SweepResult(config=cfg, arrays=arr, meta={})


def posterior_moments(
    runs: Runs, P_list, sgld: dict, *, cost: dict, path_of: Callable, seeds=(0,)
) -> dict[str, np.ndarray]:
    """SGLD posterior moments at ``P_list`` (warm-started from the fits), ``[nP, n_seeds]``:
    mean and variance of ``c1, cG, r, psi, coverage, train_loss, U`` and chain health.
    ``sgld``: ``SGLDConfig`` fields plus ``eta_max`` and ``eta_seq``; each compiled group's
    chains are stored at (and reloaded from) ``path_of(sub_sweep, sgld_config)``.

    The step size of each compiled group is ``min(eta_max, eta_seq / P_eff)`` with ``P_eff``
    the group's largest effective ``P`` (``P/L`` for the per-position likelihood): the
    likelihood curvature grows like ``P_eff``."""
    from ..config.samplers import SGLDConfig
    from ..conventions import effective_P
    from ..results import PosteriorResult
    from ..sampling.run import run_sampler

    sg = dict(sgld)
    eta_max, eta_seq = sg.pop("eta_max"), sg.pop("eta_seq")
    P_list = sorted(int(p) for p in P_list if int(p) in runs)
    cfg = runs.cfg
    groups = group_P(
        P_list, n_seeds=1, epochs=sg["n_steps"] * sg["n_chains"], L=cfg.task.L, cost=cost
    )
    fields = ("c1", "cG", "r", "psi", "coverage", "train_loss", "U")
    health = ("rhat_cG", "ess_cG", "accept_mean")
    shape = (len(P_list), len(seeds))
    out = {f"{f}_{m}": np.full(shape, np.nan) for f in fields for m in ("mean", "var")}
    out.update({h: np.full(shape, np.nan) for h in (*health, "step_size")})
    index = {p: i for i, p in enumerate(P_list)}
    for j, s in enumerate(seeds):
        for g in groups:
            P_eff = effective_P(g[-1], L=cfg.task.L, likelihood=cfg.posterior.likelihood)
            eta = float(min(eta_max, eta_seq / max(P_eff, 1e-12)))
            chain = SGLDConfig(step_size=eta, **sg)
            sub = _sub_sweep(runs, g, s)
            path = path_of(sub, chain)
            if path.exists():
                post = PosteriorResult.load(path)
            else:
                t0 = time.time()
                with contextlib.redirect_stderr(io.StringIO()):  # chain health is in the result
                    post = run_sampler(sub, chain, out=path, progress=False)
                log(
                    f"  sampled {cfg.model.attention} P={g} seed {s} (eta={eta:.2g}) in "
                    f"{time.time() - t0:.0f} s"
                )
            rows = [index[p] for p in g]
            for f in fields:
                m, v = post.moments(f)
                out[f"{f}_mean"][rows, j], out[f"{f}_var"][rows, j] = m[:, 0], v[:, 0]
            for h in health:
                out[h][rows, j] = np.asarray(post[h], float).reshape(len(g), 1, -1).mean(-1)[:, 0]
            out["step_size"][rows, j] = eta
    out["P"] = np.asarray(P_list)
    return out
