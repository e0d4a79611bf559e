r"""Learning coefficient and WBIC of every run of a reduced sweep (docs/theory.md §9.8).

Per run ``[P, seed]`` the centre $w^*=(W^G,\hat W^O)$ is the **lowest-U minimum found** among
the given sweeps of the same runs (the pooling- and copy-branch starts of a softmax sweep, or a
sweep with continuation in P, which already keeps its lowest-U fit): a higher minimum makes
$\hat\lambda$ negative wherever the chains find the lower one. About it, three chain sets per P
(:data:`~.llc_chains.ESTIMATORS`: $\hat\lambda$ at $\beta=1$, devinterp's default at
$\beta=1/\log n$, WBIC), each all seeds of the P in one compiled program, fixed length or until
enough (:mod:`.llc_chains`). With a posterior file of the same runs, ``posterior`` is the
posterior's own $\hat\lambda_{\beta=1}=\mathbb E_{\rm post}[\mathcal E]-\mathcal E(w^*)$
($\gamma=0$, prior kept) from its draws.

Each finished chain set is kept in a checkpoint folder (``runner.run_chunked``) and a chain set in
progress saves its rounds: a killed run resumes with the numbers of an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective
from ..results import PosteriorResult, SweepResult
from ..runner import Progress, failures, fingerprint, map_groups
from ..runner.eta import announce
from .cost import llc_estimate
from .estimators import run_mean
from .health import target_meta
from .llc_chains import CHUNK_FIELDS, ESTIMATORS, chain_set_row, check_llc_memory
from .llc_chains import LLCSettings as LLCSettings

__all__ = ["LLCSettings", "RunLLC", "devinterp_sweep", "llc_runs", "lowest_u_fits"]


class RunLLC(NamedTuple):
    """Per run ``[P, seed]`` arrays (NaN where a run is not ok, or P < 2), plus context."""

    P: np.ndarray  # (nP,)
    d: int  # reduced parameter count: |W^G| + |W^O_hat|
    arrays: dict[str, np.ndarray]  # VALUE and VALUE_mcse for each estimator, health, w* data
    pstar: dict[str, float]  # MAP P* of the sweeps (geometric mean of the located seeds)
    attention: str
    settings: LLCSettings

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: lists of lists, NaN as None."""
        clean = lambda a: [[None if not np.isfinite(x) else float(x) for x in r] for r in a]
        return {
            "P": self.P.tolist(),
            "d": self.d,
            "d_half": self.d / 2,
            "attention": self.attention,
            "pstar": self.pstar,
            "settings": dataclasses.asdict(self.settings),
            "target": target_meta(self.settings),
            **{k: clean(np.asarray(v, float)) for k, v in self.arrays.items()},
        }


def _same_runs(sweeps: Sequence[SweepResult]) -> None:
    if not sweeps or not all(isinstance(s, SweepResult) for s in sweeps):
        raise ValueError("sweeps must be one or more SweepResult of the same runs")
    for s in sweeps:
        if s.config.model.engine != "reduced" or not s.has_params:
            raise ValueError(
                "llc needs reduced-engine sweeps with kept weights ('copyhead sweep --engine "
                f"reduced --keep-params'); got engine {s.config.model.engine!r}, weights kept: "
                f"{s.has_params}"
            )
        if s.config.train.train_embeddings:
            raise ValueError(
                "llc needs quenched embeddings (train_embeddings=False): a reduced sweep with "
                "trained embeddings holds joint-MAP fits (docs/theory.md §2d), whose centre is "
                "not a minimum of the quenched posterior that the chains sample"
            )
    base = {k: v for k, v in sweeps[0].config.to_dict().items() if k != "train"}
    for s in sweeps[1:]:
        other = {k: v for k, v in s.config.to_dict().items() if k != "train"}
        if other != base:
            bad = sorted(k for k in base if base[k] != other.get(k))
            raise ValueError(
                f"sweeps must share task, model, posterior and sweep settings (the "
                f"same runs, other starts); they differ in {bad}"
            )


def lowest_u_fits(sweeps: Sequence[SweepResult]) -> tuple[SweepResult, np.ndarray]:
    """One sweep whose every run ``[P, seed]`` is the ok fit of lowest U among ``sweeps``, and
    ``source[P, seed]``, the index of the sweep it came from (-1: no ok fit)."""
    sweeps = list(sweeps)
    _same_runs(sweeps)
    U = np.stack([np.where(s.ok, np.asarray(s["U"], float), np.inf) for s in sweeps])
    src = np.argmin(U, axis=0)
    src = np.where(np.isfinite(U.min(0)), src, -1)
    shape = U.shape[1:]
    arrays = {}
    for k, v0 in sweeps[0].arrays.items():
        vs = [s.arrays.get(k) for s in sweeps]
        if v0.shape[:2] != shape or any(v is None or v.shape != v0.shape for v in vs):
            continue
        st = np.stack(vs)
        pick = np.maximum(src, 0).reshape((1, *shape) + (1,) * (v0.ndim - 2))
        arrays[k] = np.take_along_axis(st, pick, axis=0)[0]
    arrays["finite"] = np.where(src >= 0, arrays["finite"], False)
    return sweeps[0].replace(arrays=arrays), src


