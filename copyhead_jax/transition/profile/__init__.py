r"""The posterior's free-energy profile $F(a;P)=-\log p(a_G=a\mid{\rm data})$, and the Bayesian
transition it decides.

Why umbrella sampling: harmonic windows along $a_G$ make every part of the path a local,
mixing HMC problem (no chain has to cross the barrier between pooling and copying), and MBAR
joins them into one free-energy path whose error comes from independent replicas.

- ``landscape``   what a model gives: an energy, an order parameter, restrained minima, whitening
- ``umbrella``    HMC chains (``sampling.hmc.hmc_chains``) in every window; draws and diagnostics
- ``mbar``        the windows joined by MBAR (``pymbar``)
- ``basins``      the profile on bins, its basins, barrier and basin weights with their errors
- ``windows``     one profile: windows placed, prepared, sampled (range extended), joined, judged
- ``softmax``     a reduced softmax head's collapsed energy and its copy order parameter a_G
- ``copy_order``  a_G's gradient written out (the unmasked head)
- (the verdict, first order or crossover with P*, is ``compare.profile_verdict``)
- ``map_switch``  where the exact MAP switches, and whether it has coexistence
- ``settings``    the windows' default placement and sampling, the probes' search settings
- ``cost``        what a probe costs before it starts: evaluations and time, and its memory
- ``run``         ``profile_transition(cfg)``: probes per seed, verdict, JSON-ready result
- ``merge``       a run measured in parts (a few seeds each) joined into the whole run's result
"""

from ...compare.profile_verdict import Probe as Probe
from ...compare.profile_verdict import decide as decide
from ...compare.profile_verdict import over_seeds as over_seeds
from .merge import merge_seed_parts as merge_seed_parts
from .run import profile_transition as profile_transition
from .settings import FIXED_WINDOW_ITERS as FIXED_WINDOW_ITERS
from .settings import PROFILE_UMBRELLA as PROFILE_UMBRELLA
from .settings import SearchSettings as SearchSettings
from .settings import default_profile_settings as default_profile_settings
from .softmax import beta_of_aG as beta_of_aG
from .softmax import build_problem as build_problem
from .softmax import landscape as landscape
from .softmax import logit_start as logit_start
from .softmax import profile_config as profile_config
from .umbrella import UmbrellaSettings as UmbrellaSettings
from .umbrella import run_windows as run_windows
from .windows import ProfileSettings as ProfileSettings
from .windows import measure_profile as measure_profile
