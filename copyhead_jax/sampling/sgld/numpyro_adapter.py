r"""SGLD as a ``numpyro.infer.mcmc.MCMCKernel``: the only module of the package importing numpyro.

Two modes, as NumPyro's own kernels have:

* ``SGLD(model=m, step_size=eps)``: ``MCMC(...).run(key, *model_args, **model_kwargs)`` finds
  the warm start with ``init_strategy``, samples the model's latent sites in unconstrained space
  (``numpyro.infer.util.initialize_model``: potential and transforms) and returns samples in
  constrained space through :meth:`SGLD.postprocess_fn`;
* ``SGLD(potential_fn=U, step_size=eps)``: ``U(z, *model_args, **model_kwargs)`` on any pytree
  ``z``; ``MCMC.run(key, init_params=z0)`` with the warm start. Under ``chain_method=
  "vectorized"`` (``z0`` leaves with a leading axis ``C > 1``) the chains equal ``sgld_chains(key,
  z0, U, n_steps=W + S, burn_in=W, n_chains=C, per_chain_init=True, step_size=eps)``: MCMC
  splits ``key`` into the chain keys the same way, and the noise of step ``t`` comes from
  ``fold_in(k_c, 2t)`` in both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.mcmc import MCMCKernel
from numpyro.infer.util import ParamInfo, initialize_model
from numpyro.util import identity, is_prng_key

from ._kernel import Core, Scalar, SGLDState, make_core
from ._layout import Layout, PyTree
from ._schedules import Schedule

__all__ = ["SGLD"]


def _no_potential(*args, **kwargs):
    raise RuntimeError("SGLD(model=...) builds its potential in init (MCMC.run calls it)")


class SGLD(MCMCKernel):
    r"""SGLD (:func:`~copyhead_jax.sampling.sgld.sgld_kernel`) for ``numpyro.infer.MCMC``.

    Args:
      model: a NumPyro model; its arguments are those of ``MCMC.run(key, *args, **kwargs)``.
      potential_fn: or the energy ``U(z, *args, **kwargs)`` directly (``init_params`` needed).
      step_size, preconditioner, batch_fn, noise: as in :func:`~.sgld_kernel`
        (with ``model``, the position is the dict of unconstrained latent sites).
      init_strategy: with ``model``, NumPyro's initialisation strategy (default
        ``init_to_uniform``), used when ``MCMC.run`` gets no ``init_params``.

    Collect ``extra_fields=("potential_energy", "accept_prob", "drift_norm", "noise_norm")``
    for the traces. ``model`` and ``potential_fn`` are keyword-only: NumPyro routes a positional
    callable to ``model`` and this class once routed it to ``potential_fn``, so a positional
    argument is refused rather than guessed.
    """

    sample_field = "z"

    def __init__(
        self,
        *positional: Any,
        model: Callable[..., Any] | None = None,
        potential_fn: Callable[..., Scalar] | None = None,
        step_size: float | Array | Schedule,
        preconditioner: PyTree | None = None,
        batch_fn: Callable[..., Any] | None = None,
        init_strategy: Callable[..., Any] = init_to_uniform,
        noise: str = "threefry",
    ):
        if positional:
            raise ValueError(
                "SGLD takes its target by keyword: SGLD(model=..., step_size=...) for a NumPyro "
                "model, or SGLD(potential_fn=..., step_size=...) for an energy U(z, *args); got "
                f"{len(positional)} positional argument(s)"
            )
        if (model is None) == (potential_fn is None):
            raise ValueError("SGLD needs exactly one of model= or potential_fn=")
        if model is not None and not callable(model):
            raise ValueError(f"model must be a callable NumPyro model, got {model!r}")
        if not callable(init_strategy):
            raise ValueError(f"init_strategy must be callable, got {init_strategy!r}")
        pot = _no_potential if potential_fn is None else potential_fn
        self._core = make_core(pot, step_size, preconditioner, batch_fn, noise)
        self._model = model
        self._init_strategy = init_strategy
        self.potential_fn = potential_fn
        self.step_size = step_size
        self._potential_fn_gen = None  # model mode: args -> (z -> U), set by init
        self._postprocess_fn = None  # model mode: args -> (unconstrained z -> constrained sites)
        self._sample_fn = None  # set by init

    @property
    def model(self):
        return self._model

    @property
    def default_fields(self) -> tuple[str, ...]:
        return ("z", "diverging")

    def _core_for(self, model_kwargs) -> Core:
        kwargs = dict(model_kwargs or {})
        if self._model is not None:
            gen = self._potential_fn_gen
            return self._core._replace(potential_fn=lambda z, *a: gen(*a, **kwargs)(z))
        if not kwargs:
            return self._core
        fn = self._core.potential_fn
        return self._core._replace(potential_fn=lambda *a: fn(*a, **kwargs))

    def _init_model(self, rng_key, init_params, model_args, model_kwargs):
        """The chain key(s), and the warm start from ``init_strategy`` (as NumPyro's HMC)."""
        if is_prng_key(rng_key):
            rng_key, key_init = jax.random.split(rng_key)
        else:
            rng_key, key_init = jnp.swapaxes(jax.vmap(jax.random.split)(rng_key), 0, 1)
        info = initialize_model(
            key_init,
            self._model,
            init_strategy=self._init_strategy,
            dynamic_args=True,
            model_args=tuple(model_args),
            model_kwargs=dict(model_kwargs or {}),
        )
        self._potential_fn_gen = info.potential_fn
        self._postprocess_fn = info.postprocess_fn
        if init_params is None:
            init_params = info.param_info.z
        elif isinstance(init_params, ParamInfo):
            init_params = init_params.z
        return rng_key, init_params

    def init(self, rng_key, num_warmup, init_params, model_args=(), model_kwargs=None):
        if self._model is not None:
            rng_key, init_params = self._init_model(rng_key, init_params, model_args, model_kwargs)
        elif init_params is None:
            raise ValueError("SGLD needs init_params (the warm start) with potential_fn")
        core = self._core_for(model_kwargs)
        fn = lambda key, z: core.init(key, z, tuple(model_args))
        # MCMC re-calls init (with init_params=None, e.g. from post_warmup_state) unless the
        # kernel has a `_sample_fn`, as NumPyro's HMC and SA do.
        self._sample_fn = self.sample
        if is_prng_key(rng_key):
            return fn(rng_key, init_params)
        return jax.vmap(fn)(rng_key, init_params)  # chain_method="vectorized"

    def postprocess_fn(self, model_args, model_kwargs):
        """Unconstrained ``z`` -> constrained sites and deterministic ones (model mode)."""
        if self._postprocess_fn is None:
            return identity
        return self._postprocess_fn(*model_args, **(model_kwargs or {}))

    def sample(self, state: SGLDState, model_args=(), model_kwargs=None) -> SGLDState:
        core = self._core_for(model_kwargs)
        fn = lambda s: core.step(s, tuple(model_args))
        return fn(state) if jnp.ndim(state.i) == 0 else jax.vmap(fn)(state)

    def refresh(self, state: SGLDState, model_args=(), model_kwargs=None) -> SGLDState:
        """Recompute ``U`` and ``grad U`` at ``state.z`` for new ``model_args`` (Gibbs blocks)."""
        core = self._core_for(model_kwargs)

        def fn(s):
            layout = Layout.of(s.z)
            z = layout.flatten(s.z)
            u, g = core.value_and_grad(layout, z, s.rng_key, s.i, tuple(model_args))
            return s._replace(
                potential_energy=u, z_grad=layout.unflatten(g), diverging=~jnp.isfinite(u)
            )

        return fn(state) if jnp.ndim(state.i) == 0 else jax.vmap(fn)(state)

    def get_diagnostics_str(self, state: SGLDState) -> str:
        u, acc = jnp.mean(state.potential_energy), jnp.mean(state.accept_prob)
        return f"U={float(u):.4g}, acc={float(acc):.2f}"
