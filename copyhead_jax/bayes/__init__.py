r"""Posterior-science estimators, generic over a potential $n\beta L_n+\Phi$ (issue 12).

- ``stats``        split R-hat, ESS, MCSE of a mean, susceptibility $n\,\mathrm{Var}$ with errors
- ``llc``          the local learning coefficient $\hat\lambda$ (devinterp's conventions)
- ``free_energy``  $F=-\log Z$ by thermodynamic integration over $\beta$; WBIC
- ``branch_ti``    free energy of one branch: constrained, Laplace-referenced TI on HMC rungs
- ``smc``          adaptive tempered SMC (batched problems, any invariant kernel)
- ``transition``   a P* from a free-energy difference at a few P: probes, root, error budget
- ``runs``         per run ``[P, seed]`` of a ``PosteriorResult``: susceptibility, mean, MCSE

$L_n$ is the per-sample negative log-likelihood (``nll_fn(w, *args)``), $\Phi$ the prior energy
(``prior_fn(w)``); every sampler is :func:`copyhead_jax.sgld.run_chains` at temperature 1.
"""

from ._tempered import ChainSummary as ChainSummary
from .branch_ti import HMCStats as HMCStats
from .branch_ti import branch_log_z as branch_log_z
from .branch_ti import hmc_chains as hmc_chains
from .branch_ti import path_rungs as path_rungs
from .branch_ti import reference_mass as reference_mass
from .free_energy import TIResult as TIResult
from .free_energy import WBICResult as WBICResult
from .free_energy import beta_ladder as beta_ladder
from .free_energy import thermodynamic_integration as thermodynamic_integration
from .free_energy import ti_quadrature as ti_quadrature
from .free_energy import wbic as wbic
from .llc import LLCResult as LLCResult
from .llc import default_nbeta as default_nbeta
from .llc import local_learning_coefficient as local_learning_coefficient
from .runs import run_mean as run_mean
from .runs import run_susceptibility as run_susceptibility
from .smc import SMCResult as SMCResult
from .smc import hmc_move as hmc_move
from .smc import tempered_smc as tempered_smc
from .stats import Susceptibility as Susceptibility
from .stats import ess as ess
from .stats import mcse_mean as mcse_mean
from .stats import split_rhat as split_rhat
from .stats import susceptibility as susceptibility
from .transition import anchored_root as anchored_root
from .transition import bracket_slope as bracket_slope
from .transition import combine_seeds as combine_seeds
from .transition import crossing as crossing
from .transition import next_probe as next_probe
from .transition import pooled_slope as pooled_slope
