"""What the posterior does with the embeddings (issue 33, item 4); results:
docs/reports/embeddings_protocol.md.

    nice -n 10 python -m experiments.embeddings_posterior [--tiny] [--out docs/reports/results]

NUTS (4 chains from prior draws) on the full network's posterior with every weight sampled,
through its exact width-D reduction (:func:`copyhead_jax.embedding_runs.embedded_nuts`,
docs/theory.md §2f), against the quenched posterior (the Gram root of seed 0 held fixed) and,
at the smallest N, NUTS on the full width-N network. Per (N, P): the Gram's distance from the
prior's Sigma against its prior rms, the shift of the posterior mean Gram, the posterior aG.
Task L = 8, V = 4, paper conventions, softmax. Cached per (kind, N, P) in
``OUT/embeddings_posterior.runs/``; writes ``OUT/embeddings_posterior.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import copyhead_jax as ch
from copyhead_jax.embedding_runs import embedded_nuts

from .common import cli

WIDTHS = (16, 64, 256, 4096)
PS = (96, 192)
EXTRA_P = 384  # where the quenched posterior copies (aG ~ 1.6 at N = 4,096)
N_CHAINS, N_WARMUP, N_SAMPLES = 4, 200, 200


def base_config(tiny: bool) -> ch.Config:
    cfg = ch.PAPER.replace(task=dict(L=8, V=4, n_test=16), model=dict(attention="softmax"))
    if tiny:
        cfg = cfg.replace(task=dict(L=4, V=2))
    return cfg


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
            rec = embedded_nuts(cfg, width, P, kind, P_pad=max(p for _, _, p in jobs),
                                n_chains=N_CHAINS, n_warmup=n_warmup,
                                n_samples=n_samples)  # fmt: skip
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


if __name__ == "__main__":
    cli(main, __doc__)
