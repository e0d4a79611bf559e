r"""Learning coefficient and WBIC of every run of a reduced sweep (docs/theory.md §9.8).

Per run ``[P, seed]`` the centre $w^*=(W^G,\hat W^O)$ is the **lowest-U minimum found** among
the given sweeps of the same runs (the pooling- and copy-branch starts of a softmax sweep, or a
sweep with continuation in P, which already keeps its lowest-U fit): a higher minimum makes
$\hat\lambda$ negative wherever the chains find the lower one. With $nL_n=\mathcal E$ the data
energy of docs/theory.md §2 ($n=P$ sequences) and $\Phi$ the prior energy of the reduced head,
full-batch SGLD (:func:`copyhead_jax.sampling.sgld.sgld_chains`) samples
$$p(w)\propto\exp\big(-n\beta L_n(w)-\tfrac\gamma2\lVert w-w^*\rVert^2-\pi\,\Phi(w)\big)$$
three times per run, all seeds of one P in one compiled program ($n\beta$, $\gamma$, $\pi$
traced):

* ``beta1``:      $n\beta=n$, localisation $\gamma$, no prior: $\hat\lambda$ at $\beta=1$;
* ``devinterp``:  $n\beta=n/\log n$, $\gamma$, no prior: devinterp's default estimator;
* ``wbic``:       $n\beta=n/\log n$, $\gamma=0$, prior on: $\mathrm{WBIC}=\mathbb E[\mathcal E]$.

$\hat\lambda=n\beta(\mathbb E[L_n]-L_n(w^*))$; its MCSE is $n\beta\,s_L/\sqrt{\mathrm{ESS}}$.
The step per run is $\eta=\eta_{\rm frac}/(\gamma+\lambda_{\max}+\pi/\sigma_{\min}^2)$ with
$\lambda_{\max}$ the top curvature of $n\beta L_n$ at $w^*$ (power iteration): SGLD's variance
inflation in the stiffest direction is at most $1/(1-\eta_{\rm frac}/2)$. With a posterior file
of the same runs, ``posterior`` is the posterior's own $\hat\lambda_{\beta=1}=\mathbb E_{\rm
post}[\mathcal E]-\mathcal E(w^*)$ ($\gamma=0$, prior kept) from its draws.

Each draw records $L_n$ and both order parameters; every chain set reports the smallest ESS and
the largest split R-hat of the three per seed (``E_ess_reached``, ``E_rhat_reached``), the
quantities a target is judged on. **Stop when enough** (``ess_target > 0``): a chain set is drawn
in rounds of ``round_steps`` SGLD steps by the samplers' one round loop
(:func:`~copyhead_jax.sampling.rounds.sample_rounds`) until every seed with a centre meets the
target on those three, or the cap (``n_steps - burn_in`` in whole rounds); its seeds run in one
vmapped program, so they stop together and a seed that met the target early keeps its later
draws. Each round is saved beside the chain sets, and a killed run resumes after the last saved
round with the numbers of an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .._checks import check_float, check_int
from ..config import FINAL, Rounds
from ..config.samplers import check_target
from ..data import masked_mean
from ..fit import sweep_inputs
from ..models import head_class
from ..objective import Objective
from ..observables import attention_matrices, order_parameters
from ..results import PosteriorResult, SweepResult
from ..runner import Progress, fingerprint
from ..runner.eta import announce
from ..runner.memory import available_bytes, refuse_if_over
from .cost import llc_estimate
from .estimators import run_mean
from .health import target_meta
from .rounds import met, reached, sample_rounds
from .sgld import sgld_chains
from .stats import ess, mcse_mean, split_rhat

__all__ = ["LLCSettings", "RunLLC", "devinterp_sweep", "llc_runs", "lowest_u_fits"]

#: the three chain sets per run: (n beta / n as a function of n, localised, prior on)
ESTIMATORS = {
    "beta1": (lambda n: 1.0, True, False),
    "devinterp": (lambda n: 1.0 / math.log(n), True, False),
    "wbic": (lambda n: 1.0 / math.log(n), False, True),
}


@dataclasses.dataclass(frozen=True)
class LLCSettings(Rounds):
    """SGLD settings of :func:`llc_runs` (devinterp's $\\gamma=100$ by default). At
    $\\gamma=100$ the slowest localised direction relaxes in $\\sim(1+\\lambda_{\\max}/\\gamma)/
    \\eta_{\\rm frac}$ steps (<= 70 on the plain grid at P <= 8): 1,500 kept steps are >= 20 of
    them. The unlocalised WBIC chains relax on the prior's scale and may need more steps: read
    their R-hat. ``ess_target > 0``: stop when enough, in rounds of ``round_steps`` steps
    (module docstring; the fields and defaults of ``SGLDConfig``'s)."""

    ROUND_FIELD: ClassVar[str] = "round_steps"

    gamma: float = 100.0
    n_chains: int = 4
    n_steps: int = 2000
    burn_in: int = 500
    thin: int = 5
    eta_frac: float = 0.05
    power_iters: int = 30
    seed: int = 0
    ess_target: float = 0.0  # > 0: stop when ESS >= this and R-hat <= rhat_target
    rhat_target: float = FINAL.rhat_max
    round_steps: int = 500  # SGLD steps per round (a multiple of thin) when a target is set

    def __post_init__(self):
        check_float("gamma", self.gamma, lo=0.0, lo_open=False)  # 0: no localisation
        check_int("n_chains", self.n_chains, lo=1, hi=1024)
        check_int("n_steps", self.n_steps, lo=2)
        check_int("burn_in", self.burn_in, lo=0, hi=self.n_steps - 1)
        check_int("thin", self.thin, lo=1, hi=self.n_steps - self.burn_in)
        if (self.n_steps - self.burn_in) // self.thin < 4:
            got = f"({self.n_steps} - {self.burn_in}) // {self.thin}"
            raise ValueError(f"(n_steps - burn_in) // thin must be >= 4 draws per chain, got {got}")
        check_float("eta_frac", self.eta_frac, lo=0.0, hi=1.0)
        check_int("power_iters", self.power_iters, lo=1, hi=10_000)
        check_int("seed", self.seed, lo=0)
        check_target(self, "LLCSettings", "round_steps")

    @property
    def n_draws(self) -> int:
        """Draws kept per chain: ``(n_steps - burn_in) // thin`` (with a target: the cap)."""
        return (self.n_steps - self.burn_in) // self.thin


class RunLLC(NamedTuple):
    """Per run ``[P, seed]`` arrays (NaN where a run is not ok, or P < 2), plus context."""

    P: np.ndarray  # (nP,)
    d: int  # reduced parameter count: |W^G| + |W^O_hat|
    arrays: dict[str, np.ndarray]  # VALUE and VALUE_mcse for each estimator, health, w* data
    pstar: dict[str, float]  # MAP P* of the sweeps (geometric mean of the located seeds)
    attention: str
    settings: LLCSettings

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: lists of lists, NaN as None."""
        clean = lambda a: [[None if not np.isfinite(x) else float(x) for x in r] for r in a]
        return {
            "P": self.P.tolist(),
            "d": self.d,
            "d_half": self.d / 2,
            "attention": self.attention,
            "pstar": self.pstar,
            "settings": dataclasses.asdict(self.settings),
            "target": target_meta(self.settings),
            **{k: clean(np.asarray(v, float)) for k, v in self.arrays.items()},
        }


def _same_runs(sweeps: Sequence[SweepResult]) -> None:
    if not sweeps or not all(isinstance(s, SweepResult) for s in sweeps):
        raise ValueError("sweeps must be one or more SweepResult of the same runs")
    for s in sweeps:
        if s.config.model.engine != "reduced" or not s.has_params:
            raise ValueError(
                "llc needs reduced-engine sweeps with kept weights ('copyhead sweep --engine "
                f"reduced --keep-params'); got engine {s.config.model.engine!r}, weights kept: "
                f"{s.has_params}"
            )
        if s.config.train.train_embeddings:
            raise ValueError(
                "llc needs quenched embeddings (train_embeddings=False): a reduced sweep with "
                "trained embeddings holds joint-MAP fits (docs/theory.md §2d), whose centre is "
                "not a minimum of the quenched posterior that the chains sample"
            )
    base = {k: v for k, v in sweeps[0].config.to_dict().items() if k != "train"}
    for s in sweeps[1:]:
        other = {k: v for k, v in s.config.to_dict().items() if k != "train"}
        if other != base:
            bad = sorted(k for k in base if base[k] != other.get(k))
            raise ValueError(
                f"sweeps must share task, model, posterior and sweep settings (the "
                f"same runs, other starts); they differ in {bad}"
            )


def lowest_u_fits(sweeps: Sequence[SweepResult]) -> tuple[SweepResult, np.ndarray]:
    """One sweep whose every run ``[P, seed]`` is the ok fit of lowest U among ``sweeps``, and
    ``source[P, seed]``, the index of the sweep it came from (-1: no ok fit)."""
    sweeps = list(sweeps)
    _same_runs(sweeps)
    U = np.stack([np.where(s.ok, np.asarray(s["U"], float), np.inf) for s in sweeps])
    src = np.argmin(U, axis=0)
    src = np.where(np.isfinite(U.min(0)), src, -1)
    shape = U.shape[1:]
    arrays = {}
    for k, v0 in sweeps[0].arrays.items():
        vs = [s.arrays.get(k) for s in sweeps]
        if v0.shape[:2] != shape or any(v is None or v.shape != v0.shape for v in vs):
            continue
        st = np.stack(vs)
        pick = np.maximum(src, 0).reshape((1, *shape) + (1,) * (v0.ndim - 2))
        arrays[k] = np.take_along_axis(st, pick, axis=0)[0]
    arrays["finite"] = np.where(src >= 0, arrays["finite"], False)
    return sweeps[0].replace(arrays=arrays), src


def llc_bytes(cfg, st: LLCSettings, n_params: int) -> int:
    """Memory of one P's chains (the seeds vmapped): each chain's kept draws (``L_n`` and two
    order parameters, float32; with a target the cap) and its SGLD state (parameters, gradient,
    noise, proposal: 4 copies, float32), doubled for XLA's temporaries."""
    n_draws = st.n_rounds * st.round_draws  # the cap in whole rounds
    return 2 * cfg.sweep.n_seeds * st.n_chains * 4 * (len(OBSERVED) * n_draws + 4 * n_params)


def check_llc_memory(cfg, st: LLCSettings, best: SweepResult) -> int:
    """Refuse, before any work, chains whose buffers exceed the memory budget; returns the
    reduced parameter count ``|W^G| + |W^O_hat|``."""
    shapes = (best["params/W_G"].shape[2:], best["params/W_O_hat"].shape[2:])
    n_params = int(sum(np.prod(s) for s in shapes))
    n_draws = st.n_rounds * st.round_draws
    what = (
        f"llc: {cfg.sweep.n_seeds} seed(s) x {st.n_chains} chain(s) of {n_draws:,} draws "
        f"and {n_params:,} parameters"
    )
    refuse_if_over(
        llc_bytes(cfg, st, n_params),
        available_bytes(cfg),
        what,
        "use fewer --steps or --chains, or a larger --thin",
    )
    return n_params


def _sq(w) -> Array:
    return sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(w))


def _run_chains(
    key,
    ws,
    tok,
    m,
    W_E,
    b,
    nbeta_over_n,
    gamma,
    prior_on,
    carry=None,
    *,
    cfg: Any,
    st: LLCSettings,
    n_steps: int,
    burn_in: int,
):
    """One run's chains for ``n_steps`` steps after ``burn_in``, or continued from ``carry`` (the
    previous round's): ``(stats, carry)`` with ``stats = (draws [C, T, 3] of (L_n, o1, oG),
    L_n(w*), eta, lambda_max, finite [C])`` and ``carry = (SGLD state, eta, lambda_max,
    L_n(w*))``: the step and the centre's values are computed once, in the first round."""
    cls, obj = head_class(cfg.model.attention), Objective.from_config(cfg)
    n = jnp.maximum(jnp.sum(m), 1.0)
    nbeta = nbeta_over_n * n

    def head(w):
        return cls.from_config(cfg, W_E=W_E, b=b, W_G=w[0], W_O_hat=w[1])

    def Ln(w):
        return obj.likelihood_weight * jnp.sum(m * head(w).squared_errors(tok)) / n

    def observe(w):  # L_n and the order parameters: what a target is judged on
        h = head(w)
        o = order_parameters(masked_mean(attention_matrices(h, tok), m), gauge_fix=h.gauge_fix)
        return jnp.stack([Ln(w), o.c1, o.cG])

    def prior(w):
        return jnp.sum(w[0] ** 2) / (2 * obj.sigma_G**2) + jnp.sum(w[1] ** 2) / (2 * obj.sigma_O**2)

    def potential(w):
        loc = _sq(jax.tree.map(jnp.subtract, w, ws))
        return nbeta * Ln(w) + 0.5 * gamma * loc + prior_on * prior(w)

    if carry is None:
        g = jax.grad(Ln)

        def power(v, _):
            hv = jax.tree.map(lambda x: nbeta * x, jax.jvp(g, (ws,), (v,))[1])
            nrm = jnp.sqrt(_sq(hv))
            return jax.tree.map(lambda x: x / nrm, hv), nrm

        size = sum(x.size for x in jax.tree.leaves(ws))
        v0 = jax.tree.map(lambda x: jnp.ones_like(x) / math.sqrt(size), ws)
        _, nrms = jax.lax.scan(power, v0, None, length=st.power_iters)
        lam = nrms[-1]
        prior_curv = prior_on / min(obj.sigma_G, obj.sigma_O) ** 2
        eta = st.eta_frac / (gamma + lam + prior_curv)
        state, L0 = None, Ln(ws)
    else:
        state, eta, lam, L0 = carry
    res = sgld_chains(
        key,
        ws,
        potential,
        n_steps=n_steps,
        step_size=eta,
        burn_in=burn_in,
        thin=st.thin,
        n_chains=st.n_chains,
        draw_fn=observe,
        state=state,
    )
    return (res.draws, L0, eta, lam, res.finite), (res.last_state, eta, lam, L0)


@functools.partial(jax.jit, static_argnames=("cfg", "st", "n_steps", "burn_in"))
def _chains_jit(
    keys,
    ws,
    tok,
    m,
    W_E,
    b,
    nbeta_over_n,
    gamma,
    prior_on,
    carry=None,
    *,
    cfg,
    st,
    n_steps,
    burn_in,
):
    """:func:`_run_chains` over the seeds of one P (leading axis; the scalars shared)."""
    one = functools.partial(_run_chains, cfg=cfg, st=st, n_steps=n_steps, burn_in=burn_in)
    return jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0, None, None, None, 0))(
        keys, ws, tok, m, W_E, b, nbeta_over_n, gamma, prior_on, carry
    )


