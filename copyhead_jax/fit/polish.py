r"""Polish: how far was each Adam fit from its own local minimum?

Every run of a sweep with quenched embeddings and kept weights is reduced exactly to width
$D=V+L$ (docs/theory.md §2c: $A=Q^\top W^GQ$, $B=\hat W^OQ$, off-span prior energy $U_\perp$) and
the exact solver (:func:`.exact.solve_map`, float64 L-BFGS) is run from that point. Per run:

* ``polish/U_adam``: the Adam fit's quenched energy on the span, $U_N-U_{\rm emb}-U_\perp$
  (the part of $U$ that can change the network's function; $U_\perp$ only decays);
* ``polish/U``, ``polish/c1``, ``polish/cG``, ...: the stationary point reached from it;
* ``polish/dU``, ``polish/dc1``, ``polish/dcG``: exact minus Adam (``dU <= 0`` always: L-BFGS
  only descends);
* ``polish/rel_grad``, ``polish/min_eig``, ``polish/converged``: the solver's certificate.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_output_path
from .._warn import RunHealthWarning
from ..config import Config, exact_settings
from ..models import head_class, reduce_head
from ..objective import Objective
from ..observables import measure
from ..results import SWEEP_KIND, SweepResult, check_param_shapes
from ..runner import claim
from ..runner.memory import check_polish_memory
from .exact import quenched_energy, solve_map
from .inputs import sweep_inputs

FIELDS = ("U", "c1", "cG", "r", "psi", "coverage", "train_loss")


def full_head(cfg: Config, arrays: dict[str, np.ndarray]):
    """The float64 head of one run from its saved weights ``W_E, b, W_G, W_O_hat``."""
    return head_class(cfg.model.attention).from_arrays(
        cfg, {k: jnp.asarray(v, jnp.float64) for k, v in arrays.items()}
    )


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def polish_runs(cfg: Config, gtol: float, max_steps: int, heads, train, mask, test):
    """Per run (vmapped): the Adam fit's energy, the float64 L-BFGS polish from it, and its
    measurements; compiled once per ``(cfg, gtol, max_steps)``."""
    obj = Objective.from_config(cfg)

    def one(h, t, m, te):
        U_adam = quenched_energy(h, t, m, obj)
        fit = solve_map(h, t, m, obj, gtol=gtol, max_steps=max_steps)
        meas = measure(fit.head, t, m, te)
        return U_adam, fit, meas

    return jax.vmap(one)(heads, train, mask, test)


def polish(
    sweep: SweepResult,
    *,
    gtol: float | None = None,
    max_steps: int | None = None,
    out: str | Path | None = None,
) -> SweepResult:
    """Run the exact solver from every fitted run of ``sweep``; the result has the sweep's
    arrays plus ``polish/*`` (see the module docstring), each indexed ``[P, seed]``."""
    if not isinstance(sweep, SweepResult):
        raise ValueError(f"sweep must be a SweepResult, got {type(sweep).__name__}")
    cfg = sweep.config
    if cfg.train.train_embeddings:
        raise ValueError(
            "polish needs quenched embeddings (train.train_embeddings=False): with trained "
            "embeddings the Gram moves and the width reduction does not apply"
        )
    if not sweep.has_params:
        raise ValueError("polish needs the fitted weights: rerun the sweep with --keep-params")
    check_param_shapes(sweep.arrays, cfg, "sweep")
    check_polish_memory(cfg)
    if out is not None:  # before the work: a bad path fails in a second, not after minutes
        out = check_output_path("out", out, kind=SWEEP_KIND)
    held = claim(out)  # one writer of out, released after the final save
    ex = exact_settings(cfg.train.solver)  # an Adam sweep's AutoConfig carries them
    gtol = ex.gtol if gtol is None else gtol
    max_steps = ex.max_steps if max_steps is None else max_steps
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    inp = sweep_inputs(cfg, None)
    flat = sweep.head_arrays(flat=True)
    m = cfg.model
    with jax.enable_x64(True):
        s_O = Objective.from_config(cfg).sigma_O  # prior std of W_O_hat (readout convention)
        reduce = jax.jit(lambda h: reduce_head(h, sigma_G=m.sigma_G, sigma_O=s_O))
        reds, U_perp = [], []
        for i in range(nP * nS):  # one at a time: a full-width W^G can be GiBs
            red = reduce(full_head(cfg, {k: v[i] for k, v in flat.items()}))
            reds.append(red.head)
            U_perp.append(float(red.U_perp))
        heads = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *reds)
        U_adam, fit, meas = polish_runs(
            cfg, float(gtol), int(max_steps), heads, inp.train, inp.mask, inp.test
        )
        o = meas.order
        n1, nG = sweep.order_names  # softmax: a1, aG
        new = {
            "U": fit.U,
            n1: o.c1,
            nG: o.cG,
            "r": o.r,
            "psi": o.psi,
            "coverage": o.coverage,
            "train_loss": meas.train_loss,
            "U_adam": U_adam,
            "rel_grad": fit.rel_grad,
            "min_eig": fit.min_eig,
            "converged": fit.converged,
            "steps": fit.n_steps,
            "U_perp": jnp.asarray(U_perp),
        }
        new = {k: np.asarray(v).reshape(nP, nS) for k, v in new.items()}
    arrays = dict(sweep.arrays)
    for k, v in new.items():
        arrays[f"polish/{k}"] = v
    arrays["polish/dU"] = new["U"] - new["U_adam"]
    for k in (n1, nG):
        arrays[f"polish/d{k}"] = new[k] - np.asarray(sweep[k], np.float64)
    res = sweep.replace(arrays=arrays, meta={**sweep.meta, "polished": True})
    n_bad = int((~new["converged"]).sum())
    if n_bad:
        warnings.warn(
            f"the exact solver did not converge on {n_bad} runs (polish/converged=False)",
            RunHealthWarning,
            stacklevel=2,
        )
    held.finish(None if out is None else lambda: res.save(out))
    return res


def polish_table(res: SweepResult) -> str:
    """Per P, mean over seeds: the sweep's fit (Adam or the exact solver, as it ran) vs the
    exact order parameters and energy."""
    if "polish/U" not in res.arrays:
        raise ValueError("this result has not been polished (copyhead polish RESULT)")
    a = res  # generic names c1/cG resolve to the head's (softmax: a1/aG)
    n1, nG = res.order_names
    src = res.config.solver.kind  # 'adam' or 'exact': the columns say which fit was polished
    who = "Adam" if src == "adam" else "the exact solver"
    head = (
        f"{'P':>6} {n1 + ' ' + src:>9} {n1 + ' map':>9} {nG + ' ' + src:>9} "
        f"{nG + ' map':>9} {'dU':>10} {'|g|/|U|':>8} {'min eig':>9} {'conv':>4}"
    )
    rows = [f"# polish: {who} (N={res.config.model.width}) vs the exact MAP from each fit", head]
    for i, P in enumerate(res.P):
        rows.append(
            f"{P:>6d} {np.mean(a['c1'][i]):>9.4f} {np.mean(a['polish/c1'][i]):>9.4f} "
            f"{np.mean(a['cG'][i]):>9.4f} {np.mean(a['polish/cG'][i]):>9.4f} "
            f"{np.mean(a['polish/dU'][i]):>10.3e} {np.max(a['polish/rel_grad'][i]):>8.1e} "
            f"{np.min(a['polish/min_eig'][i]):>9.2e} {int(np.sum(a['polish/converged'][i])):>4d}"
        )
    return "\n".join(rows)