def _fingerprint(cfg, st: LLCSettings, estimators: list[str], key, best: SweepResult) -> str:
    """What determines every chain set: the runs' config, the settings, the estimators, the
    chains' key and the centres w* (their weights, U and ok flags)."""
    weights = ("params/W_G", "params/W_O_hat", "params/W_E", "params/b", "U")
    return fingerprint(
        [cfg.to_dict(), dataclasses.asdict(st), estimators],
        np.asarray(jax.random.key_data(key)).tobytes(),
        *(np.ascontiguousarray(best[k]).tobytes() for k in weights),
        np.asarray(best.ok).tobytes(),
    )


def _pstar(sweeps: Sequence[SweepResult], best: SweepResult) -> dict[str, float]:
    """MAP P* markers: linear onset and crossover of ``best``; for a two-branch head (softmax)
    the U crossing of the pooling- and copy-branch sweeps where both are given (§5)."""
    from ..compare.pstar import linear_points, softmax_points

    if not head_class(best.config.model.attention).two_branches:
        found = linear_points(best) if len(best.P) >= 3 else {}
    else:
        by = {s.config.train.init_attention: s for s in sweeps}
        found = softmax_points(by["zero"], by["copy"]) if {"zero", "copy"} <= set(by) else {}
    out = {}
    for name, per in found.items():
        xs = [x.P_star for x in per if x.bracketed and x.P_star]
        if xs:
            out[name] = float(np.exp(np.mean(np.log(xs))))
    return out


