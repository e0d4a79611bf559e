r"""Umbrella windows: HMC chains in harmonic restraints on an order parameter.

Window $k$ (centre $c_k$, force constant $\kappa$) samples
$$\pi_k(x)\propto e^{-U(x)-\frac\kappa2(a(x)-c_k)^2}$$
with the package's HMC kernel (:func:`copyhead_jax.sampling.hmc.hmc_chains`: dual-averaging warm-up,
then an exact chain at the frozen step) in the window's whitening $x=x_k+C_kw$
(:mod:`.landscape`). Each window runs ``n_chains`` chains from independent keys and starts
$w_0\sim\mathcal N(0,s^2I)$ (``start_scale`` $s$). Chain $r$ of every window forms replica $r$:
the replicas are independent umbrella runs (whole profiles), whose spread is the profile's
Monte-Carlo error, and the chains of one window give its split $\hat R$ and ESS
(:mod:`copyhead_jax.sampling.stats`). Windows run one after the other (``lax.map``), the chains of
a window batched (``vmap``) or, where the landscape says so (``Landscape.batched``), one after
the other.

**Stop when enough** (``ess_target > 0``): the windows are sampled in rounds of ``round_iter``
iterations (:mod:`copyhead_jax.sampling.rounds`: the chains continued from their states, one
compiled program per kind of round) until every window's ESS of $a$ and of $U$ is
``>= ess_target`` and their split $\hat R$ ``<= rhat_target`` with every chain finite, or
``n_iter`` (in whole rounds, the cap). Each window stops in the first round after which its own
draws meet the target: the next rounds skip it at no cost (windows run one after the other) and
leave its later draws NaN. A window that reaches the cap first is flagged by the profile
(:mod:`.windows`), which widens its errors. With a
``snapshot`` path each round is saved and a killed run resumes after the last saved round, bit
for bit; a finished call's draws stay there and are returned by a rerun with the same inputs.
The default, ``ess_target = 0``, is the fixed length ``n_iter``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ...config import FINAL, Rounds
from ...runner import checkpointed, fingerprint
from ...sampling.hmc import hmc_chains, hmc_state_structure
from ...sampling.rounds import sample_rounds
from ...sampling.stats import ess, split_rhat
from .landscape import Landscape


@dataclasses.dataclass(frozen=True)
class UmbrellaSettings(Rounds):
    """Monte-Carlo sizes of one umbrella run.

    ``n_chains`` chains per window (= independent replicas of the profile, >= 2 for a split
    R-hat across chains); ``n_adapt`` step-adaptation iterations (discarded), then ``n_iter``
    iterations recorded every ``thin``; ``n_leap`` leapfrog steps of initial size ``step_size``
    (whitened units); ``start_scale`` the spread of the starts around the window's restrained
    minimum; ``adapt_mass`` a diagonal mass in the warm-up; ``ess_target`` (> 0: in rounds of
    ``round_iter`` iterations until every window has ESS ``>= ess_target`` and R-hat
    ``<= rhat_target`` on ``a`` and ``U``, ``n_iter`` the cap; module docstring)."""

    ROUND_FIELD: ClassVar[str] = "round_iter"

    n_chains: int = 6
    n_adapt: int = 40
    n_iter: int = 200
    thin: int = 2
    n_leap: int = 5
    step_size: float = 0.35
    start_scale: float = 1.0
    adapt_mass: bool = False
    ess_target: float = 0.0
    rhat_target: float = FINAL.rhat_max
    round_iter: int = 100

    def __post_init__(self):
        for name, lo in (("n_chains", 2), ("n_adapt", 0), ("thin", 1), ("n_leap", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"UmbrellaSettings.{name} must be an int >= {lo}, got {v!r}")
        if not isinstance(self.n_iter, int) or self.n_iter < 8 * self.thin:
            raise ValueError(
                f"UmbrellaSettings.n_iter must be an int >= 8 thin, got {self.n_iter!r}"
            )
        if not self.step_size > 0 or not self.start_scale >= 0:
            raise ValueError("UmbrellaSettings.step_size must be > 0 and start_scale >= 0")
        if not (
            math.isfinite(self.ess_target)
            and self.ess_target >= 0
            and math.isfinite(self.rhat_target)
            and self.rhat_target > 1
        ):
            raise ValueError(
                "UmbrellaSettings needs ess_target >= 0 and rhat_target > 1, got "
                f"{self.ess_target!r}, {self.rhat_target!r}"
            )
        r = self.round_iter
        if (
            not isinstance(r, int)
            or r < 1
            or (self.ess_target and (r % self.thin or r // self.thin < 4))
        ):
            raise ValueError(
                f"UmbrellaSettings.round_iter must be an int >= 1, with a target a "
                f"multiple of thin = {self.thin} holding >= 4 draws, got {r!r}"
            )

    @property
    def n_draws(self) -> int:
        return self.n_iter // self.thin


class WindowDraws(NamedTuple):
    """Draws of every window and chain: ``a``, ``U`` ``[K, R, S]``, ``extra`` ``[K, R, S, m]``,
    per chain the mean acceptance, frozen step and finiteness ``[K, R]``; ``n_draws[K]`` the
    draws of each window (``None``: all ``S``; windows sampled in rounds are NaN past theirs)."""

    a: Float[Array, "K R S"]
    U: Float[Array, "K R S"]
    extra: Float[Array, "K R S m"]
    accept: Float[Array, "K R"]
    step: Float[Array, "K R"]
    finite: Array
    n_draws: np.ndarray | None = None

    def lengths(self) -> np.ndarray:
        """``[K]`` draws per chain of each window."""
        K, _, S = np.shape(self.a)
        return np.full(K, S) if self.n_draws is None else np.asarray(self.n_draws)

    def of(self, x, k: int) -> np.ndarray:
        """Window ``k``'s own draws of a per-draw array ``x[K, R, S, ...]``: ``[R, n_k, ...]``."""
        return np.asarray(x[k])[:, : int(self.lengths()[k])]

    def _per_window(self, stat, x) -> np.ndarray:
        if self.n_draws is None:
            return np.asarray(stat(np.asarray(x, np.float64)))
        return np.array(
            [float(stat(np.asarray(self.of(x, k), np.float64))) for k in range(len(self.lengths()))]
        )

    def rhat(self, of: str = "a") -> np.ndarray:
        """``[K]`` split R-hat of ``a`` (or ``U``) over each window's chains."""
        return self._per_window(split_rhat, getattr(self, of))

    def ess(self, of: str = "a") -> np.ndarray:
        """``[K]`` ESS of ``a`` (or ``U``) in each window (chains pooled)."""
        return self._per_window(ess, getattr(self, of))

    def reversed(self) -> WindowDraws:
        """The windows in the opposite order."""
        return WindowDraws(*(None if v is None else np.asarray(v)[::-1] for v in self))

    def concat(self, other: WindowDraws, before: bool = False) -> WindowDraws:
        """The windows of ``self`` and ``other`` (``other`` first if ``before``); per-draw
        arrays padded with NaN to the longer's draws when they differ."""
        pair = (other, self) if before else (self, other)
        S = max(np.shape(d.a)[2] for d in pair)

        def pad(x):
            x = np.asarray(x)
            if x.shape[2] == S:
                return x
            width = [(0, 0)] * x.ndim
            width[2] = (0, S - x.shape[2])
            return np.pad(x.astype(np.float64), width, constant_values=np.nan)

        fields = [
            np.concatenate(
                [
                    pad(getattr(d, f)) if f in ("a", "U", "extra") else np.asarray(getattr(d, f))
                    for d in pair
                ]
            )
            for f in self._fields[:-1]
        ]
        same = all(d.n_draws is None for d in pair) and len({np.shape(d.a)[2] for d in pair}) == 1
        return WindowDraws(*fields, None if same else np.concatenate([d.lengths() for d in pair]))


