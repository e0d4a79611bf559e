"""Result objects: :class:`SweepResult` and :class:`PosteriorResult`, their arrays, the
order-parameter names of each head, and the flags that say which runs are ok.

Files on disk (atomic writes, locks, the metadata and schema) are :mod:`.storage`'s.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from .config import SAMPLERS, AdamConfig, Config, HMCConfig, SGLDConfig
from .models import ARRAY_FIELDS, AbstractHead, head_class
from .storage import SCHEMA_VERSION, atomic_save_npz, load_npz

SWEEP_KIND = "copyhead_jax.SweepResult"


# ---- order-parameter names: c1/cG are the generic names, a1/aG the softmax ones --------------

#: Generic names of the two order parameters (the projections of the mean attention on J/L and
#: G*/sqrt L); a result stores them under its head's ``order_names``, and indexing a result by a
#: generic name (also inside a key: ``polish/dcG``, ``rhat_cG``) reads the head's array.
GENERIC_ORDER = ("c1", "cG")


def order_names(cfg: Config) -> tuple[str, str]:
    """The head's names of ``(c1, cG)``: ``(a1, aG)`` for softmax, ``(c1, cG)`` for linear."""
    return head_class(cfg.model.attention).order_names


def rename_order(name: str, src: tuple[str, str], dst: tuple[str, str]) -> str:
    """``name`` with the order-parameter names ``src`` replaced by ``dst`` where they stand as
    words (``cG``, ``cG_sd``, ``rhat_cG``, ``polish/dcG``), other names untouched."""
    if src == dst:
        return name
    table = dict(zip(src, dst))
    pat = r"(?<![A-Za-z0-9])(d?)(" + "|".join(map(re.escape, src)) + r")(?![A-Za-z0-9])"
    return re.sub(pat, lambda m: m[1] + table[m[2]], name)


def resolve_order(name: str, keys, names: tuple[str, str]) -> str:
    """The key of ``keys`` that ``name`` means: itself, or its generic/own alias; else ``name``."""
    for cand in (
        name,
        rename_order(name, GENERIC_ORDER, names),
        rename_order(name, names, GENERIC_ORDER),
    ):
        if cand in keys:
            return cand
    return name


#: Per-run scalar fields of a sweep, each stored as an array indexed ``[P, seed]``; ``c1``/``cG``
#: are the generic names (stored under the head's ``order_names``, see ``GENERIC_ORDER``).
SCALARS = (
    "c1",
    "cG",
    "r",
    "psi",
    "coverage",
    "sample_coverage",
    "train_loss",
    "test_loss",
    "copy_accuracy",
    "U",
    "grad_norm",
    "grad_norm_span",
    "stop_epoch",
    "finite",
)
#: Arrays every sweep file must hold (checked at load); ``diverged`` is optional (older files).
REQUIRED = (*SCALARS, "mean_attention", "positional_logits", "curve_U", "curve_loss")

#: A run is diverged if its final loss ends above both its initial loss and the zero-output loss
#: (by more than ``LOSS_MARGIN`` of the larger: float noise of a run that fits nothing), or its
#: U rose above its first logged U by more than ``U_RISE_FACTOR`` times ``|U|``.
LOSS_MARGIN = 0.05
U_RISE_FACTOR = 1.0
#: Without a recorded start, a final loss above this many times the zero-output loss.
NO_START_FACTOR = 2.0


def divergence_flags(arrays: dict[str, np.ndarray], L: int) -> np.ndarray:
    """Runs that blew up while staying finite: ``[..]`` bool, same shape as ``train_loss``.

    Adam lowers U from its start, and the zero-output network (f = 0) scores a train loss of
    ``L`` per sequence (sum over positions of ``||y^a||^2 = 1``); a run whose final loss exceeds
    ``(1 + LOSS_MARGIN) * max(L, loss_init)`` (``loss_init``: before the first step) ends
    worse than both its start and a network that outputs nothing: it has diverged (without
    ``loss_init``, as for exact fits and older files: above ``NO_START_FACTOR * L``). So has
    a run whose U rose above its first logged value by more than ``U_RISE_FACTOR`` times
    ``|U|``. Non-finite runs are flagged too.
    """
    loss = np.asarray(arrays["train_loss"], float)
    bad = ~np.asarray(arrays["finite"], bool) | ~np.isfinite(loss)
    if "loss_init" in arrays:
        ref = np.fmax(float(L), np.asarray(arrays["loss_init"], float))
        bad |= loss > (1 + LOSS_MARGIN) * ref
    else:  # no start recorded (exact fits: L-BFGS only descends; older files)
        bad |= loss > NO_START_FACTOR * L
    if "curve_U" in arrays and "U" in arrays and arrays["curve_U"].shape[-1] > 0:
        U0, U = np.asarray(arrays["curve_U"], float)[..., 0], np.asarray(arrays["U"], float)
        with np.errstate(invalid="ignore"):
            bad |= np.isfinite(U0) & (U > U0 + U_RISE_FACTOR * np.abs(U0))
    return bad


