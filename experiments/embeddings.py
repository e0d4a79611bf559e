"""Trained against quenched embeddings (issue 13, item 5): does training them move the P*?

    python -m experiments.embeddings [--tiny] [--out docs/reports]
    python -m experiments.embeddings --tables docs/reports/results/embeddings.json  # docs tables

The full network (``engine='full'``, muP Adam with ``ch.SMALL``'s protocol) at width 256 in the
plain preset, on one grid of P per attention, with the same seeds (datasets, initial embeddings
and weights) under three protocols (``configs/embeddings.py``):

* ``trained``: every weight trained (``train_embeddings=True``, the joint MAP);
* ``quenched``: embeddings frozen at their prior draw (docs/theory.md §2's MAP protocol);
* ``exact``: the quenched exact MAP of the same embeddings (reduced engine, realised Gram,
  float64 L-BFGS): where Adam and it disagree, the optimiser failed, not the embeddings.

Linear attention starts W^G from the prior, softmax from zero logits (pooling) and from the copy
init. Per protocol: the order parameters c1, cG (aG), r, psi, U per P and seed, the located P*
(linear: max dpsi/dlogP, psi = 1/2, r passing ``r_level``; softmax: the aG jump of each start
and the crossing of the two starts' U), the trained-minus-quenched shift of each P* with its
grid interval, Adam's convergence flags and how far the trained embeddings moved. EK theory
points and curves (N = infinity) as the reference. Sweeps and theory are cached in
``results/embeddings/MODE/``; writes ``OUT/results/embeddings.json`` and
``OUT/figures/embeddings.png`` (``--tiny``: under ``results/embeddings/tiny/out`` by default).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import resource
import time
from pathlib import Path

import jax
import numpy as np

import copyhead_jax as ch
from copyhead_jax.compare.locate import (
    Located,
    locate_crossing,
    locate_jump,
    locate_level,
    locate_max_slope,
)
from copyhead_jax.posterior import Objective
from copyhead_jax.theory import TheoryParams

from . import common as C
from .configs.embeddings import CONFIGS

PROTOCOLS = ("trained", "quenched", "exact")
OBSERVABLES = ("c1", "cG", "r", "psi", "U")
#: the optional diagnostic of ``config['long']``: the trained protocol with more epochs
LONG = "trained_long"
LABELS = {"trained": "trained emb. (Adam)", "quenched": "quenched emb. (Adam)",
          "exact": "quenched exact MAP", LONG: "trained emb. (Adam, long schedule)"}  # fmt: skip


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(C.jsonable(obj), sort_keys=True).encode()).hexdigest()[:12]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sweep_config(ec: dict, attention: str, protocol: str, init: str = "prior") -> ch.Config:
    """The sweep of one (attention, start, protocol); the three protocols differ only in
    ``train_embeddings`` and (``exact``) the engine, so they share seeds, data and embeddings.
    ``LONG``: the trained protocol on ``config['long']``'s grid, seeds and training overrides."""
    if protocol == LONG:
        lg = ec["long"]
        sub = ec | {k: lg[k] for k in ("P_linear", "P_softmax", "n_seeds")}
        return sweep_config(sub, attention, "trained", init).replace(train=lg["train"])
    P = ec["P_linear"] if attention == "linear" else ec["P_softmax"]
    cfg = ch.SMALL.replace(**ec["engine"]).replace(
        model=dict(attention=attention),
        train=dict(init_attention=init, train_embeddings=protocol == "trained"),
        sweep=dict(P=tuple(int(p) for p in P), n_seeds=ec["n_seeds"]),
    )
    if protocol == "exact":  # the same seed draws the same embeddings (gram='realised')
        cfg = cfg.replace(model=dict(engine="reduced", gram="realised"), train=dict(solver="exact"))
    return cfg


def initial_embeddings(cfg: ch.Config, seed_index: int) -> tuple[np.ndarray, np.ndarray]:
    """``(W_E, b)`` of seed ``seed_index``'s initial full-width head (``sweep.sweep_inputs``'s key
    split: ``[data, init]``)."""
    k = jax.random.split(jax.random.key(cfg.sweep.seed + seed_index))
    head = ch.init_head(k[1], cfg.model, L=cfg.task.L, V=cfg.task.V, chi=cfg.posterior.chi)
    return np.asarray(head.W_E, np.float64), np.asarray(head.b, np.float64)