def window_target(dr: WindowDraws, s: UmbrellaSettings) -> dict[str, np.ndarray]:
    """Per window: ``ess_min`` and ``rhat_max`` over ``a`` and ``U``, and ``met``: every chain
    finite and both within ``s``'s target (module docstring)."""
    e = np.minimum(dr.ess("a"), dr.ess("U"))
    r = np.maximum(dr.rhat("a"), dr.rhat("U"))
    with np.errstate(invalid="ignore"):
        ok = (
            np.all(np.asarray(dr.finite, bool), axis=1) & (e >= s.ess_target) & (r <= s.rhat_target)
        )
    return {"ess_min": e, "rhat_max": r, "met": ok}


def _target(ls: Landscape):
    """``(potential, record)`` of a window's chains in its whitening: the biased energy, and
    per draw ``(a, U, extra)`` with ``U`` the unbiased energy."""

    def pot(w, params, x0, C, center, kappa):
        return ls.biased(params, x0 + C @ w, center, kappa)

    def record(state, j, params, x0, C, center, kappa):
        a, ex = ls.observed(params, x0 + C @ state.position)
        return a, state.potential_energy - 0.5 * kappa * (a - center) ** 2, ex

    return pot, record


@functools.lru_cache(maxsize=16)
def _program(ls: Landscape, s: UmbrellaSettings, rounds: bool = False):
    """The compiled umbrella run of a landscape and settings (window arrays are arguments);
    ``rounds``: the first round (``round_draws`` draws per chain), with per-draw acceptances
    and the chains' states."""
    pot, record = _target(ls)
    n_iter = s.round_draws * s.thin if rounds else s.n_iter

    def one_window(key, params, x0, C, center, kappa):
        k_start, k_run = jax.random.split(key)
        w0 = s.start_scale * jax.random.normal(k_start, (s.n_chains, x0.shape[0]), x0.dtype)
        ch = hmc_chains(
            jax.random.split(k_run, s.n_chains),
            pot,
            w0,
            record,
            n_iter=n_iter,
            thin=s.thin,
            step_size=s.step_size,
            n_leap=s.n_leap,
            n_adapt=s.n_adapt,
            adapt_mass=s.adapt_mass,
            args=(params, x0, C, center, kappa),
            batched=ls.batch(params, s.n_chains),
        )
        a, U, ex = ch.records
        if rounds:
            return (a, U, ex, ch.accept, ch.step_size, ch.finite), ch.state
        return a, U, ex, jnp.mean(ch.accept, -1), ch.step_size, ch.finite

    @jax.jit
    def run(key, params, x0, C, centers, kappa):
        keys = jax.random.split(key, centers.shape[0])
        return jax.lax.map(
            lambda a: one_window(a[0], params, a[1], a[2], a[3], kappa), (keys, x0, C, centers)
        )

    return run


