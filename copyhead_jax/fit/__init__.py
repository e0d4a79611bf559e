"""MAP fits of every run of a sweep: Adam, the exact solver, continuation in P, polish.

- ``inputs``        ``RunInputs`` and ``sweep_inputs``: every run's key, nested pool, mask, test set
- ``adam``          full-batch Adam with the paper's protocol, many runs in one compiled program
- ``exact``         ``solve_map``: float64 L-BFGS to a stationary point of the quenched U, with a
                    Lanczos certificate (smallest Hessian eigenvalue); ``hessian``
- ``adam_sweep``    the Adam chunk of a sweep (compiled segments, snapshots of a chunk in training)
- ``exact_sweep``   the exact-MAP chunk of a sweep (reduced heads, blocked data term, measures)
- ``programs``      ``solver_program``: the program of each solver config in a sweep (padding,
                    chunk function, continuation, logged epochs), ``SOLVERS``
- ``continuation``  ``continue_in_P``: each run also started from its neighbouring P's fit
- ``polish``        ``polish``: the exact solver from each Adam fit; how far Adam stopped
"""

from .adam import Trainer as Trainer
from .adam import init_runs as init_runs
from .adam import lr_schedule as lr_schedule
from .adam import measure_runs as measure_runs
from .adam import run_segment as run_segment
from .adam_sweep import run_adam_chunk as run_adam_chunk
from .continuation import continue_in_P as continue_in_P
from .exact import ExactFit as ExactFit
from .exact import blocks_of as blocks_of
from .exact import hessian as hessian
from .exact import quenched_energy as quenched_energy
from .exact import solve_map as solve_map
from .exact import split_weights as split_weights
from .exact_sweep import exact_solve_from as exact_solve_from
from .exact_sweep import measure_blocked as measure_blocked
from .exact_sweep import run_exact_chunk as run_exact_chunk
from .inputs import RunInputs as RunInputs
from .inputs import check_lr_mult as check_lr_mult
from .inputs import sweep_inputs as sweep_inputs
from .polish import polish as polish
from .polish import polish_table as polish_table
from .programs import SOLVERS as SOLVERS
from .programs import SolverProgram as SolverProgram
from .programs import solver_program as solver_program