def _gram(W_E: np.ndarray, b: np.ndarray) -> np.ndarray:
    U = np.concatenate([W_E, b], axis=-1)  # [..., N, V + L]
    return np.swapaxes(U, -1, -2) @ U / U.shape[-2]


def embedding_motion(res: ch.SweepResult) -> dict:
    """Per run: how far the fitted embeddings are from their initial draw (the Gram's relative
    Frobenius change, the squared-norm ratio, and whether they are bit-identical), and the
    initial embeddings' prior energy (the constant of the quenched U)."""
    cfg, obj = res.config, Objective.from_config(res.config)
    W_E, b = (np.asarray(res[f"params/{k}"], np.float64) for k in ("W_E", "b"))
    nP, nS = W_E.shape[:2]
    out = {k: np.full((nP, nS), np.nan) for k in ("gram_rel_change", "norm2_ratio")}
    out["unchanged"] = np.zeros((nP, nS), bool)
    out["E_emb0"] = np.zeros(nS)
    for s in range(nS):
        W0, b0 = initial_embeddings(cfg, s)
        C0 = _gram(W0, b0)
        n0 = np.sum(W0**2) + np.sum(b0**2)
        e_W, e_b = np.sum(W0**2) / obj.sigma_e**2, np.sum(b0**2) / obj.sigma_p**2
        out["E_emb0"][s] = 0.5 * (e_W + e_b)
        for i in range(nP):
            Ci = _gram(W_E[i, s], b[i, s])
            out["gram_rel_change"][i, s] = np.linalg.norm(Ci - C0) / np.linalg.norm(C0)
            out["norm2_ratio"][i, s] = (np.sum(W_E[i, s] ** 2) + np.sum(b[i, s] ** 2)) / n0
            out["unchanged"][i, s] = np.array_equal(W_E[i, s], W0) and np.array_equal(b[i, s], b0)
    return out


def offspan_energy(res: ch.SweepResult) -> np.ndarray:
    """Per run: the prior energy of the parts of W^G and W^O outside the span of the run's
    (final) embeddings. They never change the network's function, only decay under the prior
    (slowly under Adam at width N >> V + L), and are zero at every MAP (docs/theory.md §2c)."""
    obj = Objective.from_config(res.config)
    W_E, b, W_G, W_O = (np.asarray(res[f"params/{k}"], np.float64)
                        for k in ("W_E", "b", "W_G", "W_O_hat"))  # fmt: skip
    nP, nS = W_E.shape[:2]
    out = np.zeros((nP, nS))
    for i in range(nP):
        for s in range(nS):
            Q, _ = np.linalg.qr(np.concatenate([W_E[i, s], b[i, s]], axis=-1))  # [N, V + L]
            g, o = W_G[i, s], W_O[i, s]
            off_G = np.sum(g**2) - np.sum((Q.T @ g @ Q) ** 2)
            off_O = np.sum(o**2) - np.sum((o @ Q) ** 2)
            out[i, s] = off_G / (2 * obj.sigma_G**2) + off_O / (2 * obj.sigma_O**2)
    return out


