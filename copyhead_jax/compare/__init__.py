"""Where theory and measurement meet (the only such place in the package).

- ``root``     the one crossing rule: where a measured difference turns sign, its interval
               (Monte Carlo, quadrature, interpolation; an end straddling zero widens it);
               seeds combined
- ``profile_verdict`` first order or crossover and P* from free-energy profiles at a few P
- ``locate``   measured transition points ``P*`` on a grid of ``P`` (docs/theory.md §5)
- ``overlay``  theory curves over measured sweeps
- ``errors``   relative errors and the thresholds that make one a disagreement
- ``paper``    the paper's reported numbers and laws, written once
- ``stats``    bootstrap confidence intervals over seeds
- ``warning``  early warning, defined once (growth ratio, its CI, the criterion, §13.9)
- ``crossing`` where two branches' free energies cross, branch weights, the Bayesian interval
- ``claims``   the rule that says whether a measurement reproduces a reported claim
- ``branches`` measured P* of branch runs (onset, crossover, crossing, coexistence window)
- ``seeds``    every P* per seed with its CI beside the theories; the table across widths
- ``table``    the P* table of branch runs: theories, measurement, order, loss pattern
- ``laws``     power laws of the P* against L or V beside the paper's; the joint law in L, V
- ``coverage`` the coverage ablation's table: the ansatz's share of the attention per regime
- ``text``     number formats of the markdown tables
- ``readings`` the claims x readings matrix; ``reading_sources`` what each reading measured and
               its EK theory, ``reading_cells`` one cell per claim, ``reading_warning`` the
               early-warning row
"""

from . import locate as locate
from . import paper as paper
from . import profile_verdict as profile_verdict
from . import root as root
from .claims import EXPONENT_TOL as EXPONENT_TOL
from .claims import P_TOL as P_TOL
from .claims import judge as judge
from .claims import relative_band as relative_band
from .claims import verdict_text as verdict_text
from .coverage import A1_SAMPLE_COVERAGE as A1_SAMPLE_COVERAGE
from .coverage import a1_failures as a1_failures
from .coverage import coverage_rows as coverage_rows
from .crossing import bayesian_interval as bayesian_interval
from .crossing import interval_text as interval_text
from .errors import GROWTH_NULL as GROWTH_NULL
from .errors import REL_TOL as REL_TOL
from .errors import disagrees as disagrees
from .errors import rel_err as rel_err
from .laws import fit_laws as fit_laws
from .laws import grids_around as grids_around
from .laws import measured_law as measured_law
from .laws import phase_panel as phase_panel
from .laws import theory_row as theory_row
from .locate import Located as Located
from .locate import integer_grid as integer_grid
from .locate import locate_level as locate_level
from .locate import locate_max_slope as locate_max_slope
from .overlay import softmax_marks as softmax_marks
from .overlay import theory_overlay as theory_overlay
from .paper import PAPER_CLAIMS as PAPER_CLAIMS
from .paper import PAPER_LAWS as PAPER_LAWS
from .paper import PAPER_MEASURED as PAPER_MEASURED
from .pstar import array_points as array_points
from .pstar import group_means as group_means
from .pstar import group_points as group_points
from .pstar import linear_points as linear_points
from .pstar import point_summary as point_summary
from .pstar import seed_groups as seed_groups
from .pstar import seeds_summary as seeds_summary
from .pstar import softmax_points as softmax_points
from .reading_sources import ek_window as ek_window
from .reading_sources import measured_exponents as measured_exponents
from .reading_sources import measured_from_main as measured_from_main
from .reading_sources import reading_theory as reading_theory
from .readings import claims_matrix as claims_matrix
from .root import Crossing as Crossing
from .seeds import bracketed as bracketed
from .seeds import ci_table as ci_table
from .seeds import per_seed_points as per_seed_points
from .seeds import per_seed_values as per_seed_values
from .seeds import width_result as width_result
from .stats import bootstrap_ci as bootstrap_ci
from .stats import ci_contains as ci_contains
from .table import loss_patterns as loss_patterns
from .table import measured_orders as measured_orders
from .table import pstar_table as pstar_table
from .warning import as_predicted as as_predicted
from .warning import early_warning as early_warning
from .warning import signal_of as signal_of
