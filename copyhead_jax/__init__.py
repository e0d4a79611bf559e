"""copyhead_jax: Bayesian copy-head emergence in one attention head, in JAX.

Code map, in data-flow order (folders end in /; docs/guide/architecture.md has the detail):

- ``_runtime``, ``_types``, ``_checks``, ``_warn``, ``storage``  the ground: the XLA thread
                 guard and signal handling, array aliases, validators, the warning categories,
                 result files (schema, atomic writes, locks, environment metadata)
- ``conventions``  what engine and theory share: effective P and noise per likelihood
                 convention, the shift matrix and ansatz basis, projection, copy fraction
- ``data``, ``sources``  the copy task (one-hot tokens, y^a = x^{a-1}, nested P datasets) and
                 its token sources (i.i.d. or a stationary Markov chain)
- ``config/``    frozen configs (``Config`` and its sections; ``AdamConfig``, ``ExactConfig``,
                 ``AutoConfig``; ``SGLDConfig``, ``HMCConfig``) and the presets and
                 readings (``preset(name, reading=...)``)
- ``theory/``    the EK action, reduced potentials, every minimum, P*, scaling (pure JAX);
                 ``compare/`` where theory and measurement meet (both import only the core)
- ``runner/``    how work runs: checkpointed chunks, the memory budget, devices, ``map_groups``
- ``models/``    ``LinearHead`` / ``SoftmaxHead`` (Equinox, muP), the exact width reduction
- ``objective``  ``neg_log_posterior``: the one objective U of Adam, the exact solver and SGLD
- ``observables``  order parameters (c1, cG) / (a1, aG), subspace coverage, copy accuracy
- ``results``    ``SweepResult``, ``PosteriorResult`` (save/load, ok flags)
- ``fit/``       MAP fits: Adam with the paper's protocol, the exact float64 solver,
                 continuation in P, polish
- ``sampling/``  the posterior of every run: HMC and SGLD kernels, ``run_sampler``, chain
                 health, R-hat/ESS, susceptibility, TI, WBIC, LLC, ArviZ export
- ``sweep/``     ``run_sweep``: every (P, seed) run of a config; the experiments' engine
- ``transition/``  ``transition(cfg)``: the Bayesian P* of any configuration
- ``embeddings/``  the trained-embedding studies (Gram change, joint MAP, full posterior)
- ``plots/``     figures: a result in, a ``Figure`` out
- ``cli/``       the ``copyhead`` command

``ch.bayes`` (the former posterior-statistics namespace) keeps its names, now defined in
``sampling`` and ``transition``; ``ch.SGLD`` imports numpyro on first use.
"""

from . import _runtime as _runtime  # first: sets PJRT_NPROC before the CPU backend starts
from . import config as config
from . import sources as sources
from ._checks import Output as Output
from ._checks import check_output_folder as check_output_folder
from ._checks import check_output_path as check_output_path
from ._checks import check_paths as check_paths
from ._checks import same_path as same_path
from ._runtime import catch_sigterm as catch_sigterm
from ._runtime import exit_now as exit_now
from ._runtime import interrupt_status as interrupt_status
from ._warn import CopyheadWarning as CopyheadWarning
from ._warn import RunHealthWarning as RunHealthWarning
from .config import PAPER as PAPER
from .config import PLAIN as PLAIN
from .config import PRESETS as PRESETS
from .config import READINGS as READINGS
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
from .sampling import hmc_kernel as hmc_kernel
from .sampling import local_learning_coefficient as local_learning_coefficient
from .sampling import run_chains as run_chains
from .sampling import run_sampler as run_sampler
from .sampling import sgld_chains as sgld_chains
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
    "sampling": (
        "ChainSummary",
        "LLCResult",
        "Susceptibility",
        "TIResult",
        "WBICResult",
        "beta_ladder",
        "default_nbeta",
        "ess",
        "local_learning_coefficient",
        "mcse_mean",
        "run_mean",
        "run_susceptibility",
        "split_rhat",
        "susceptibility",
        "thermodynamic_integration",
        "ti_quadrature",
        "wbic",
    ),
    "transition": (
        "SMCResult",
        "anchored_root",
        "branch_log_z",
        "bracket_slope",
        "combine_seeds",
        "crossing",
        "hmc_move",
        "next_probe",
        "path_rungs",
        "pooled_slope",
        "reference_mass",
        "tempered_smc",
    ),
}


def __getattr__(name: str):
    if name == "SGLD":  # lazily: the NumPyro adapter imports numpyro
        from .sampling import SGLD

        return SGLD
    if name == "bayes":  # lazily: the faces of sampling/ and transition/, by plain imports
        import sys
        import types

        from . import sampling
        from .transition import crossing  # noqa: F401  (loads the face; the package's own
        # ``transition`` attribute is the command's function, so the face is read from sys.modules)

        faces = {"sampling": sampling, "transition": sys.modules[f"{__name__}.transition"]}
        ns = types.SimpleNamespace()
        for folder, names in _BAYES.items():
            for n in names:
                setattr(ns, n, getattr(faces[folder], n))
        return ns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