def block(res: ch.SweepResult, protocol: str, ec: dict) -> dict:
    """Order parameters and health of one sweep, ``[nP, n_seeds]`` arrays. ``U`` is the energy
    being minimised, up to terms that cannot change the function: for Adam the prior energy of
    W^G and W^O outside the embeddings' span is removed (``U_offspan``, kept; ``U_raw`` is the
    engine's U), and for quenched Adam also the frozen embeddings' constant prior energy, so it
    equals the exact MAP's U at the same point. Trained: the joint U (embedding prior in it)."""
    ok = res.ok
    out = {"P": res.P.tolist(), "n_seeds": res.config.sweep.n_seeds,
           "init": res.config.train.init_attention, "ok": ok}  # fmt: skip
    for k in (*OBSERVABLES, "copy_accuracy", "train_loss", "test_loss"):
        out[k] = np.where(ok, np.asarray(res[k], np.float64), np.nan)
    if protocol == "exact":
        out["converged"] = ok & np.asarray(res["converged"], bool)
        out["min_eig"] = np.asarray(res["min_eig"], np.float64)
        return out
    emb = embedding_motion(res)
    out["U_raw"], out["U_offspan"] = out["U"], offspan_energy(res)
    out["U"] = out["U_raw"] - out["U_offspan"]
    if protocol == "quenched":
        out["U"] = out["U"] - emb["E_emb0"][None, :]
    t = res.config.train
    stop = np.asarray(res["stop_epoch"])
    gns = np.asarray(res["grad_norm_span"], np.float64)
    out["stop_epoch"], out["grad_norm_span"] = stop, gns
    out["early_stopped"] = stop < t.max_epochs
    # converged: a stationary point of U by the gradient test (early_stopped says only that the
    # training loss stopped improving, which for trained embeddings happens long before)
    out["converged"] = ok & (gns <= ec["grad_rtol"] * np.maximum(1.0, np.abs(out["U"])))
    out["embeddings"] = {k: v for k, v in emb.items() if k != "E_emb0"}
    out["E_emb0"] = emb["E_emb0"]
    return out


# ---------------------------------------------------------------------------------------------
# Transition points


def _per_seed(fn, P, *ys) -> list[dict]:
    nS = np.asarray(ys[0]).shape[1]
    return [fn(P, *(np.asarray(y)[:, s] for y in ys)).to_dict() for s in range(nS)]


def _located(fn, P, *ys) -> dict:
    d = fn(P, *ys).to_dict()
    d["per_seed"] = _per_seed(fn, P, *ys)
    return d


def linear_points(b: dict, ec: dict) -> dict:
    P = np.asarray(b["P"], float)
    return {
        "P_cG": _located(locate_max_slope, P, b["psi"]),
        "P_cG_half": _located(lambda p, y: locate_level(p, y, 0.5), P, b["psi"]),
        "P_c1_r": _located(lambda p, y: locate_level(p, y, ec["r_level"]), P, b["r"]),
    }


def softmax_points(zero: dict, copy: dict | None, ec: dict) -> dict:
    P = np.asarray(zero["P"], float)

    def jump(p, y):
        """The aG jump; no step > ``distinct_aG`` on the grid: the jump lies above it."""
        loc = locate_jump(p, y, min_jump=ec["distinct_aG"])
        if loc.P_star is not None:
            return loc
        return Located("jump", None, None, False, "above", {**loc.detail, "edge": float(max(p))})

    out = {"jump_zero_start": _located(jump, P, zero["cG"])}
    if copy is None:
        return out
    out["jump_copy_start"] = _located(jump, P, copy["cG"])
    distinct = np.abs(copy["cG"] - zero["cG"]) > ec["distinct_aG"]
    cross = lambda p, a, c, v=distinct: locate_crossing(p, a, c, valid=v)  # noqa: E731
    out["P_aG"] = cross(P, zero["U"], copy["U"]).to_dict()
    out["P_aG"]["per_seed"] = [
        locate_crossing(P, zero["U"][:, s], copy["U"][:, s], valid=distinct[:, s]).to_dict()
        for s in range(distinct.shape[1])
    ]
    out["distinct"] = distinct
    out["P_aG_best"] = best_P_aG(out["P_aG"], out["jump_copy_start"], out["jump_zero_start"])
    out["P_aG_best"]["per_seed"] = [
        best_P_aG(c, jc, jz)
        for c, jc, jz in zip(out["P_aG"]["per_seed"], out["jump_copy_start"]["per_seed"],
                             out["jump_zero_start"]["per_seed"], strict=True)
    ]  # fmt: skip
    return out


def best_P_aG(cross: dict, jump_copy: dict, jump_zero: dict) -> dict:
    """The U crossing of the two starts where it is located; else the hysteresis window: the
    crossing lies between where the copy start stops copying (lower spinodal) and where the
    zero start starts (upper spinodal), so ``bracket = [copy jump's P_lo, zero jump's P_hi]``
    and ``P_star`` the geometric mean of the two jumps (too few P with distinct branches,
    e.g. a window one grid step wide, leave the crossing itself unlocated)."""
    if cross.get("P_star") is not None:
        return {**cross, "method": "U crossing"}
    if jump_copy.get("P_star") is None or jump_zero.get("P_star") is None:
        return {**cross, "method": "none (crossing and a jump not located)"}
    lo, hi = jump_copy["bracket"][0], jump_zero["bracket"][1]
    P_star = math.sqrt(jump_copy["P_star"] * jump_zero["P_star"])
    return {"kind": "hysteresis window", "P_star": P_star, "bracket": [lo, hi],
            "bracketed": True, "side": None, "detail": {},
            "method": "hysteresis window (crossing unlocated)"}  # fmt: skip


