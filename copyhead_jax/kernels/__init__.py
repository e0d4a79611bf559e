"""Generic MCMC kernels over a flat vector ``w`` and a potential ``U(w)`` (no engine import).

- ``hmc``  HMC with a diagonal mass (unit, or adapted in Stan's windows; the caller whitens),
  per-iteration step jitter, an optional region whose outside proposals are rejected, and
  dual-averaging step adaptation: the one kernel of the collapsed sampler
  (``sample_reduced``), branch TI and tempered SMC (``bayes``).
"""

from .hmc import HMC_ADAPT as HMC_ADAPT
from .hmc import LEAPFROG as LEAPFROG
from .hmc import TARGET_ACCEPT as TARGET_ACCEPT
from .hmc import DualAveraging as DualAveraging
from .hmc import HMCChain as HMCChain
from .hmc import dual_averaging_init as dual_averaging_init
from .hmc import dual_averaging_update as dual_averaging_update
from .hmc import hmc_chain as hmc_chain
from .hmc import hmc_transition as hmc_transition
