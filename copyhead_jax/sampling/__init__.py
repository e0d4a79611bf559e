"""The posterior of every run of a sweep: kernels, chains, starts, health, estimators, LLC.

- ``chains``         the one chain loop: ``Kernel`` (``init`` / ``step`` / ``warmup``, NumPyro's
                     contract) and ``run_chains`` (scan over steps, vmap or lax.map over chains)
- ``hmc``            the HMC kernel (diagonal mass, step jitter, an optional region, adaptation
                     in its warm-up) and ``hmc_chains``, the chain batch of the collapsed
                     sampler, branch TI and SMC
- ``sgld/``          the SGLD kernel (NumPyro contract), ``sgld_chains``, chain diagnostics;
                     ``SGLD``, the NumPyro adapter (numpyro imported on first use)
- ``stats``          split R-hat, ESS, MCSE of a mean, susceptibility with its error
- ``collapsed``      the collapsed posterior of a reduced head: the readout integrated out
- ``sampler``        ``Sampler``: what a draw records, and the program contract of a sampler
- ``full_sgld``      ``FullSGLD``, the program of ``SGLDConfig``: SGLD on every weight of a
                     full-engine sweep
- ``collapsed_hmc``  ``CollapsedHMC``, the program of ``HMCConfig``: collapsed HMC on a reduced
                     sweep; the joint whitening and the NUTS reference
- ``starts``         chain starts (fit, both branches, prior), branch weights, between-start R-hat
- ``records``        per-sequence log-likelihoods and weights of the draws
- ``health``         chain health per run: R-hat/ESS arrays, Var(U) check, warnings
- ``run``            ``run_sampler(sweep, SGLDConfig | HMCConfig)``: every run's chains, the
                     program chosen by the config's type (``SAMPLERS``)
- ``estimators``     posterior mean and susceptibility per run ``[P, seed]``
- ``summary``        per-run summaries of a reduced sweep's posterior and their tables
- ``free_energy``    free energy by thermodynamic integration, WBIC; tempered SGLD chains
- ``llc``            the local learning coefficient in devinterp's conventions
- ``llc_chains``     one chain set of ``copyhead llc`` (one P, one estimator, every seed),
                     built from the config alone
- ``llc_runs``       LLC and WBIC of every run of a sweep (``copyhead llc``)
- ``arviz``          ``to_arviz``, ``save_netcdf``: a posterior as ArviZ data (arviz lazily)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .arviz import NETCDF_SUFFIXES as NETCDF_SUFFIXES
from .arviz import save_netcdf as save_netcdf
from .arviz import to_arviz as to_arviz
from .chains import Chains as Chains
from .chains import Kernel as Kernel
from .chains import batch_chains as batch_chains
from .chains import map_chains as map_chains
from .chains import run_chains as run_chains
from .collapsed import draw_observed as draw_observed
from .collapsed import draw_readout as draw_readout
from .collapsed import marginal_energy as marginal_energy
from .collapsed import marginal_whitening as marginal_whitening
from .collapsed import observed_from_moments as observed_from_moments
from .collapsed import with_WG as with_WG
from .collapsed_hmc import CollapsedHMC as CollapsedHMC
from .collapsed_hmc import collapsed_target as collapsed_target
from .collapsed_hmc import nuts_reference as nuts_reference
from .collapsed_hmc import whitened_potential as whitened_potential
from .estimators import run_mean as run_mean
from .estimators import run_susceptibility as run_susceptibility
from .free_energy import ChainSummary as ChainSummary
from .free_energy import TIResult as TIResult
from .free_energy import WBICResult as WBICResult
from .free_energy import beta_ladder as beta_ladder
from .free_energy import thermodynamic_integration as thermodynamic_integration
from .free_energy import ti_quadrature as ti_quadrature
from .free_energy import wbic as wbic
from .full_sgld import PAPER_SGLD as PAPER_SGLD
from .full_sgld import FullSGLD as FullSGLD
from .hmc import HMC_ADAPT as HMC_ADAPT
from .hmc import LEAPFROG as LEAPFROG
from .hmc import TARGET_ACCEPT as TARGET_ACCEPT
from .hmc import HMCChains as HMCChains
from .hmc import HMCState as HMCState
from .hmc import hmc_chains as hmc_chains
from .hmc import hmc_kernel as hmc_kernel
from .hmc import hmc_transition as hmc_transition
from .llc import LLCResult as LLCResult
from .llc import default_nbeta as default_nbeta
from .llc import local_learning_coefficient as local_learning_coefficient
from .llc_runs import LLCSettings as LLCSettings
from .llc_runs import devinterp_sweep as devinterp_sweep
from .llc_runs import llc_runs as llc_runs
from .run import REDUCED_HMC as REDUCED_HMC
from .run import REDUCED_HMC_LINEAR as REDUCED_HMC_LINEAR
from .run import SAMPLERS as SAMPLERS
from .run import default_sampler as default_sampler
from .run import draw_fields as draw_fields
from .run import run_sampler as run_sampler
from .run import sampler_for as sampler_for
from .run import whiten_runs as whiten_runs
from .sampler import DrawStats as DrawStats
from .sampler import Sampler as Sampler
from .sgld import sgld_chains as sgld_chains
from .sgld import sgld_kernel as sgld_kernel
from .stats import Susceptibility as Susceptibility
from .stats import ess as ess
from .stats import mcse_mean as mcse_mean
from .stats import split_rhat as split_rhat
from .stats import susceptibility as susceptibility
from .summary import branch_summary as branch_summary
from .summary import merge_seeds as merge_seeds
from .summary import verdicts as verdicts

if TYPE_CHECKING:
    from .sgld import SGLD as SGLD


def __getattr__(name: str) -> Any:
    if name == "SGLD":  # lazily: the adapter imports numpyro
        from .sgld import SGLD

        return SGLD
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