def shift(a: dict | None, b: dict | None) -> dict:
    """``P*_a - P*_b`` and ``P*_a / P*_b`` with the intervals their grid brackets allow, and per
    seed; an unbracketed side gives a one-sided bound (``'above'``: P* > the grid's edge)."""
    out: dict = {"shift": None, "interval": None, "ratio": None, "ratio_interval": None}
    if not a or not b:
        return out
    if a.get("P_star") is not None and b.get("P_star") is not None:
        (al, ah), (bl, bh) = a["bracket"], b["bracket"]
        out.update(shift=a["P_star"] - b["P_star"], interval=[al - bh, ah - bl],
                   ratio=a["P_star"] / b["P_star"], ratio_interval=[al / bh, ah / bl])  # fmt: skip
    elif a.get("side") == "above" and b.get("P_star") is not None:
        e = a["detail"]["edge"]
        out.update(bound=f"> {e - b['bracket'][1]:g}, ratio > {e / b['bracket'][1]:.3g}"
                   f" (first P* above the grid's edge {e:g})")  # fmt: skip
    elif a.get("P_star") is not None and b.get("side") == "below":
        e = b["detail"]["edge"]
        out.update(bound=f"> {a['bracket'][0] - e:g}, ratio > {a['bracket'][0] / e:.3g}"
                   f" (second P* below the grid's edge {e:g})")  # fmt: skip
    elif a.get("side") or b.get("side"):
        out.update(bound=f"unbounded (P* {a.get('side') or 'located'} / "
                   f"{b.get('side') or 'located'} the grids)")  # fmt: skip
    pa, pb = a.get("per_seed") or [], b.get("per_seed") or []
    out["per_seed"] = [
        (x["P_star"] - y["P_star"]) if x["P_star"] is not None and y["P_star"] is not None else None
        for x, y in zip(pa, pb, strict=False)
    ]
    return out


# ---------------------------------------------------------------------------------------------
# Theory


def theory(ec: dict, cache: Path) -> dict:
    cfg = sweep_config(ec, "linear", "quenched")
    params = TheoryParams.from_config(cfg)
    pts = C.ek_points(params, "map", cache)
    Ps = ec["P_linear"] + ec["P_softmax"]
    Pg = np.geomspace(0.5 * min(Ps), 1.5 * max(Ps), 40)
    lin = C.ek_curves(params, Pg, "linear", ("map",), cache)["map"]
    soft = C.ek_curves(params, Pg, "softmax", ("map",), cache)["map"]
    keys = ("P_c1", "P_cG", "P_cG_half", "P_aG", "spinodals", "first_order", "notes")
    return {
        "points": {k: pts.get(k) for k in keys},
        "curves": {
            "P": Pg,
            "c1": lin["c1"],
            "cG": lin["cG"],
            "r": lin["r"],
            "psi": lin["psi"],
            "aG": soft["aG"],
            "aG_minima": soft["minima_aG"],
            "aG_minima_valid": soft["minima_valid"],
        },  # fmt: skip
    }


# ---------------------------------------------------------------------------------------------
# Driver


