"""How far trained embeddings move and what the posterior does with them (docs/theory.md §2e,
§2f), one run at a time: :func:`adam_trace` follows the embedding Gram of one full-engine Adam run;
:func:`embedded_nuts` summarises NUTS on the posterior with every weight sampled (exactly reduced
to width ``D = V + L``), on quenched embeddings, or on the full width-``N`` network.
"""

from __future__ import annotations

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from ..config import Config
from ..fit import Trainer, init_runs, lr_schedule, measure_runs, run_segment, sweep_inputs
from ..models import embedding_root, head_class
from ..sampling import mcse_mean, split_rhat
from .gram import adam_step_bound, gram_change
from .posterior import embedded_draws, prior_gram_rms, prior_scales, sampled_point


def adam_trace(cfg: Config, epochs: int, every: int) -> dict:
    """One full-engine Adam run of ``cfg`` (one P, one seed) for ``epochs`` epochs of its
    schedule: the Gram's relative change (:func:`.gram.gram_change`) every ``every``
    epochs, the largest entry move against Adam's bound, the order parameters and ``U``."""
    t0 = time.time()
    trainer, inp = Trainer(cfg), sweep_inputs(cfg, None)
    state = init_runs(trainer, inp)
    emb = lambda s: s.frozen if s.params.W_E is None else s.params  # noqa: E731
    W_E0, b0 = np.array(emb(state).W_E[0]), np.array(emb(state).b[0])
    trace, done = [], 0
    while done < epochs:
        n = min(every, epochs - done) // cfg.train.log_every
        state, _ = run_segment(trainer, state, inp, n)
        done += n * cfg.train.log_every
        W_E, b = emb(state).W_E[0], emb(state).b[0]
        g = gram_change(W_E0, b0, W_E, b)
        trace.append(dict(epoch=done, **{k: float(v) for k, v in g.items()}))
    meas, gspan = measure_runs(trainer, state, inp)
    head = eqx.combine(state.params, state.frozen)
    names = head_class(cfg.model.attention).order_names
    sched = lr_schedule(cfg.solver, cfg.model.attention)
    lr_sum = float(np.sum(np.asarray(jax.vmap(sched)(jax.numpy.arange(epochs)))))
    dW = np.abs(np.concatenate([np.asarray(head.W_E[0]) - W_E0, np.asarray(head.b[0]) - b0], 1))
    o = meas.order
    return dict(
        epochs=int(state.epoch[0]),
        stopped=bool(state.stopped[0]),
        finite=bool(state.finite[0]),
        gram=trace[-1],
        trace=trace,
        max_entry_move=float(dW.max()),
        rms_entry_move=float(np.sqrt(np.mean(dW**2))),
        lr_sum=lr_sum,
        adam_bound=adam_step_bound(lr_sum),
        order={names[0]: float(o.c1[0]), names[1]: float(o.cG[0]), "r": float(o.r[0])},
        train_loss=float(meas.train_loss[0]),
        U=float(state.U[0]),
        grad_norm_span=float(gspan[0]),
        seconds=time.time() - t0,
    )


def _problem(cfg: Config, width: int, P: int, P_pad: int):
    """Seed 0's training pool padded to ``P_pad`` rows, the mask of its first P, and the key of
    its initial weights (padding keeps one compiled program for every P)."""
    c = cfg.replace(model=dict(width=width), sweep=dict(P=(P,), n_seeds=1, seed=0))
    inp = sweep_inputs(c, None, P_pad=P_pad)
    return c, inp.train[0], inp.mask[0], inp.key[0]


def embedded_nuts(
    cfg: Config,
    width: int,
    P: int,
    kind: str,
    *,
    P_pad: int,
    n_chains: int,
    n_warmup: int,
    n_samples: int,
) -> dict:
    """NUTS of one (kind, width, P) from ``n_chains`` prior draws, summarised: kind is
    ``annealed`` (embeddings sampled, reduced), ``quenched`` (Gram root of seed 0's embeddings
    fixed) or ``full`` (the width-N network). Per order parameter and for the Gram's distance
    from the prior's Sigma: mean, MCSE, split R-hat, sd; the posterior mean Gram's shift."""
    c, tokens, mask, key = _problem(cfg, width, P, P_pad)
    V, L = c.task.V, c.task.L
    D = V + L
    keys = jax.random.split(jax.random.key(1000 + width + P), n_chains + 1)
    init = jnp.stack([ravel_pytree(sampled_point(kind, c, k, float(width)))[0] for k in keys[1:]])
    T = embedding_root(key, c, dtype=jnp.float32)  # the realised Gram root of seed 0's draw
    shape_cfg = c if kind == "full" else c.replace(model=dict(width=D))  # width traced
    t0 = time.time()
    out = embedded_draws(
        keys[0],
        init,
        tokens,
        mask,
        jnp.float32(width),
        T,
        kind=kind,
        cfg=shape_cfg,
        n_warmup=n_warmup,
        n_samples=n_samples,
    )
    obs = np.asarray(out.observed, np.float64)  # [chain, draw, 3 + D^2]
    Sigma = np.diag(np.asarray(prior_scales(V, L, c.model.sigma_e, c.model.sigma_p)) ** 2)
    C = obs[:, :, 3:].reshape(*obs.shape[:2], D, D)
    rel = lambda X: float(np.linalg.norm(X - Sigma) / np.linalg.norm(Sigma))  # noqa: E731
    stat = lambda x: dict(
        mean=float(x.mean()),
        mcse=float(mcse_mean(x)),  # noqa: E731
        rhat=float(split_rhat(x)),
        sd=float(x.std()),
    )
    names = head_class(c.model.attention).order_names
    return dict(
        kind=kind,
        width=width,
        P=P,
        seconds=time.time() - t0,
        dim=int(init.shape[1]),
        **{
            names[0]: stat(obs[:, :, 0]),
            names[1]: stat(obs[:, :, 1]),
            "gram_dist": stat(obs[:, :, 2]),
        },
        mean_gram_shift=rel(C.mean((0, 1))),
        mean_gram_shift_chains=[rel(C[i].mean(0)) for i in range(len(C))],
        prior_gram_dist_rms=prior_gram_rms(Sigma, width),
        acceptance=np.asarray(out.acceptance).tolist(),
        divergent=np.asarray(out.divergent).tolist(),
        step_size=np.asarray(out.step_size).tolist(),
    )


__all__ = ["adam_trace", "embedded_nuts"]