def unconverged_flags(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Exact-solver runs that stopped before the gradient test (``converged=False``, e.g. at
    ``ExactConfig.max_steps``); all False for Adam sweeps (no ``converged`` array)."""
    if "converged" not in arrays:
        return np.zeros(np.shape(arrays["train_loss"]), bool)
    return ~np.asarray(arrays["converged"], bool)


def param_shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    """Shape of one run's kept weights ``params/K`` under ``cfg``: width ``N`` (full engine) or
    ``D = V + L`` (reduced engine: the exact image of the head)."""
    V, L = cfg.task.V, cfg.task.L
    N = V + L if cfg.model.engine == "reduced" else int(cfg.model.width)
    return {"W_E": (N, V), "b": (N, L), "W_G": (N, N), "W_O_hat": (V, N)}


def check_param_shapes(arrays: dict[str, np.ndarray], cfg: Config, where: str) -> None:
    """Kept weights must be all there or all absent, each ``[P, seed, *param_shapes]``."""
    shapes = param_shapes(cfg)
    have = [k for k in shapes if f"params/{k}" in arrays]
    if not have:
        return
    lead = (len(cfg.sweep.P), cfg.sweep.n_seeds)
    want = {f"params/{k}": lead + s for k, s in shapes.items()}
    bad = {k: tuple(arrays[k].shape) if k in arrays else None for k in want}
    bad = {k: v for k, v in bad.items() if v != want[k]}
    if bad:
        k = next(iter(bad))
        got = "missing" if bad[k] is None else f"of shape {bad[k]}"
        raise ValueError(
            f"{where!r} is corrupt: its weights disagree with its config ({k} is {got}, the "
            f"config needs {want[k]})"
        )


class _OfSweep:
    """What both result kinds read off their config: the ``P`` grid and the head's names."""

    config: Config

    @property
    def P(self) -> np.ndarray:
        return np.asarray(self.config.sweep.P)

    @property
    def order_names(self) -> tuple[str, str]:
        """This head's names of the generic ``(c1, cG)``; softmax: ``(a1, aG)``."""
        return order_names(self.config)


@dataclass
class SweepResult(_OfSweep):
    """A MAP sweep: per-run measurements indexed ``[P, seed]`` plus curves and fitted weights.

    ``arrays`` holds the ``SCALARS`` (each ``[nP, n_seeds]``), ``mean_attention`` and
    ``positional_logits`` (``[nP, n_seeds, L, L]``), ``curve_U`` and ``curve_loss``
    (``[nP, n_seeds, n_logs]``, NaN after a run stopped) with ``curve_epoch`` (``[n_logs]``),
    ``loss_init`` and ``diverged`` (``[nP, n_seeds]``; absent from older files), and,
    if kept, ``params/W_E``, ``params/b``, ``params/W_G``, ``params/W_O_hat``
    (``[nP, n_seeds, ...]``) for warm-starting a sampler. The order parameters are stored under
    the head's ``order_names``: ``(c1, cG)`` for linear heads (gauge fixed, ``r > 0``),
    ``(a1, aG)`` for softmax heads; ``res["c1"]``/``res["cG"]`` are aliases (c1/cG are the
    generic names, a1/aG the softmax ones).
    """

    config: Config
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        key = resolve_order(name, self.arrays, self.order_names)
        if key not in self.arrays:
            raise KeyError(f"SweepResult has no array {name!r}; available: {sorted(self.arrays)}")
        return self.arrays[key]

    @property
    def has_params(self) -> bool:
        return "params/W_G" in self.arrays

    def head_arrays(self, idx=Ellipsis, *, flat: bool = False) -> dict[str, np.ndarray]:
        """The kept weights at ``idx`` of the ``[P, seed]`` axes (``(i, s)``, ``i``, a mask,
        ``...``; ``flat``: ``idx`` on the P-major run axis of length ``nP n_seeds``), as NumPy
        arrays ``{W_E, b, W_G, W_O_hat}``."""
        if not self.has_params:
            raise ValueError("this sweep kept no weights (run it with keep_params=True)")
        out = {}
        for k in ARRAY_FIELDS:
            a = self.arrays[f"params/{k}"]
            out[k] = np.asarray((a.reshape((-1,) + a.shape[2:]) if flat else a)[idx])
        return out

    def heads(self, idx=Ellipsis, *, flat: bool = False, dtype=None) -> AbstractHead:
        """The fitted heads at ``idx`` (as :meth:`head_arrays`) as one head of the config's class
        and static fields, its leaves JAX arrays (``dtype``: e.g. ``jnp.float64`` inside
        ``jax.enable_x64``; default: as stored) with ``idx``'s leading axes."""
        arrays = {k: jnp.asarray(v, dtype) for k, v in self.head_arrays(idx, flat=flat).items()}
        return head_class(self.config.model.attention).from_config(self.config, **arrays)

    @property
    def diverged(self) -> np.ndarray:
        """``[P, seed]`` bool: non-finite or blown-up runs (:func:`divergence_flags`); files
        written before the flag existed get it computed from their arrays."""
        if "diverged" in self.arrays:
            return self.arrays["diverged"].astype(bool)
        return divergence_flags(self.arrays, self.config.task.L)

    @property
    def unconverged(self) -> np.ndarray:
        """``[P, seed]`` bool: exact-solver runs stopped before convergence
        (:func:`unconverged_flags`; all False for Adam sweeps)."""
        return unconverged_flags(self.arrays)

    @property
    def at_epoch_cap(self) -> np.ndarray:
        """``[P, seed]`` bool: Adam runs stopped by ``max_epochs`` before early stopping
        triggered (not converged by Adam's own test; kept in the means, which then describe
        where training stopped, not a minimum); all False for the exact solver."""
        if not isinstance(self.config.solver, AdamConfig) or "stop_epoch" not in self.arrays:
            return np.zeros(self.arrays["finite"].shape, bool)
        stopped_at = np.asarray(self.arrays["stop_epoch"])
        return (stopped_at >= self.config.solver.max_epochs) & self.arrays["finite"].astype(bool)

    @property
    def ok(self) -> np.ndarray:
        """``[P, seed]`` bool: the runs that enter means (finite, not diverged, and, for the
        exact solver, converged)."""
        return self.arrays["finite"].astype(bool) & ~self.diverged & ~self.unconverged

    def summary(self) -> dict[str, np.ndarray]:
        """Mean and sd over the ``ok`` seeds (finite, not diverged, converged) of each scalar,
        per P, under the stored names (softmax: ``a1``, ``aG``); ``n_ok``, ``n_finite``,
        ``n_diverged``, ``n_unconverged`` and ``n_at_epoch_cap`` count the runs."""
        out: dict[str, np.ndarray] = {"P": self.P}
        ok = self.ok
        out["n_ok"] = ok.sum(1)
        out["n_diverged"] = self.diverged.sum(1)
        out["n_unconverged"] = self.unconverged.sum(1)
        out["n_at_epoch_cap"] = (self.at_epoch_cap & ok).sum(1)
        for k in SCALARS:
            if k == "finite":
                out["n_finite"] = self.arrays["finite"].astype(bool).sum(1)
                continue
            x = np.where(ok, self[k].astype(float), np.nan)
            k = rename_order(k, GENERIC_ORDER, self.order_names)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a P with no ok run: NaN
                out[k] = np.nanmean(x, axis=1)
                out[k + "_sd"] = np.nanstd(x, axis=1)
        return out

    def save(self, path: str | os.PathLike) -> Path:
        meta = dict(self.meta)
        meta.update(kind=SWEEP_KIND, schema=SCHEMA_VERSION, config=self.config.to_dict())
        return atomic_save_npz(path, self.arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> SweepResult:
        arrays, meta = load_npz(path, kind=SWEEP_KIND)
        try:
            cfg = Config.from_dict(meta["config"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{str(path)!r} has an invalid config: {e}") from None
        shape = (len(cfg.sweep.P), cfg.sweep.n_seeds)
        # either name of an order parameter will do (a hand-built result may use c1/cG)
        required = [resolve_order(k, arrays, order_names(cfg)) for k in REQUIRED]
        missing = [k for k in required if k not in arrays]
        if missing:
            raise ValueError(f"{str(path)!r} is incomplete: it lacks the arrays {missing}")
        optional = ("diverged", "loss_init")
        wrong = [k for k in (*required, *optional) if k in arrays and arrays[k].shape[:2] != shape]
        if wrong:
            raise ValueError(f"{str(path)!r} is corrupt: arrays {wrong} are not [P, seed] {shape}")
        check_param_shapes(arrays, cfg, str(path))
        return cls(config=cfg, arrays=arrays, meta=meta)

    def replace(self, **kw) -> SweepResult:
        return dataclasses.replace(self, **kw)


POSTERIOR_KIND = "copyhead_jax.PosteriorResult"

#: Quantities recorded at every draw, in this order, under the generic order-parameter names
#: (a result names them for its head: :func:`copyhead_jax.sampling.run.draw_fields`).
DRAW_FIELDS = ("U", "train_loss", "c1", "cG", "r", "psi", "coverage")


def sampler_from_meta(meta: dict, cfg: Config) -> SGLDConfig | HMCConfig:
    """The sampler config of a posterior file. Files written before ``HMCConfig`` hold an
    ``SGLDConfig`` under ``sgld``; on a reduced sweep it described the collapsed HMC (steps =
    warm-up + HMC iterations, burn-in = warm-up), so it is read as that ``HMCConfig`` (the
    leapfrog count and target acceptance were then the present defaults, the adaptation 100
    iterations of the step alone). An ``HMCConfig`` saved before ``adapt_mass`` existed ran unit
    mass and reads as ``adapt_mass=False``."""
    if "sampler_kind" in meta:
        kind = meta["sampler_kind"]
        if kind not in SAMPLERS:
            raise ValueError(f"unknown sampler kind {kind!r}; known: {sorted(SAMPLERS)}")
        saved = dict(meta["sampler"])
        if kind == "hmc":
            saved.setdefault("adapt_mass", False)
        return SAMPLERS[kind](**saved)
    old = SGLDConfig(**meta["sgld"])
    if cfg.model.engine != "reduced":
        return old
    return HMCConfig(
        step_size=old.step_size,
        n_iter=old.n_steps - old.burn_in,
        n_warmup=old.burn_in,
        thin=old.thin,
        n_chains=old.n_chains,
        seed=old.seed,
        n_adapt=100,
        adapt_mass=False,
    )


@dataclass
class PosteriorResult(_OfSweep):
    """Posterior draws of a sweep: ``draws[P, seed, chain, draw, field]`` with ``fields``, plus
    per-run posterior means/variances and health (``rhat``, ``ess``, ``accept``, ...).
    ``sampler`` is the config that ran (:class:`SGLDConfig` or :class:`HMCConfig`; its
    ``name``, e.g. "collapsed HMC", is what outputs print).

    The order parameters carry the head's names (softmax: ``a1``, ``aG``, ``rhat_aG``);
    ``post["c1"]``/``post["cG"]`` are aliases (c1/cG are the generic names, a1/aG the softmax
    ones)."""

    config: Config
    sampler: SGLDConfig | HMCConfig
    arrays: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)
    fields: tuple[str, ...] = DRAW_FIELDS

    def __getitem__(self, name: str) -> np.ndarray:
        name = resolve_order(name, (*self.fields, *self.arrays), self.order_names)
        if name in self.fields:
            return self.arrays["draws"][..., self.fields.index(name)]
        if name not in self.arrays:
            raise KeyError(
                f"PosteriorResult has no {name!r}; fields {self.fields}, "
                f"arrays {sorted(self.arrays)}"
            )
        return self.arrays[name]

    @property
    def sgld(self) -> SGLDConfig | HMCConfig:
        """The sampler config (its name before HMCConfig existed); prefer ``sampler``."""
        return self.sampler

    @property
    def sampler_name(self) -> str:
        """The sampler's real name: "SGLD" or "collapsed HMC"."""
        return self.sampler.name

    def moments(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of ``name`` per run ``[P, seed]`` over finite chains."""
        x = np.where(self.arrays["finite"][..., None], self[name], np.nan)
        with np.errstate(all="ignore"):
            return np.nanmean(x, axis=(-2, -1)), np.nanvar(x, axis=(-2, -1))

    def save(self, path) -> Path:
        meta = dict(self.meta)
        meta.update(
            kind=POSTERIOR_KIND,
            schema=SCHEMA_VERSION,
            config=self.config.to_dict(),
            sampler=dataclasses.asdict(self.sampler),
            sampler_kind=self.sampler.kind,
            sampler_name=self.sampler.name,
            fields=list(self.fields),
        )
        return atomic_save_npz(path, self.arrays, meta)

    @classmethod
    def load(cls, path) -> PosteriorResult:
        arrays, meta = load_npz(path, kind=POSTERIOR_KIND)
        try:
            cfg = Config.from_dict(meta["config"])
            sg = sampler_from_meta(meta, cfg)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{str(path)!r} has an invalid config: {e}") from None
        return cls(cfg, sg, arrays, meta, tuple(meta["fields"]))