def chain_set(args: tuple, st: LLCSettings, ok: np.ndarray, snapshot, cfg, program=None) -> dict:
    """The host arrays of one chain set (``args`` of the chains' program without the carry;
    ``ok[seed]``: the seeds with a centre): ``draws [S, C, T, 3]``, ``finite [S, C]``,
    ``L0``, ``step``, ``lambda_max`` ``[S]`` and ``n_draws [S]``; the fixed length, or rounds
    until every seed with a centre meets ``st``'s target (module docstring). ``program``: the
    compiled chains (default; ``program(*args, [carry], cfg=, st=, n_steps=, burn_in=)``
    returns ``((draws, L_n(w*), eta, lambda_max, finite), carry)``)."""
    run = _chains_jit if program is None else program

    def host(out):
        draws, L0, eta, lam, fin = (np.asarray(x) for x in out)
        return {
            "draws": draws,
            "finite": fin.astype(bool),
            "L0": L0,
            "step": eta,
            "lambda_max": lam,
        }

    if not st.ess_target:
        got = host(run(*args, cfg=cfg, st=st, n_steps=st.n_steps, burn_in=st.burn_in)[0])
        return {**got, "n_draws": np.full(len(ok), st.n_draws, np.int64)}

    def start():
        return run(
            *args, cfg=cfg, st=st, burn_in=st.burn_in, n_steps=st.burn_in + st.round_draws * st.thin
        )

    def more(carry, _first_draw):
        return run(*args, carry, cfg=cfg, st=st, burn_in=0, n_steps=st.round_draws * st.thin)

    def done(a) -> bool:
        fin = _finite(a["draws"], a["finite"])
        return bool((met(*reached(a["draws"], fin, OBSERVED), fin, st) | ~ok).all())

    # the carry's structure reads a saved round back (traced only where rounds are saved)
    structure = None if snapshot is None else jax.tree.structure(jax.eval_shape(start)[1])
    return sample_rounds(st, start, more, host, structure, snapshot, done=done)


