r"""Posterior of a reduced sweep (docs/theory.md §2c): SGLD in whitened coordinates, and NUTS.

With frozen embeddings the posterior of $\theta=(W^G,\hat W^O)$ of a reduced run has about a
thousand dimensions whose curvatures span several decades (data-pinned logit directions against
prior-only ones), so plain SGLD either diverges or never moves. A **constant**
preconditioner is allowed (docs/theory.md §2): with $H$ the Hessian of $U$ at the fitted point,
$H=V\Lambda V^\top$, $\Lambda_c=\max(\Lambda,\lambda_{\rm floor})$ and $C=V\Lambda_c^{-1/2}$, the
chain runs on $w$ with $\theta=\theta^*+Cw$,
$$w_{t+1}=w_t-\eta\,C^\top\nabla U(\theta_t)+\sqrt{2\eta}\,\xi_t ,$$
i.e. SGLD on $\theta$ with the constant preconditioner $CC^\top=H_c^{-1}$ (drift and noise alike).
A linear change of variables has a constant Jacobian, so the stationary law is still
$e^{-U}$ up to the $O(\eta)$ discretisation bias; near a quadratic minimum the whitened target
is a standard normal, whose stationary variance under SGLD is $1/(1-\eta/2)$.
$\lambda_{\rm floor}=1/\max(\sigma_G^2,\sigma_O^2)$, the smallest prior curvature, guards
against a fit that is not a minimum (negative curvature).

:func:`nuts_reference` samples the same posterior with NumPyro's NUTS (imported lazily): the
gold standard against which SGLD's bias is measured.

**The default sampler: collapsed HMC** (:class:`CollapsedHMC`, the program of ``HMCConfig``).
Whitened SGLD fails for linear attention: its posterior has the bilinear valley
$(M,R)\to(cM,R/c)$ and its mass lies far from the fit (small default, P = 32: MAP c1 = 0.6,
posterior c1 = 8.6 +- 5.4), where a preconditioner fitted at the MAP is wrong by up to 50x per
direction. Both heads are *linear in the readout*: given $W^G$, $U$ is an exact quadratic in
$\hat W^O$, whose rows are i.i.d. Gaussian,
$\hat W^O_v\mid W^G\sim\mathcal N(\Lambda^{-1}b_v,\Lambda^{-1})$ with
$$\Lambda=2w\sum_{\alpha a}g^{\alpha a}g^{\alpha a\top}+\sigma_O^{-2}I,\qquad
b_v=2w\sum_{\alpha a}g^{\alpha a}y^{\alpha a}_v,\qquad
g^{\alpha a}=U^\top\textstyle\sum_bA^\alpha_{ab}\phi^{\alpha b}/\sqrt{\chi N}$$
($w$ the likelihood weight, $g$ the readout features:
$f^{\alpha a}_v=\hat W^O_v\cdot g^{\alpha a}$).
So $\hat W^O$ is integrated out exactly: the chain runs on $W^G$ alone with the marginal
$$U_m(W^G)=\frac{|W^G|^2}{2\sigma_G^2}-\tfrac12\sum_v b_v^\top\Lambda^{-1}b_v
+\tfrac V2\log\det(\sigma_O^2\Lambda)+w\sum|y|^2$$
($e^{-U_m}=\int e^{-U}\,d\hat W^O/(2\pi\sigma_O^2)^{VN/2}$), and each draw completes
$(W^G,\hat W^O)$ with an exact draw of $\hat W^O\mid W^G$: the pair is an exact draw of $e^{-U}$
whenever $W^G$ is one of $e^{-U_m}$. The valley is gone ($U_m$ has no scale symmetry); what stays
is a posterior whose bulk is far from the fit. Hence three phases per run, all chains at once:

1. ``burn_in`` steps of unadjusted Langevin on $U_m$ (step ``WARMUP_ETA``) in the whitening of
   $U_m$ at the fit: this only carries the chains to the typical set and is discarded;
2. the whitening is recomputed at the end point of chain 0 (a constant preconditioner again,
   from a point of the typical set, eigenvalues floored at the prior curvature);
3. ``n_iter`` iterations of HMC (:mod:`copyhead_jax.sampling.hmc`: ``LEAPFROG`` leapfrog steps
   of the adapted step times a uniform jitter in [0.8, 1.2], a diagonal mass adapted on top of
   (or, ``adapt_mass=False``, unit mass in) the whitened
   coordinates) with a Metropolis correction: exact for $e^{-U_m}$, no step-size bias.
   A draw's readout and observables come from the data's moments that the trajectory's last
   gradient computed at the draw's position (kept in the chain's state): no pass over the data
   of its own.

$U_m$, its hand-written gradient, the readout draws and the whitening of $U_m$ live in
:mod:`copyhead_jax.sampling.collapsed`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jaxtyping import Array, Float

from .._types import Mask, TokenBatch
from ..config import Config, HMCConfig
from ..fit import hessian, quenched_energy, split_weights
from ..models import AbstractHead, head_class, root_of
from ..objective import Objective
from ..results import PosteriorResult, SweepResult
from .chains import batch_chains, map_chains
from .collapsed import (
    marginal_energy,
    marginal_value_grad,
    marginal_whitening,
    observed_from_moments,
    with_WG,
)
from .health import var_U_ratio
from .hmc import hmc_chains, hmc_state_structure
from .sampler import DrawStats, Sampler, left_out, observations
from .starts import branch_arrays, start_points, start_warnings

Whitening = Float[Array, "n n"]


#: The whitening Hessian is computed on at most this many of a run's sequences (the first ones:
#: datasets are nested), its data part rescaled by P / n_used. Any constant SPD preconditioner
#: leaves the posterior unchanged; this one costs ~1,000 Hessian-vector products on <= 256
#: sequences instead of P, and its curvatures are off by ~ 1/sqrt(256) = 6% at large P.
PRECOND_SEQS = 256


def whitening(
    head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective
) -> tuple[Float[Array, " n"], Whitening]:
    r"""``(theta*, C)``: the flat fitted weights and $C=V\Lambda_c^{-1/2}$ from the dense Hessian
    at them (one Hessian-vector product per weight, on at most ``PRECOND_SEQS`` sequences; run
    in float64)."""

    theta, _ = split_weights(head)
    n = min(PRECOND_SEQS, tokens.shape[0])
    n_valid = jnp.sum(mask > 0)
    used = jnp.maximum(jnp.sum(mask[:n] > 0), 1)
    w = obj.likelihood_weight * n_valid / used
    sub = dataclasses.replace(obj, likelihood_weight=1.0)
    H = _hessian_weighted(head, tokens[:n], mask[:n], sub, w)
    lam, vec = jnp.linalg.eigh(0.5 * (H + H.T))
    floor = 1.0 / max(obj.sigma_G**2, obj.sigma_O**2)
    return theta, vec * (jnp.maximum(lam, floor) ** -0.5)[None, :]


def _hessian_weighted(head, tokens, mask, obj_unit, w):
    """Hessian of ``w * data + prior`` (``obj_unit`` has likelihood weight 1; ``w`` may be
    traced): the prior part of U in ``(W^G, W_O_hat)`` is diagonal, ``1/sigma_G^2, 1/sigma_O^2``."""
    H_all = hessian(head, tokens, mask, obj_unit)
    prior = jnp.concatenate(
        [
            jnp.full((head.W_G.size,), 1.0 / obj_unit.sigma_G**2, H_all.dtype),
            jnp.full((head.W_O_hat.size,), 1.0 / obj_unit.sigma_O**2, H_all.dtype),
        ]
    )
    return w * (H_all - jnp.diag(prior)) + jnp.diag(prior)


def whitened_potential(head: AbstractHead, obj: Objective):
    """``(U_w, head_of)``: ``U_w(w, theta, C, tokens, mask)`` is the quenched ``U`` at
    ``theta + C w`` and ``head_of(w, theta, C)`` the head there (embeddings of ``head``)."""
    _, unflatten = split_weights(head)

    def head_of(w, theta, C):
        return unflatten(theta + C @ w)

    def U_w(w, theta, C, tokens, mask):
        return quenched_energy(head_of(w, theta, C), tokens, mask, obj)

    return U_w, head_of


def nuts_reference(
    key: Array,
    head: AbstractHead,
    tokens: TokenBatch,
    mask: Mask,
    obj: Objective,
    observe,
    *,
    n_warmup: int = 500,
    n_samples: int = 1000,
    n_chains: int = 2,
) -> Float[Array, "C S k"]:
    """NUTS draws of ``observe(head)`` (any vector of observables) from the same posterior,
    sampled in the whitened coordinates of :func:`whitening` (NUTS adapts its own diagonal mass
    on top). Returns ``[chain, draw, k]``."""
    from numpyro.infer import MCMC, NUTS

    theta, C = whitening(head, tokens, mask, obj)
    U_w, head_of = whitened_potential(head, obj)
    kernel = NUTS(potential_fn=lambda w: U_w(w, theta, C, tokens, mask))
    mcmc = MCMC(
        kernel,
        num_warmup=n_warmup,
        num_samples=n_samples,
        num_chains=n_chains,
        chain_method="sequential",
        progress_bar=False,
    )
    init = jnp.zeros((n_chains, theta.size) if n_chains > 1 else (theta.size,), theta.dtype)
    mcmc.run(key, init_params=init)
    w = mcmc.get_samples(group_by_chain=True)  # [C, S, n]
    obs = jax.vmap(jax.vmap(lambda x: observe(head_of(x, theta, C))))(w)
    return obs


# ---------------------------------------------------------------------------------------------
# Collapsed sampler: the readout integrated out exactly (module docstring)
# ---------------------------------------------------------------------------------------------

#: Unadjusted Langevin step of the warm-up (whitened at the fit), phase 1.
WARMUP_ETA = 0.1


def warmup_chains(keys, head, tokens, mask, obj, C, n_steps: int, eta: float = WARMUP_ETA):
    """Phase 1: unadjusted Langevin on ``U_m`` in the whitening ``C`` from ``head.W_G``, one
    chain per key; returns the end points ``[chains, n]`` (flat ``W_G``)."""
    x0 = head.W_G.ravel()
    U = lambda w: marginal_energy(with_WG(head, x0 + C @ w), tokens, mask, obj)
    grad = jax.grad(U)
    sd = math.sqrt(2 * eta)

    def chain(key):
        def step(w, i):
            xi = jax.random.normal(jax.random.fold_in(key, i), w.shape, w.dtype)
            w1 = w - eta * grad(w) + sd * xi
            return jnp.where(jnp.all(jnp.isfinite(w1)), w1, w), None

        w, _ = lax.scan(step, jnp.zeros_like(x0), jnp.arange(n_steps))
        return x0 + C @ w

    return map_chains(chain, batch_chains(keys.shape[0], *tokens.shape))(keys)


def collapsed_target(
    head: AbstractHead, tokens, mask, obj: Objective, C: Whitening, observe, observe_drawn=None
):
    r"""``(potential, record, value_and_grad)`` of :func:`~.hmc.hmc_chains` for the collapsed
    posterior in the whitened coordinates ``x = x_start + C w`` (``x_start``: each chain's
    origin, a chain argument): $U_m(x)$; its value, gradient and the data's moments in one pass
    (:func:`~.collapsed.marginal_value_grad`), the moments kept for the chain's position; and
    at draw ``j`` the readout drawn exactly given ``W^G = x`` from those moments (key
    ``fold_in(chain key, -1 - j)``, a fold HMC's transitions never use), recording
    ``(observe(head), |x - x_fit|)``. ``observe_drawn(key, head, moments)``, where given, draws
    the readout of ``head`` and observes it in one (:meth:`CollapsedHMC.observe_drawn`)."""
    x_fit = head.W_G.ravel()
    if observe_drawn is None:

        def observe_drawn(key, h, moments):
            return observe(observed_from_moments(key, h, moments, tokens, mask, obj)[0])

    def potential(w, x_start):
        return marginal_energy(with_WG(head, x_start + C @ w), tokens, mask, obj)

    def value_and_grad(w, keep, x_start):
        x = x_start + C @ w
        U, g, moments = marginal_value_grad(with_WG(head, x), tokens, mask, obj, keep)
        return U, g.ravel() @ C, moments  # C^T g without a transposed copy of C

    def record(state, j, x_start):
        x = x_start + C @ state.position
        key = jax.random.fold_in(state.rng_key, -1 - j)
        return observe_drawn(key, with_WG(head, x), state.aux), jnp.linalg.norm(x - x_fit)

    return potential, record, value_and_grad


# ---------------------------------------------------------------------------------------------
# The program of HMCConfig: every run of a reduced sweep (module docstring, phases 1-3)
# ---------------------------------------------------------------------------------------------


class CollapsedHMC(Sampler):
    """Collapsed HMC of a reduced sweep's runs, chains started per ``HMCConfig.starts``
    (:mod:`.starts`): the whitening of the marginal at the fit, the warm-up, the whitening at
    the end of chain 0's warm-up, then :func:`~.hmc.hmc_chains` (module docstring)."""

    config: ClassVar[type] = HMCConfig
    trim_rows: ClassVar[bool] = True

    def check(self, sweep: SweepResult) -> None:
        cfg = sweep.config
        if cfg.model.engine != "reduced":
            raise ValueError(
                "sampler: collapsed HMC (HMCConfig) needs a reduced sweep (engine='reduced'); a "
                "full-engine sweep is sampled by SGLD (SGLDConfig, CLI --sampler sgld)"
            )
        if cfg.train.train_embeddings:
            raise ValueError(
                "sweep: a reduced sweep with trained embeddings holds joint-MAP fits "
                "(docs/theory.md §2d); the collapsed HMC samples the quenched posterior only "
                "(train_embeddings=False)"
            )

    def chunk_runs(self, n_runs: int) -> int:
        """Runs are P-major: chunks of two P values, each trimmed to its largest P (the padding
        rows cost as much as data here; 4 compiles on the small default)."""
        return min(n_runs, 2 * self.cfg.sweep.n_seeds)

    def run_bytes(self, P: int | None = None) -> int:
        """The float32 whitening of the marginal, and per chain the per-draw records (7
        observables and what the config keeps, acceptance, distance, energy), its state and a
        step's activations."""
        cfg, mc = self.cfg, self.mc
        L, V = cfg.task.L, cfg.task.V
        P = cfg.sweep.P_max if P is None else P
        D = V + L
        n = D * D
        extra = mc.keep_loglik * P + mc.keep_weights * D * (2 * V + L)
        activations = P * L * L * 8 + P * L * V * 6
        whiten = 4 * (3 * n * n + 32 * min(P, SAMPLER_PRECOND_SEQS) * L * (L * 8 + D * 6))
        return whiten + 4 * mc.n_chains * ((10 + extra) * mc.n_draws + 8 * n + activations)

    def prepare(self, heads: dict[str, np.ndarray]) -> np.ndarray:
        """``[G, runs, D, D]``: each start group's ``W^G`` for every run (:mod:`.starts`)."""
        cls = head_class(self.cfg.model.attention)
        roots = np.asarray(jax.vmap(root_of)(cls.from_arrays(self.cfg, heads)))
        rng = np.random.default_rng(self.mc.seed)
        return start_points(self.cfg, self.mc, heads["W_G"], roots, rng)

    def sample(self, keys, head, train, mask, prepared, idx) -> DrawStats:
        """Each start group ``g`` of ``G`` runs the chains ``keys[:, g C/G : (g+1) C/G]`` from
        ``W^G = prepared[g, idx]``; the groups' chains are concatenated in order."""
        parts = [self._from(k, h, train, mask) for k, h in self._groups(keys, head, prepared, idx)]
        return _chains_concat(parts)

    def start(self, keys, head, train, mask, prepared, idx) -> tuple[DrawStats, tuple]:
        """The first round (:mod:`.rounds`): :meth:`sample` with ``round_draws`` draws per
        chain, and the carry: per start group the chains' HMC states, origins and whitening."""
        out = [
            self._from(k, h, train, mask, carry=True)
            for k, h in self._groups(keys, head, prepared, idx)
        ]
        return _chains_concat([o[0] for o in out]), tuple(o[1] for o in out)

    def more(
        self, carry, head, train, mask, prepared, idx, first_draw, active
    ) -> tuple[DrawStats, tuple]:
        """The next round of the runs ``active`` from ``carry``, its draws numbered from
        ``first_draw``; the other runs' chains stay where they are (skipped when the runs are
        mapped one after the other)."""
        out = [
            _hmc_more(self.program, h, train, mask, *c, jnp.int32(first_draw), active)
            for (_, h), c in zip(self._groups(None, head, prepared, idx), carry)
        ]
        carry = tuple((o[1], *c[1:]) for o, c in zip(out, carry))  # new states, same origins
        return _chains_concat([o[0] for o in out]), carry

    def carry_structure(self, head=None):
        """The pytree structure of :meth:`start`'s carry (to rebuild a saved round's)."""
        hmc = hmc_state_structure(aux=(0, 0, 0))  # the data's moments (collapsed_target)
        state = jax.tree.unflatten(hmc, [0] * hmc.num_leaves)
        G = 2 if self.mc.starts == "both" else 1
        return jax.tree.structure(tuple((state, 0, 0) for _ in range(G)))

    def _groups(self, keys, head, prepared, idx):
        """``(keys, head)`` of each start group: its chains' keys (``None`` without ``keys``)
        and the heads with ``W^G`` at the group's start."""
        starts = prepared[:, idx]
        G = len(starts)
        for g in range(G):
            # placed as the other weights are: an uncommitted W^G would compile the whitening
            # twice
            W_G = jax.device_put(np.asarray(starts[g], head.W_G.dtype), head.W_G.sharding)
            h = eqx.tree_at(lambda hh: hh.W_G, head, W_G)
            Cg = None if keys is None else keys.shape[1] // G
            yield (None if keys is None else keys[:, g * Cg : (g + 1) * Cg]), h

    def _from(self, keys, heads, train, mask, carry: bool = False):
        """Phases 1-3 for every run of a chunk from ``heads.W_G`` (``carry``: the first round,
        with what :meth:`more` continues from)."""
        f32 = lambda tree: jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), tree)
        k_warm = jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, 1)))(keys)
        k_hmc = jax.vmap(jax.vmap(lambda k: jax.random.fold_in(k, 2)))(keys)
        heads, mask = f32(heads), f32(mask)
        C1 = _marginal_whitening_runs(self.cfg, heads, train, mask)
        x_warm = _warmup_runs(self.program, k_warm, heads, train, mask, C1)  # [runs, chains, n]
        typical = eqx.tree_at(lambda h: h.W_G, heads, x_warm[:, 0].reshape(heads.W_G.shape))
        C2 = _marginal_whitening_runs(self.cfg, typical, train, mask)
        if carry:
            st, states = _hmc_start(self.program, k_hmc, heads, train, mask, x_warm, C2)
            return st, (states, x_warm, C2)
        return _hmc_runs(self.program, k_hmc, heads, train, mask, x_warm, C2)

    def observe_drawn(self, key, head: AbstractHead, train, mask, moments) -> Array:
        """:meth:`observe_all` of ``head`` with its readout drawn given ``W^G`` from the data's
        moments there (:func:`~.collapsed.observed_from_moments`: U, the loss and the mean
        attention with no pass over the data, the moments being the gradient's)."""
        obj = Objective.from_config(self.cfg)
        h, U, loss, A = observed_from_moments(key, head, moments, train, mask, obj)
        return self.observe_all(h, train, mask, observations(U, loss, A, h.gauge_fix))

    def draw_step(self, n_draws: int | None = None) -> np.ndarray:
        """The HMC iterations after adaptation at which draws are kept."""
        return np.arange(1, (n_draws or self.mc.n_draws) + 1) * self.mc.thin

    def extras(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``var_U_ratio`` (Var U against a Gaussian posterior's), and for a head with two
        branches the branch weights and the between-start R-hat (:func:`.starts.branch_arrays`)."""
        cfg = self.cfg
        D = cfg.task.V + cfg.task.L
        out = {"var_U_ratio": var_U_ratio(arrays, D * D + cfg.task.V * D)}
        if head_class(cfg.model.attention).two_branches:
            out.update(branch_arrays(arrays["draws"][..., 3], arrays["finite"], self.mc))
        return out

    def warnings(self, res: PosteriorResult) -> list[str]:
        return start_warnings(res.arrays, res.P, self.mc, res.order_names[1])


#: Sequences whose Hessian whitens the sampler's chains (the data part rescaled by P / n_used),
#: in float32. Any constant SPD preconditioner leaves the posterior exact; this one's curvatures
#: are off by ~ 1/sqrt(64) = 12% at large P (the diagonal mass adapted on top takes up the scale),
#: at a quarter of the Hessian-vector products' work on 256 sequences.
SAMPLER_PRECOND_SEQS = 64


@functools.partial(jax.jit, static_argnums=0)
def _marginal_whitening_runs(cfg: Config, heads, train, mask):
    """The marginal whitening of every run on ``SAMPLER_PRECOND_SEQS`` sequences, in the
    heads' float type (one run at a time: a vmap over runs would hold runs x 32 tangents of
    the data block)."""
    obj = Objective.from_config(cfg)
    return jax.lax.map(
        lambda a: marginal_whitening(*a, obj, SAMPLER_PRECOND_SEQS), (heads, train, mask)
    )


@functools.partial(jax.jit, static_argnums=0)
def _warmup_runs(sampler: CollapsedHMC, keys, heads, train, mask, C):
    obj = Objective.from_config(sampler.cfg)
    n = sampler.mc.n_warmup
    return map_chains(
        lambda k, h, t, m, c: warmup_chains(k, h, t, m, obj, c, n), _batch_runs(keys, train)
    )(keys, heads, train, mask, C)


def _batch_runs(per_chain, train) -> bool:
    """Whether a chunk's runs (``per_chain[runs, chains, ...]``: any per-chain array,
    ``train[runs, P, L]``) run batched: :func:`~.chains.batch_chains` on all their chains."""
    return batch_chains(per_chain.shape[0] * per_chain.shape[1], *train.shape[1:])


def _chains_concat(parts: list[DrawStats]) -> DrawStats:
    """The start groups' chains side by side (axis 1, after the runs)."""
    if len(parts) == 1:
        return parts[0]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *parts)