def run_blocks(ec: dict, cache: Path) -> tuple[dict, dict]:
    """Every sweep (cached), summarised: ``{attention/init: {protocol: block}}`` and the CPU
    seconds each sweep took when it was computed (kept in ``cache/cpu.json``)."""
    cpu_path = cache / "cpu.json"
    cpu = json.loads(cpu_path.read_text()) if cpu_path.exists() else {}
    blocks: dict = {}
    runs = [("linear", "prior")] + [("softmax", i) for i in ec["softmax_inits"]]
    for att, init in runs:
        name = f"{att}/{init}"
        blocks[name] = {}
        long_here = ec.get("long") and (att == "linear" or init in ec["long"]["softmax_inits"])
        for proto in PROTOCOLS + ((LONG,) if long_here else ()):
            cfg = sweep_config(ec, att, proto, init)
            key = f"{name}/{proto}/{_digest(cfg.to_dict())}"
            t0 = _cpu()
            res = C.cached_sweep(cfg, cache)
            if key not in cpu:
                cpu[key] = _cpu() - t0
                cache.mkdir(parents=True, exist_ok=True)
                cpu_path.write_text(json.dumps(cpu, indent=1))
            blocks[name][proto] = block(res, "trained" if proto == LONG else proto, ec)
            blocks[name][proto]["cpu_seconds"] = cpu[key]
            C.log(f"embeddings {name} {proto}: {cpu[key]:.0f} CPU-s")
    return blocks, cpu


def transitions(blocks: dict, ec: dict) -> dict:
    out: dict = {"linear": {}, "softmax": {}}
    for proto in (*PROTOCOLS, LONG):
        if proto in blocks["linear/prior"]:
            out["linear"][proto] = linear_points(blocks["linear/prior"][proto], ec)
        if proto in blocks.get("softmax/zero", {}):
            copy = blocks.get("softmax/copy", {}).get(proto)
            out["softmax"][proto] = softmax_points(blocks["softmax/zero"][proto], copy, ec)
    shifts: dict = {}
    for att in ("linear", "softmax"):
        for k in out[att].get("trained", {}):
            if k == "distinct":
                continue
            t, q, e = (out[att][p].get(k) for p in PROTOCOLS)
            shifts[f"{att}/{k}"] = {"trained_minus_quenched": shift(t, q),
                                    "trained_minus_exact": shift(t, e),
                                    "quenched_minus_exact": shift(q, e)}  # fmt: skip
            if LONG in out[att]:
                tl = out[att][LONG].get(k)
                shifts[f"{att}/{k}"]["trained_long_minus_quenched"] = shift(tl, q)
                shifts[f"{att}/{k}"]["trained_long_minus_trained"] = shift(tl, t)
    out["shifts"] = shifts
    return out


def adam_health(blocks: dict) -> dict:
    """Convergence counts per Adam sweep and the quenched Adam U's excess over the exact MAP's
    (same data, same embeddings; > 0: Adam stopped above the minimum or on another branch)."""
    out = {}
    for name, bl in blocks.items():
        for proto in ("trained", "quenched", LONG):
            if proto not in bl:
                continue
            b = bl[proto]
            out[f"{name}/{proto}"] = {
                "runs": int(np.size(b["ok"])), "ok": int(np.sum(b["ok"])),
                "early_stopped": int(np.sum(b["early_stopped"])),
                "converged": int(np.sum(b["converged"])),
                "max_grad_norm_span": float(np.nanmax(b["grad_norm_span"])),
            }  # fmt: skip
        gap = bl["quenched"]["U"] - bl["exact"]["U"]
        same = np.abs(bl["quenched"]["cG"] - bl["exact"]["cG"]) < 0.1
        with C.quiet_nan():
            out[f"{name}/quenched_U_minus_exact_U"] = {
                "per_P_max": np.nanmax(gap, 1), "per_P_min": np.nanmin(gap, 1),
                "rel_max": float(np.nanmax(np.abs(gap) / np.maximum(1, np.abs(bl["exact"]["U"])))),
                "same_cG_within_0.1": int(np.sum(same)), "runs": int(np.size(gap)),
            }  # fmt: skip
        out[f"{name}/exact_converged"] = int(np.sum(bl["exact"]["converged"]))
    return out