#: the columns of a chain set's draws: L_n and the two order parameters, all judged by a target
OBSERVED = (0, 1, 2)


def _finite(draws: np.ndarray, fin: np.ndarray) -> np.ndarray:
    """Chains finite in every step and every recorded draw (NaN padding past a chain set's own
    draws does not count: there is none within one chain set)."""
    return fin & np.isfinite(draws).all(axis=(-2, -1))


#: what one chain set (one P, one estimator) keeps per seed
CHUNK_FIELDS = (
    "value",
    "mcse",
    "rhat",
    "ess",
    "eta",
    "lambda_max",
    "ess_reached",
    "rhat_reached",
    "n_draws",
    "target_met",
    "finite",
    "E_star",
)


def _fingerprint(cfg, st: LLCSettings, estimators: list[str], key, best: SweepResult) -> str:
    """What determines every chain set: the runs' config, the settings, the estimators, the
    chains' key and the centres w* (their weights, U and ok flags)."""
    weights = ("params/W_G", "params/W_O_hat", "params/W_E", "params/b", "U")
    return fingerprint(
        [cfg.to_dict(), dataclasses.asdict(st), estimators],
        np.asarray(jax.random.key_data(key)).tobytes(),
        *(np.ascontiguousarray(best[k]).tobytes() for k in weights),
        np.asarray(best.ok).tobytes(),
    )


