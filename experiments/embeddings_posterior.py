"""What the posterior does with the embeddings; results:
docs/reports/embeddings_protocol.md.

    nice -n 10 python -m experiments embeddings-posterior --preset paper [--tiny] [--publish]

NUTS (4 chains from prior draws) on the full network's posterior with every weight sampled,
through its exact width-D reduction (:func:`copyhead_jax.embeddings.runs.embedded_nuts`,
docs/theory.md §2f), against the quenched posterior (the Gram root of seed 0 held fixed) and,
at the smallest N, NUTS on the full width-N network. Per (N, P): the Gram's distance from the
prior's Sigma against its prior rms, the shift of the posterior mean Gram, the posterior aG.
Task L = 8, V = 4, paper conventions, softmax. Settings: ``embeddings_posterior`` of
``configs/MODE.py``, paper preset (widths, P, the extra P, NUTS lengths; tiny: a smaller
``task``). Cached per (kind, N, P) in ``OUT/results/embeddings_posterior[_tiny].runs/``; writes
``OUT/results/embeddings_posterior[_tiny].json``.
"""

from __future__ import annotations

from pathlib import Path

import copyhead_jax as ch
from copyhead_jax.embeddings import embedded_nuts
from copyhead_jax.storage import write_json

from .common import group_record

N_CHAINS = 4


def base_config(s: dict) -> ch.Config:
    cfg = ch.PAPER.replace(task=dict(L=8, V=4, n_test=16), model=dict(attention="softmax"))
    if s.get("task"):
        cfg = cfg.replace(task=s["task"])
    return cfg


def main(spec, out: str | Path, *, jobs=None) -> dict:
    """Run (or load) every job ``(kind, width, P)`` (default: the full NUTS check at the smallest
    width and middle P, then annealed and quenched at every width and P, then the settings'
    ``extra_P`` at the two largest widths); nothing where the mode has no settings."""
    s, tiny = spec.settings, spec.mode == "tiny"
    if not s:
        print(f"no embeddings_posterior settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    out = Path(out) / "results"
    cache = out / ("embeddings_posterior_tiny.runs" if tiny else "embeddings_posterior.runs")
    cfg = base_config(s)
    n_warmup, n_samples = s["n_warmup"], s["n_samples"]
    if jobs is None:
        widths, Ps = tuple(s["widths"]), tuple(s["P"])
        jobs = [("annealed", widths[0], Ps[-1]), ("full", widths[0], Ps[-1])]
        jobs += [(k, w, P) for P in Ps[::-1] for w in widths for k in ("annealed", "quenched")]
        if s.get("extra_P"):  # on the copying side, at the two largest widths only (CPU time)
            jobs += [
                (k, w, s["extra_P"]) for w in widths[-1:-3:-1] for k in ("quenched", "annealed")
            ]
    records = {}
    for kind, width, P in jobs:
        tag = f"{kind}_N{width}_P{P}"
        rec = records[tag] = group_record(
            cache / f"{tag}.json",
            lambda: embedded_nuts(
                cfg,
                width,
                P,
                kind,
                P_pad=max(p for _, _, p in jobs),
                n_chains=N_CHAINS,
                n_warmup=n_warmup,
                n_samples=n_samples,
            ),
        )
        print(
            f"{tag}: {rec['seconds']:.0f}s aG {rec['aG']['mean']:.3f}+-{rec['aG']['mcse']:.3f} "
            f"d {rec['gram_dist']['mean']:.3f} (prior {rec['prior_gram_dist_rms']:.3f})"
        )
    result = dict(
        object="posterior with every weight sampled (embeddings included), exact width-D "
        "reduction, NUTS; quenched: the Gram of seed 0's embeddings held fixed",
        config=cfg.to_dict(),
        n_chains=N_CHAINS,
        n_warmup=n_warmup,
        n_samples=n_samples,
        runs=records,
    )
    write_json(
        out / ("embeddings_posterior_tiny.json" if tiny else "embeddings_posterior.json"), result
    )
    return result