@functools.lru_cache(maxsize=16)
def _more(ls: Landscape, s: UmbrellaSettings):
    """The compiled next round of the windows marked ``active`` from their chains' states; an
    inactive window (one that met the target) costs nothing: its state stays, its draws and
    acceptances are NaN (``lax.cond`` inside the windows' ``lax.map``)."""
    pot, record = _target(ls)

    def one_window(state, params, x0, C, center, kappa, first_draw, active):
        def draw(state):
            ch = hmc_chains(
                None,
                pot,
                None,
                record,
                n_iter=s.round_draws * s.thin,
                thin=s.thin,
                step_size=s.step_size,
                n_leap=s.n_leap,
                n_adapt=s.n_adapt,
                adapt_mass=s.adapt_mass,
                args=(params, x0, C, center, kappa),
                state=state,
                first_draw=first_draw,
                batched=ls.batch(params, s.n_chains),
            )
            a, U, ex = ch.records
            return (a, U, ex, ch.accept, ch.step_size, ch.finite), ch.state

        def stay(state):
            a, U, ex, acc, step, finite = jax.eval_shape(draw, state)[0]
            nan = lambda x: jnp.full(x.shape, jnp.nan, x.dtype)  # noqa: E731
            return (
                nan(a),
                nan(U),
                nan(ex),
                nan(acc),
                nan(step),
                jnp.ones(finite.shape, finite.dtype),
            ), state

        return jax.lax.cond(active, draw, stay, state)

    @jax.jit
    def run(states, params, x0, C, centers, kappa, first_draw, active):
        return jax.lax.map(
            lambda a: one_window(a[0], params, a[1], a[2], a[3], kappa, first_draw, a[4]),
            (states, x0, C, centers, active),
        )

    return run


_FIELDS = ("a", "U", "extra", "accept", "step", "finite")