def _summaries(draws: Float[np.ndarray, "S C T"], L0, fin: Bool[np.ndarray, "S C"], nbeta):
    out = {k: np.full(len(L0), np.nan) for k in ("value", "mcse", "rhat", "ess", "mean")}
    for j in range(len(L0)):
        ok = draws[j][fin[j]]
        if len(ok) < 1 or ok.shape[1] < 4:
            continue
        out["mean"][j] = ok.mean()
        out["value"][j] = nbeta * (ok.mean() - L0[j])
        out["mcse"][j] = nbeta * float(mcse_mean(ok))
        out["ess"][j] = float(ess(ok))
        out["rhat"][j] = float(split_rhat(ok))
    return out


def _pstar(sweeps: Sequence[SweepResult], best: SweepResult) -> dict[str, float]:
    """MAP P* markers: linear onset and crossover of ``best``; for a two-branch head (softmax)
    the U crossing of the pooling- and copy-branch sweeps where both are given (§5)."""
    from ..compare.pstar import linear_points, softmax_points

    if not head_class(best.config.model.attention).two_branches:
        found = linear_points(best) if len(best.P) >= 3 else {}
    else:
        by = {s.config.train.init_attention: s for s in sweeps}
        found = softmax_points(by["zero"], by["copy"]) if {"zero", "copy"} <= set(by) else {}
    out = {}
    for name, per in found.items():
        xs = [x.P_star for x in per if x.bracketed and x.P_star]
        if xs:
            out[name] = float(np.exp(np.mean(np.log(xs))))
    return out


