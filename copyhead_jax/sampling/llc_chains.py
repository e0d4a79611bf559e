r"""One chain set of ``copyhead llc`` (:func:`~.llc_runs.llc_runs`): one P, one estimator, the
SGLD chains of every seed in one compiled program, and the per-seed row it gives.

With $nL_n=\mathcal E$ the data energy of docs/theory.md §2 ($n=P$ sequences) and $\Phi$ the
prior energy of the reduced head, full-batch SGLD (:func:`copyhead_jax.sampling.sgld.sgld_chains`)
samples, about the centre $w^*$ of each run,
$$p(w)\propto\exp\big(-n\beta L_n(w)-\tfrac\gamma2\lVert w-w^*\rVert^2-\pi\,\Phi(w)\big)$$
three times per run (:data:`ESTIMATORS`), all seeds of one P in one compiled program ($n\beta$,
$\gamma$, $\pi$ traced):

* ``beta1``:      $n\beta=n$, localisation $\gamma$, no prior: $\hat\lambda$ at $\beta=1$;
* ``devinterp``:  $n\beta=n/\log n$, $\gamma$, no prior: devinterp's default estimator;
* ``wbic``:       $n\beta=n/\log n$, $\gamma=0$, prior on: $\mathrm{WBIC}=\mathbb E[\mathcal E]$.

$\hat\lambda=n\beta(\mathbb E[L_n]-L_n(w^*))$; its MCSE is $n\beta\,s_L/\sqrt{\mathrm{ESS}}$.
The step per run is $\eta=\eta_{\rm frac}/(\gamma+\lambda_{\max}+\pi/\sigma_{\min}^2)$ with
$\lambda_{\max}$ the top curvature of $n\beta L_n$ at $w^*$ (power iteration): SGLD's variance
inflation in the stiffest direction is at most $1/(1-\eta_{\rm frac}/2)$.

Each draw records $L_n$ and both order parameters; every chain set reports the smallest ESS and
the largest split R-hat of the three per seed (``E_ess_reached``, ``E_rhat_reached``), the
quantities a target is judged on. **Stop when enough** (``ess_target > 0``): a chain set is drawn
in rounds of ``round_steps`` SGLD steps by the samplers' one round loop
(:func:`~copyhead_jax.sampling.rounds.sample_rounds`) until every seed with a centre meets the
target on those three, or the cap (``n_steps - burn_in`` in whole rounds); its seeds run in one
vmapped program, so they stop together and a seed that met the target early keeps its later
draws. Each round is saved in the chain set's snapshot file, and a killed run resumes after the
last saved round with the numbers of an uninterrupted one.

:func:`chain_set_row` is a function of its inputs alone (the config, the settings, the seeds'
keys, rows and centres): it builds its compiled program from the config wherever it runs.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .._checks import check_float, check_int
from ..config import FINAL, Rounds
from ..config.samplers import check_target
from ..data import masked_mean
from ..models import head_class
from ..objective import Objective
from ..observables import attention_matrices, order_parameters
from ..results import SweepResult
from ..runner.memory import available_bytes, refuse_if_over
from .rounds import met, reached, sample_rounds
from .sgld import sgld_chains
from .stats import ess, mcse_mean, split_rhat

__all__ = ["CHUNK_FIELDS", "ESTIMATORS", "LLCSettings", "chain_set", "chain_set_row"]

#: the three chain sets per run: (n beta / n as a function of n, localised, prior on)
ESTIMATORS = {
    "beta1": (lambda n: 1.0, True, False),
    "devinterp": (lambda n: 1.0 / math.log(n), True, False),
    "wbic": (lambda n: 1.0 / math.log(n), False, True),
}


@dataclasses.dataclass(frozen=True)
class LLCSettings(Rounds):
    """SGLD settings of :func:`~.llc_runs.llc_runs` (devinterp's $\\gamma=100$ by default). At
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


def chain_set_row(
    cfg,
    st: LLCSettings,
    estimator: str,
    P: int,
    keys: jax.Array,
    tok,
    mask,
    centre: tuple,
    ok: np.ndarray,
    snapshot=None,
) -> dict[str, np.ndarray]:
    """The row of one chain set (P, ``estimator``) for its ``S`` seeds: the per-seed estimate,
    MCSE, health, step, curvature, reached ESS and R-hat, draws and ``n L_n(w*)``, each
    ``[1, S]`` (NaN at P < 2: beta = 1 / log n needs n >= 2). ``keys[S]``: the seeds' chain
    keys; ``tok[S, P, L]``, ``mask[S, P]``: their rows; ``centre = (W_G, W_O_hat, W_E, b)``,
    each with a leading seed axis; ``ok[S]``: the seeds with a centre; ``snapshot``: where its
    rounds are saved (:func:`chain_set`)."""
    ok = np.asarray(ok, bool)
    nS = len(ok)
    row = {k: np.full((1, nS), np.nan) for k in CHUNK_FIELDS}
    if P < 2:
        return row
    frac, localised, prior_on = ESTIMATORS[estimator]
    W_G, W_O_hat, W_E, b = (jnp.asarray(x) for x in centre)
    tok, m = jnp.asarray(tok), jnp.asarray(mask, jnp.float32)
    args = (
        keys,
        (W_G, W_O_hat),
        tok,
        m,
        W_E,
        b,
        frac(P),
        st.gamma if localised else 0.0,
        float(prior_on),
    )
    got = chain_set(args, st, ok, snapshot, cfg)
    draws = np.asarray(got["draws"], np.float64)
    L0 = np.asarray(got["L0"], np.float64)
    fin = _finite(draws, got["finite"]) & ok[:, None]
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
        E_star=np.where(ok, P * L0, np.nan),
    )
    if st.ess_target:
        row["target_met"] = met(e_min, r_max, fin, st)
    if estimator == "wbic":  # E_beta0[n L_n] = P * mean L_n and its MCSE, not a difference
        row.update(value=P * sm["mean"], mcse=sm["mcse"] / frac(P))
    return {k: np.asarray(v, np.float64).reshape(1, nS) for k, v in row.items()}
