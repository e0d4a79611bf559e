r"""Stochastic-gradient Langevin dynamics (SGLD) on any pytree position (THEORY.md §2).

The update, with temperature 1 on the energy $U$ (Welling & Teh 2011, eq. 4, whose step
$\epsilon_t$ is our $2\eta_t$):

$$\Theta_{t+1}=\Theta_t-\eta_t\,M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\;\xi_t,
\qquad \xi_t\sim\mathcal N(0,I),$$

with $M$ an optional constant per-block preconditioner (positive, elementwise), applied to drift
and noise alike so that $e^{-U}$ stays the stationary law as $\eta\to0$. In loss units
($U=\frac{\chi}{\sigma^2}\mathcal L$) the same chain reads
$\Theta_{t+1}=\Theta_t-\eta'\nabla\mathcal L+\sqrt{2\eta'\sigma^2/\chi}\,\xi_t$ with
$\eta'=\eta\chi/\sigma^2$: pass ``step_size = eta_loss * sigma2 / chi``.

Layout (STYLE.md §7, NumPyro's kernel contract): :func:`sgld_kernel` returns pure
``init``/``step`` functions over an explicit :class:`SGLDState`; :func:`run_chains` is the loop
(``lax.scan`` over steps, ``vmap`` over chains) and is itself ``jit``- and ``vmap``-able over an
outer axis of runs; :class:`SGLD` adapts the kernel to ``numpyro.infer.MCMC``.

Randomness is counter-based: chain ``c`` has one key $k_c$ (from ``jax.random.split(key,
n_chains)``), and step $t$ draws its noise from ``fold_in(k_c, 2t)`` (minibatches from
``fold_in(k_c, 2t + 1)``). Draws therefore depend only on ``(k_c, t)``: the runner can draw the
noise of several steps in one call, and :func:`run_chains`, :class:`SGLD` under
``MCMC(..., chain_method="vectorized")`` and a sequential loop of ``step`` give the same chain.
For float32 positions and Threefry keys the normals are generated with both 32-bit words of
each Threefry-2x32 block; the values are bit-identical to ``jax.random.normal`` under
``jax_threefry_partitionable=False`` and take half the hashes of the default (partitionable)
stream.

References: M. Welling and Y. W. Teh, *Bayesian learning via stochastic gradient Langevin
dynamics*, ICML 2011. G. O. Roberts and R. L. Tweedie, *Exponential convergence of Langevin
distributions and their discrete approximations*, Bernoulli 2 (1996) (MALA, used for the
acceptance proxy).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import threefry_2x32
from jaxtyping import Array, Bool, Float, Int
from numpyro.infer.mcmc import MCMCKernel
from numpyro.util import is_prng_key

from ._checks import check_float, check_int

__all__ = [
    "SGLD",
    "SGLDKernel",
    "SGLDResult",
    "SGLDState",
    "constant_step_size",
    "draw_steps",
    "minibatch_potential",
    "polynomial_step_size",
    "run_chains",
    "sgld_kernel",
]

PyTree = Any
Scalar = Float[Array, ""]
Schedule = Callable[[Int[Array, ""]], Scalar]

#: Noise of ``noise_block`` steps is drawn at once; the automatic block holds at most this many
#: normals per chain (64 KiB in float32), so a vmap over runs x chains stays small.
AUTO_NOISE_ELEMENTS = 2**14
MAX_AUTO_NOISE_BLOCK = 64
_INV_SQRT2 = 1 / math.sqrt(2)  # a Python float: weakly typed, keeps the leaf dtype


# ----------------------------------------------------------------------------------------------
# State and step-size schedules


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


def constant_step_size(eta: float) -> Schedule:
    r"""$\eta_t=\eta$."""
    eta = check_float("step_size", eta, lo=0.0)
    return lambda t: jnp.full((), eta, jnp.float32)


def polynomial_step_size(a: float, b: float = 1.0, gamma: float = 0.55) -> Schedule:
    r"""$\eta_t=a\,(b+t)^{-\gamma}$, the decay of Welling & Teh (2011).

    $\gamma\in(0.5,1]$ gives $\sum_t\eta_t=\infty$, $\sum_t\eta_t^2<\infty$; ``gamma = 0`` is a
    constant step.
    """
    a = check_float("polynomial_step_size.a", a, lo=0.0)
    b = check_float("polynomial_step_size.b", b, lo=0.0)
    gamma = check_float("polynomial_step_size.gamma", gamma, lo=0.0, hi=1.0, lo_open=False)
    return lambda t: a * (b + jnp.asarray(t, jnp.float32)) ** (-gamma)


def _schedule(step_size: Any) -> Schedule:
    """A callable ``t -> eta_t`` from a float, a (possibly traced) scalar array or a callable."""
    if callable(step_size):
        return step_size
    try:
        value = np.asarray(step_size)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        value = None  # traced (e.g. one step size per run under vmap): checked by the caller
    if value is not None:
        if value.shape != () or not np.issubdtype(value.dtype, np.number):
            raise ValueError(
                f"step_size must be a real number > 0 or a callable t -> eta_t, got {step_size!r}"
            )
        check_float("step_size", float(value), lo=0.0)
    return lambda t: jnp.asarray(step_size)


def draw_steps(n_steps: int, burn_in: int, thin: int) -> np.ndarray:
    """Step numbers ``t`` (states ``Theta_t``, 1-based) kept as draws, as ``MCMC`` keeps them.

    The last state is always a draw; ``(n_steps - burn_in) % thin`` extra steps are burnt in.
    """
    n_draws = (n_steps - burn_in) // thin
    return n_steps - thin * np.arange(n_draws - 1, -1, -1)


# ----------------------------------------------------------------------------------------------
# Keys and noise


def _as_key(key: Array) -> Array:
    """Typed PRNG key(s); legacy ``uint32[..., 2]`` keys are wrapped as Threefry keys."""
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    if key.dtype != jnp.uint32 or key.shape[-1:] != (2,):
        raise ValueError(f"key must be a jax.random.key, got dtype {key.dtype} shape {key.shape}")
    return jax.random.wrap_key_data(key)


def _step_key(key: Array, t: Int[Array, ""], stream: int) -> Array:
    """``fold_in(k_c, 2 t + stream)``: stream 0 = noise of step t, 1 = minibatch at Theta_t."""
    t = lax.convert_element_type(t, jnp.uint32)
    return jax.random.fold_in(key, t * jnp.uint32(2) + jnp.uint32(stream))


def _standard_normal(key: Array, n: int, dtype: Any) -> Float[Array, " n"]:
    """``n`` i.i.d. N(0, 1) draws; counter-mode Threefry using both words of each block."""
    if (
        jnp.dtype(dtype) != jnp.float32
        or str(jax.random.key_impl(key)) != "threefry2x32"
        or n >= 2**32 - 1
    ):
        return jax.random.normal(key, (n,), dtype)
    k = jax.random.key_data(key)
    bits = threefry_2x32((k[0], k[1]), lax.iota(jnp.uint32, n))
    # jax.random.uniform(minval=nextafter(-1, 0), maxval=1) then sqrt(2) erfinv, bit for bit.
    f = lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32)
    lo = np.nextafter(np.float32(-1.0), np.float32(0.0))
    u = jnp.maximum(lo, (f - np.float32(1.0)) * (np.float32(1.0) - lo) + lo)
    return np.float32(np.sqrt(2.0)) * lax.erf_inv(u)


class _Layout(NamedTuple):
    """How the position's leaves map onto one flat vector (static).

    The kernel works on the flat vector: one fused update, one noise draw and one reduction per
    step whatever the number of leaves; ``potential_fn`` still sees the pytree.
    """

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[Any, ...]
    size: int
    dtype: Any  # dtype of the flat vector (the leaves' common dtype)

    @classmethod
    def of(cls, position: PyTree) -> _Layout:
        leaves, treedef = jax.tree.flatten(position)
        if not leaves:
            raise ValueError("position must be a pytree with at least one array leaf")
        for x in leaves:
            if not jnp.issubdtype(jnp.result_type(x), jnp.inexact):
                raise ValueError(
                    f"position leaves must be floating point arrays, got dtype {jnp.result_type(x)}"
                )
        shapes = tuple(tuple(jnp.shape(x)) for x in leaves)
        dtypes = tuple(jnp.result_type(x) for x in leaves)
        size = sum(math.prod(s) for s in shapes)
        return cls(treedef, shapes, dtypes, size, jnp.result_type(*dtypes))

    def flatten(self, tree: PyTree) -> Float[Array, " D"]:
        leaves = [jnp.ravel(x).astype(self.dtype) for x in self.treedef.flatten_up_to(tree)]
        return leaves[0] if len(leaves) == 1 else jnp.concatenate(leaves)

    def unflatten(self, flat: Float[Array, " D"]) -> PyTree:
        out, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            n = math.prod(shape)
            out.append(lax.slice_in_dim(flat, start, start + n).reshape(shape).astype(dtype))
            start += n
        return jax.tree.unflatten(self.treedef, out)

    def noise(self, key: Array, t: Int[Array, ""]) -> Float[Array, " D"]:
        return _standard_normal(_step_key(key, t, 0), self.size, self.dtype)


# ----------------------------------------------------------------------------------------------
# The kernel


class SGLDKernel(NamedTuple):
    """Pure functions of one chain (optax's ``GradientTransformation`` shape).

    ``init(key, position, *args) -> SGLDState`` evaluates ``U`` and ``grad U`` at the position;
    ``step(state, *args) -> SGLDState`` takes one SGLD step with noise from
    ``fold_in(state.rng_key, 2 state.i)``. ``args`` are passed on to ``potential_fn``.
    """

    init: Callable[..., SGLDState]
    step: Callable[..., SGLDState]


def _check_preconditioner(preconditioner: PyTree | None) -> PyTree | None:
    if preconditioner is None:
        return None
    for m in jax.tree.leaves(preconditioner):
        try:
            v = np.asarray(m)
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
            continue
        if not np.issubdtype(v.dtype, np.number) or not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(
                "preconditioner entries must be finite reals > 0 (a pytree matching the "
                f"position, leaves broadcastable to its leaves), got {m!r}"
            )
    return preconditioner


def _flat_preconditioner(
    preconditioner: PyTree | None, position: PyTree, layout: _Layout
) -> Float[Array, " D"] | None:
    """M as a flat vector matching ``layout`` (``None`` = identity); checks the structure."""
    if preconditioner is None:
        return None
    leaves, treedef = jax.tree.flatten(position)
    m_leaves, m_treedef = jax.tree.flatten(preconditioner)
    if m_treedef != treedef:
        raise ValueError(
            f"preconditioner must have the tree structure of the position {treedef}, "
            f"got {m_treedef}"
        )
    out = []
    for m, x in zip(m_leaves, leaves):
        try:
            ok = np.broadcast_shapes(jnp.shape(m), jnp.shape(x)) == jnp.shape(x)
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"preconditioner leaf of shape {jnp.shape(m)} does not broadcast to the "
                f"position leaf of shape {jnp.shape(x)}"
            )
        out.append(jnp.broadcast_to(jnp.asarray(m, layout.dtype), jnp.shape(x)))
    return layout.flatten(jax.tree.unflatten(treedef, out))


class _Move(NamedTuple):
    """One transition on the flat vector (internal)."""

    z: Float[Array, " D"]
    u: Scalar
    g: Float[Array, " D"]
    drift_norm: Scalar
    noise_norm: Scalar
    accept_prob: Scalar
    diverging: Bool[Array, ""]


class _Core(NamedTuple):
    """The maths of one chain; ``t`` is passed explicitly so a runner can keep it unbatched."""

    potential_fn: Callable[..., Scalar]
    schedule: Schedule
    preconditioner: PyTree | None
    batch_fn: Callable[..., Any] | None
    with_value: bool = True  # False: jax.grad only, U is NaN (run_chains(record_potential=False))

    def value_and_grad(self, layout: _Layout, z: Array, key: Array, t, args: tuple):
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
            args = (self.batch_fn(_step_key(key, t, 1), *args), *args)
        if self.with_value:
            return jax.value_and_grad(flat_potential)(z, *args)
        g = jax.grad(flat_potential)(z, *args)  # the value's extra work is dead code for XLA
        return jnp.full((), jnp.nan, g.dtype), g

    def move(
        self, layout: _Layout, m: Array | None, z: Array, u: Scalar, g: Array, xi: Array,
        t: Int[Array, ""], key: Array, args: tuple,
    ) -> _Move:  # fmt: skip
        r"""One step from ``(z, U(z), grad U(z))`` with the standard normal ``xi``.

        Also the MALA log-ratio $\log\alpha=U(\Theta)-U(\Theta')+\tfrac12|\xi|^2-\big|\tfrac12
        \sqrt{\eta M}(\nabla U(\Theta)+\nabla U(\Theta'))-\xi/\sqrt2\big|^2$, which equals
        $-U'+U+\log q(\Theta\mid\Theta')-\log q(\Theta'\mid\Theta)$ for the proposal
        $q(\cdot\mid\Theta)=\mathcal N(\Theta-\eta M\nabla U,\,2\eta M)$, written without $M^{-1}$.
        """
        eta = jnp.asarray(self.schedule(t), layout.dtype)
        em = eta if m is None else eta * m
        drift = -em * g
        noise = jnp.sqrt(2 * em) * xi
        z1 = z + drift + noise
        u1, g1 = self.value_and_grad(layout, z1, key, t + 1, args)
        sd = jnp.result_type(u)
        sq = lambda x: jnp.sum(jnp.square(x)).astype(sd)
        if self.with_value:
            r = jnp.sqrt(em) * (g + g1) * 0.5 - xi * _INV_SQRT2
            log_alpha = (u - u1.astype(sd)) + 0.5 * sq(xi) - sq(r)
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

    def setup(self, position: PyTree) -> tuple[_Layout, Array | None]:
        layout = _Layout.of(position)
        return layout, _flat_preconditioner(self.preconditioner, position, layout)

    def init(self, key: Array, z: PyTree, args: tuple) -> SGLDState:
        key = _as_key(key)
        if key.shape != ():
            raise ValueError(f"init takes the key of one chain, got a key array of {key.shape}")
        layout, _ = self.setup(z)  # checks the position and the preconditioner's structure
        t = jnp.zeros((), jnp.int32)
        u, g = self.value_and_grad(layout, layout.flatten(z), key, t, args)
        zero = jnp.zeros((), jnp.result_type(u))
        one = jnp.ones((), jnp.result_type(u))
        bad = ~jnp.isfinite(u if self.with_value else jnp.sum(jnp.square(g)))
        return SGLDState(t, z, u, layout.unflatten(g), zero, zero, one, bad, key)

    def step(self, state: SGLDState, args: tuple) -> SGLDState:
        layout, m = self.setup(state.z)
        xi = layout.noise(state.rng_key, state.i)
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


def _make_core(potential_fn, step_size, preconditioner, batch_fn) -> _Core:
    if not callable(potential_fn):
        raise ValueError(f"potential_fn must be callable, got {potential_fn!r}")
    if batch_fn is not None and not callable(batch_fn):
        raise ValueError(f"batch_fn must be None or callable, got {batch_fn!r}")
    schedule = _schedule(step_size)
    return _Core(potential_fn, schedule, _check_preconditioner(preconditioner), batch_fn)


def sgld_kernel(
    potential_fn: Callable[..., Scalar],
    *,
    step_size: float | Array | Schedule,
    preconditioner: PyTree | None = None,
    batch_fn: Callable[..., Any] | None = None,
) -> SGLDKernel:
    r"""SGLD for the energy ``potential_fn`` = $U$ (THEORY.md §2; Welling & Teh 2011).

    $\Theta_{t+1}=\Theta_t-\eta_t M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\,\xi_t$.

    Args:
      potential_fn: ``U(position, *args) -> scalar``, full batch (the default). With
        ``batch_fn``, ``U(position, batch, *args)`` must be an unbiased estimate of $U$ (see
        :func:`minibatch_potential`).
      step_size: $\eta$ (> 0), a scalar array (e.g. one per run under ``vmap``), or a
        schedule ``t -> eta_t`` (:func:`polynomial_step_size`, any optax schedule).
      preconditioner: $M$, a pytree with the position's structure whose positive leaves
        broadcast to the position's leaves (a scalar per block, or full arrays); constant in
        time, applied to drift and noise (THEORY.md §2).
      batch_fn: ``batch_fn(key, *args) -> batch``, the minibatch sampler.
    """
    core = _make_core(potential_fn, step_size, preconditioner, batch_fn)
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
    argument: ``run_chains(..., potential_fn, batch_fn=batch_fn, args=(data,))``.
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


# ----------------------------------------------------------------------------------------------
# The chain runner


class SGLDResult(NamedTuple):
    r"""What :func:`run_chains` returns; ``C`` chains, ``T`` steps, ``S`` draws.

    Steps are counted from 1: ``potential[c, t - 1]`` is $U(\Theta_t)$. Draws are the states at
    :func:`draw_steps`; an outer ``vmap`` over runs adds leading axes to every field.
    """

    draws: PyTree  # leaves (C, S, *leaf_shape), or draw_fn's outputs (C, S, *out_shape)
    potential: Float[Array, "C T"]  # U(Theta_t)
    drift_norm: Float[Array, "C T"]  # || eta M grad U(Theta_{t-1}) ||
    noise_norm: Float[Array, "C T"]  # || sqrt(2 eta M) xi_{t-1} ||
    accept_prob: Float[Array, "C T"]  # MALA acceptance proxy of Theta_{t-1} -> Theta_t
    draw_potential: Float[Array, "C S"]  # U at the draws
    draw_distance: Float[Array, "C S"]  # || Theta_draw - Theta_0 || (distance from the warm start)
    init_potential: Float[Array, " C"]  # U(Theta_0)
    finite: Bool[Array, " C"]  # no step had a non-finite U or MALA log-ratio
    last_state: SGLDState  # leaves (C, ...): continue with SGLD / sgld_kernel(...).step


def _chain_keys(key: Array, n_chains: int) -> Array:
    key = _as_key(key)
    if key.shape == ():
        return jax.random.split(key, n_chains)
    if key.shape != (n_chains,):
        raise ValueError(
            f"key must be one key or a batch of n_chains={n_chains} keys, got shape {key.shape}"
        )
    return key


def _noise_block(noise_block: int | None, size: int, n_steps: int) -> int:
    """The given block, or the largest divisor of ``n_steps`` within the automatic budget."""
    if noise_block is not None:
        return check_int("noise_block", noise_block, lo=1, hi=n_steps)
    cap = max(1, min(MAX_AUTO_NOISE_BLOCK, n_steps, AUTO_NOISE_ELEMENTS // max(size, 1)))
    return next(k for k in range(cap, 0, -1) if n_steps % k == 0)  # no tail loop to compile


def run_chains(
    key: Array,
    init_position: PyTree,
    potential_fn: Callable[..., Scalar],
    *,
    n_steps: int,
    step_size: float | Array | Schedule,
    burn_in: int = 0,
    thin: int = 1,
    n_chains: int = 1,
    args: tuple = (),
    preconditioner: PyTree | None = None,
    batch_fn: Callable[..., Any] | None = None,
    per_chain_init: bool = False,
    noise_block: int | None = None,
    record_potential: bool = True,
    draw_fn: Callable[..., PyTree] | None = None,
) -> SGLDResult:
    r"""Run ``n_chains`` SGLD chains for ``n_steps`` steps (``lax.scan`` x ``vmap`` over chains).

    $\Theta_{t+1}=\Theta_t-\eta_t M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\,\xi_t$ (THEORY.md §2);
    see :func:`sgld_kernel` for ``potential_fn``, ``step_size``, ``preconditioner`` and
    ``batch_fn``, which have the same meaning here.

    Args:
      key: one key (split into ``n_chains`` chain keys, as ``numpyro.infer.MCMC`` does) or a
        batch of ``n_chains`` chain keys.
      init_position: the warm start, shared by all chains; with ``per_chain_init=True`` every
        leaf has a leading axis of size ``n_chains``.
      n_steps: total steps $T$, burn-in included.
      burn_in, thin: draws are $\Theta_t$ for ``t in draw_steps(n_steps, burn_in, thin)``:
        ``(n_steps - burn_in) // thin`` states ending at the last one.
      args: extra arguments of ``potential_fn`` (and ``batch_fn``), e.g. the data of a run. To
        sweep, ``jax.vmap`` ``run_chains`` over keys, warm starts and ``args``.
      noise_block: draw the noise of this many steps in one call (same values, faster; memory
        ``noise_block x size`` per chain); ``None`` picks the largest divisor of ``n_steps`` up
        to ``MAX_AUTO_NOISE_BLOCK`` with at most ``AUTO_NOISE_ELEMENTS`` normals per chain; 1
        draws the noise inside each step.
      draw_fn: keep ``draw_fn(position, *args)`` (any pytree, e.g. observables) at each draw
        instead of the position, which is then never stored: ``draws`` leaves are
        ``(C, S, *out_shape)``.
      record_potential: ``False`` takes ``jax.grad`` instead of ``jax.value_and_grad`` (faster
        when the value costs extra work, e.g. a softplus likelihood); ``potential``,
        ``accept_prob``, ``draw_potential`` and ``init_potential`` are then NaN, ``finite``
        checks the gradient, and :func:`~copyhead_jax.sgld_diagnostics.chain_health` reports
        only divergences, distances and noise.

    Every ``int`` argument is static. Works under ``jit`` and ``vmap``.
    """
    n_steps = check_int("n_steps", n_steps, lo=1)
    burn_in = check_int("burn_in", burn_in, lo=0, hi=n_steps - 1)
    thin = check_int("thin", thin, lo=1, hi=n_steps - burn_in)
    n_chains = check_int("n_chains", n_chains, lo=1)
    if not isinstance(args, tuple):
        raise ValueError(f"args must be a tuple of extra potential_fn arguments, got {args!r}")
    if not isinstance(per_chain_init, bool):
        raise ValueError(f"per_chain_init must be a bool, got {per_chain_init!r}")
    if draw_fn is not None and not callable(draw_fn):
        raise ValueError(f"draw_fn must be None or callable, got {draw_fn!r}")
    if not isinstance(record_potential, bool):
        raise ValueError(f"record_potential must be a bool, got {record_potential!r}")
    core = _make_core(potential_fn, step_size, preconditioner, batch_fn)
    core = core._replace(with_value=record_potential)
    keys = _chain_keys(key, n_chains)
    if per_chain_init:
        for x in jax.tree.leaves(init_position):
            if jnp.ndim(x) < 1 or jnp.shape(x)[0] != n_chains:
                raise ValueError(
                    "with per_chain_init=True every init_position leaf needs a leading axis of "
                    f"size n_chains={n_chains}, got shape {jnp.shape(x)}"
                )
        one = jax.tree.map(lambda x: x[0], init_position)
    else:
        one = init_position
    layout = _Layout.of(one)
    block = _noise_block(noise_block, layout.size, n_steps)
    steps = draw_steps(n_steps, burn_in, thin)
    n_draws, first = len(steps), int(steps[0])

    def run_one(key: Array, z0: PyTree) -> SGLDResult:
        state = core.init(key, z0, args)
        layout, m = core.setup(z0)
        z, g = layout.flatten(z0), layout.flatten(state.z_grad)
        z0_flat = z

        def record(z):  # (what is kept of a draw, its distance from the warm start)
            kept = z if draw_fn is None else draw_fn(layout.unflatten(z), *args)
            return kept, jnp.sqrt(jnp.sum(jnp.square(z - z0_flat)))

        zero_rec = jax.tree.map(
            lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(record, z0_flat)
        )
        buf = jax.tree.map(lambda x: jnp.zeros((n_draws, *x.shape), x.dtype), zero_rec)

        def one_step(carry, inp):
            z, u, g, buf, bad = carry
            xi, t = inp  # t is unbatched: cond stays a branch, the write a dynamic_update_slice
            mv = core.move(layout, m, z, u, g, xi, t, key, args)
            is_draw = (t + 1 >= first) & ((t + 1 - first) % thin == 0)
            rec = lax.cond(is_draw, record, lambda _: zero_rec, mv.z)
            idx = jnp.clip((t + thin - first) // thin, 0, n_draws - 1)  # the draw's write is last
            buf = jax.tree.map(lambda b, r: lax.dynamic_update_index_in_dim(b, r, idx, 0), buf, rec)
            out = (mv.u, mv.drift_norm, mv.noise_norm, mv.accept_prob, mv.diverging)
            return (mv.z, mv.u, mv.g, buf, bad | mv.diverging), out

        def run_block(carry, t0, length):
            ts = t0 + jnp.arange(length, dtype=jnp.int32)
            if block == 1:
                return lax.scan(lambda c, t: one_step(c, (layout.noise(key, t), t)), carry, ts)
            xi = jax.vmap(lambda t: layout.noise(key, t))(ts)  # one call for `length` steps
            return lax.scan(one_step, carry, (xi, ts))

        carry = (z, state.potential_energy, g, buf, state.diverging)
        n_blocks, tail = divmod(n_steps, block)
        if block == 1:  # one flat scan, the noise drawn inside the step
            carry, outs = run_block(carry, jnp.int32(0), n_steps)
            tail = 0
        else:
            carry, outs = lax.scan(
                lambda c, t0: run_block(c, t0, block),
                carry,
                jnp.arange(n_blocks, dtype=jnp.int32) * block,
            )
            outs = [o.reshape(n_blocks * block) for o in outs]
        if tail:
            carry, tail_outs = run_block(carry, jnp.int32(n_blocks * block), tail)
            outs = [jnp.concatenate([o, p]) for o, p in zip(outs, tail_outs)]
        z, u_last, g, (kept, dist), bad = carry
        u, drift, noise, acc, div = outs
        last = SGLDState(
            i=jnp.full((), n_steps, jnp.int32),
            z=layout.unflatten(z),
            potential_energy=u_last,
            z_grad=layout.unflatten(g),
            drift_norm=drift[-1],
            noise_norm=noise[-1],
            accept_prob=acc[-1],
            diverging=div[-1],
            rng_key=key,
        )
        return SGLDResult(
            draws=jax.vmap(layout.unflatten)(kept) if draw_fn is None else kept,
            potential=u,
            drift_norm=drift,
            noise_norm=noise,
            accept_prob=acc,
            draw_potential=u[first - 1 :: thin],
            draw_distance=dist.astype(u.dtype),
            init_potential=state.potential_energy,
            finite=~bad & jnp.isfinite(u).all() if record_potential else ~bad,
            last_state=last,
        )

    return jax.vmap(run_one, in_axes=(0, 0 if per_chain_init else None))(keys, init_position)


# ----------------------------------------------------------------------------------------------
# NumPyro adapter


class SGLD(MCMCKernel):
    r"""SGLD as a ``numpyro.infer.mcmc.MCMCKernel`` (potential-function mode).

    ``MCMC(SGLD(potential_fn=U, step_size=eps), num_warmup=W, num_samples=S, num_chains=C,
    chain_method="vectorized").run(key, init_params=z0)`` with ``z0`` a dict whose leaves have a
    leading axis ``C`` gives the same chains as ``run_chains(key, z0, U, n_steps=W + S,
    burn_in=W, n_chains=C, per_chain_init=True, step_size=eps)`` (``C > 1``): MCMC splits ``key``
    into the chain keys the same way, and the noise of step ``t`` comes from ``fold_in(k_c, 2t)``
    in both. ``model_args`` are passed to ``potential_fn`` as extra positional arguments and
    ``model_kwargs`` as keyword arguments. Collect ``extra_fields=("potential_energy",
    "accept_prob", "drift_norm", "noise_norm")`` for the traces.
    """

    sample_field = "z"

    def __init__(
        self,
        potential_fn: Callable[..., Scalar],
        *,
        step_size: float | Array | Schedule,
        preconditioner: PyTree | None = None,
        batch_fn: Callable[..., Any] | None = None,
    ):
        self._core = _make_core(potential_fn, step_size, preconditioner, batch_fn)
        self.potential_fn = potential_fn
        self.step_size = step_size
        self._sample_fn = None  # set by init

    @property
    def model(self):
        return None

    @property
    def default_fields(self) -> tuple[str, ...]:
        return ("z", "diverging")

    def _with_kwargs(self, model_kwargs) -> _Core:
        if not model_kwargs:
            return self._core
        fn = self._core.potential_fn
        return self._core._replace(potential_fn=lambda *a: fn(*a, **model_kwargs))

    def init(self, rng_key, num_warmup, init_params, model_args=(), model_kwargs=None):
        if init_params is None:
            raise ValueError("SGLD needs init_params (the warm start) with potential_fn")
        core = self._with_kwargs(model_kwargs)
        fn = lambda key, z: core.init(key, z, tuple(model_args))
        # MCMC re-calls init (with init_params=None, e.g. from post_warmup_state) unless the
        # kernel has a `_sample_fn`, as NumPyro's HMC and SA do.
        self._sample_fn = self.sample
        if is_prng_key(rng_key):
            return fn(rng_key, init_params)
        return jax.vmap(fn)(rng_key, init_params)  # chain_method="vectorized"

    def sample(self, state: SGLDState, model_args=(), model_kwargs=None) -> SGLDState:
        core = self._with_kwargs(model_kwargs)
        fn = lambda s: core.step(s, tuple(model_args))
        return fn(state) if jnp.ndim(state.i) == 0 else jax.vmap(fn)(state)

    def refresh(self, state: SGLDState, model_args=(), model_kwargs=None) -> SGLDState:
        """Recompute ``U`` and ``grad U`` at ``state.z`` for new ``model_args`` (Gibbs blocks)."""
        core = self._with_kwargs(model_kwargs)

        def fn(s):
            layout = _Layout.of(s.z)
            z = layout.flatten(s.z)
            u, g = core.value_and_grad(layout, z, s.rng_key, s.i, tuple(model_args))
            return s._replace(
                potential_energy=u, z_grad=layout.unflatten(g), diverging=~jnp.isfinite(u)
            )

        return fn(state) if jnp.ndim(state.i) == 0 else jax.vmap(fn)(state)

    def get_diagnostics_str(self, state: SGLDState) -> str:
        u, acc = jnp.mean(state.potential_energy), jnp.mean(state.accept_prob)
        return f"U={float(u):.4g}, acc={float(acc):.2f}"
