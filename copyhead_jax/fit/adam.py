r"""MAP fits: full-batch Adam on the negative log posterior U, many runs in one compiled program.

A *run* is one (seed, P) pair. Every run of a chunk trains in the same compiled program:
``vmap`` over runs, the dataset of each run padded to ``P_max`` with a 0/1 mask, early stopping
per run inside the compiled loop (a stopped run is frozen, the others go on). The host calls one
compiled *segment* of ``segment_logs * log_every`` epochs at a time, which gives a progress bar
and an early exit once every run has stopped, without recompiling.

Adam (Kingma & Ba 2015) with coupled L2: the gradient is that of U itself, prior included, so
the fixed point is the MAP (AdamW's decoupled decay would not be).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float, Int

from ..config import AdamConfig, Config
from ..models import (
    AbstractHead,
    head_class,
    head_template,
    init_head,
    init_reduced,
    trainable_filter,
)
from ..objective import Objective, log_prior_energy, neg_log_posterior
from ..observables import Measurement, measure
from .inputs import RunInputs


def block_lr_factors(head: AbstractHead, adam: AdamConfig) -> AbstractHead:
    r"""Per-block multipliers of ``lr`` (a head-shaped pytree of floats).

    ``raw``: the same Adam step for every weight of the raw network, i.e. $\hat W^O$ moves
    $\sqrt{\chi N}$ times faster because $W^O=\hat W^O/\sqrt{\chi N}$ (the paper's protocol).
    ``mup``: Adam-muP for this network: a coherent step on $W^G$ moves the logits by
    $O(N\,\eta)$ and a step on $\hat W^O$, $W^E$ or $b$ moves outputs/logits by
    $O(\sqrt N\,\eta)$, so the factors are $1/N$ and $1/\sqrt N$.

    Under the reduced engine ``head.width`` is $D=V+L$: the factors are those of the width-$D$
    image. Adam is coordinate-wise, so its path does not map between widths (its fixed points
    do, docs/theory.md §2c); the full engine stays the reference for Adam dynamics.
    """
    N = head.width
    if adam.lr_scaling == "raw":
        f = dict(W_E=1.0, b=1.0, W_G=1.0, W_O_hat=math.sqrt(head.chi * N))
    else:
        f = dict(W_E=N**-0.5, b=N**-0.5, W_G=1.0 / N, W_O_hat=N**-0.5)
    return eqx.tree_at(
        lambda h: (h.W_E, h.b, h.W_G, h.W_O_hat),
        head,
        (f["W_E"], f["b"], f["W_G"], f["W_O_hat"]),
    )


def lr_schedule(adam: AdamConfig, attention: str) -> Callable[[Array], Array]:
    """Linear warm-up over ``warmup_frac * max_epochs`` (None: the head's ``warmup_default``),
    then constant or cosine decay."""
    T = adam.max_epochs
    warm = max(int(round(head_class(attention).warmup_frac(adam) * T)), 0)
    if adam.schedule == "constant":
        decay = optax.constant_schedule(adam.lr)
    else:
        decay = optax.cosine_decay_schedule(adam.lr, max(T - warm, 1), alpha=adam.final_lr_frac)
    if warm == 0:
        return decay
    return optax.join_schedules([optax.linear_schedule(0.0, adam.lr, warm), decay], [warm])


class RunState(NamedTuple):
    """The state of one run (a batch of runs carries a leading run axis on every leaf)."""

    params: AbstractHead  # trainable leaves (None where frozen)
    frozen: AbstractHead  # frozen leaves (quenched embeddings) and static fields
    opt_state: optax.OptState
    epoch: Int[Array, ""]
    U: Float[Array, ""]  # U at the last evaluated parameters
    train_sq: Float[Array, ""]  # sum of squared errors at the same parameters
    best: Float[Array, ""]  # best value of the early-stopping monitor
    since_best: Int[Array, ""]
    grad_norm: Float[Array, ""]
    stopped: Bool[Array, ""]
    finite: Bool[Array, ""]
    stop_epoch: Int[Array, ""]


class Trainer(eqx.Module):
    """Everything static about a fit: the config, optimiser and objective constants."""

    cfg: Config = eqx.field(static=True)

    @property
    def objective(self) -> Objective:
        return Objective.from_config(self.cfg)

    def optimizer(self, head: AbstractHead) -> optax.GradientTransformation:
        t, m, a = self.cfg.train, self.cfg.model, self.cfg.solver
        spec = trainable_filter(head, train_embeddings=t.train_embeddings)
        factors, _ = eqx.partition(block_lr_factors(head, a), spec)
        sched = lr_schedule(a, m.attention)
        return optax.chain(
            optax.scale_by_adam(b1=a.b1, b2=a.b2, eps=a.eps),
            _scale_by_tree(factors),
            optax.scale_by_schedule(lambda c: -sched(c)),
        )

    def init(self, key: Array) -> tuple[AbstractHead, AbstractHead, optax.GradientTransformation]:
        c = self.cfg
        if c.model.engine == "reduced":  # Adam on the width-(V+L) image (float32), §2c
            head = init_reduced(key, c, head_template(c), dtype=jnp.float32)
            spec = trainable_filter(head, train_embeddings=False)
            params, frozen = eqx.partition(head, spec)
            return params, frozen, self.optimizer(head)
        head = init_head(
            key,
            c.model,
            L=c.task.L,
            V=c.task.V,
            chi=c.posterior.chi,
            chi_in_readout_prior=c.posterior.chi_in_readout_prior,
        )
        if c.train.init_attention != "prior":
            head = eqx.tree_at(lambda h: h.W_G, head, self._initial_W_G(head))
        spec = trainable_filter(head, train_embeddings=c.train.train_embeddings)
        params, frozen = eqx.partition(head, spec)
        return params, frozen, self.optimizer(head)

    def _initial_W_G(self, head: AbstractHead) -> Array:
        r"""``0`` (zero logits) or the minimum-norm $W^G$ with the head's copy logits
        (:meth:`AbstractHead.copy_logits`, $\beta G^*$ for linear and softmax) on the
        positional block and zero elsewhere: $W^G = N\,U^+ M^* U^{+\top}$."""
        if self.cfg.train.init_attention == "zero":
            return jnp.zeros_like(head.W_G)
        V, L = self.cfg.task.V, self.cfg.task.L
        M = jnp.zeros((V + L, V + L), jnp.float32)
        M = M.at[V:, V:].set(head.copy_logits(L, self.cfg.train.init_copy_logit, jnp.float32))
        U_pinv = jnp.linalg.pinv(head.embeddings())  # [N, D]
        return head.width * U_pinv @ M @ U_pinv.T

    def init_state(self, inp: RunInputs) -> RunState:
        params, frozen, opt = self.init(inp.key)
        zero_f, zero_i = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)
        return RunState(
            params=params,
            frozen=frozen,
            opt_state=opt.init(params),
            epoch=zero_i,
            U=jnp.full((), jnp.inf, jnp.float32),
            train_sq=zero_f,
            best=jnp.full((), jnp.inf, jnp.float32),
            since_best=zero_i,
            grad_norm=zero_f,
            stopped=jnp.zeros((), bool),
            finite=jnp.ones((), bool),
            stop_epoch=zero_i,
        )

    def step(self, s: RunState, inp: RunInputs) -> RunState:
        """One full-batch Adam epoch with early-stopping bookkeeping; frozen once stopped."""
        t, obj = self.cfg.solver, self.objective  # the AdamConfig
        head = eqx.combine(s.params, s.frozen)

        def data_energy(p):
            sq = eqx.combine(p, s.frozen).squared_error_sum(inp.train, inp.mask)
            return obj.likelihood_weight * sq, sq

        prior = lambda p: log_prior_energy(eqx.combine(p, s.frozen), obj)
        (U_data, sq), g_data = jax.value_and_grad(data_energy, has_aux=True)(s.params)
        U_prior, g_prior = jax.value_and_grad(prior)(s.params)
        U = U_data + U_prior
        g = jax.tree_util.tree_map(jnp.add, g_data, g_prior)
        # |grad U| from barrier-separated inputs: XLA then computes it inside the reduction
        # from the data gradient and the weights, instead of materialising grad U (one more
        # N^2 buffer per run) for the norm next to the in-place moment updates
        gd2, p2 = jax.lax.optimization_barrier((g_data, s.params))
        g2 = jax.tree_util.tree_map(jnp.add, gd2, jax.grad(prior)(p2))
        gnorm = jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree_util.tree_leaves(g2)))

        active = ~s.stopped
        ok = jnp.isfinite(U) & jnp.isfinite(gnorm)
        watched = U if t.monitor == "U" else sq
        # the first finite value always counts as an improvement (best starts at +inf)
        improved = ~jnp.isfinite(s.best) | (watched < s.best - t.rel_tol * jnp.abs(s.best))
        epoch = s.epoch + 1
        since = jnp.where(improved, 0, s.since_best + 1)
        converged = (since >= t.patience) & (epoch >= t.min_epochs)
        stop = active & (~ok | converged | (epoch >= t.max_epochs))
        move = active & ok
        params, opt_state = self._adam_update(head, g, s, move, inp.lr_mult)
        return RunState(
            params=params,
            frozen=s.frozen,
            opt_state=opt_state,
            epoch=jnp.where(active, epoch, s.epoch),
            U=jnp.where(active, U, s.U),
            train_sq=jnp.where(active, sq, s.train_sq),
            best=jnp.where(active & ok & improved, watched, s.best),
            since_best=jnp.where(active, since, s.since_best),
            grad_norm=jnp.where(active, gnorm, s.grad_norm),
            stopped=s.stopped | stop,
            finite=s.finite & (ok | ~active),
            stop_epoch=jnp.where(stop, epoch, s.stop_epoch),
        )

    def _adam_update(self, head, g, s: RunState, move: Bool[Array, ""], lr_mult: Array):
        """``optimizer``'s update then ``optax.apply_updates``, written as one elementwise
        expression per leaf for the new weight and both moments, so that XLA updates $W^G$ and
        its moments in place (optax's separate passes kept three more $N^2$ temporaries per
        run). The same operations in the same order as optax, the same optax state layout
        (snapshots and resumes unchanged). Nothing moves where ``move`` is false."""
        t = self.cfg.solver  # the AdamConfig
        spec = trainable_filter(head, train_embeddings=self.cfg.train.train_embeddings)
        factors, _ = eqx.partition(block_lr_factors(head, t), spec)
        adam, scaled, sched_state = s.opt_state
        count = optax.safe_increment(adam.count)
        step = -lr_schedule(t, self.cfg.model.attention)(sched_state.count)

        tm, keep = jax.tree_util.tree_map, lambda new, old: jnp.where(move, new, old)
        mu = tm(lambda gi, m: keep((1 - t.b1) * gi + t.b1 * m, m), g, adam.mu)
        nu = tm(lambda gi, v: keep((1 - t.b2) * (gi**2) + t.b2 * v, v), g, adam.nu)
        # the barrier makes the weight update read the new moments instead of recomputing them
        # from the old ones, so each of W, mu, nu is rewritten in place (otherwise XLA keeps
        # copies of the old moments alive for the fused weight update)
        mu, nu = jax.lax.optimization_barrier((mu, nu))

        def weight(w, m, v, f):
            m_hat = m / (1 - t.b1**count).astype(m.dtype)
            v_hat = v / (1 - t.b2**count).astype(v.dtype)
            u = m_hat / (jnp.sqrt(v_hat + 0.0) + t.eps) * f
            u = jnp.array(step, dtype=u.dtype) * u * lr_mult
            return keep(jnp.asarray(w + u).astype(jnp.asarray(w).dtype), w)

        params = tm(weight, s.params, mu, nu, factors)
        new_adam = adam._replace(count=keep(count, adam.count), mu=mu, nu=nu)
        new_sched = sched_state._replace(
            count=keep(optax.safe_increment(sched_state.count), sched_state.count)
        )
        return params, (new_adam, scaled, new_sched)

    def segment(self, s: RunState, inp: RunInputs, n_logs: int) -> tuple[RunState, Array]:
        """``n_logs * log_every`` epochs; returns ``(U, sum sq err)`` after each ``log_every``."""

        def outer(state, _):
            state = jax.lax.fori_loop(
                0, self.cfg.train.log_every, lambda _, st: self.step(st, inp), state
            )
            return state, jnp.stack([state.U, state.train_sq])

        return jax.lax.scan(outer, s, None, length=n_logs)

    def measure(self, s: RunState, inp: RunInputs) -> tuple[Measurement, Array]:
        """Observables of the fitted head, and the norm of grad U in the attention-relevant
        subspace (see ``span_grad_norm``)."""
        head = eqx.combine(s.params, s.frozen)
        return measure(head, inp.train, inp.mask, inp.test), self.span_grad_norm(s, inp)

    def span_grad_norm(self, s: RunState, inp: RunInputs) -> Array:
        r"""$\|\nabla U\|$ restricted to the directions that can change the network's function.

        With $Q$ an orthonormal basis of the embeddings' row space (rank $D = V + L$), the logits
        and outputs see $W^G$ only through $Q^\top W^G Q$ and $\hat W^O$ only through
        $\hat W^O Q$; the rest of $W^G$, $\hat W^O$ only decays under the prior. This is the
        stationarity measure of the fitted attention (embedding gradients count in full).
        """
        obj = self.objective
        g = jax.grad(
            lambda p: neg_log_posterior(eqx.combine(p, s.frozen), inp.train, inp.mask, obj)
        )(s.params)
        Q, _ = jnp.linalg.qr(eqx.combine(s.params, s.frozen).embeddings().T)  # [N, D]
        parts = [Q.T @ g.W_G @ Q, g.W_O_hat @ Q]
        parts += [x for x in (g.W_E, g.b) if x is not None]
        return jnp.sqrt(sum(jnp.sum(x**2) for x in parts))


def _scale_by_tree(factors) -> optax.GradientTransformation:
    """Multiply each update leaf by a constant from a matching pytree (None leaves skipped)."""

    def update(updates, state, params=None):
        return jax.tree_util.tree_map(lambda u, f: u * f, updates, factors), state

    return optax.GradientTransformation(lambda _: optax.EmptyState(), update)


# ---- the compiled programs: one per Trainer (config), reused for every chunk and segment ----


@functools.partial(jax.jit, static_argnums=0)
def init_runs(trainer: Trainer, inp: RunInputs) -> RunState:
    return jax.vmap(trainer.init_state)(inp)


@functools.partial(jax.jit, static_argnums=(0, 3), donate_argnums=1)
def run_segment(trainer: Trainer, state: RunState, inp: RunInputs, n_logs: int):
    # the state is donated (updated in place, no second copy of W^G and the Adam moments)
    return jax.vmap(trainer.segment, in_axes=(0, 0, None))(state, inp, n_logs)


@functools.partial(jax.jit, static_argnums=0)
def measure_runs(trainer: Trainer, state: RunState, inp: RunInputs) -> tuple[Measurement, Array]:
    return jax.vmap(trainer.measure)(state, inp)
