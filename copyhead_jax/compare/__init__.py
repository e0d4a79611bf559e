"""Where theory and measurement meet (the only such place in the package).

- ``locate``   measured transition points ``P*`` on a grid of ``P`` (docs/theory.md §5)
- ``overlay``  theory curves over measured sweeps
- ``errors``   relative errors and the thresholds that make one a disagreement
- ``paper``    the paper's reported numbers and laws, written once
- ``stats``    bootstrap confidence intervals over seeds
- ``warning``  early warning, defined once (growth ratio, its CI, the signal threshold)
- ``crossing`` where two branches' free energies cross, branch weights, the Bayesian interval
- ``claims``   the rule that says whether a measurement reproduces a reported claim
- ``branches`` measured P* of branch runs (onset, crossover, crossing, coexistence window)
- ``seeds``    every P* per seed with its CI beside the theories; the table across widths
- ``table``    the P* table of branch runs: theories, measurement, order, loss pattern
- ``laws``     power laws of the P* against L or V beside the paper's
- ``coverage`` the coverage ablation's table: the ansatz's share of the attention per regime
- ``text``     number formats of the markdown tables
"""

from . import locate as locate
from . import paper as paper
from .claims import EXPONENT_TOL as EXPONENT_TOL
from .claims import judge as judge
from .errors import GROWTH_TOL as GROWTH_TOL
from .errors import REL_TOL as REL_TOL
from .errors import disagrees as disagrees
from .errors import rel_err as rel_err
from .locate import Located as Located
from .overlay import theory_overlay as theory_overlay
from .paper import PAPER_CLAIMS as PAPER_CLAIMS
from .paper import PAPER_LAWS as PAPER_LAWS
from .paper import PAPER_MEASURED as PAPER_MEASURED
from .stats import bootstrap_ci as bootstrap_ci
from .stats import ci_contains as ci_contains
from .warning import early_warning as early_warning
