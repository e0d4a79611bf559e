r"""The unit of the package's long work, timed on this machine: one evaluation of an energy and
its gradient on one run's rows, the step of every solver and sampler (L-BFGS and Adam: $U$;
SGLD: $U$; collapsed HMC and the transition's umbrella windows: the marginal $U_m(W^G)$ of
:func:`.collapsed.marginal_energy`). Its cost is one pass over the $P\times L\times L$ block,
so :func:`unit_seconds` times it at the most rows the work has and takes it proportional to
the rows below (:func:`~copyhead_jax.runner.eta.seconds_per_call`, compiled first). The
run axis of a chunk is a batch of these evaluations; on a CPU a batch costs about the sum of
its members, which is what the estimates assume."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..config import Config, HMCConfig, SGLDConfig
from ..models import head_class
from ..objective import Objective, neg_log_posterior
from ..runner.eta import Estimate, seconds_per_call
from .collapsed import marginal_energy, with_WG

__all__ = ["llc_estimate", "sampler_estimate", "unit_seconds"]


def _head(cfg: Config, dtype):
    """A head of ``cfg``'s class and shapes with standard normal weights (NumPy's: the cost of
    an evaluation does not depend on the values, and nothing is compiled to draw them)."""
    V, L = cfg.task.V, cfg.task.L
    N = V + L if cfg.model.engine == "reduced" else int(cfg.model.width)
    rng = np.random.default_rng(0)
    w = {
        k: jnp.asarray(rng.standard_normal(shape), dtype)
        for k, shape in dict(W_E=(N, V), b=(N, L), W_G=(N, N), W_O_hat=(V, N)).items()
    }
    return head_class(cfg.model.attention).from_config(cfg, **w)


def _one(cfg: Config, rows: int, energy: str, dtype) -> float:
    head = _head(cfg, dtype)
    tok = jnp.asarray(np.random.default_rng(1).integers(0, cfg.task.V, (rows, cfg.task.L)))
    mask = jnp.ones((rows,), jnp.float32)
    obj = Objective.from_config(cfg)
    if energy == "marginal":
        f = jax.value_and_grad(lambda x, t, m: marginal_energy(with_WG(head, x), t, m, obj))
        return seconds_per_call(f, head.W_G.ravel(), tok, mask)
    f = jax.value_and_grad(lambda h, t, m: neg_log_posterior(h, t, m, obj))
    return seconds_per_call(f, head, tok, mask)


def unit_seconds(
    cfg: Config, rows: np.ndarray | Sequence[float], *, energy: str = "U", dtype=jnp.float32
) -> Callable[[np.ndarray], np.ndarray]:
    """Seconds of one evaluation of the energy (``"U"``: the negative log posterior of the
    config's head; ``"marginal"``: the collapsed $U_m(W^G)$ of a reduced head) and its gradient
    on one run of ``r`` rows, as a function of ``r``: timed once, at the most of ``rows``, and
    proportional to the rows below it (one compilation; at fewer than 32 rows, where a fixed
    cost is most of it, as at 32)."""
    hi = max(int(max(rows)), 1)
    key = (cfg, hi, energy, jnp.dtype(dtype).name)
    if key not in _TIMED:
        with jax.enable_x64(dtype == jnp.float64):
            _TIMED[key] = _one(cfg, hi, energy, dtype)
    t_hi = _TIMED[key]
    return lambda r: t_hi * np.maximum(np.asarray(r, float), min(32, hi)) / hi


#: unit costs timed in this process: (config, rows, energy, dtype) -> seconds
_TIMED: dict[tuple, float] = {}


def _rows_seconds(cfg: Config, Ps, per_run: float, energy: str, dtype, unit=None) -> float:
    """Seconds of ``per_run`` evaluations on each run of the sweep's grid (every seed);
    ``unit``: seconds of one evaluation by rows (default: :func:`unit_seconds`)."""
    Ps = np.asarray(Ps, float)
    t = unit or unit_seconds(cfg, Ps, energy=energy, dtype=dtype)
    return float(per_run * cfg.sweep.n_seeds * t(Ps).sum())


def sampler_estimate(cfg: Config, mc: SGLDConfig | HMCConfig, unit=None) -> Estimate:
    """The gradient evaluations of :func:`~.run.run_sampler` on the runs of ``cfg`` and their
    time: per chain, HMC ``n_warmup + (n_adapt + n_iter) n_leapfrog`` (the collapsed
    ``U_m``), SGLD ``n_steps`` (``U``); with a target, one round's worth (the fewest) up to the
    cap; ``unit``: seconds of one evaluation by rows (default: timed here)."""
    n_runs = len(cfg.sweep.P) * cfg.sweep.n_seeds
    if isinstance(mc, HMCConfig):
        hi = mc.n_warmup + (mc.n_adapt + mc.n_iter) * mc.n_leapfrog
        lo = mc.n_warmup + (mc.n_adapt + min(mc.round_iter, mc.n_iter)) * mc.n_leapfrog
        energy, dtype = "marginal", jnp.float32  # the chains run in float32
    else:
        hi = mc.n_steps
        lo = min(mc.burn_in + mc.round_steps, mc.n_steps)
        energy, dtype = "U", jnp.float32
    lo = hi if not mc.ess_target else lo
    s = _rows_seconds(cfg, cfg.sweep.P, mc.n_chains, energy, dtype, unit)
    return Estimate(
        f"{mc.name}, {n_runs} runs x {mc.n_chains} chains",
        (n_runs * mc.n_chains * lo, n_runs * mc.n_chains * hi),
        "gradient evaluations",
        (s * lo, s * hi),
        "one evaluation timed here at the most rows, proportional below"
        + (", the fewest: one round per chain" if mc.ess_target else ""),
    )


def llc_estimate(cfg: Config, n_sets_per_P: int, st) -> Estimate:
    """The SGLD gradient evaluations of :func:`~.llc_runs.llc_runs` (``n_sets_per_P`` chain
    sets per P, each ``st.n_chains`` chains per seed of ``st.n_steps`` steps, or with a target
    its first round, the fewest, up to that cap) and their time."""
    Ps = [P for P in cfg.sweep.P if P >= 2] or [2]
    hi = st.n_steps
    lo = min(st.burn_in + st.round_steps, hi) if st.ess_target else hi
    s = _rows_seconds(cfg, Ps, n_sets_per_P * st.n_chains, "U", jnp.float32)
    n = len(Ps) * cfg.sweep.n_seeds * n_sets_per_P * st.n_chains
    return Estimate(
        f"llc, {len(Ps)} P x {cfg.sweep.n_seeds} seeds x {n_sets_per_P} chain sets",
        (n * lo, n * hi),
        "gradient evaluations",
        (s * lo, s * hi),
        "one evaluation timed here at the most rows, proportional below"
        + (", the fewest: one round per chain" if st.ess_target else ""),
    )