def main(spec="full", out_dir: str | Path | None = None, cache_dir: str | Path | None = None):
    """``spec``: a mode name of ``configs/embeddings.py`` or a config dict of that shape."""
    t0, c0 = time.time(), _cpu()
    mode = spec if isinstance(spec, str) else "custom"
    ec = CONFIGS[spec] if isinstance(spec, str) else spec
    cache = Path(cache_dir) if cache_dir else Path("results") / "embeddings" / mode
    default = Path("docs/reports") if mode == "full" else cache / "out"
    out_dir = Path(out_dir) if out_dir else default
    th = theory(ec, cache)
    blocks, cpu = run_blocks(ec, cache)
    res = {
        "question": "does training the embeddings move the transitions?",
        "mode": mode, "config": ec, "width": sweep_config(ec, "linear", "trained").model.width,
        "protocols": {p: LABELS[p] for p in PROTOCOLS},
        "train": sweep_config(ec, "linear", "trained").to_dict()["train"],
        "theory": th["points"], "theory_curves": th["curves"],
        "blocks": blocks, "transitions": transitions(blocks, ec),
        "adam_health": adam_health(blocks),
        # CPU seconds of the sweeps in this artefact when they were computed (0 if cached then)
        "sweep_cpu_seconds": sum(b["cpu_seconds"] for bl in blocks.values() for b in bl.values()),
        "command": "python -m experiments.embeddings" + ("" if mode == "full" else " --tiny"),
    }  # fmt: skip
    res["runtime_s"], res["cpu_seconds_this_call"] = time.time() - t0, _cpu() - c0
    C.save_figure(figure(res), out_dir / "figures" / "embeddings.png")
    path = C.write_json(out_dir / "results" / "embeddings.json", res)
    C.log(f"wrote {path} ({res['runtime_s']:.0f} s wall, {res['cpu_seconds_this_call']:.0f} CPU-s)")
    return res


# ---------------------------------------------------------------------------------------------
# Figure and tables


def figure(res: dict):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from copyhead_jax.style import (
        BLACK,
        BLUE,
        GREY,
        KEY_COLORS,
        ORANGE,
        P_LABEL,
        PURPLE,
        RC,
        SKY,  # fmt: skip
        VERMILLION,
        legend,
        log_P_axis,
        num,
    )

    th, bl = res["theory_curves"], res["blocks"]
    with matplotlib.rc_context(RC):
        fig, ax = plt.subplots(2, 2, figsize=(12, 11), layout="constrained")
    colors = {"trained": VERMILLION, "quenched": BLUE, "exact": BLACK, LONG: ORANGE}
    style = {"trained": "-o", "quenched": "-s", "exact": ":x", LONG: "-d"}
    Ps = []

    def draw(a, b, k, proto, ls=None, label=True):
        P = np.asarray(b["P"], float)
        Ps.extend(P)
        y = np.asarray(b[k], float)
        with C.quiet_nan():
            m = np.nanmean(y, 1)
        a.plot(P, m, ls or style[proto], color=colors[proto], ms=4, lw=1.2,
               label=f"{LABELS[proto]}, seed mean" if label else None)  # fmt: skip
        for s in range(y.shape[1]):
            a.plot(P, y[:, s], ".", color=colors[proto], ms=3, alpha=0.5)

    with matplotlib.rc_context(RC):
        Pt = np.asarray(th["P"], float)
        for a, k, title, yl in (
            (ax[0, 0], "c1", "linear: $c_1$", "order parameter $c_1$"),
            (ax[0, 1], "cG", "linear: $c_G$", "order parameter $c_G$"),
        ):
            a.plot(Pt, th[k], "-", color=GREY, lw=3, alpha=0.6, label="EK theory (N = inf)")
            for proto in (*PROTOCOLS, LONG):
                if proto in bl["linear/prior"]:
                    draw(a, bl["linear/prior"][proto], k, proto)
            a.plot(
                [],
                [],
                ".",
                color=GREY,
                ms=4,
                label="single seeds (small dots, colour of the protocol)",
            )
            a.set(title=title, ylabel=f"{yl} (dimensionless)")
        a = ax[1, 0]
        mins, valid = np.asarray(th["aG_minima"], float), np.asarray(th["aG_minima_valid"], bool)
        a.plot(Pt, th["aG"], "-", color=GREY, lw=3, alpha=0.6, label="EK theory (global)")
        for j in range(1, mins.shape[1]):
            a.plot(Pt, np.where(valid[:, j], mins[:, j], np.nan), "--", color=GREY, lw=1,
                   label="EK theory (other local minima)" if j == 1 else None)  # fmt: skip
        for proto in (*PROTOCOLS, LONG):
            for init, ls in (("zero", None), ("copy", "--" + style[proto][-1])):
                if proto in bl.get(f"softmax/{init}", {}):
                    first = (init == "zero" or "softmax/zero" not in bl
                             or proto not in bl["softmax/zero"])  # fmt: skip
                    draw(a, bl[f"softmax/{init}"][proto], "cG", proto, ls=ls, label=first)
        a.plot([], [], "--", color=BLACK, label="copy start (dashed)")
        a.set(title="softmax: $a_G$ (solid: zero-logit start, dashed: copy start)",
              ylabel="copy logit $a_G$ (dimensionless)")  # fmt: skip
        a = ax[1, 1]
        floor = 1e-4  # fully collapsed embeddings (ratio ~ 1e-30) are drawn at the axis
        curves = (("linear/prior", "trained", "-o", BLUE), ("linear/prior", LONG, "-d", SKY),
                  ("softmax/zero", "trained", "-s", VERMILLION),
                  ("softmax/copy", "trained", "--^", PURPLE))  # fmt: skip
        for name, proto, ls, col in curves:
            if proto in bl.get(name, {}):
                e = bl[name][proto]["embeddings"]
                P = np.asarray(bl[name][proto]["P"], float)
                with C.quiet_nan():
                    y = np.nanmean(np.asarray(e["norm2_ratio"], float), 1)
                label = f"{name}" + (", long schedule" if proto == LONG else "")
                a.plot(P, np.clip(y, floor, None), ls, color=col, ms=4, label=label)
        a.set_yscale("log")
        a.set_ylim(floor / 2, 2)
        a.axhline(1, color=GREY, lw=0.8, ls=":", label="quenched (ratio 1)")
        a.set(title="trained embeddings: size over the initial",
              ylabel=f"$(|W_E|^2 + |b|^2)$ / initial (floor {floor:g})")  # fmt: skip
        pts = res["theory"]
        for a in (ax[0, 0], ax[0, 1]):
            a.axvline(pts["P_cG"], color=KEY_COLORS["P_cG"], ls=":", lw=1,
                      label=f"EK $P^*_{{cG}}$ = {num(pts['P_cG'])}")  # fmt: skip
        if pts.get("P_aG"):
            ax[1, 0].axvline(pts["P_aG"], color=KEY_COLORS["P_aG"], ls=":", lw=1,
                             label=f"EK $P^*_{{aG}}$ = {num(pts['P_aG'])}")  # fmt: skip
        for a in ax.flat:
            log_P_axis(a, Ps)
            a.set_xlabel(P_LABEL)
            a.grid(alpha=0.3)
            legend(a)
        fig.suptitle(f"width {res['width']:,}, plain preset (L = 25, V = 5): trained vs quenched "
                     "embeddings, full-network muP Adam; exact MAP; EK theory")  # fmt: skip
    return fig


