r"""The SGLD kernel of one chain: explicit state, pure ``init`` / ``step`` (NumPyro's contract).

$$\Theta_{t+1}=\Theta_t-\eta_t\,M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\;\xi_t,
\qquad \xi_t\sim\mathcal N(0,I)$$

(docs/theory.md §2; Welling & Teh 2011, eq. 4, whose $\epsilon_t$ is our $2\eta_t$), with $M$ an
optional constant positive preconditioner applied to drift and noise alike. Each step also
records the MALA acceptance probability of the move (Roberts & Tweedie 1996), a proxy for the
discretisation error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from ..._checks import check_int
from ._layout import Layout, PyTree, check_preconditioner, flat_preconditioner
from ._noise import as_key, check_noise, step_key
from ._schedules import Schedule, as_schedule

Scalar = Float[Array, ""]
_INV_SQRT2 = 1 / math.sqrt(2)  # a Python float: weakly typed, keeps the leaf dtype


class SGLDState(NamedTuple):
    """State of one chain after ``i`` steps (NumPyro's ``HMCState`` naming).

    ``drift_norm``, ``noise_norm``, ``accept_prob`` and ``diverging`` describe the last
    transition (zeros / one / False at ``i = 0``).
    """

    i: Int[Array, ""]  # t, the number of steps taken
    z: PyTree  # Theta_t
    potential_energy: Scalar  # U(Theta_t) (a minibatch estimate when minibatching)
    z_grad: PyTree  # grad U(Theta_t), cached: it drives the next step
    drift_norm: Scalar  # || eta M grad U(Theta_{t-1}) ||
    noise_norm: Scalar  # || sqrt(2 eta M) xi_{t-1} ||
    accept_prob: Scalar  # MALA acceptance probability of Theta_{t-1} -> Theta_t (a proxy)
    diverging: Bool[Array, ""]  # U(Theta_t) or the MALA log-ratio is not finite
    rng_key: Array  # the chain key k_c; never split, step t uses fold_in(k_c, 2t)


class SGLDKernel(NamedTuple):
    """Pure functions of one chain (optax's ``GradientTransformation`` shape).

    ``init(key, position, *args) -> SGLDState`` evaluates ``U`` and ``grad U`` at the position;
    ``step(state, *args) -> SGLDState`` takes one SGLD step with noise from
    ``fold_in(state.rng_key, 2 state.i)``. ``args`` are passed on to ``potential_fn``.
    """

    init: Callable[..., SGLDState]
    step: Callable[..., SGLDState]


class _Move(NamedTuple):
    """One transition on the flat vector (internal)."""

    z: Float[Array, " D"]
    u: Scalar
    g: Float[Array, " D"]
    drift_norm: Scalar
    noise_norm: Scalar
    accept_prob: Scalar
    diverging: Bool[Array, ""]


def _mala_terms(em, g: Array, g1: Array, xi: Array, sd) -> Scalar:
    r"""$\log\alpha-(U-U')=-\tfrac14\sum\eta M s^2+\tfrac1{\sqrt2}\sum\sqrt{\eta M}\,s\,\xi$."""
    s = g + g1
    quad = jnp.sum(em * jnp.square(s)).astype(sd)
    cross = jnp.sum(jnp.sqrt(em) * s * xi).astype(sd)
    return -0.25 * quad + _INV_SQRT2 * cross


class Core(NamedTuple):
    """The maths of one chain; ``t`` is passed explicitly so a runner can keep it unbatched."""

    potential_fn: Callable[..., Scalar]
    schedule: Schedule
    preconditioner: PyTree | None
    batch_fn: Callable[..., Any] | None
    with_value: bool = True  # False: jax.grad only, U is NaN (sgld_chains(record_potential=False))
    noise: str = "threefry"  # the normal generator (_noise.NOISE)

    def value_and_grad(self, layout: Layout, z: Array, key: Array, t, args: tuple):
        """``(U, grad U)`` at the flat ``z``; with ``batch_fn``, on the batch of step ``t``."""

        def flat_potential(z, *a):
            u = self.potential_fn(layout.unflatten(z), *a)
            if jnp.shape(u) != () or not jnp.issubdtype(jnp.result_type(u), jnp.floating):
                raise ValueError(
                    f"potential_fn must return a real scalar, got shape {jnp.shape(u)} "
                    f"dtype {jnp.result_type(u)}"
                )
            return u

        if self.batch_fn is not None:
            args = (self.batch_fn(step_key(key, t, 1), *args), *args)
        if self.with_value:
            return jax.value_and_grad(flat_potential)(z, *args)
        g = jax.grad(flat_potential)(z, *args)  # the value's extra work is dead code for XLA
        return jnp.full((), jnp.nan, g.dtype), g

    def move(
        self,
        layout: Layout,
        m: Array | None,
        z: Array,
        u: Scalar,
        g: Array,
        xi: Array,
        t: Int[Array, ""],
        key: Array,
        args: tuple,
    ) -> _Move:
        r"""One step from ``(z, U(z), grad U(z))`` with the standard normal ``xi``.

        Also the MALA log-ratio $\log\alpha=U(\Theta)-U(\Theta')+\tfrac12|\xi|^2-\big|\tfrac12
        \sqrt{\eta M}(\nabla U(\Theta)+\nabla U(\Theta'))-\xi/\sqrt2\big|^2$, which equals
        $-U'+U+\log q(\Theta\mid\Theta')-\log q(\Theta'\mid\Theta)$ for the proposal
        $q(\cdot\mid\Theta)=\mathcal N(\Theta-\eta M\nabla U,\,2\eta M)$, written without $M^{-1}$
        and with the $|\xi|^2$ terms cancelled: with $s=\nabla U(\Theta)+\nabla U(\Theta')$,
        $\log\alpha=U-U'-\tfrac14\sum\eta M s^2+\tfrac1{\sqrt2}\sum\sqrt{\eta M}\,s\,\xi$ (two
        reductions, and no float32 cancellation of two terms of size $D/2$).
        """
        eta = jnp.asarray(self.schedule(t), layout.dtype)
        em = eta if m is None else eta * m
        drift = -em * g
        noise = jnp.sqrt(2 * em) * xi
        z1 = z + drift + noise
        sd = jnp.result_type(u)
        sq = lambda x: jnp.sum(jnp.square(x)).astype(sd)
        u1, g1 = self.value_and_grad(layout, z1, key, t + 1, args)
        if self.with_value:
            log_alpha = (u - u1.astype(sd)) + _mala_terms(em, g, g1, xi, sd)
            accept = jnp.where(jnp.isnan(log_alpha), 0.0, jnp.exp(jnp.minimum(log_alpha, 0.0)))
            diverging = ~(jnp.isfinite(u1) & jnp.isfinite(log_alpha))
        else:
            accept = jnp.full((), jnp.nan, sd)
            diverging = ~jnp.isfinite(sq(g1))
        return _Move(
            z=z1,
            u=u1.astype(sd),
            g=g1,
            drift_norm=jnp.sqrt(sq(drift)),
            noise_norm=jnp.sqrt(sq(noise)),
            accept_prob=accept.astype(sd),
            diverging=diverging,
        )

    def setup(self, position: PyTree) -> tuple[Layout, Array | None]:
        layout = Layout.of(position)
        return layout, flat_preconditioner(self.preconditioner, position, layout)

    def init(self, key: Array, z: PyTree, args: tuple) -> SGLDState:
        key = as_key(key)
        if key.shape != ():
            raise ValueError(f"init takes the key of one chain, got a key array of {key.shape}")
        layout, _ = self.setup(z)  # checks the position and the preconditioner's structure
        t = jnp.zeros((), jnp.int32)
        u, g = self.value_and_grad(layout, layout.flatten(z), key, t, args)
        return self.init_state(key, z, u, layout.unflatten(g))

    def init_state(self, key: Array, z: PyTree, u: Scalar, g: PyTree) -> SGLDState:
        """The state at ``t = 0`` from the position and its ``(U, grad U)``."""
        zero = jnp.zeros((), jnp.result_type(u))
        one = jnp.ones((), jnp.result_type(u))
        sq = sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(g))
        bad = ~jnp.isfinite(u if self.with_value else sq)
        return SGLDState(jnp.zeros((), jnp.int32), z, u, g, zero, zero, one, bad, key)

    def step(self, state: SGLDState, args: tuple) -> SGLDState:
        layout, m = self.setup(state.z)
        xi = layout.noise(state.rng_key, state.i, self.noise)
        z, g = layout.flatten(state.z), layout.flatten(state.z_grad)
        mv = self.move(layout, m, z, state.potential_energy, g, xi, state.i, state.rng_key, args)
        return SGLDState(
            i=state.i + 1,
            z=layout.unflatten(mv.z),
            potential_energy=mv.u,
            z_grad=layout.unflatten(mv.g),
            drift_norm=mv.drift_norm,
            noise_norm=mv.noise_norm,
            accept_prob=mv.accept_prob,
            diverging=mv.diverging,
            rng_key=state.rng_key,
        )


def make_core(potential_fn, step_size, preconditioner, batch_fn, noise="threefry") -> Core:
    if not callable(potential_fn):
        raise ValueError(f"potential_fn must be callable, got {potential_fn!r}")
    if batch_fn is not None and not callable(batch_fn):
        raise ValueError(f"batch_fn must be None or callable, got {batch_fn!r}")
    schedule = as_schedule(step_size)
    precond = check_preconditioner(preconditioner)
    return Core(potential_fn, schedule, precond, batch_fn, noise=check_noise(noise))


def sgld_kernel(
    potential_fn: Callable[..., Scalar],
    *,
    step_size: float | Array | Schedule,
    preconditioner: PyTree | None = None,
    batch_fn: Callable[..., Any] | None = None,
    noise: str = "threefry",
) -> SGLDKernel:
    r"""SGLD for the energy ``potential_fn`` = $U$ (docs/theory.md §2; Welling & Teh 2011).

    $\Theta_{t+1}=\Theta_t-\eta_t M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\,\xi_t$.

    Args:
      potential_fn: ``U(position, *args) -> scalar``, full batch (the default). With
        ``batch_fn``, ``U(position, batch, *args)`` must be an unbiased estimate of $U$ (see
        :func:`minibatch_potential`).
      step_size: $\eta$ (> 0), a scalar array (e.g. one per run under ``vmap``), or a
        schedule ``t -> eta_t`` (:func:`polynomial_step_size`, any optax schedule).
      preconditioner: $M$, a pytree with the position's structure whose positive leaves
        broadcast to the position's leaves (a scalar per block, or full arrays); constant in
        time, applied to drift and noise (docs/theory.md §2).
      batch_fn: ``batch_fn(key, *args) -> batch``, the minibatch sampler.
      noise: ``"threefry"`` (counter-mode Threefry, the default) or ``"jax"``
        (``jax.random.normal``); both depend only on the chain key and the step.
    """
    core = make_core(potential_fn, step_size, preconditioner, batch_fn, noise)
    return SGLDKernel(
        init=lambda key, position, *args: core.init(key, position, args),
        step=lambda state, *args: core.step(state, args),
    )


def minibatch_potential(
    prior_fn: Callable[[PyTree], Scalar],
    datum_fn: Callable[[PyTree, Any], Scalar],
    *,
    batch_size: int,
) -> tuple[Callable[..., Scalar], Callable[..., Array]]:
    r"""``(potential_fn, batch_fn)`` for $U=U_0(\Theta)+\sum_{\alpha=1}^{N}u(\Theta,x_\alpha)$.

    The estimate $\hat U(\Theta;B)=U_0(\Theta)+\frac{N}{n}\sum_{\alpha\in B}u(\Theta,x_\alpha)$ over
    $n$ = ``batch_size`` indices drawn uniformly with replacement is unbiased, $\mathbb E_B\hat
    U=U$ (Welling & Teh 2011, eq. 4). The data (a pytree with leading axis $N$) is the first extra
    argument: ``sgld_chains(..., potential_fn, batch_fn=batch_fn, args=(data,))``.
    """
    batch_size = check_int("batch_size", batch_size, lo=1)

    def batch_fn(key: Array, data: PyTree, *args) -> Int[Array, " n"]:
        n_data = jax.tree.leaves(data)[0].shape[0]
        return jax.random.randint(key, (batch_size,), 0, n_data)

    def potential_fn(position: PyTree, idx: Int[Array, " n"], data: PyTree, *args) -> Scalar:
        n_data = jax.tree.leaves(data)[0].shape[0]
        batch = jax.tree.map(lambda d: d[idx], data)
        terms = jax.vmap(datum_fn, in_axes=(None, 0))(position, batch)
        return prior_fn(position) + (n_data / batch_size) * jnp.sum(terms)

    return potential_fn, batch_fn
