"""``python -m experiments linear-pooling [--L 12 --V 6 --P 31] [--draws 400]``: the linear head's
posterior on the pooling side of its crossover against route B's Gaussian there: the posterior's
pooling and copying coefficients ``c1``, ``cG`` (Z2 sign fixed, ``r > 0``) and copy fraction
``psi`` over its draws, from each draw's mean attention over the training set and over 4,096
fresh sequences, beside route B's ``(c1, cG, E_q[psi])`` at the nearest ``P`` of its curve.
Writes ``linear_pooling_L<L>_V<V>_P<P>.json`` (about a CPU-minute at (12, 6)).

Per configuration: the exact-MAP sweep at ``P`` (one seed), collapsed HMC (``REDUCED_HMC_LINEAR``
with ``keep_weights``), ``--draws`` of its draws' ``W^G`` evenly thinned, and route B's curve
(``copyhead theory points --objective bayes --attention linear``'s)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import copyhead_jax as ch
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.observables import attention_matrices, order_parameters
from copyhead_jax.sampling import REDUCED_HMC_LINEAR
from copyhead_jax.storage import write_json
from copyhead_jax.theory import TheoryParams, bayes
from copyhead_jax.transition import cpu_seconds

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "reports" / "results"
FRESH = 4096


def _order(head, W, tokens) -> dict:
    """``c1``, ``cG``, ``psi`` of each draw's mean attention over ``tokens``."""
    out = {"c1": [], "cG": [], "psi": []}
    for w in W:
        h = eqx.tree_at(lambda x: x.W_G, head, jnp.asarray(w, head.W_G.dtype))
        o = order_parameters(jnp.mean(attention_matrices(h, tokens), 0), gauge_fix=True)
        for k in out:
            out[k].append(float(getattr(o, k)))
    return {k: np.asarray(v) for k, v in out.items()}


def _summary(x: dict) -> dict:
    n = len(x["psi"])
    return {
        **{f"{k}_mean": float(v.mean()) for k, v in x.items()},
        **{f"{k}_sd": float(v.std()) for k, v in x.items()},
        "psi_se": float(x["psi"].std() / np.sqrt(n)),
        "n_draws": n,
    }


def run(L: int, V: int, P: int, draws: int) -> dict:
    cfg = ch.preset("plain").replace(
        task=dict(L=L, V=V),
        model=dict(attention="linear", engine="reduced", width=float("inf")),
        train=dict(train_embeddings=False, init_attention="prior"),
        sweep=dict(P=(P,), n_seeds=1),
    )
    sw = ch.run_sweep(cfg, keep_params=True, progress=False)
    post = ch.run_sampler(
        sw, dataclasses.replace(REDUCED_HMC_LINEAR, keep_weights=True), progress=False
    )
    idata = ch.to_arviz(post)
    W = np.asarray(idata["posterior"]["W_G"]).reshape(-1, L + V, L + V)
    W = W[:: max(1, len(W) // draws)][:draws]
    head = sw.heads((0, 0))
    train = jnp.asarray(np.asarray(sweep_inputs(cfg, None).train)[0][:P])
    fresh = ch.sample_tokens(jax.random.PRNGKey(123), n=FRESH, L=L, V=V)
    curve = bayes.linear_points(TheoryParams.preset("plain", L=L, V=V))["curve"]
    b = min(curve, key=lambda c: abs(np.log(c["P"] / P)))
    return {
        "L": L,
        "V": V,
        "P": P,
        "posterior_train": _summary(_order(head, W, train)),
        "posterior_fresh": _summary(_order(head, W, fresh)),
        "route_B": {k: b[k] for k in ("P", "c1", "cG", "psi_mean")} | {"rho": b["rho"]},
        "health": {k: float(np.asarray(post[k]).max()) for k in ("rhat", "rhat_c1", "rhat_cG")}
        | {k: float(np.asarray(post[k]).min()) for k in ("ess", "ess_c1", "ess_cG")},
        "cpu_seconds": cpu_seconds(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments linear-pooling", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--L", type=int, default=12)
    ap.add_argument("--V", type=int, default=6)
    ap.add_argument("--P", type=int, default=31, help="on the pooling side (default 31)")
    ap.add_argument("--draws", type=int, default=400, help="draws read (default 400)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    a = ap.parse_args(argv)
    r = run(a.L, a.V, a.P, a.draws)
    write_json(a.results / f"linear_pooling_L{a.L}_V{a.V}_P{a.P}.json", r)
    for k in ("posterior_train", "posterior_fresh"):
        s = r[k]
        print(
            f"{k}: c1 {s['c1_mean']:.2f} (sd {s['c1_sd']:.2f}), cG {s['cG_mean']:.2f} "
            f"(sd {s['cG_sd']:.2f}), E[psi] {s['psi_mean']:.3f} +- {s['psi_se']:.3f}"
        )
    b = r["route_B"]
    print(
        f"route B at P = {b['P']:.1f}: c1 {b['c1']:.2f}, cG {b['cG']:.2f}, "
        f"E_q[psi] {b['psi_mean']:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
