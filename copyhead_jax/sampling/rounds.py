r"""Sampling that stops when it has enough: rounds of draws until a target or a cap.

A sampler config with ``ess_target > 0`` (:mod:`copyhead_jax.config.samplers`) is run in rounds.
Its program (:class:`~.sampler.Sampler`) takes the first round with ``start`` (everything before
the draws, then ``round_draws`` draws per chain) and every next one with ``more``, from the
chains' last states (the *carry*): one compiled program per kind of round, the same shapes every
round. After each round the host computes, per run over its finite chains and all its draws so
far, the ESS and split R-hat of U and of both order parameters (:mod:`.stats`, the package's one
implementation); a run *meets the target* when every chain is finite, the smallest ESS is
``>= ess_target`` and the largest R-hat ``<= rhat_target``. The runs of a chunk (one compiled
batch) continue until each meets it or ``n_rounds`` rounds (the cap) are drawn.

Each run stops on its own: once it meets the target, the next rounds run only the runs still
short of it (``more`` gets them as ``active``; a program that maps its runs one after the other
skips the others' work, a batched one computes and leaves it out). A run's draws are those of
its own rounds (``n_draws[run]``), and they do not depend on when the other runs stop: each
chain's randomness is fixed by its key and its transition count. The rows of a stopped run are
NaN past its ``n_draws`` in the chunk's arrays as in the merged ``[P, seed, chain, draw, ...]``
(:func:`merge`), and per-run statistics are taken over each run's own draws (:func:`by_length`).
A run that reaches the cap without meeting the target is flagged (``health.run_flags``):
stopping early never narrows an error, and a run that did not get there says so.

Resumable: after every round the chunk's draws so far and the carry (every chain's state: key,
transition count, adapted step and mass) are saved atomically in the chunk's snapshot file
(:func:`~copyhead_jax.runner.run_chunked`); a killed run resumes after the last saved round and
gives the same draws, bit for bit, as one that was never interrupted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..results import DRAW_FIELDS
from ..runner.chunks import load_checkpoint
from ..storage import atomic_save_npz
from .stats import ess, split_rhat

#: the columns of ``draws`` a target is judged on: U and the two order parameters
JUDGED = tuple(DRAW_FIELDS.index(f) for f in ("U", "c1", "cG"))
_SNAPSHOT_KIND = "copyhead_jax.RoundSnapshot"
#: How a chunk's rounds stop, for the fingerprints of saved chunks and rounds: each run alone.
ROUNDS = "each run stops on its own"


def reached(
    draws: np.ndarray,
    finite: np.ndarray,
    columns: tuple[int, ...] = JUDGED,
    n_draws: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(ess_min, rhat_max)`` per run of ``draws[runs, C, S, F]``: the smallest ESS and largest
    split R-hat of the judged ``columns`` (default :data:`JUDGED`) over the run's finite chains
    and its first ``n_draws[run]`` draws (``None``: all) (NaN with no finite chain, under 4
    draws, or a constant trace)."""
    runs = draws.shape[0]
    e, r = np.full(runs, np.nan), np.full(runs, np.nan)
    for i in range(runs):
        ok = np.asarray(finite[i], bool)
        n = draws.shape[2] if n_draws is None else int(n_draws[i])
        if not ok.any() or n < 4:
            continue
        x = np.moveaxis(np.asarray(draws[i][ok][:, :n][..., columns], np.float64), -1, 0)
        with np.errstate(all="ignore"):
            e[i], r[i] = np.min(ess(x)), np.max(split_rhat(x))
    return e, r


def met(ess_min, rhat_max, finite, mc) -> np.ndarray:
    """Whether each run meets ``mc``'s target: every chain finite (``finite[..., C]``), ESS
    ``>= mc.ess_target``, R-hat ``<= mc.rhat_target`` (NaN never meets it)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(
            np.all(np.asarray(finite, bool), axis=-1)
            & (np.asarray(ess_min) >= mc.ess_target)
            & (np.asarray(rhat_max) <= mc.rhat_target)
        )


def join_rounds(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The host arrays of two consecutive rounds of the same runs as one: per-draw arrays
    (``[runs, C, draw, ...]``) joined along the draws, ``finite[runs, C]`` and-ed, and every
    other array (per run or per chain: U at the start, the frozen step) the first round's."""
    out = {}
    for k, v in a.items():
        if k == "finite":
            out[k] = v & b[k]
        elif np.ndim(v) < 3:
            out[k] = v
        else:
            out[k] = np.concatenate([v, b[k]], axis=2)
    return out


