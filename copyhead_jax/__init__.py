"""copyhead_jax: Bayesian copy-head emergence in one attention head, in JAX.

Code map, in data-flow order:

- ``config``       frozen configs (TaskConfig, ModelConfig, PosteriorConfig, TrainConfig,
                   SweepConfig); sampler configs ``SGLDConfig``, ``HMCConfig``; solver configs
                   ``AdamConfig``, ``ExactConfig``, ``AutoConfig`` (``TrainConfig.solver``)
- ``presets``      ``PAPER``, ``PLAIN``, ``SMALL``, ``TINY``, ``preset(name)``
- ``data``         the copy task: one-hot tokens, targets y^a = x^{a-1}, nested P datasets
- ``sources``      token sources: i.i.d. or a stationary Markov chain (rho, Dirichlet, given T)
- ``models``       ``LinearHead`` / ``SoftmaxHead`` (Equinox, muP), ``init_head`` from the prior
- ``posterior``    ``neg_log_posterior``: the one objective U shared by Adam and SGLD
- ``train``        full-batch Adam with the paper's protocol, many runs in one compiled program
- ``observables``  order parameters (c1, cG) / (a1, aG), subspace coverage, copy accuracy
- ``results``      ``SweepResult``, ``PosteriorResult`` (save/load, ok flags)
- ``storage``      result files: schema, atomic writes, locks, environment metadata
- ``kernels``      the one HMC kernel (+ dual averaging) and the one R-hat/ESS
- ``sgld``         SGLD kernel, ``run_chains``, chain health; ``SGLD`` (NumPyro, lazy)
- ``sweep``        ``run_sweep``: chunks, progress, resume, per-run failure flags
- ``sample``       ``run_sampler(sweep, SGLDConfig | HMCConfig)``: the posterior of every run
                   (SGLD on full sweeps, collapsed HMC from fit/branch/prior starts on reduced)
- ``bayes``        susceptibility with MCSE, LLC (devinterp), free energy by TI, WBIC
- ``posterior_transition``  ``transition(cfg)``: the Bayesian P* of any configuration
- ``arviz_io``     ``to_arviz``: a posterior as ArviZ InferenceData / DataTree (lazy arviz)
- ``fanout``       ``map_groups``: independent groups serially, in processes or on Dask
- ``plots``        figures from results
- ``theory``       the effective action S(G), reduced potentials, P*, scaling (pure JAX)
- ``cli``          the ``copyhead`` command
"""

from . import _runtime as _runtime  # first: sets PJRT_NPROC before the CPU backend starts
from . import config as config
from . import sources as sources
from ._checks import check_output_folder as check_output_folder
from ._checks import check_output_path as check_output_path
from ._runtime import catch_sigterm as catch_sigterm
from ._runtime import exit_now as exit_now
from ._runtime import interrupt_status as interrupt_status
from .config import PAPER as PAPER
from .config import PLAIN as PLAIN
from .config import PRESETS as PRESETS
from .config import SMALL as SMALL
from .config import TINY as TINY
from .config import AdamConfig as AdamConfig
from .config import AutoConfig as AutoConfig
from .config import Config as Config
from .config import ExactConfig as ExactConfig
from .config import HMCConfig as HMCConfig
from .config import ModelConfig as ModelConfig
from .config import PosteriorConfig as PosteriorConfig
from .config import SGLDConfig as SGLDConfig
from .config import SweepConfig as SweepConfig
from .config import TaskConfig as TaskConfig
from .config import TrainConfig as TrainConfig
from .config import preset as preset
from .data import copy_targets as copy_targets
from .data import one_hot as one_hot
from .data import sample_tokens as sample_tokens
from .models import AbstractHead as AbstractHead
from .models import LinearHead as LinearHead
from .models import SoftmaxHead as SoftmaxHead
from .models import head_class as head_class
from .models import init_head as init_head
from .objective import Objective as Objective
from .objective import neg_log_posterior as neg_log_posterior
from .observables import measure as measure
from .observables import order_parameters as order_parameters
from .observables import shift_operator as shift_operator
from .results import PosteriorResult as PosteriorResult
from .results import SweepResult as SweepResult
from .runner import fanout as fanout
from .sampling import PAPER_SGLD as PAPER_SGLD
from .sampling import default_sampler as default_sampler
from .sampling import local_learning_coefficient as local_learning_coefficient
from .sampling import run_chains as run_chains
from .sampling import run_sampler as run_sampler
from .sampling import sgld_kernel as sgld_kernel
from .sampling import susceptibility as susceptibility
from .sampling import thermodynamic_integration as thermodynamic_integration
from .sampling import to_arviz as to_arviz
from .sampling import wbic as wbic
from .sweep import run_sweep as run_sweep
from .transition import transition as transition

__version__ = "0.1.0"


#: ``ch.bayes``: the names of the former ``bayes/`` namespace, which now live in ``sampling``
#: (statistics, TI, WBIC, LLC) and ``transition`` (branch TI, SMC, the root of a P*)
_BAYES = {
    "sampling": ("ChainSummary", "LLCResult", "Susceptibility", "TIResult", "WBICResult",
                 "beta_ladder", "default_nbeta", "ess", "local_learning_coefficient",
                 "mcse_mean", "run_mean", "run_susceptibility", "split_rhat", "susceptibility",
                 "thermodynamic_integration", "ti_quadrature", "wbic"),
    "transition": ("HMCStats", "SMCResult", "anchored_root", "branch_log_z", "bracket_slope",
                   "combine_seeds", "crossing", "hmc_chains", "hmc_move", "next_probe",
                   "path_rungs", "pooled_slope", "reference_mass", "tempered_smc"),
}  # fmt: skip


def __getattr__(name: str):
    if name == "SGLD":  # lazily: the NumPyro adapter imports numpyro
        from .sampling import SGLD

        return SGLD
    if name == "bayes":
        import importlib
        import types

        ns = types.SimpleNamespace()
        for folder, names in _BAYES.items():
            face = importlib.import_module(f"{__name__}.{folder}")
            for n in names:
                setattr(ns, n, getattr(face, n))
        return ns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