def _one_run(sampler: CollapsedHMC, k, h, t, m, x, c, n_iter: int, state=None, first_draw=0):
    """Phase 3 of one run (``state``: continue those chains): ``(DrawStats, HMC states)``."""
    s = sampler.mc
    obj = Objective.from_config(sampler.cfg)
    potential, record, value_and_grad = collapsed_target(
        h, t, m, obj, c, None, lambda key, hh, mom: sampler.observe_drawn(key, hh, t, m, mom)
    )
    st = hmc_chains(
        k,
        potential,
        jnp.zeros_like(x),
        record,
        n_iter=n_iter,
        thin=s.thin,
        step_size=s.step_size,
        n_leap=s.n_leapfrog,
        n_adapt=s.n_adapt,
        target_accept=s.target_accept,
        adapt_mass=s.adapt_mass,
        pooled=s.pooled_adaptation,
        chain_args=(x,),
        state=state,
        first_draw=first_draw,
        batched=batch_chains(x.shape[0], *t.shape),
        value_and_grad=value_and_grad,
    )
    obs, dist = st.records
    finite = st.finite & jnp.all(jnp.isfinite(obs), axis=(1, 2))
    U0 = sampler.observe(h, t, m)[0] if state is None else jnp.nan  # the first round's counts
    return DrawStats(
        obs, st.accept, dist, jnp.full(x.shape[:1], U0, obs.dtype), finite, st.step_size, st.energy
    ), st.state


