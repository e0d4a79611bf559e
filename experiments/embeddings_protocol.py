"""The paper's literal Adam protocol: how far do the embeddings move?;
results: docs/reports/embeddings_protocol.md.

    nice -n 10 python -m experiments embeddings-protocol --preset paper [--tiny] [--publish]

Every weight trained from the prior draw with the ``paper`` preset's Adam on the full engine for
all 2,000 epochs (``min_epochs = max_epochs``: the movement bounds any early-stopped run's; some
runs are cut earlier, said in the output). Per run: the embedding Gram's relative change
(:func:`copyhead_jax.embeddings.runs.adam_trace`) every 100 epochs, the largest entry move
against Adam's bound, the order parameters, beside a frozen-embedding control and the quenched
exact MAP of the same seed and P. Settings: ``embeddings_protocol`` of ``configs/MODE.py``, paper
preset (``runs``, ``every``; tiny: the engine's ``task`` and ``solver``). Cached per run in
``OUT/results/embeddings_protocol[_tiny].runs/``; writes
``OUT/results/embeddings_protocol[_tiny].json``.
"""

from __future__ import annotations

from pathlib import Path

import jax

import copyhead_jax as ch
from copyhead_jax.embeddings import adam_trace
from copyhead_jax.storage import write_json

from .common import group_record


def base_config(s: dict) -> ch.Config:
    """The paper preset with at most 2,000 epochs (settings ``s``: its ``task`` and ``solver``
    where it has them, e.g. the tiny mode's)."""
    cfg = ch.PAPER.replace(train=dict(log_every=10), solver=dict(max_epochs=2000, min_epochs=2000))
    if "task" in s or "solver" in s:
        cfg = cfg.replace(task=s.get("task", {}), solver=s.get("solver", {}))
    return cfg


def run_config(base: ch.Config, attention: str, width: int, P: int, seed: int, trained: bool):
    return base.replace(
        model=dict(attention=attention, width=width),  # seed s: as in a sweep
        train=dict(train_embeddings=trained),
        sweep=dict(P=(P,), n_seeds=1, seed=seed),
    )


def exact_map(base: ch.Config, attention: str, width: int, Ps: list[int], n_seeds: int) -> dict:
    """The quenched exact MAP (reduced engine, realised Gram of the same initial embeddings)."""
    cfg = base.replace(
        model=dict(attention=attention, width=width, engine="reduced", gram="realised"),
        train=dict(train_embeddings=False),
        solver=dict(kind="exact", continuation=len(Ps) > 1),
        sweep=dict(P=tuple(sorted(Ps)), n_seeds=n_seeds, seed=0),
    )
    res = ch.run_sweep(cfg, progress=False, keep_params=False)
    names = res.order_names
    out = {}
    for i, P in enumerate(res.P):
        for s in range(n_seeds):
            out[f"{int(P)}/{s}"] = {
                names[0]: float(res[names[0]][i, s]),
                names[1]: float(res[names[1]][i, s]),
                "r": float(res["r"][i, s]),
                "ok": bool(res.ok[i, s]),
            }
    return out


def main(spec, out: str | Path, *, runs=None) -> dict:
    """Run (or load) every run of ``runs`` (default: the settings' ``runs``); nothing where the
    mode has no ``embeddings_protocol`` settings for the preset."""
    s, tiny = spec.settings, spec.mode == "tiny"
    if not s:
        print(f"no embeddings_protocol settings in mode {spec.mode} for preset {spec.preset}")
        return {}
    out = Path(out) / "results"
    cache = out / ("embeddings_protocol_tiny.runs" if tiny else "embeddings_protocol.runs")
    base, every = base_config(s), s["every"]
    records = []
    for att, width, P, seed, epochs, trained in runs if runs is not None else s["runs"]:
        tag = f"{att}_N{width}_P{P}_s{seed}_E{epochs}_{'trained' if trained else 'frozen'}"
        cfg = run_config(base, att, width, P, seed, trained)
        records.append(
            group_record(
                cache / f"{tag}.json",
                lambda: adam_trace(cfg, epochs, every),
                attention=att,
                width=width,
                P=P,
                seed=seed,
                trained=trained,
                tag=tag,
            )
        )
        print(f"{tag}: {records[-1]['seconds']:.0f}s gram {records[-1]['gram']['all']:.2e}")
    exact = {}
    for att, width in sorted({(r["attention"], r["width"]) for r in records}):
        mine = [r for r in records if (r["attention"], r["width"]) == (att, width)]
        Ps, n_seeds = sorted({r["P"] for r in mine}), 1 + max(r["seed"] for r in mine)
        exact[f"{att}/{width}"] = group_record(
            cache / f"exact_{att}_N{width}.json", lambda: exact_map(base, att, width, Ps, n_seeds)
        )
    result = dict(
        object="paper Adam protocol (lr 1e-5, raw, warm-up 10% softmax, <= 2000 epochs), "
        "full engine, every weight trained, from the prior draw",
        config=base.to_dict(),
        runs=records,
        exact_map=exact,
        machine=dict(cpus=jax.local_device_count(), platform=jax.default_backend()),
    )
    write_json(
        out / ("embeddings_protocol_tiny.json" if tiny else "embeddings_protocol.json"), result
    )
    return result
