"""``python -m experiments route-a [--preset plain] --L L --V V [--seeds 0,1] [--P P1,...]
[--rho R]``: route A's Bayesian ``P*_aG`` (the one-loop free-energy profile, docs/theory.md
§13.7) of one softmax configuration under a reading (``plain``, ``paper``, ``paper-chi-lik``),
one independent token sample per seed, into ``bayes_theory_route_a.json``.

``--rho R``: tokens from the stationary sticky Markov chain (docs/theory.md §12; ``R = 0``:
i.i.d. uniform tokens without the shifts), ``64 L`` sequences of it per seed, not closed under
shifts: the full Hessian and the Newton term (``one_loop_transition(..., shift_closed=False)``),
``(L + V)^2`` Hessian columns where the orbits take ``L + 2V + V^2``; ``--P`` is then needed.
Every record says whether the expansion held (``trusted``, ``bayes.trusted``: the tangent
Hessian positive, the Newton gain beyond the gauge part within two posterior standard
deviations) and, where not, why (``untrusted``).

Per seed: ``one_loop_transition`` on 64 i.i.d. uniform sequences and their ``L`` cyclic shifts
(``ek_sample``), logit scales ``beta`` from ``--beta-lo`` (default -0.5) to 6.5 in steps of 1/3,
at the given ``P`` (default: route B's
point of ``bayes_theory_softmax.json`` times 0.88, 0.97 and 1.06, where route A lay at the two
configurations run before); where ``F_copy - F_pool`` does not change sign over them, one more
``P`` a factor 1.12 beyond the end it points to, up to three times, while both basins exist at
that end. Where one basin is all there is at every ``P``, the record's ``P_mid`` is the crossover:
where the profile's mean ``a_G`` passes midway between its values at the ends. The record of the
same (preset, L, V, seed) is extended: its ``P`` are kept, not recomputed, when the sample and
the ``beta`` grid are the same, and it is saved after every computed batch. Minutes per seed at
L <= 15 on this CPU; the cost grows like ``(L + 2V + V^2) L^2 (L + V)`` per ``P`` (the Hessian's
orbit columns over the sample).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from copyhead_jax import sources
from copyhead_jax.compare import root
from copyhead_jax.storage import write_json
from copyhead_jax.theory import TheoryParams, bayes
from copyhead_jax.transition import cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "reports" / "results"
FILE = "bayes_theory_route_a.json"
#: the logit scales of the profile (the copy ansatz's beta; a_G from pooling to copying at L <= 15)
BETAS = np.linspace(-0.5, 6.5, 22)
BETA_STEP = float(BETAS[1] - BETAS[0])


def betas_from(lo: float) -> np.ndarray:
    """The profile's grid from ``lo`` to ``BETAS[-1]`` at ``BETAS``'s step (``lo = -0.5``:
    ``BETAS``)."""
    return BETAS[-1] - BETA_STEP * np.arange(round((BETAS[-1] - lo) / BETA_STEP), -1, -1)


#: independent sequences per sample (each with its L cyclic shifts)
N_BASE = 64
#: the first P around route B's point, and the factor of each widening step
FACTORS, WIDEN, MAX_WIDEN = (0.88, 0.97, 1.06), 1.12, 3


def route_b_point(results: Path, preset: str, L: int, V: int) -> float:
    """Route B's ``P*_aG`` of the configuration (``bayes_theory_softmax.json``)."""
    for r in json.loads((results / "bayes_theory_softmax.json").read_text()):
        if (r["preset"], r["L"], r["V"]) == (preset, L, V):
            return float(r["P_aG_bayes"])
    raise ValueError(f"no route B row for {preset} L={L} V={V} in bayes_theory_softmax.json")


