"""The Bayesian transition: first order or crossover from the posterior's free-energy profile
(softmax, default), where two branches' free energies cross (softmax, ``method="ti"``), or where
the posterior copy fraction passes 1/2 (linear).

- ``method``        ``transition(cfg, method=...)``: the profile method or branch TI
- ``profile/``      the posterior's free-energy profile in a_G (umbrella windows, MBAR), its
                    basins and the verdict, per seed; ``profile_transition(cfg)``
- ``search``        branch TI's ``transition(cfg)``: probes per seed, their groups
- ``ti_result``     branch TI's result: the seeds assembled into P*, the SMC cross-check
- ``ti_cost``       what branch TI will cost, said before it starts: evaluations and time
- ``plan``          where the groups go: padded group sizes, a later seed's first probes, one
                    seed's probing loop (``seed_probes``)
- ``root``          a P* from a free-energy difference at a few P: next probe, seeds
                    combined, the bracket slope a later seed borrows; the root and its error
                    budget are the one crossing rule, ``compare.root.crossing``, re-exported
- ``branch_group``  one (seed, P) group: both branches' free energies by Laplace-referenced
                    constrained TI, and a tempered-SMC copy weight
- ``ti_settings``   what a group is asked to do (``TISettings``, the rung schedules) and the
                    bytes it needs
- ``branch_ti``     the free energy of one branch: constrained, Laplace-referenced TI on
                    collapsed-HMC rungs
- ``smc``           adaptive tempered SMC over a batch of independent problems
- ``store``         what ``copyhead transition`` keeps: its result's atomic JSON, the key of its
                    groups' records (kept on the run harness), the reused MAP sweeps
- ``linear``        the linear head's posterior crossover psi = 1/2
- ``branch_runs``   branch TI and SMC over a batch of runs of reduced sweeps (several P and seeds
                    in one program, from given reference MAPs)
- ``laplace_sgld``  the free energy of each softmax branch of a reduced sweep by
                    Laplace-referenced TI with whitened SGLD, WBIC beside

Several modules have a ``free_energies`` of their own; reach those through the module
(``transition.branch_runs``, ``transition.laplace_sgld``).
"""

from .branch_group import BRANCHES as BRANCHES
from .branch_group import SIDE as SIDE
from .branch_group import a_G as a_G
from .branch_group import ti_programs as ti_programs
from .branch_runs import cpu_seconds as cpu_seconds
from .branch_ti import branch_log_z as branch_log_z
from .branch_ti import path_rungs as path_rungs
from .branch_ti import reference_mass as reference_mass
from .linear import linear_transition as linear_transition
from .method import transition as transition
from .plan import pad_of as pad_of
from .plan import seed_probes as seed_probes
from .profile import FIXED_WINDOW_ITERS as FIXED_WINDOW_ITERS
from .profile import PROFILE_UMBRELLA as PROFILE_UMBRELLA
from .profile import SearchSettings as SearchSettings
from .profile import default_profile_settings as default_profile_settings
from .profile import profile_transition as profile_transition
from .root import Crossing as Crossing
from .root import anchored_root as anchored_root
from .root import bracket_slope as bracket_slope
from .root import combine_seeds as combine_seeds
from .root import crossing as crossing
from .root import next_probe as next_probe
from .root import pooled_slope as pooled_slope
from .search import transition_config as transition_config
from .smc import SMCResult as SMCResult
from .smc import hmc_move as hmc_move
from .smc import tempered_smc as tempered_smc
from .store import json_default as json_default
from .store import run_key as run_key
from .ti_settings import RUNG_SCHEDULES as RUNG_SCHEDULES
from .ti_settings import TISettings as TISettings
from .ti_settings import rung_ts as rung_ts
