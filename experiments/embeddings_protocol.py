"""The paper's literal Adam protocol: how far do the embeddings move? (issue 33, item 2);
results: docs/reports/embeddings_protocol.md.

    nice -n 10 python -m experiments.embeddings_protocol [--tiny] [--out docs/reports/results]

Every weight trained from the prior draw with the ``paper`` preset's Adam on the full engine for
all 2,000 epochs (``min_epochs = max_epochs``: the movement bounds any early-stopped run's; some
runs are cut earlier, said in the output). Per run: the embedding Gram's relative change
(:func:`copyhead_jax.embedding_runs.adam_trace`) every 100 epochs, the largest entry move
against Adam's bound, the order parameters, beside a frozen-embedding control and the quenched
exact MAP of the same seed and P. Cached per run in ``OUT/embeddings_protocol.runs/``; writes
``OUT/embeddings_protocol.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax

import copyhead_jax as ch
from copyhead_jax.embedding_runs import adam_trace

from .common import cli

#: (attention, width, P, seed, epochs, train_embeddings); run in this order (cache per run)
PAPER_RUNS = [
    ("softmax", 2000, 300, 0, 2000, True),
    ("softmax", 2000, 600, 0, 2000, True),
    ("softmax", 2000, 1000, 0, 2000, True),
    ("linear", 2000, 160, 0, 2000, True),
    ("linear", 2000, 2000, 0, 2000, True),
    ("softmax", 2000, 1000, 0, 2000, False),
    ("softmax", 10_000, 1000, 0, 200, True),
    ("softmax", 2000, 1000, 1, 2000, True),
    ("linear", 2000, 2000, 1, 2000, True),
    ("linear", 2000, 2000, 0, 2000, False),
]  # cut to fit ~30 CPU-minutes on the shared 2-core machine
TINY_RUNS = [
    ("softmax", 16, 8, 0, 40, True),
    ("linear", 16, 8, 0, 40, True),
    ("softmax", 16, 8, 0, 40, False),
]
EVERY = 100  # epochs between Gram measurements (tiny: 20)


def base_config(tiny: bool) -> ch.Config:
    """The paper preset with at most 2,000 epochs (tiny: ``TINY``'s task, same protocol)."""
    cfg = ch.PAPER.replace(train=dict(log_every=10), solver=dict(max_epochs=2000, min_epochs=2000))
    if tiny:
        tr = dict(lr=1e-3, max_epochs=40, min_epochs=40)
        cfg = cfg.replace(task=dict(L=6, V=3, n_test=32), solver=tr)
    return cfg


def run_config(base: ch.Config, attention: str, width: int, P: int, seed: int, trained: bool):
    return base.replace(model=dict(attention=attention, width=width),  # seed s: as in a sweep
                        train=dict(train_embeddings=trained),
                        sweep=dict(P=(P,), n_seeds=1, seed=seed))  # fmt: skip


def exact_map(base: ch.Config, attention: str, width: int, Ps: list[int], n_seeds: int) -> dict:
    """The quenched exact MAP (reduced engine, realised Gram of the same initial embeddings)."""
    cfg = base.replace(
        model=dict(attention=attention, width=width, engine="reduced", gram="realised"),
        train=dict(train_embeddings=False),
        solver=dict(kind="exact", continuation=len(Ps) > 1),
        sweep=dict(P=tuple(sorted(Ps)), n_seeds=n_seeds, seed=0))  # fmt: skip
    res = ch.run_sweep(cfg, progress=False, keep_params=False)
    names = res.order_names
    out = {}
    for i, P in enumerate(res.P):
        for s in range(n_seeds):
            out[f"{int(P)}/{s}"] = {names[0]: float(res[names[0]][i, s]),
                                    names[1]: float(res[names[1]][i, s]),
                                    "r": float(res["r"][i, s]),
                                    "ok": bool(res.ok[i, s])}  # fmt: skip
    return out


def main(out: str | Path = "docs/reports/results", *, tiny: bool = False, runs=None) -> dict:
    """Run (or load) every run of ``runs`` (default: the paper's list, tiny: ``TINY_RUNS``)."""
    out = Path(out)
    cache = out / ("embeddings_protocol_tiny.runs" if tiny else "embeddings_protocol.runs")
    cache.mkdir(parents=True, exist_ok=True)
    base = base_config(tiny)
    runs = runs if runs is not None else (TINY_RUNS if tiny else PAPER_RUNS)
    every = 20 if tiny else EVERY
    records = []
    for att, width, P, seed, epochs, trained in runs:
        tag = f"{att}_N{width}_P{P}_s{seed}_E{epochs}_{'trained' if trained else 'frozen'}"
        f = cache / f"{tag}.json"
        if not f.exists():
            rec = adam_trace(run_config(base, att, width, P, seed, trained), epochs, every)
            rec.update(attention=att, width=width, P=P, seed=seed, trained=trained, tag=tag)
            f.write_text(json.dumps(rec, indent=1))
            print(f"{tag}: {rec['seconds']:.0f}s gram {rec['gram']['all']:.2e} {rec['order']}")
        records.append(json.loads(f.read_text()))
    exact = {}
    for att, width in sorted({(r["attention"], r["width"]) for r in records}):
        f = cache / f"exact_{att}_N{width}.json"
        mine = [r for r in records if (r["attention"], r["width"]) == (att, width)]
        Ps, n_seeds = sorted({r["P"] for r in mine}), 1 + max(r["seed"] for r in mine)
        if not f.exists():
            f.write_text(json.dumps(exact_map(base, att, width, Ps, n_seeds), indent=1))
        exact[f"{att}/{width}"] = json.loads(f.read_text())
    result = dict(
        object="paper Adam protocol (lr 1e-5, raw, warm-up 10% softmax, <= 2000 epochs), "
        "full engine, every weight trained, from the prior draw",
        config=base.to_dict(), runs=records, exact_map=exact,
        machine=dict(cpus=jax.local_device_count(), platform=jax.default_backend()),
    )  # fmt: skip
    name = "embeddings_protocol_tiny.json" if tiny else "embeddings_protocol.json"
    (out / name).write_text(json.dumps(result, indent=1, default=float))
    return result


if __name__ == "__main__":
    cli(main, __doc__)