def llc_runs(
    sweeps: SweepResult | Sequence[SweepResult],
    *,
    posterior: PosteriorResult | None = None,
    settings: LLCSettings | None = None,
    estimators: Sequence[str] = tuple(ESTIMATORS),
    key: jax.Array | None = None,
    progress: bool = False,
    ckpt_dir: str | Path | None = None,
) -> RunLLC:
    r"""$\hat\lambda$ at $\beta=1$ and at devinterp's $\beta=1/\log n$ (localisation $\gamma$),
    WBIC, and (with ``posterior``) the posterior's own $\hat\lambda_{\beta=1}$, per run, each
    with its MCSE and chain health, centred at the lowest-U fit of ``sweeps`` (module doc).
    ``estimators``: a subset of ``ESTIMATORS`` to run (the others stay NaN); ``key``: the
    chains' key (default ``jax.random.key(settings.seed)``); ``ckpt_dir``: a folder where each
    finished chain set (one P, one estimator, every seed) is kept (``runner.run_chunked``), so
    that an interrupted call resumes there, with the numbers of an uninterrupted one."""
    sweeps = [sweeps] if isinstance(sweeps, SweepResult) else list(sweeps)
    st = LLCSettings() if settings is None else settings
    if not isinstance(st, LLCSettings):
        raise ValueError(f"settings must be an LLCSettings, got {type(st).__name__}")
    if isinstance(estimators, str) or not set(estimators) <= set(ESTIMATORS) or not estimators:
        raise ValueError(
            f"estimators must be a non-empty subset of {tuple(ESTIMATORS)}, got {estimators!r}"
        )
    run = {e: ESTIMATORS[e] for e in ESTIMATORS if e in estimators}
    best, src = lowest_u_fits(sweeps)
    cfg = best.config
    if posterior is not None:
        if not isinstance(posterior, PosteriorResult):
            raise ValueError(f"posterior must be a PosteriorResult, got {type(posterior).__name__}")
        a = {k: v for k, v in posterior.config.to_dict().items() if k != "train"}
        b = {k: v for k, v in cfg.to_dict().items() if k != "train"}
        if a != b:
            raise ValueError(
                "posterior must sample the runs of the sweeps (same task, model, "
                "posterior and sweep settings)"
            )
    nP, nS = len(cfg.sweep.P), cfg.sweep.n_seeds
    d = check_llc_memory(cfg, st, best)
    inp = sweep_inputs(cfg, None)
    train, mask = np.asarray(inp.train), np.asarray(inp.mask)
    names = ["source", "U_star", "E_star"]
    for e in ESTIMATORS:
        names += [
            e,
            f"{e}_mcse",
            f"{e}_rhat",
            f"{e}_ess",
            f"{e}_eta",
            f"{e}_lambda_max",
            f"{e}_ess_reached",
            f"{e}_rhat_reached",
            f"{e}_n_draws",
            f"{e}_target_met",
            f"{e}_finite",
        ]
    out = {k: np.full((nP, nS), np.nan) for k in names}
    out["source"], out["U_star"] = src.astype(float), np.where(src >= 0, best["U"], np.nan)
    ok = best.ok
    key = jax.random.key(st.seed) if key is None else key
    sets = [(i, e) for i in range(nP) for e in run]  # one chain set per (P, estimator)
    if progress:  # what it will cost, before any work (one line on stderr under the command)
        announce(lambda: llc_estimate(cfg, len(run), st), __name__)
    bar = Progress(
        len(sets),
        f"llc {cfg.model.attention} ({nS} seeds per P)",
        show=progress,
        n_chunks=len(sets),
        unit="chain set",
    )

    def compute(idx, snapshot) -> dict[str, np.ndarray]:
        """The chain set ``sets[idx[0]]``: its per-seed estimate, MCSE, health, step, curvature,
        reached ESS and R-hat, draws and ``n L_n(w*)``, each ``[1, nS]`` (NaN at P < 2: beta =
        1 / log n needs n >= 2); ``snapshot``: where its rounds are saved."""
        i, e = sets[int(idx[0])]
        P = int(cfg.sweep.P[i])
        row = {k: np.full((1, nS), np.nan) for k in CHUNK_FIELDS}
        if P < 2:
            return row
        frac, localised, prior_on = run[e]
        rows = slice(i * nS, (i + 1) * nS)
        tok = jnp.asarray(train[rows][:, :P])
        m = jnp.asarray(mask[rows][:, :P], jnp.float32)
        ws = (jnp.asarray(best["params/W_G"][i]), jnp.asarray(best["params/W_O_hat"][i]))
        W_E, b = jnp.asarray(best["params/W_E"][i]), jnp.asarray(best["params/b"][i])
        keys = jax.random.split(
            jax.random.fold_in(jax.random.fold_in(key, P), list(ESTIMATORS).index(e)), nS
        )
        args = (keys, ws, tok, m, W_E, b, frac(P), st.gamma if localised else 0.0, float(prior_on))
        got = chain_set(args, st, ok[i], snapshot, cfg)
        draws = np.asarray(got["draws"], np.float64)
        L0 = np.asarray(got["L0"], np.float64)
        fin = _finite(draws, got["finite"]) & ok[i][:, None]
        sm = _summaries(draws[..., 0], L0, fin, frac(P) * P)
        e_min, r_max = reached(draws, fin, OBSERVED)
        row.update(
            value=sm["value"],
            mcse=sm["mcse"],
            rhat=sm["rhat"],
            ess=sm["ess"],
            eta=got["step"],
            lambda_max=got["lambda_max"],
            ess_reached=e_min,
            rhat_reached=r_max,
            n_draws=got["n_draws"],
            finite=fin.mean(-1),
            E_star=np.where(ok[i], P * L0, np.nan),
        )
        if st.ess_target:
            row["target_met"] = met(e_min, r_max, fin, st)
        if e == "wbic":  # E_beta0[n L_n] = P * mean L_n and its MCSE, not a difference
            row.update(value=P * sm["mean"], mcse=sm["mcse"] / frac(P))
        return {k: np.asarray(v, np.float64).reshape(1, nS) for k, v in row.items()}

    fp = _fingerprint(cfg, st, list(run), key, best)
    done = bar.chunks(
        n_runs=len(sets),
        chunk=1,
        compute=compute,
        fingerprint=fp,
        ckpt_dir=None if ckpt_dir is None else Path(ckpt_dir),
        snapshots=True,
    )
    bar.close()
    for j, (i, e) in enumerate(sets):  # the chain sets' rows into the [P, seed] arrays
        out["E_star"][i] = done["E_star"][j]  # n L_n(w*), the same for every estimator
        for k in CHUNK_FIELDS[:-1]:
            out[e if k == "value" else f"{e}_{k}"][i] = done[k][j]
    if not st.ess_target:  # met or not: only a run with a target says
        for e in ESTIMATORS:
            del out[f"{e}_target_met"]
    if posterior is not None:
        w = Objective.from_config(cfg).likelihood_weight
        mean, se, _ = run_mean(posterior, "train_loss")
        scale = w * np.asarray(cfg.sweep.P, float)[:, None]
        out["posterior"] = np.where(ok, scale * (mean - best["train_loss"]), np.nan)
        out["posterior_mcse"] = np.where(ok, scale * se, np.nan)
    return RunLLC(np.asarray(cfg.sweep.P), d, out, _pstar(sweeps, best), cfg.model.attention, st)