def _f(x, nd=3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{nd}g}"


def _ps(d: dict | None) -> str:
    if not d or d.get("P_star") is None:
        side = (d or {}).get("side")
        edge = ((d or {}).get("detail") or {}).get("edge")
        return f"{side} grid ({edge:g})" if side and edge is not None else "none"
    b = d["bracket"]
    seeds = ", ".join(_f(s["P_star"]) for s in d.get("per_seed") or [])
    return f"{d['P_star']:.3g} [{b[0]:g}, {b[1]:g}]" + (f" (seeds: {seeds})" if seeds else "")


def _sh(s: dict) -> str:
    if s.get("shift") is None:
        return s.get("bound", "-")
    i, r = s["interval"], s["ratio_interval"]
    return (f"{s['shift']:+.3g} [{i[0]:+.3g}, {i[1]:+.3g}]; x{s['ratio']:.3g} "
            f"[{r[0]:.3g}, {r[1]:.3g}]")  # fmt: skip


ROWS = (
    ("linear", "P_cG", "linear P*_cG (max dpsi/dlogP)", "P_cG"),
    ("linear", "P_cG_half", "linear psi = 1/2", "P_cG_half"),
    ("linear", "P_c1_r", "linear c1 onset (seed-mean r passes r_level)", "P_c1"),
    ("softmax", "P_aG_best", "softmax P*_aG (U crossing, else hysteresis window)", "P_aG"),
    ("softmax", "jump_zero_start", "softmax aG jump, zero-logit start", "spinodals"),
    ("softmax", "jump_copy_start", "softmax aG jump, copy start", "spinodals"),
)


