"""MAP sweeps: every (P, seed) run of a config, and the experiments' engine over them.

- ``run``            ``run_sweep``: chunks of one compiled program, progress, resume, per-run
                     failure and divergence flags; the solver config chooses its program
- ``refine``         ``Runs``: sweeps at any subsets of P merged by P, the continuation in P over
                     their union; ``group_P`` (P grouped into programs by a cost model),
                     ``adaptive`` (the grid refined near each located feature),
                     ``posterior_moments`` (SGLD moments of selected runs)
- ``finite_theory``  the finite-width theory (docs/theory.md §2b) of measured runs on each seed's
                     own data and Gram, its P* located like the measured ones
"""

from .finite_theory import FINITE_DENSE as FINITE_DENSE
from .finite_theory import finite_action_gap as finite_action_gap
from .finite_theory import finite_width as finite_width
from .refine import Feature as Feature
from .refine import Runs as Runs
from .refine import adaptive as adaptive
from .refine import computing as computing
from .refine import group_P as group_P
from .refine import posterior_moments as posterior_moments
from .refine import reach_cap as reach_cap
from .run import padding_groups as padding_groups
from .run import run_sweep as run_sweep