def one_seed(
    params: TheoryParams,
    seed: int,
    P: list[int],
    preset: str = "plain",
    known=None,
    save=None,
    betas=BETAS,
    rho: float | None = None,
) -> dict:
    """Route A at ``P``, widened (module docstring) until ``F_copy - F_pool`` changes sign.
    ``known``: an earlier record of the same configuration, seed, sample and beta grid, whose
    ``P`` are taken from it, not recomputed; ``save(record)`` after every computed batch (a
    killed run keeps its finished ``P``); ``rho``: Markov tokens (module docstring)."""
    key = jax.random.PRNGKey(seed)
    if rho is None:
        tokens = bayes.ek_sample(key, params, N_BASE)
    else:
        tokens = sources.sample_sticky(key, n=N_BASE * params.L, L=params.L, V=params.V, rho=rho)
    done = {}  # P -> (dF, basin row)
    wall = cpu = 0.0
    if (
        known
        and known.get("n_sequences") == int(tokens.shape[0])
        and len(known.get("betas", [])) == len(betas)
        and np.allclose(known["betas"], betas)
    ):
        done = {p: (d, r) for p, d, r in zip(known["P"], known["dF"], known["basins"])}
        wall, cpu = known.get("wall", 0.0), known.get("cpu_seconds", 0.0)
    t0, c0 = time.perf_counter(), cpu_seconds()
    P = sorted(P)

    def record() -> dict:
        Ps = sorted(done)
        dF = [done[p][0] for p in Ps]
        mean = [done[p][1].get("mean_aG") for p in Ps]
        Pm = np.asarray([p for p, m in zip(Ps, mean) if m is not None])  # older records: none
        m = np.asarray([m for m in mean if m is not None])
        mid = None
        if len(Pm) >= 2 and all(d is None for d in dF):
            a_mid = 0.5 * (m[0] + m[-1])  # one basin everywhere: the crossover midway
            mid = root.crossing(Pm, a_mid - m).P_star
        ok, why = bayes.trusted([done[p][1] for p in Ps])
        return {
            "P": Ps,
            "trusted": ok,
            **({} if ok else {"untrusted": why}),
            "dF": dF,
            "basins": [done[p][1] for p in Ps],
            "P_star": bayes.first_order_root(Ps, dF),
            "mean_aG": mean,
            "P_mid": mid,
            "preset": preset,
            "L": params.L,
            "V": params.V,
            "seed": seed,
            **({} if rho is None else {"source": "markov", "rho": rho}),
            "n_sequences": int(tokens.shape[0]),
            "betas": [float(b) for b in betas],
            "wall": wall + time.perf_counter() - t0,
            "cpu_seconds": cpu + cpu_seconds() - c0,
        }

    for _ in range(MAX_WIDEN + 1):
        todo = [p for p in P if float(p) not in done]
        if todo:
            r = bayes.one_loop_transition(params, todo, betas, tokens, shift_closed=rho is None)
            done.update({float(p): (d, b) for p, d, b in zip(todo, r["dF"], r["basins"])})
        rec = record()
        if todo and save is not None:
            save(rec)
        dF = [done[float(p)][0] for p in P if done[float(p)][0] is not None]
        if rec["P_star"] is not None or not dF or min(dF) < 0 < max(dF):
            break
        # one sign over every P: the root lies beyond the copy-costlier (> 0) or cheaper end,
        # unless one basin is gone at that end already (no crossing of the two there)
        end = P[-1] if min(dF) > 0 else P[0]
        if done[float(end)][0] is None:
            break
        P = P + [round(P[-1] * WIDEN)] if min(dF) > 0 else [max(2, round(P[0] / WIDEN))] + P
    return rec


def _records(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.exists() else []


def _key(rec: dict) -> tuple:
    """What a record is of: (preset, L, V, seed, Markov rho or None); a rerun replaces its own
    record only."""
    return rec["preset"], rec["L"], rec["V"], rec["seed"], rec.get("rho")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments route-a", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "--preset",
        default="plain",
        choices=("plain", "paper", "paper-chi-lik"),
        help="the reading (default plain; route B's point of that preset places the first P)",
    )
    ap.add_argument("--L", type=int, required=True)
    ap.add_argument("--V", type=int, required=True)
    ap.add_argument("--seeds", default="0,1", help="token samples (default 0,1)")
    ap.add_argument("--P", default=None, help="first P values (default around route B's point)")
    ap.add_argument(
        "--beta-lo",
        type=float,
        default=float(BETAS[0]),
        help="the profile's lowest beta (default -0.5; lower where the pooling basin lies below)",
    )
    ap.add_argument(
        "--rho",
        type=float,
        default=None,
        help="Markov tokens of this stickiness (module docstring; needs --P)",
    )
    ap.add_argument("--results", type=Path, default=RESULTS, help=f"folder of {FILE}")
    args = ap.parse_args(argv)
    if args.rho is not None and not args.P:
        ap.error("--rho needs --P (route B has no Markov point to place them)")
    params = TheoryParams.preset(args.preset, L=args.L, V=args.V)
    if args.P:
        P = sorted({int(p) for p in args.P.split(",")})
    else:
        b = route_b_point(args.results, args.preset, args.L, args.V)
        P = sorted({round(b * f) for f in FACTORS})
    path = args.results / FILE
    found = True
    for seed in (int(s) for s in args.seeds.split(",")):
        key = (args.preset, args.L, args.V, seed, args.rho)

        def save(rec, key=key):
            write_json(path, [o for o in _records(path) if _key(o) != key] + [rec])

        known = next((o for o in _records(path) if _key(o) == key), None)
        rec = one_seed(
            params,
            seed,
            P,
            args.preset,
            known=known,
            save=save,
            betas=betas_from(args.beta_lo),
            rho=args.rho,
        )
        save(rec)
        star = "none" if rec["P_star"] is None else f"{rec['P_star']:.2f}"
        dF = ", ".join("-" if d is None else f"{d:+.1f}" for d in rec["dF"])
        found = found and rec["P_star"] is not None
        print(
            f"route A {args.preset} L={args.L} V={args.V}"
            + ("" if args.rho is None else f" Markov rho={args.rho:g}")
            + f" seed {seed}: P* {star} (P {rec['P']}; "
            f"F_copy - F_pool {dF}; mean a_G "
            f"{', '.join('-' if m is None else f'{m:.2f}' for m in rec['mean_aG'])}"
            + ("" if rec["P_mid"] is None else f"; one basin: crossover at {rec['P_mid']:.1f}")
            + ("" if rec["trusted"] else f"; NOT TRUSTED: {rec['untrusted']}")
            + f"); {rec['cpu_seconds']:.0f} CPU-s, {rec['wall']:.0f} s",
            flush=True,
        )
    return 0 if found else 1


if __name__ == "__main__":
    raise SystemExit(main())
