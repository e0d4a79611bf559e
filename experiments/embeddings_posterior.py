"""What the posterior does with the embeddings (issue 33, item 4); results:
docs/reports/embeddings_protocol.md.

    nice -n 10 python -m experiments.embeddings_posterior [--tiny] [--out docs/reports/results]

NUTS (4 chains from prior draws) on the full network's posterior with every weight sampled,
through its exact width-D reduction (:func:`copyhead_jax.posterior_full.embedded_draws`,
docs/theory.md §2f), against the quenched posterior (the Gram root of seed 0 held fixed) and,
at the smallest N, NUTS on the full width-N network. Per (N, P): the Gram's distance from the
prior's Sigma against its prior rms, the shift of the posterior mean Gram, the posterior aG.
Task L = 8, V = 4, paper conventions, softmax. Cached per (kind, N, P) in
``OUT/embeddings_posterior.runs/``; writes ``OUT/embeddings_posterior.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import copyhead_jax as ch
from copyhead_jax.bayes.stats import mcse_mean, split_rhat
from copyhead_jax.models import embedding_root
from copyhead_jax.posterior_full import embedded_draws, prior_gram_rms, prior_scales, sampled_point
from copyhead_jax.sweep import sweep_inputs

WIDTHS = (16, 64, 256, 4096)
PS = (96, 192)
EXTRA_P = 384  # where the quenched posterior copies (aG ~ 1.6 at N = 4,096)
N_CHAINS, N_WARMUP, N_SAMPLES = 4, 200, 200


def base_config(tiny: bool) -> ch.Config:
    cfg = ch.PAPER.replace(task=dict(L=8, V=4, n_test=16), model=dict(attention="softmax"))
    if tiny:
        cfg = cfg.replace(task=dict(L=4, V=2))
    return cfg


def problem(cfg: ch.Config, width: int, P: int, P_pad: int):
    """Seed 0's training pool padded to ``P_pad`` rows, the mask of its first P, and the key of
    its initial weights (padding keeps one compiled program for every P)."""
    c = cfg.replace(model=dict(width=width), sweep=dict(P=(P,), n_seeds=1, seed=0))
    inp = sweep_inputs(c, None, P_pad=P_pad)
    return c, inp.train[0], inp.mask[0], inp.key[0]


def sample(cfg: ch.Config, width: int, P: int, kind: str, *, P_pad: int, n_warmup: int,
           n_samples: int) -> dict:  # fmt: skip
    """NUTS of one (kind, width, P): kind is ``annealed`` (embeddings sampled, reduced),
    ``quenched`` (Gram root of seed 0's embeddings fixed) or ``full`` (the width-N network)."""
    c, tokens, mask, key = problem(cfg, width, P, P_pad)
    V, L = c.task.V, c.task.L
    D = V + L
    keys = jax.random.split(jax.random.key(1000 + width + P), N_CHAINS + 1)
    init = jnp.stack([ravel_pytree(sampled_point(kind, c, k, float(width)))[0] for k in keys[1:]])
    T = embedding_root(key, c, dtype=jnp.float32)  # the realised Gram root of seed 0's draw
    shape_cfg = c if kind == "full" else c.replace(model=dict(width=D))  # width traced
    t0 = time.time()
    out = embedded_draws(keys[0], init, tokens, mask, jnp.float32(width), T, kind=kind,
                         cfg=shape_cfg, n_warmup=n_warmup, n_samples=n_samples)  # fmt: skip
    obs = np.asarray(out.observed, np.float64)  # [chain, draw, 3 + D^2]
    Sigma = np.diag(np.asarray(prior_scales(V, L, c.model.sigma_e, c.model.sigma_p)) ** 2)
    C = obs[:, :, 3:].reshape(*obs.shape[:2], D, D)
    rel = lambda X: float(np.linalg.norm(X - Sigma) / np.linalg.norm(Sigma))
    stat = lambda x: dict(mean=float(x.mean()), mcse=float(mcse_mean(x)),  # noqa: E731
                          rhat=float(split_rhat(x)), sd=float(x.std()))  # fmt: skip
    names = ch.head_class(c.model.attention).order_names
    return dict(
        kind=kind, width=width, P=P, seconds=time.time() - t0, dim=int(init.shape[1]),
        **{names[0]: stat(obs[:, :, 0]), names[1]: stat(obs[:, :, 1]),
           "gram_dist": stat(obs[:, :, 2])},
        mean_gram_shift=rel(C.mean((0, 1))),
        mean_gram_shift_chains=[rel(C[i].mean(0)) for i in range(len(C))],
        prior_gram_dist_rms=prior_gram_rms(Sigma, width),
        acceptance=np.asarray(out.acceptance).tolist(),
        divergent=np.asarray(out.divergent).tolist(),
        step_size=np.asarray(out.step_size).tolist(),
    )  # fmt: skip


def main(out: str | Path = "docs/reports/results", *, tiny: bool = False, jobs=None) -> dict:
    """Run (or load) every job ``(kind, width, P)`` (default: the full NUTS check at the smallest
    width and middle P, then annealed and quenched at every width and P)."""
    out = Path(out)
    cache = out / ("embeddings_posterior_tiny.runs" if tiny else "embeddings_posterior.runs")
    cache.mkdir(parents=True, exist_ok=True)
    cfg = base_config(tiny)
    n_warmup, n_samples = (30, 20) if tiny else (N_WARMUP, N_SAMPLES)
    if jobs is None:
        widths, Ps = ((8, 32), (8,)) if tiny else (WIDTHS, PS)
        jobs = [("annealed", widths[0], Ps[-1]), ("full", widths[0], Ps[-1])]
        jobs += [(k, w, P) for P in Ps[::-1] for w in widths for k in ("annealed", "quenched")]
        if not tiny:  # on the copying side, at the two largest widths only (CPU time)
            jobs += [(k, w, EXTRA_P) for w in widths[-1:-3:-1] for k in ("quenched", "annealed")]
    records = {}
    for kind, width, P in jobs:
        tag = f"{kind}_N{width}_P{P}"
        f = cache / f"{tag}.json"
        if not f.exists():
            rec = sample(cfg, width, P, kind, P_pad=max(p for _, _, p in jobs),
                         n_warmup=n_warmup, n_samples=n_samples)  # fmt: skip
            f.write_text(json.dumps(rec, indent=1))
            print(f"{tag}: {rec['seconds']:.0f}s aG {rec['aG']['mean']:.3f}"
                  f"+-{rec['aG']['mcse']:.3f} d {rec['gram_dist']['mean']:.3f} "
                  f"(prior {rec['prior_gram_dist_rms']:.3f})", flush=True)  # fmt: skip
        records[tag] = json.loads(f.read_text())
    result = dict(
        object="posterior with every weight sampled (embeddings included), exact width-D "
        "reduction, NUTS; quenched: the Gram of seed 0's embeddings held fixed",
        config=cfg.to_dict(), n_chains=N_CHAINS, n_warmup=n_warmup, n_samples=n_samples,
        runs=records,
    )  # fmt: skip
    name = "embeddings_posterior_tiny.json" if tiny else "embeddings_posterior.json"
    (out / name).write_text(json.dumps(result, indent=1))
    return result


def cli() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out", default="docs/reports/results")
    a = ap.parse_args()
    main(a.out, tiny=a.tiny)


if __name__ == "__main__":
    cli()
