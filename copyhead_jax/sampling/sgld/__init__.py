r"""Stochastic-gradient Langevin dynamics (SGLD) on any pytree position (docs/theory.md §2).

$$\Theta_{t+1}=\Theta_t-\eta_t\,M\nabla U(\Theta_t)+\sqrt{2\eta_t M}\;\xi_t,
\qquad \xi_t\sim\mathcal N(0,I),$$

with temperature 1 on the energy $U$ (Welling & Teh 2011, eq. 4, whose step $\epsilon_t$ is our
$2\eta_t$) and $M$ an optional constant per-block preconditioner applied to drift and noise
alike. In loss units ($U=\frac{\chi}{\sigma^2}\mathcal L$) pass ``step_size = eta_loss * sigma2 /
chi``.

The parts, in data-flow order:

- ``_schedules``     step sizes: ``constant_step_size``, ``polynomial_step_size``
- ``_noise``         chain keys and counter-mode normals: step t of chain c draws from
                     ``fold_in(k_c, 2t)``, so draws depend only on ``(k_c, t)``
- ``_layout``        the position pytree as one flat vector
- ``_kernel``        ``SGLDState``, ``sgld_kernel`` (pure ``init`` / ``step``),
                     ``minibatch_potential``
- ``_runner``        ``sgld_chains`` (``lax.scan`` x ``vmap``), ``SGLDResult``, ``draw_steps``
- ``diagnostics``    ``chain_health``, ``health_warnings``: split R-hat, ESS, MALA proxy (NumPy)
- ``numpyro_adapter`` ``SGLD``, the ``numpyro.infer.MCMC`` kernel; imported (with numpyro) only
                     when ``SGLD`` is first used

:func:`sgld_chains`, ``SGLD`` under ``MCMC(..., chain_method="vectorized")`` and a sequential loop
of ``sgld_kernel(...).step`` give the same chain.

References: M. Welling and Y. W. Teh, *Bayesian learning via stochastic gradient Langevin
dynamics*, ICML 2011. G. O. Roberts and R. L. Tweedie, *Exponential convergence of Langevin
distributions and their discrete approximations*, Bernoulli 2 (1996) (MALA, used for the
acceptance proxy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._kernel import SGLDKernel as SGLDKernel
from ._kernel import SGLDState as SGLDState
from ._kernel import minibatch_potential as minibatch_potential
from ._kernel import sgld_kernel as sgld_kernel
from ._noise import NOISE as NOISE
from ._runner import SGLDResult as SGLDResult
from ._runner import draw_steps as draw_steps
from ._runner import sgld_chains as sgld_chains
from ._schedules import constant_step_size as constant_step_size
from ._schedules import polynomial_step_size as polynomial_step_size
from .diagnostics import ChainHealth as ChainHealth
from .diagnostics import chain_health as chain_health
from .diagnostics import ess as ess
from .diagnostics import health_warnings as health_warnings
from .diagnostics import split_rhat as split_rhat

if TYPE_CHECKING:
    from .numpyro_adapter import SGLD as SGLD

__all__ = [
    "NOISE",
    "SGLD",
    "ChainHealth",
    "SGLDKernel",
    "SGLDResult",
    "SGLDState",
    "chain_health",
    "constant_step_size",
    "draw_steps",
    "ess",
    "health_warnings",
    "minibatch_potential",
    "polynomial_step_size",
    "sgld_chains",
    "sgld_kernel",
    "split_rhat",
]


def __getattr__(name: str) -> Any:
    if name == "SGLD":  # lazily: the adapter imports numpyro
        from .numpyro_adapter import SGLD

        return SGLD
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"SGLD"})