def run_windows(
    key: Array,
    ls: Landscape,
    params,
    x0: np.ndarray,
    C: np.ndarray,
    centers: np.ndarray,
    kappa: float,
    s: UmbrellaSettings,
    ckpt_dir: Path | None = None,
    on_round=None,
) -> WindowDraws:
    """Every window's chains (module docstring): ``x0[K, n]`` the restrained minima,
    ``C[K, n, n]`` the whitenings, ``centers[K]``; float32. ``ckpt_dir``: a folder where the
    rounds are saved and a finished call's draws kept, in files named by a hash of the
    settings and every input, so a rerun with the same inputs resumes or reads them.
    ``on_round(rounds, short)``: called after each saved round with ``short[K]`` the windows
    still short of the target (:func:`~copyhead_jax.sampling.rounds.sample_rounds`)."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    inputs = (key, params, f32(x0), f32(C), f32(centers), jnp.float32(kappa))
    fp = _fingerprint(s, inputs) if ckpt_dir is not None else None
    snapshot = None if ckpt_dir is None else Path(ckpt_dir) / f"windows-{fp}.npz"

    def sample() -> dict[str, np.ndarray]:
        if not s.ess_target:
            out = _program(ls, s)(*inputs)
            return _arrays(WindowDraws(*(np.asarray(v) for v in out)))

        def enough(arrays) -> np.ndarray:  # per window: the others go on
            return window_target(_draws(arrays), s)["met"]

        got = sample_rounds(
            s,
            lambda: _program(ls, s, True)(*inputs),
            lambda carry, n, active: _more(ls, s)(carry, *inputs[1:], jnp.int32(n), active),
            lambda out: {k: np.asarray(v) for k, v in zip(_FIELDS, out)},
            hmc_state_structure(),
            None if snapshot is None else (_partial(snapshot), fp),
            done=enough,
            each=True,
            on_round=on_round,
        )
        return _arrays(_draws(got))

    arrays, loaded = checkpointed(snapshot, _DONE_KIND, fp, sample)
    if snapshot is not None and not loaded:
        _partial(snapshot).unlink(missing_ok=True)
    return WindowDraws(*(arrays[f] for f in _FIELDS), arrays.get("n_draws"))


def round_progress(log: Callable[[str], None], u: UmbrellaSettings, t0: float):
    """An ``on_round`` for :func:`run_windows`: one line per round to ``log`` (the windows
    still short of the target, the process CPU since ``t0``)."""

    def on_round(rounds: int, short: np.ndarray) -> None:
        cpu = (time.process_time() - t0) / 60
        log(
            f"windows: round {rounds} of at most {u.n_rounds} done, {int(short.sum())} of "
            f"{short.size} still short of ESS >= {u.ess_target:g} and R-hat <= "
            f"{u.rhat_target:g}; {cpu:.1f} CPU-min on this probe so far"
        )

    return on_round


def _partial(path: Path) -> Path:
    """Where the rounds of a call in progress are saved, beside its finished draws."""
    return path.with_name(path.stem + ".partial.npz")


def _draws(arrays: dict) -> WindowDraws:
    """The rounds' host arrays as :class:`WindowDraws`: each window's draws are its first
    ``n_draws[K]`` (up to the round in which it met the target), the acceptance their mean."""
    acc = np.asarray(arrays["accept"])
    n = np.asarray(arrays["n_draws"])
    took = np.arange(acc.shape[-1]) < n[:, None]  # [K, S]: rounds after a window stopped: no draws
    mean_acc = np.where(took[:, None, :], acc, 0.0).sum(-1) / np.maximum(n, 1)[:, None]
    return WindowDraws(
        arrays["a"],
        arrays["U"],
        arrays["extra"],
        mean_acc,
        arrays["step"],
        arrays["finite"],
        None if took.all() else n,
    )


def _fingerprint(s: UmbrellaSettings, inputs) -> str:
    """A hash of the settings and every input of a call (keys by their data)."""
    blobs = []
    for x in jax.tree.leaves(inputs):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        x = np.asarray(x)
        blobs.append(str((x.shape, x.dtype)).encode() + x.tobytes())
    return fingerprint(dataclasses.asdict(s), *blobs, digits=24)


_DONE_KIND = "copyhead_jax.WindowDraws"


def _arrays(dr: WindowDraws) -> dict[str, np.ndarray]:
    """The finished draws as the arrays of their checkpoint (a round in progress is another
    kind, ``sampling.rounds``)."""
    arrays = {f: np.asarray(getattr(dr, f)) for f in _FIELDS}
    if dr.n_draws is not None:
        arrays["n_draws"] = np.asarray(dr.n_draws)
    return arrays