@functools.partial(jax.jit, static_argnums=0)
def _hmc_runs(sampler: CollapsedHMC, keys, heads, train, mask, x_init, C):
    """Phase 3 of every run: :func:`~.hmc.hmc_chains` on the collapsed target, from the
    warm-up's end points ``x_init[runs, C, n]``, ``n_iter`` iterations."""
    n_iter = sampler.mc.n_iter
    return map_chains(lambda *a: _one_run(sampler, *a, n_iter)[0], _batch_runs(keys, train))(
        keys, heads, train, mask, x_init, C
    )


@functools.partial(jax.jit, static_argnums=0)
def _hmc_start(sampler: CollapsedHMC, keys, heads, train, mask, x_init, C):
    """:func:`_hmc_runs` for the first round (``round_draws`` draws), with the chains' states."""
    n_iter = sampler.mc.round_draws * sampler.mc.thin
    return map_chains(lambda *a: _one_run(sampler, *a, n_iter), _batch_runs(keys, train))(
        keys, heads, train, mask, x_init, C
    )


@functools.partial(jax.jit, static_argnums=0)
def _hmc_more(sampler: CollapsedHMC, heads, train, mask, states, x_init, C, first_draw, active):
    """One more round of the runs ``active`` from ``states``: ``(DrawStats, states)``, the
    other runs' states unchanged and their round left out (:func:`~.sampler.left_out`)."""
    n_iter = sampler.mc.round_draws * sampler.mc.thin

    def one(on, h, t, m, st, x, c):
        def draw():
            return _one_run(sampler, None, h, t, m, x, c, n_iter, st, first_draw)

        def stay():
            stats = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(draw)[0])
            return stats, st

        return lax.cond(on, draw, stay)

    stats, states = map_chains(one, _batch_runs(x_init, train))(
        active, heads, train, mask, states, x_init, C
    )
    return left_out(stats, active), states
