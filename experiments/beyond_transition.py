"""Artefact ``markov-transition``: the Bayesian ``P*_aG`` (branch free energies, ``ch.transition``)
on sticky Markov tokens per ``rho`` (docs/reports/markov.md). Settings ``markov_transition``:
``rho``, ``widths``, ``seeds``, ``task``, ``ti`` (``TISettings``), ``P_grid`` (None: the theory's;
or per rho), ``theory``. The command's checkpoints are cached (a rerun resumes)."""

import math
import time
from pathlib import Path

import copyhead_jax as ch
from copyhead_jax.storage import environment, write_json
from copyhead_jax.theory.params import TheoryParams
from copyhead_jax.theory.points import transition_points
from copyhead_jax.transition_ti import TISettings

from . import common as C

KEEP = ("P_star", "interval", "per_seed", "cross_check", "map_U_crossing", "theory", "a_thr",
        "map_grid", "flagged", "wall_seconds")  # fmt: skip


def main(spec: C.Spec, out_dir: str | Path) -> dict:
    """``ch.transition`` at every (width, rho) of the settings; writes the JSON."""
    s = spec.settings
    if not s:
        C.log(f"markov-transition ({spec.preset}, {spec.mode}): no settings here; nothing run")
        return {}
    ti = TISettings(**s.get("ti", {}))
    rows = []  # per width, per rho
    for width in s.get("widths", ["inf"]):
        w = math.inf if width == "inf" else int(width)
        for rho in s["rho"]:
            cfg = ch.preset(spec.preset).replace(
                task=dict(s.get("task", {}), source="markov", rho=rho),
                model=dict(attention="softmax", engine="reduced", width=w),
                train=dict(train_embeddings=False),  # as ``copyhead transition`` builds it
            )
            grid = g.get(rho) if isinstance(g := s.get("P_grid"), dict) else g  # per rho or one
            folder = C.cache_path(spec.cache_dir, "transition", [cfg.to_dict(), repr(ti),
                                  s["seeds"], grid], "")  # fmt: skip
            t0 = time.process_time()
            res = ch.transition(cfg, n_seeds=s["seeds"], out=folder, settings=ti, P_grid=grid,
                                theory=s.get("theory", True))  # fmt: skip
            row = {"rho": rho, "width": width, **{k: res[k] for k in KEEP},
                   "brackets": [x["crossing"]["bracket"] for x in res["seeds"]],
                   "probes": [[p["P"] for p in x["probes"]] for x in res["seeds"]],
                   "cpu_s_this_call": time.process_time() - t0}  # fmt: skip
            if rho == 0 and s.get("theory", True):  # i.i.d. tokens: the EK posterior point too
                row["ek_post_iid"] = transition_points(TheoryParams.from_config(cfg), "softmax",
                                                       "post").get("P_aG")  # fmt: skip
            rows.append(row)
            C.log(f"rho={rho:g} width={width}: P*_aG {row['P_star']} {row['interval']}")
    res = {"artefact": spec.artefact, "preset": spec.preset, "settings": s, "ti": repr(ti),
           "rows": rows, "environment": environment()}  # fmt: skip
    name = spec.artefact if spec.preset == "paper" else f"{spec.artefact}_{spec.preset}"
    write_json(Path(out_dir) / "results" / f"{name}.json", res)
    return res
