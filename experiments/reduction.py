"""Artefact ``reduction``: the exact width reduction on the small default: width,
polish, NUTS vs the default sampler.

    python -m experiments reduction --preset plain [--publish]

Settings: ``reduction`` of ``configs/MODE.py`` over :data:`DEFAULTS` (the small default has the
plain conventions: under ``--preset paper`` there is nothing to run). Parts:

* ``width``: exact MAP (reduced engine) of the small default (plain conventions, L = 25, V = 5,
  2 seeds) at widths 128, 1,024, 10,000 and infinity, both attentions, against the EK theory;
* ``polish``: today's small default (full engine, width 128, Adam) and the exact MAP reached from
  each of its fits (``copyhead polish``): how far each Adam run was from its own minimum;
* ``nuts``: posterior means and variances of U, c1, cG of one run per attention from NUTS (the
  gold standard) and from the default reduced sampler (collapsed HMC, ``copyhead sample``), with
  its wall time; ``reuse_nuts`` keeps the NUTS numbers already in the JSON (NUTS on the joint
  posterior is unchanged and takes ~16 min for linear attention on 2 cores). The whitened-SGLD
  rows of earlier versions (step sizes 0.02-0.2) stay in the JSON as a record.

Writes ``OUT/results/reduction.json`` and ``OUT/figures/reduction_width.png``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import polish, sweep_inputs
from copyhead_jax.objective import Objective
from copyhead_jax.plots import reduction_width_figure
from copyhead_jax.sampling import default_sampler, ess, nuts_reference, run_sampler, sampler_for
from copyhead_jax.theory import TheoryParams, theory_curve

from . import common as C

#: the settings a mode's config does not set
DEFAULTS = dict(
    base="small",
    widths=[128, 1024, 10_000, math.inf],
    parts=["width", "polish", "nuts"],
    reuse_nuts=False,
)


def _small(base: str, attention: str, **model) -> ch.Config:
    return ch.preset(base).replace(model=dict(attention=attention, **model))


def width_part(base: str, widths) -> dict:
    out = {}
    for att in ("linear", "softmax"):
        cfg0 = _small(base, att)
        ek = theory_curve(TheoryParams.from_config(cfg0), np.asarray(cfg0.sweep.P, float), att)
        n1, nG = ch.head_class(att).order_names
        rows = {"P": list(cfg0.sweep.P), "EK_cG": ek[nG].tolist(), "EK_c1": ek[n1].tolist()}
        for N in widths:
            t0 = time.time()
            res = ch.run_sweep(_small(base, att, engine="reduced", width=N), progress=False)
            rows[f"N={N}"] = dict(
                c1=res["c1"].mean(1).tolist(),
                cG=res["cG"].mean(1).tolist(),
                cG_seeds=res["cG"].tolist(),
                coverage=res["coverage"].mean(1).tolist(),
                converged=int(res["converged"].sum()),
                min_eig=float(res["min_eig"].min()),
                seconds=time.time() - t0,
            )
            print(att, N, np.round(res["cG"].mean(1), 3), flush=True)
        out[att] = rows
    return out


def polish_part(base: str) -> dict:
    out = {}
    for att in ("linear", "softmax"):
        t0 = time.time()
        res = ch.run_sweep(_small(base, att), progress=False, keep_params=True)
        t_adam = time.time() - t0
        p = polish(res)
        a = p.arrays
        n1, nG = getattr(p, "order_names", ("c1", "cG"))  # softmax results: a1, aG
        out[att] = dict(
            P=list(p.config.sweep.P),
            adam_seconds=t_adam,
            adam_c1=p[n1].mean(1).tolist(),
            map_c1=a[f"polish/{n1}"].mean(1).tolist(),
            adam_cG=p[nG].mean(1).tolist(),
            map_cG=a[f"polish/{nG}"].mean(1).tolist(),
            dU=a["polish/dU"].mean(1).tolist(),
            grad_span=a["grad_norm_span"].max(1).tolist(),
            rel_grad=a["polish/rel_grad"].max(1).tolist(),
            min_eig=a["polish/min_eig"].min(1).tolist(),
            converged=int(a["polish/converged"].sum()),
        )
        print(att, json.dumps(out[att])[:400], flush=True)
    return out


def nuts_part(base: str, P: int = 32, reuse: dict | None = None) -> dict:
    out = {}
    for att in ("linear", "softmax"):
        cfg = _small(base, att, engine="reduced", width=10_000)
        cfg = cfg.replace(sweep=dict(P=(P,), n_seeds=1))
        res = ch.run_sweep(cfg, progress=False, keep_params=True)
        rows = dict((reuse or {}).get(att, {}))
        if not rows.get("NUTS"):
            rows.update(_nuts(cfg, res))
        t0 = time.time()
        post = run_sampler(res, default_sampler(res), progress=False)
        x = np.stack([post["U"][0, 0], post["c1"][0, 0], post["cG"][0, 0]], -1)
        rows["default"] = _moments(x)
        rows["default_seconds"] = time.time() - t0
        rows["default_protocol"] = dataclasses.asdict(default_sampler(res))
        rows["default_accept"] = float(post["accept_mean"].mean())
        rows["default_step"] = post["step"].ravel().tolist()
        out[att] = rows
        print(att, json.dumps({k: rows[k] for k in ("NUTS", "default")})[:600], flush=True)
    return out


def _nuts(cfg, res) -> dict:
    """NUTS on the joint posterior of (W^G, W_O_hat) of the run of ``res`` (2 x 1,000 draws)."""

    inp = sweep_inputs(cfg, None)
    with jax.enable_x64(True):
        obj = Objective.from_config(cfg)
        head = res.heads((0, 0), dtype=jnp.float64)
        t, m = inp.train[0], jnp.asarray(inp.mask[0], jnp.float64)
        sampler = sampler_for(cfg, default_sampler(res))
        obs = lambda h: sampler.observe(h, t, m)[jnp.array([0, 2, 3])]
        t0 = time.time()
        ref = np.asarray(
            nuts_reference(
                jax.random.key(1), head, t, m, obj, obs, n_warmup=500, n_samples=1000, n_chains=2
            )
        )
    return {"NUTS": _moments(ref), "NUTS_seconds": time.time() - t0}


def _moments(x: np.ndarray) -> dict:
    """Mean, MCSE of the mean and variance of U, c1, cG from draws ``[chain, draw, 3]``."""
    names = ("U", "c1", "cG")
    return {
        n: dict(
            mean=float(x[..., k].mean()),
            var=float(x[..., k].var()),
            mcse=float(x[..., k].std() / np.sqrt(ess(x[..., k]))),
            ess=float(ess(x[..., k])),
        )
        for k, n in enumerate(names)
    }


def main(spec: C.Spec, out_dir: str | Path) -> dict:
    """Run the parts of the settings into ``OUT/results/reduction.json`` (each part replaces its
    own entry) and draw the width figure."""
    if spec.preset != "plain":
        C.log("reduction: the small default has the plain conventions; nothing for this preset")
        return {}
    s = {**DEFAULTS, **spec.settings}
    out = Path(out_dir)
    path = out / "results" / "reduction.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    reuse = data.get("nuts") if s["reuse_nuts"] else None
    fns = {
        "width": lambda: width_part(s["base"], s["widths"]),
        "polish": lambda: polish_part(s["base"]),
        "nuts": lambda: nuts_part(s["base"], reuse=reuse),
    }
    for part in s["parts"]:
        result = fns[part]()
        data = json.loads(path.read_text()) if path.exists() else {}  # other parts may have run
        data[part] = result
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1, default=float))
    if "width" in data:
        fig = reduction_width_figure(data["width"])
        C.save_figure(fig, out / "figures" / "reduction_width.png")
    return data