def sample_rounds(
    mc,
    start: Callable,
    more: Callable,
    host: Callable,
    structure,
    snapshot: tuple[Path, str] | None,
    done: Callable[[dict], bool] | None = None,
    on_round: Callable[[int, np.ndarray], None] | None = None,
    each: bool = False,
) -> dict[str, np.ndarray]:
    """The draws of one chunk's runs in rounds (module docstring), as host arrays with a leading
    run axis plus ``n_draws[runs]``, each run's draws per chain. ``mc`` gives ``n_rounds`` and
    ``round_draws`` (and the target); ``start()`` returns ``(stats, carry)`` (device),
    ``host(stats)`` the host arrays; ``structure`` is the carry's pytree structure;
    ``snapshot = (path, fingerprint)`` where each round is saved (``None``: not saved), a
    matching one resumed from; ``on_round(rounds, short)`` is called after a round is saved,
    before the next one starts, with ``short[runs]`` the runs still short of the target
    (progress; it changes no number).

    ``each=False``: the runs go on together; ``done(arrays)`` says whether every run has enough
    and ``more(carry, first_draw)`` draws the next round of all. ``each=True``: every run stops
    on its own; ``done(arrays)`` says which have enough (``bool[runs]``) and
    ``more(carry, first_draw, active)`` draws the next round of the runs still short
    (``active[runs]``); the program leaves the others' draws of that round out (NaN in the
    per-draw arrays, or a mark of its own) and ``finite`` true. Default ``done`` (either way):
    :func:`met` ``mc``'s target on ``draws`` and ``finite``, each run over its own draws."""

    def runs_met(a) -> np.ndarray:
        if done is not None:
            return np.broadcast_to(np.asarray(done(a), bool), a["n_draws"].shape)
        return met(*reached(a["draws"], a["finite"], n_draws=a["n_draws"]), a["finite"], mc)

    got = _load(snapshot, structure)
    if got is None:
        stats, carry = start()
        arrays, rounds = host(stats), 1
        arrays["n_draws"] = np.full(arrays["finite"].shape[0], mc.round_draws, np.int64)
    else:
        arrays, carry, rounds = got
        if "n_draws" not in arrays:  # saved before runs stopped on their own: all ran each round
            arrays["n_draws"] = np.full(arrays["finite"].shape[0], rounds * mc.round_draws)
    while rounds < mc.n_rounds:
        active = ~runs_met(arrays)
        if not active.any():
            break
        _save(snapshot, arrays, carry, rounds)
        if on_round is not None:
            on_round(rounds, active)
        first = rounds * mc.round_draws
        if each:
            stats, carry = more(carry, first, jnp.asarray(active))
        else:
            stats, carry = more(carry, first)
            active = np.ones_like(active)
        n_draws = arrays["n_draws"] + mc.round_draws * active
        arrays, rounds = join_rounds(arrays, host(stats)), rounds + 1
        arrays["n_draws"] = n_draws.astype(np.int64)
    return arrays


def _save(snapshot, arrays: dict, carry, rounds: int) -> None:
    if snapshot is None:
        return
    path, fp = snapshot
    leaves = jax.tree.leaves(carry)
    is_key = [jnp.issubdtype(x.dtype, jax.dtypes.prng_key) for x in leaves]
    out = {f"round/{k}": v for k, v in arrays.items()}
    for i, (x, key) in enumerate(zip(leaves, is_key)):
        out[f"carry_{i:04d}"] = np.asarray(jax.random.key_data(x) if key else x)
    meta = {
        "kind": _SNAPSHOT_KIND,
        "schema": 1,
        "fingerprint": fp,
        "rounds": rounds,
        "keys": [i for i, k in enumerate(is_key) if k],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_save_npz(path, out, meta)


def _load(snapshot, structure):
    """``(arrays, carry, rounds)`` of a matching snapshot, else ``None``."""
    if snapshot is None or not snapshot[0].exists():
        return None
    saved, meta = load_checkpoint(snapshot[0], _SNAPSHOT_KIND)  # unreadable: {} and a warning
    n = sum(k.startswith("carry_") for k in saved)
    if meta.get("fingerprint") != snapshot[1] or n != structure.num_leaves:
        return None
    keys = set(meta["keys"])
    leaves = [
        jax.random.wrap_key_data(saved[f"carry_{i:04d}"])
        if i in keys
        else jnp.asarray(saved[f"carry_{i:04d}"])
        for i in range(n)
    ]
    arrays = {k[len("round/") :]: v for k, v in saved.items() if k.startswith("round/")}
    return arrays, jax.tree.unflatten(structure, leaves), int(meta["rounds"])


def merge(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The chunks' arrays along the run axis, per-draw arrays padded past a chunk's draws with
    NaN (``False`` for booleans) to the longest chunk's."""
    out = {}
    for k in parts[0]:
        xs = [p[k] for p in parts]
        if any(x.shape[1:] != xs[0].shape[1:] for x in xs):
            S = max(x.shape[2] for x in xs)
            xs = [_pad(x, S) for x in xs]
        out[k] = np.concatenate(xs)
    return out


def _pad(x: np.ndarray, S: int) -> np.ndarray:
    fill = False if x.dtype == bool else np.nan
    x = x if x.dtype == bool or np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)
    pad = [(0, 0)] * x.ndim
    pad[2] = (0, S - x.shape[2])
    return np.pad(x, pad, constant_values=fill)


def by_length(
    fn: Callable[[dict], dict], arrays: dict[str, np.ndarray], n_draws: np.ndarray | None
) -> dict[str, np.ndarray]:
    """``fn(arrays)`` (per-run results ``[P, seed, ...]``) computed for each set of runs with
    the same ``n_draws[P, seed]`` on their own draws alone: per-draw arrays
    ``[P, seed, chain, draw, ...]`` cut at that many draws (``None``: every run has all)."""
    if n_draws is None:
        return fn(arrays)
    n_draws = np.asarray(n_draws)
    S = arrays["draws"].shape[3]
    lengths = np.unique(n_draws)
    if len(lengths) == 1 and lengths[0] == S:
        return fn(arrays)
    lead = n_draws.shape
    out: dict[str, np.ndarray] = {}
    for n in lengths:
        sel = n_draws == n
        sub = {
            k: (v[sel][:, None, :, :n] if v.ndim >= 4 else v[sel][:, None])
            for k, v in arrays.items()
            if v.shape[:2] == lead
        }
        for k, v in fn(sub).items():
            v = np.asarray(v)
            if k not in out:
                fill = False if v.dtype == bool else np.nan
                dtype = (
                    v.dtype
                    if v.dtype == bool or np.issubdtype(v.dtype, np.floating)
                    else np.float64
                )
                out[k] = np.full(lead + v.shape[2:], fill, dtype)
            out[k][sel] = v[:, 0]
    return out