def llc_runs(
    sweeps: SweepResult | Sequence[SweepResult],
    *,
    posterior: PosteriorResult | None = None,
    settings: LLCSettings | None = None,
    estimators: Sequence[str] = tuple(ESTIMATORS),
    key: jax.Array | None = None,
    progress: bool = False,
    ckpt_dir: str | Path | None = None,
    cluster: str | None = None,
    estimate: bool | None = None,
) -> RunLLC:
    r"""$\hat\lambda$ at $\beta=1$ and at devinterp's $\beta=1/\log n$ (localisation $\gamma$),
    WBIC, and (with ``posterior``) the posterior's own $\hat\lambda_{\beta=1}$, per run, each
    with its MCSE and chain health, centred at the lowest-U fit of ``sweeps`` (module doc).
    ``estimators``: a subset of ``ESTIMATORS`` to run (the others stay NaN); ``key``: the
    chains' key (default ``jax.random.key(settings.seed)``); ``ckpt_dir``: a folder where each
    finished chain set (one P, one estimator, every seed) is kept (``runner.run_chunked``), so
    that an interrupted call resumes there, with the numbers of an uninterrupted one;
    ``cluster``: the chain sets not kept run on a Dask cluster (``"tcp://host:port"``,
    ``"local:N"``; :func:`~copyhead_jax.runner.map_groups`), each built there from its inputs
    alone (:func:`~.llc_chains.chain_set_row`): the same numbers as here, kept here as they
    return; ``estimate``: say what the chains will cost before they start (one progress note,
    :func:`~.cost.llc_estimate`; default: with ``progress``)."""
    sweeps = [sweeps] if isinstance(sweeps, SweepResult) else list(sweeps)
    st = LLCSettings() if settings is None else settings
    if not isinstance(st, LLCSettings):
        raise ValueError(f"settings must be an LLCSettings, got {type(st).__name__}")
    if isinstance(estimators, str) or not set(estimators) <= set(ESTIMATORS) or not estimators:
        raise ValueError(
            f"estimators must be a non-empty subset of {tuple(ESTIMATORS)}, got {estimators!r}"
        )
    run = {e: ESTIMATORS[e] for e in ESTIMATORS if e in estimators}
    if cluster is not None:
        map_groups(len, [], cluster=cluster)  # a bad address fails here, before any work
    best, src = lowest_u_fits(sweeps)
    cfg = best.config
    if posterior is not None:
        if not isinstance(posterior, PosteriorResult):
            raise ValueError(f"posterior must be a PosteriorResult, got {type(posterior).__name__}")
        a = {k: v for k, v in posterior.config.to_dict().items() if k != "train"}
        b = {k: v for k, v in cfg.to_dict().items() if k != "train"}
        if a != b:
            raise ValueError(
                "posterior must sample the runs of the sweeps (same task, model, "
                "posterior and sweep settings)"
            )
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    d = check_llc_memory(cfg, st, best)
    inp = sweep_inputs(cfg, None)
    train, mask = np.asarray(inp.train), np.asarray(inp.mask)
    names = ["source", "U_star", "E_star"]
    for e in ESTIMATORS:
        names += [
            e,
            f"{e}_mcse",
            f"{e}_rhat",
            f"{e}_ess",
            f"{e}_eta",
            f"{e}_lambda_max",
            f"{e}_ess_reached",
            f"{e}_rhat_reached",
            f"{e}_n_draws",
            f"{e}_target_met",
            f"{e}_finite",
        ]
    out = {k: np.full((nP, nS), np.nan) for k in names}
    out["source"], out["U_star"] = src.astype(float), np.where(src >= 0, best["U"], np.nan)
    ok = best.ok
    key = jax.random.key(st.seed) if key is None else key
    sets = [(i, e) for i in range(nP) for e in run]  # one chain set per (P, estimator)
    if progress if estimate is None else estimate:  # what it will cost, before any work
        announce(lambda: llc_estimate(cfg, len(run), st), __name__)
    bar = Progress(
        len(sets),
        f"llc {cfg.model.attention} ({nS} seeds per P)",
        show=progress,
        n_chunks=len(sets),
        unit="chain set",
    )

    def inputs(j: int) -> tuple:
        """The arguments of :func:`~.llc_chains.chain_set_row` for the chain set ``sets[j]``:
        its P's seeds' keys, rows and centres."""
        i, e = sets[j]
        P = int(cfg.sweep.P[i])
        rows = slice(i * nS, (i + 1) * nS)
        centre = tuple(best[f"params/{k}"][i] for k in ("W_G", "W_O_hat", "W_E", "b"))
        keys = jax.random.split(
            jax.random.fold_in(jax.random.fold_in(key, P), list(ESTIMATORS).index(e)), nS
        )
        return (cfg, st, e, P, keys, train[rows][:, :P], mask[rows][:, :P], centre, ok[i])

    def compute(idx, snapshot) -> dict[str, np.ndarray]:
        """The row ``[1, nS]`` of the chain set ``sets[idx[0]]``; ``snapshot``: where its rounds
        are saved."""
        return chain_set_row(*inputs(int(idx[0])), snapshot)

    def fan_out(idxs: list) -> list[dict[str, np.ndarray]]:
        """The chain sets ``idxs`` on ``cluster``; one that failed there is one ValueError."""
        got = map_groups(remote_row, [inputs(int(i[0])) for i in idxs], cluster=cluster)
        bad = failures(got)
        if bad:
            raise ValueError(
                f"{len(bad)} of {len(idxs)} chain set(s) failed on {cluster}: {bad[0]}"
            )
        return got

    fp = _fingerprint(cfg, st, list(run), key, best)
    done = bar.chunks(
        n_runs=len(sets),
        chunk=1,
        compute=compute,
        fingerprint=fp,
        ckpt_dir=None if ckpt_dir is None else Path(ckpt_dir),
        snapshots=True,
        fan_out=None if cluster is None else fan_out,
    )
    bar.close()
    for j, (i, e) in enumerate(sets):  # the chain sets' rows into the [P, seed] arrays
        out["E_star"][i] = done["E_star"][j]  # n L_n(w*), the same for every estimator
        for k in CHUNK_FIELDS[:-1]:
            out[e if k == "value" else f"{e}_{k}"][i] = done[k][j]
    if not st.ess_target:  # met or not: only a run with a target says
        for e in ESTIMATORS:
            del out[f"{e}_target_met"]
    if posterior is not None:
        w = Objective.from_config(cfg).likelihood_weight
        mean, se, _ = run_mean(posterior, "train_loss")
        scale = w * np.asarray(cfg.sweep.P, float)[:, None]
        out["posterior"] = np.where(ok, scale * (mean - best["train_loss"]), np.nan)
        out["posterior_mcse"] = np.where(ok, scale * se, np.nan)
    return RunLLC(np.asarray(cfg.sweep.P), d, out, _pstar(sweeps, best), cfg.model.attention, st)


def remote_row(task: tuple) -> dict[str, np.ndarray]:
    """:func:`~.llc_chains.chain_set_row` of one chain set's inputs (a cluster's worker; its
    rounds not saved)."""
    return chain_set_row(*task)


def devinterp_sweep(res: SweepResult, key: jax.Array, settings: LLCSettings) -> dict:
    r"""devinterp's default $\hat\lambda$ ($n\beta=n/\log n$, localisation $\gamma$, no prior)
    of every run of a kept-weights reduced sweep ``res``, centred at its own fit: :func:`llc_runs`
    with that estimator alone, as arrays ``[P, seed]`` named ``value``, ``mcse``, ``rhat``,
    ``ess``, ``eta``, ``lambda_max``, ``finite_frac`` and ``nbeta`` (NaN at P < 2)."""
    a = llc_runs(res, settings=settings, estimators=("devinterp",), key=key).arrays
    P = np.asarray(res.config.sweep.P, float)
    with np.errstate(all="ignore"):
        nbeta = np.where(P > 1, P / np.log(np.maximum(P, 2)), np.nan)
    out = {
        k: a["devinterp" + s]
        for k, s in (
            ("value", ""),
            ("mcse", "_mcse"),
            ("rhat", "_rhat"),
            ("ess", "_ess"),
            ("eta", "_eta"),
            ("lambda_max", "_lambda_max"),
            ("finite_frac", "_finite"),
        )
    }
    return out | {"nbeta": np.broadcast_to(nbeta[:, None], a["devinterp_mcse"].shape).copy()}