def tables(res: dict) -> str:
    tr, th = res["transitions"], res["theory"]
    L = ["| transition | trained (Adam) | quenched (Adam) | quenched exact MAP | EK theory |"
         " trained - quenched [grid interval]; ratio |", "|---|---|---|---|---|---|"]  # fmt: skip
    for att, k, title, tk in ROWS:
        if k not in tr[att].get("trained", {}):
            continue
        t, q, e = (tr[att][p][k] for p in PROTOCOLS)
        ek = th.get(tk)
        ek = f"[{ek[0]:.3g}, {ek[1]:.3g}] (spinodals)" if isinstance(ek, list) else _f(ek)
        sh = _sh(tr["shifts"][f"{att}/{k}"]["trained_minus_quenched"])
        L.append(f"| {title} | {_ps(t)} | {_ps(q)} | {_ps(e)} | {ek} | {sh} |")
    out = ["### Transition points (seed mean, [grid bracket], per-seed values)", "", *L, ""]
    if any(LONG in tr[a] for a in ("linear", "softmax")):
        out += [f"### {LABELS[LONG]}", "", "| transition | trained, long | trained, SMALL's"
                " schedule | long - quenched [grid interval]; ratio | long - trained |",
                "|---|---|---|---|---|"]  # fmt: skip
        for att, k, title, _ in ROWS:
            if k not in tr[att].get(LONG, {}):
                continue
            sh = tr["shifts"][f"{att}/{k}"]
            out.append(f"| {title} | {_ps(tr[att][LONG][k])} | {_ps(tr[att]['trained'][k])} |"
                       f" {_sh(sh['trained_long_minus_quenched'])} |"
                       f" {_sh(sh['trained_long_minus_trained'])} |")  # fmt: skip
        out.append("")
    out += ["### Adam health", "", "| sweep | runs | stopped by patience | converged |"
            " max grad_norm_span |", "|---|---|---|---|---|"]  # fmt: skip
    for k, v in res["adam_health"].items():
        if isinstance(v, dict) and "early_stopped" in v:
            out.append(f"| {k} | {v['runs']} | {v['early_stopped']} | {v['converged']} |"
                       f" {_f(v['max_grad_norm_span'])} |")  # fmt: skip
    out.append("")
    for name, bl in res["blocks"].items():
        out += [f"### {name}: seed means per P (cG = aG for softmax; trained U is the joint U)",
                "", "| P | c1 t / q / x | cG t / q / x | r t / q / x | U t / q / x |"
                " trained Gram change | trained converged |", "|" + "---|" * 7]  # fmt: skip
        b = {p: bl[p] for p in PROTOCOLS}
        out += per_P_rows(b)
        if LONG in bl:
            out += [
                f"#### {name}, {LABELS[LONG]}",
                "",
                "| P | c1 | cG | r | U | Gram change | converged |",
                "|" + "---|" * 7,
                *per_P_rows({LONG: bl[LONG]}),
            ]
        out.append("")
    return "\n".join(out)


def per_P_rows(b: dict) -> list[str]:
    """Rows ``| P | c1 | cG | r | U | Gram change | converged |`` with each observable's seed
    mean per protocol of ``b`` (joined by ' / '); Gram change and convergence of the first."""
    first, out = next(iter(b)), []
    for i, P in enumerate(b[first]["P"]):
        row = [str(P)]
        with C.quiet_nan():
            for k in ("c1", "cG", "r", "U"):
                row.append(" / ".join(_f(float(np.nanmean(np.asarray(b[p][k][i], float))))
                                      for p in b))  # fmt: skip
            g = np.asarray(b[first]["embeddings"]["gram_rel_change"][i], float)
            row.append(_f(float(np.nanmean(g)), 2))
        c = np.asarray(b[first]["converged"][i], bool)
        out.append("| " + " | ".join(row) + f" | {int(c.sum())}/{c.size} |")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-sized smoke run")
    ap.add_argument("--out", default=None,
                    help="output folder (default: docs/reports; --tiny: cache)")
    ap.add_argument("--tables", metavar="JSON", help="print the markdown tables of a result")
    a = ap.parse_args()
    if a.tables:
        print(tables(json.loads(Path(a.tables).read_text())))
    else:
        main("tiny" if a.tiny else "full", a.out)
