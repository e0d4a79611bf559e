r"""Route B's basins and the Bayesian $P^*_{a_G}$ (docs/theory.md §13.4).

For each $P$ the local minima of $\mathcal F_q(\beta,\rho;P)$ (:func:`.variational.free_energy`,
$x=(\beta,\log\rho)\in\mathbb R^6$) are found from a pooling start ($\beta=0$, prior spread) and
a copy start ($\beta=\log(L-1)+2$, half the prior spread). Each minimum is a posterior basin;
its $\mathcal F_q$ estimates $-\log$ of the basin's mass up to a constant common to both at that
$P$. The **Bayesian** $P^*_{a_G}$ is where the two basins' $\mathcal F_q$ are equal (first
order); with one basin at every $P$ it is a crossover, placed at the steepest rise of the
basin's $a_G$ in $\log P$.

Cost: every evaluation of $\mathcal F_q$ averages a softmax over ``n_rows`` rows, so the
number of evaluations sets the time. Each minimum is an L-BFGS-B run on the compiled value and
gradient (the full 6 x 6 Hessian costs ~15 gradients); the two branches are followed in $P$
with warm starts (a few evaluations each instead of ~40 from cold), and the root of
$\Delta F(\log P)$ is found by Newton steps whose slope, $d\mathcal F/d\log P$ at a minimum,
comes free with the gradient (envelope theorem). Everything runs in float64 on one set of
common random numbers per replica (:func:`make_draws`), so every number is deterministic given
``seed``; independent seeds measure the Monte-Carlo error.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize as so

from ..params import TheoryParams
from ..points import transition_points
from .rows import RowDraws, row_draws
from .variational import free_energy_terms

#: Copy start: beta = log(L-1) + COPY_START_OFFSET, every spread 1/2.
COPY_START_OFFSET = 2.0
#: Box of the search: beta, then the five log variance ratios.
BOUNDS = [(-3.0, 20.0)] + [(-12.0, 3.0)] * 5
#: Default rows of common random numbers (replicas measure their Monte-Carlo error).
DEFAULT_ROWS = 1 << 14
#: Two minima are distinct basins when their a_G differ by more than this fraction of sqrt(L).
DISTINCT_FRACTION = 0.05


@dataclasses.dataclass(frozen=True)
class VariationalSettings:
    """Monte-Carlo and solver settings of route B (``n_rows`` rows of common random numbers)."""

    n_rows: int = DEFAULT_ROWS
    seed: int = 0
    control_variate: bool = True


DEFAULT_SETTINGS = VariationalSettings()


def rows_bytes(L: int, V: int, n_rows: int) -> int:
    """Peak bytes of one route-B transition (replicas run one after the other): its draws and
    the compiled value and gradient of F_q over them, ``8 (L V + 6 (L + V))`` per row (XLA's
    buffer assignment at 4,096 and 16,384 rows holds 816 bytes per row at (L, V) = (8, 5) and
    2,264 at (16, 10): the one-hot tokens, then a few rows of L and V; the formula lies 12-16%
    above), for the full rows and the coarse search's ``n_rows / COARSE`` beside them."""
    per_row = 8 * (L * V + 6 * (L + V))
    return per_row * (int(n_rows) + max(int(n_rows) // COARSE, 256))


def make_draws(params: TheoryParams, settings: VariationalSettings) -> RowDraws:
    """The common random numbers of one replica (float64)."""
    with jax.enable_x64(True):
        key = jax.random.PRNGKey(settings.seed)
        return row_draws(key, L=params.L, V=params.V, n=settings.n_rows, dtype=jnp.float64)


def starts(L: int) -> np.ndarray:
    """``[2, 6]``: the pooling and the copy start."""
    b_copy = math.log(L - 1.0) + COPY_START_OFFSET
    return np.array([[0.0] * 6, [b_copy] + [math.log(0.5)] * 5])


@functools.lru_cache(maxsize=16)
def free_energy_program(params: TheoryParams, cv: bool):
    """Jitted ``(x, P, draws) -> (F, dF/dx, dF/dlog P, terms)`` (one compile per parameter set
    and row count)."""

    def F(x, P, draws):
        t = free_energy_terms(x[0], x[1:], P, params, draws, cv)
        return t.F, t

    def run(x, P, draws):
        (v, t), (gx, gP) = jax.value_and_grad(F, argnums=(0, 1), has_aux=True)(x, P, draws)
        return v, gx, P * gP, {k: getattr(t, k) for k in ("Q", "D", "R", "KL", "aG")}

    return jax.jit(run)


def minimise(x0, P: float, params: TheoryParams, draws: RowDraws, *, cv: bool = True) -> dict:
    r"""A local minimum of $\mathcal F_q$ from ``x0`` (L-BFGS-B on the compiled value and
    gradient, float64): ``x``, ``F``, ``aG``, the terms, ``dF_dlogP`` (envelope theorem: the
    minimiser's shift does not count), ``ok`` (converged strictly inside the box), ``n_eval``."""
    run = free_energy_program(params, cv)
    with jax.enable_x64(True):
        Pj = jnp.asarray(P, jnp.float64)

        def fun(x):
            v, g, _, _ = run(jnp.asarray(x), Pj, draws)
            return float(v), np.asarray(g, dtype=np.float64)

        r = so.minimize(
            fun,
            np.asarray(x0, float),
            jac=True,
            method="L-BFGS-B",
            bounds=BOUNDS,
            options=dict(maxiter=400, ftol=1e-13, gtol=1e-7),
        )
        v, _, dlogP, terms = run(jnp.asarray(r.x), Pj, draws)
    lo, hi = np.array(BOUNDS).T
    inside = bool(np.all((r.x > lo + 1e-6) & (r.x < hi - 1e-6)))
    out = {"F": float(v), **{k: float(u) for k, u in terms.items()}}
    return {
        "x": r.x,
        **out,
        "dF_dlogP": float(dlogP),
        "ok": bool(r.success) and inside,
        "n_eval": int(r.nfev),
    }


def _pair(P: float, pool: dict, copy: dict, L: int) -> dict:
    """Both basins at one P, ordered by a_G; ``both``: distinct and converged; ``dF``."""
    lo, hi = sorted((pool, copy), key=lambda m: m["aG"])
    distinct = abs(hi["aG"] - lo["aG"]) > DISTINCT_FRACTION * math.sqrt(L)
    both = bool(distinct and lo["ok"] and hi["ok"])
    return {
        "P": float(P),
        "pool": lo,
        "copy": hi,
        "both": both,
        "dF": hi["F"] - lo["F"] if both else None,
        "lower_aG": lo["aG"] if lo["F"] <= hi["F"] else hi["aG"],
    }


def basins(P: float, params: TheoryParams, draws: RowDraws, *, cv: bool = True, x0=None) -> dict:
    """Both basins at ``P`` from the pooling and copy starts (or ``x0[2, 6]``): ``pool`` and
    ``copy`` minima (ordered by a_G), ``both``, ``dF = F_copy - F_pool`` where both exist."""
    x0 = starts(params.L) if x0 is None else np.asarray(x0, float)
    m = [minimise(z, P, params, draws, cv=cv) for z in x0]
    return _pair(P, m[0], m[1], params.L)


def ek_points(params: TheoryParams) -> dict[str, Any]:
    """The EK MAP and EK posterior (readout Occam term) points of docs/theory.md §5 (their
    spinodals are not needed here and not computed)."""
    m = transition_points(params, "softmax", "map", spinodals=False)
    p = transition_points(params, "softmax", "post", spinodals=False)
    return {
        "map": m["P_aG"] or m["P_aG_crossover"],
        "post": p["P_aG"] or p["P_aG_crossover"],
        "map_first_order": m["first_order"],
        "post_first_order": p["first_order"],
    }


def _refine_root(lo: dict, hi: dict, params, draws, cv, n_refine: int, probes: list):
    """Root of dF(log P) between two probes where both basins exist (dF(lo) > 0 > dF(hi)):
    Newton steps in log P with the envelope derivative, safeguarded by the bracket (regula falsi
    when a step leaves it), each probe warm-started from the nearer end's two minima."""
    t_lo, t_hi = math.log(lo["P"]), math.log(hi["P"])
    d_lo, d_hi = lo["dF"], hi["dF"]
    s = lo if abs(d_lo) < abs(d_hi) else hi
    for _ in range(n_refine):
        slope = s["copy"]["dF_dlogP"] - s["pool"]["dF_dlogP"]
        t_s = math.log(s["P"])
        t = t_s - s["dF"] / slope if slope != 0 else 0.5 * (t_lo + t_hi)
        if not t_lo < t < t_hi:
            t = t_lo + (t_hi - t_lo) * d_lo / (d_lo - d_hi)
        x0 = np.stack([s["pool"]["x"], s["copy"]["x"]])
        s = basins(math.exp(t), params, draws, cv=cv, x0=x0)
        probes.append(s)
        if s["dF"] is None:  # lost a basin on the way: keep the regula-falsi point
            return t_lo + (t_hi - t_lo) * d_lo / (d_lo - d_hi), False
        if s["dF"] > 0:
            t_lo, d_lo = t, s["dF"]
        else:
            t_hi, d_hi = t, s["dF"]
        if abs(s["dF"]) < 1e-6:
            return t, True
    return t_lo + (t_hi - t_lo) * d_lo / (d_lo - d_hi), False


def _track(grid, x_start, params, draws, cv) -> list[dict]:
    """Follow one basin along ``grid`` (each minimum warm-started from the previous one)."""
    out, x = [], x_start
    for P in grid:
        m = minimise(x, P, params, draws, cv=cv)
        out.append(m)
        x = m["x"]
    return out


#: The bracket is located on 1/COARSE of the rows, then polished on all of them.
COARSE = 8


def transition(
    params: TheoryParams,
    settings: VariationalSettings = DEFAULT_SETTINGS,
    *,
    P_range: tuple[float, float] | None = None,
    n_scan: int = 9,
    ek: dict | None = None,
) -> dict:
    r"""Route B's Bayesian $P^*_{a_G}$ of one configuration (module docstring).

    The search of :func:`locate` runs on ``n_rows / COARSE`` rows (its own draws); a first-order
    point found there is polished on the full ``n_rows`` draws by Newton steps in $\log P$ from
    the coarse minima (the two draw sets differ by Monte-Carlo error only, ~1% in $P^*$). Should
    a polishing step lose a basin, the whole search is repeated on the full draws. Every number
    is that of the full draws; ``coarse`` holds the coarse search.
    """
    ek = ek_points(params) if ek is None else ek
    coarse_settings = dataclasses.replace(settings, n_rows=max(settings.n_rows // COARSE, 256))
    coarse = locate(
        params,
        make_draws(params, coarse_settings),
        ek=ek,
        P_range=P_range,
        n_scan=n_scan,
        cv=settings.control_variate,
    )
    draws = make_draws(params, settings)
    out = None
    if coarse["first_order"] and coarse["converged"]:
        out = _polish(coarse, params, draws, settings.control_variate)
    if out is None:
        out = locate(
            params, draws, ek=ek, P_range=P_range, n_scan=n_scan, cv=settings.control_variate
        )
        out.pop("last_probe")
        out["polished"] = False
    out["inputs"] = {**params.to_dict(), **dataclasses.asdict(settings)}
    out["coarse"] = {k: v for k, v in coarse.items() if k not in ("scan", "last_probe")}
    out["n_eval"] += coarse["n_eval"]
    out["n_not_found"] = len(out.get("not_found", []))
    return out


def _polish(coarse: dict, params, draws, cv, n_steps: int = 8) -> dict | None:
    """Newton in log P on the full draws from the coarse root's minima; None if a basin is
    lost or it does not converge."""
    s0 = coarse["last_probe"]
    x0 = np.stack([s0["pool"]["x"], s0["copy"]["x"]])
    t = math.log(coarse["P_star"])
    n_eval = 0
    for _ in range(n_steps):
        s = basins(math.exp(t), params, draws, cv=cv, x0=x0)
        n_eval += s["pool"]["n_eval"] + s["copy"]["n_eval"]
        if s["dF"] is None:
            return None
        x0 = np.stack([s["pool"]["x"], s["copy"]["x"]])
        if abs(s["dF"]) < 1e-6:
            out = {k: v for k, v in coarse.items() if k not in ("scan", "last_probe")}
            out.update(
                P_star=math.exp(t),
                converged=True,
                polished=True,
                n_eval=n_eval,
                at_root=_public(s),
                bracket=None,
            )
            return out
        slope = s["copy"]["dF_dlogP"] - s["pool"]["dF_dlogP"]
        if slope >= 0:  # the copy basin must gain on the pooling one as P grows
            return None
        t -= s["dF"] / slope
    return None


def locate(
    params: TheoryParams,
    draws: RowDraws,
    *,
    ek: dict,
    cv: bool = True,
    P_range: tuple[float, float] | None = None,
    n_scan: int = 9,
    n_bisect: int = 6,
    n_refine: int = 8,
) -> dict:
    r"""The search of :func:`transition` on one draw set.

        On ``n_scan`` log-spaced $P$ (default range: the EK posterior point times [0.8, 4]) the
        pooling basin is followed upward from the pooling start and the copy basin downward from
        the copy start, each minimum warm-started from its neighbour's (a branch that ends at its
        spinodal falls into the other basin: then only one basin exists there). Where
        $\Delta F=\mathcal F_{
    m copy}-\mathcal F_{
    m pool}$ changes sign between neighbours with
        both basins present, $\Delta F=0$ is solved by safeguarded Newton in $\log P$
        ($d\mathcal F/d\log P$ by the envelope theorem): **first order**. Where the lower basin's
        $a_G$ jumps by more than $\sqrt L/4$ without such a bracket, the jump is bisected (cold
        starts) until one appears; failing that, the jump's midpoint is reported with
        ``first_order = False`` (the switch sits at a spinodal). Without a jump the lower basin's
        $a_G$ rises smoothly: a **crossover**, at its steepest point in $\log P$.
    """
    if P_range is None:
        P_range = (0.8 * ek["post"], 4.0 * ek["post"])
    grid = np.geomspace(P_range[0], P_range[1], n_scan)
    x_pool, x_copy = starts(params.L)
    up = _track(grid, x_pool, params, draws, cv)
    down = _track(grid[::-1], x_copy, params, draws, cv)[::-1]
    scan = [_pair(P, a, b, params.L) for P, a, b in zip(grid, up, down)]
    probes = list(scan)
    aG = np.array([s["lower_aG"] for s in scan])
    out: dict[str, Any] = {
        "ek": ek,
        "P_range": [float(P_range[0]), float(P_range[1])],
        "P_star": None,
        "first_order": None,
        "P_star_crossover": None,
        "converged": None,
        "not_found": [],
        "notes": [],
    }

    def bracket_ok(lo, hi):
        return lo["both"] and hi["both"] and lo["dF"] > 0 > hi["dF"]

    pair = next(((a, b) for a, b in zip(scan[:-1], scan[1:]) if bracket_ok(a, b)), None)
    jump = np.diff(aG)
    k = int(np.argmax(jump))
    if pair is None and jump[k] > 0.25 * math.sqrt(params.L):
        lo, hi = scan[k], scan[k + 1]
        a_mid = 0.5 * (aG[k] + aG[k + 1])
        for _ in range(n_bisect):
            s = basins(math.sqrt(lo["P"] * hi["P"]), params, draws, cv=cv)
            probes.append(s)
            if s["lower_aG"] > a_mid:
                hi = s
            else:
                lo = s
            if bracket_ok(lo, hi):
                pair = (lo, hi)
                break
        if pair is None:
            out.update(
                P_star=math.sqrt(lo["P"] * hi["P"]),
                first_order=False,
                converged=False,
                bracket=[lo["P"], hi["P"]],
            )
    if pair is not None:
        t, conv = _refine_root(pair[0], pair[1], params, draws, cv, n_refine, probes)
        out.update(
            P_star=math.exp(t),
            first_order=True,
            converged=conv,
            bracket=[pair[0]["P"], pair[1]["P"]],
        )
    elif out["P_star"] is None:
        t = np.log(grid)
        slope = np.diff(aG) / np.diff(t)
        j = steepest_inside(slope)
        out.update(first_order=False, crossover_slope=float(np.max(slope)))
        if j is None:  # steepest at an end of the scan: the maximum may lie beyond it
            out["not_found"].append("P_star_crossover")
            out["notes"].append(
                f"P_star_crossover not found: a_G rises fastest in the first or "
                f"last interval of the scan {out['P_range']}"
            )
        else:
            out["P_star_crossover"] = float(np.exp(0.5 * (t[j] + t[j + 1])))
    both = sorted(s["P"] for s in probes if s["both"])
    out["coexistence_seen"] = [both[0], both[-1]] if both else None
    out["n_probes"] = len(probes)
    out["n_eval"] = sum(s["pool"]["n_eval"] + s["copy"]["n_eval"] for s in probes)
    out["scan"] = [_public(s) for s in scan]
    out["last_probe"] = probes[-1]
    return out


def steepest_inside(slope) -> int | None:
    """The interval of the largest ``slope``, or ``None`` where it is the first or the last
    one: a maximum at the scan's end is not located (it may lie beyond the scan)."""
    slope = np.asarray(slope, float)
    j = int(np.argmax(slope))
    return j if 0 < j < slope.size - 1 else None


def _public(s: dict) -> dict:
    """A probe as plain Python (JSON-ready)."""
    basin = ("x", "F", "aG", "Q", "D", "R", "KL", "ok")
    return {
        "P": s["P"],
        "both": s["both"],
        "dF": s["dF"],
        **{b: {k: np.asarray(s[b][k]).tolist() for k in basin} for b in ("pool", "copy")},
    }


def point(s: dict) -> float | None:
    """The Bayesian point of one :func:`transition` result (first order or crossover)."""
    return s["P_star"] if s["P_star"] is not None else s["P_star_crossover"]
