r"""Where the exact MAP switches from pooling to copying, and whether it has coexistence.

The package's exact float64 MAP (``run_sweep`` on the reduced engine) from both softmax starts,
pooling (zero logits) and copy (``init_copy_logit`` $G^*$), on a grid of $P$. At each $P$:
the two starts **coexist** when they end at distinct minima ($|a_G^{\rm copy}-a_G^{\rm pool}|$
above ``tol``); the MAP is the lower-$U$ one. The MAP **switch** is where the MAP's $a_G$ passes
the midpoint of its range over the grid (linear in $\log P$ between the bracketing grid
points); with coexistence the switch is a first-order jump of the MAP at the $U$ crossing.
"""

from __future__ import annotations

import math

import numpy as np

from ...config import Config
from ...sweep import run_sweep
from .softmax import profile_config

#: Distinct minima: the two starts' a_G differ by more than this.
DISTINCT_TOL = 0.05


def map_branches(cfg: Config, n_seeds: int, P_grid) -> list[dict]:
    """Per seed ``{"P": [...], "aG": {start: [...]}, "U": {start: [...]}}`` (one sweep per
    start for every seed)."""
    cfg = profile_config(cfg)
    P_grid = tuple(int(p) for p in sorted(set(P_grid)))
    out = [{"P": list(P_grid), "aG": {}, "U": {}} for _ in range(n_seeds)]
    for start, init in (("pool", "zero"), ("copy", "copy")):
        c = cfg.replace(sweep=dict(P=P_grid, n_seeds=n_seeds), train=dict(init_attention=init))
        r = run_sweep(c, progress=False)
        for s in range(n_seeds):
            out[s]["aG"][start] = np.asarray(r["cG"], float)[:, s].tolist()
            out[s]["U"][start] = np.asarray(r["U"], float)[:, s].tolist()
    return out


def map_switch(br: dict, tol: float = DISTINCT_TOL) -> dict:
    """Switch point and coexistence of :func:`map_branches`'s output (module docstring)."""
    P = np.asarray(br["P"], float)
    ap, ac = (np.asarray(br["aG"][k]) for k in ("pool", "copy"))
    Up, Uc = (np.asarray(br["U"][k]) for k in ("pool", "copy"))
    distinct = np.abs(ac - ap) > tol
    a_map = np.where(Uc < Up, ac, ap)
    mid = 0.5 * (a_map.max() + a_map.min())
    P_sw = None
    for i in range(len(P) - 1):
        if (a_map[i] - mid) * (a_map[i + 1] - mid) <= 0 and a_map[i] != a_map[i + 1]:
            t = math.log(P[i]) + (mid - a_map[i]) / (a_map[i + 1] - a_map[i]) * math.log(
                P[i + 1] / P[i]
            )
            P_sw = (math.exp(t), [float(P[i]), float(P[i + 1])])
            break
    return {
        "P_switch": None if P_sw is None else P_sw[0],
        "bracket": None if P_sw is None else P_sw[1],
        "coexistence_P": P[distinct].tolist(),
        "a_map": a_map.tolist(),
        "a_mid": float(mid),
        "coexistence": bool(distinct.any()),
    }