def devinterp_sweep(res: SweepResult, key: jax.Array, settings: LLCSettings) -> dict:
    r"""devinterp's default $\hat\lambda$ ($n\beta=n/\log n$, localisation $\gamma$, no prior)
    of every run of a kept-weights reduced sweep ``res``, centred at its own fit: :func:`llc_runs`
    with that estimator alone, as arrays ``[P, seed]`` named ``value``, ``mcse``, ``rhat``,
    ``ess``, ``eta``, ``lambda_max``, ``finite_frac`` and ``nbeta`` (NaN at P < 2)."""
    a = llc_runs(res, settings=settings, estimators=("devinterp",), key=key).arrays
    P = np.asarray(res.config.sweep.P, float)
    with np.errstate(all="ignore"):
        nbeta = np.where(P > 1, P / np.log(np.maximum(P, 2)), np.nan)
    out = {
        k: a["devinterp" + s]
        for k, s in (
            ("value", ""),
            ("mcse", "_mcse"),
            ("rhat", "_rhat"),
            ("ess", "_ess"),
            ("eta", "_eta"),
            ("lambda_max", "_lambda_max"),
            ("finite_frac", "_finite"),
        )
    }
    return out | {"nbeta": np.broadcast_to(nbeta[:, None], a["devinterp_mcse"].shape).copy()}
