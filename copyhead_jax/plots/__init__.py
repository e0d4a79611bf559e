"""Figures: a result in, a matplotlib ``Figure`` out (Agg backend, nothing shown), in one style.

- ``style``       the palette, sizes, legends off the data, log-P ticks; ``save_figure`` (every
                  figure written: 150 dpi, PNG with its record), ``figure_problems``
- ``check``       the figure check of a saved PNG and its record (``check_png``)
- ``sweeps``      sweeps, posteriors and the width table (``sweep_figure``, ``curves_figure``,
                  ``posterior_figure``, ``trace_figure``, ``width_figure``)
- ``branches``    the branch-run artefacts (``main_figure``, ``coverage_figure``,
                  ``hysteresis_figure``)
- ``pstar``       P* versus L, V or rho, branches followed in P (``scaling_figure``,
                  ``beyond_pstar_figure``, ``beyond_curves_figure``, ``branch_follow_figure``)
- ``widths``      the exact width reduction against the theory (``reduction_width_figure``)
- ``embeddings``  the embedding studies (``embeddings_protocol_figure``, ...)
- ``posterior``   per-run posterior summaries against P, with the TI free energies
                  (``result_figures``)
- ``profile``     the posterior's free-energy profile in a_G (``profile_figure``)
- ``transition``  the Bayesian transition and the branch TI and SMC runs (``transition_figure``,
                  ``branch_figure``, ``smc_figure``)
- ``ratio``       predictions over a measured transition point, per configuration
                  (``ratio_figure``, ``ROUTE_STYLES``; ``bayes_compare_figure``)
- ``theory``      the EK theory's curves, landscapes and scaling (``plot_curve``, ...)
"""

from .branches import coverage_figure as coverage_figure
from .branches import hysteresis_figure as hysteresis_figure
from .branches import main_figure as main_figure
from .branches import solver_kind as solver_kind
from .branches import width_name as width_name
from .check import check_png as check_png
from .embeddings import SHRINK as SHRINK
from .embeddings import embeddings_posterior_figure as embeddings_posterior_figure
from .embeddings import embeddings_protocol_figure as embeddings_protocol_figure
from .embeddings import embeddings_width_figure as embeddings_width_figure
from .posterior import result_figures as result_figures
from .profile import profile_figure as profile_figure
from .pstar import beyond_curves_figure as beyond_curves_figure
from .pstar import beyond_pstar_figure as beyond_pstar_figure
from .pstar import branch_follow_figure as branch_follow_figure
from .pstar import scaling_figure as scaling_figure
from .ratio import ROUTE_STYLES as ROUTE_STYLES
from .ratio import bayes_compare_figure as bayes_compare_figure
from .ratio import ratio_figure as ratio_figure
from .style import P_LABEL as P_LABEL
from .style import figure_problems as figure_problems
from .style import save_figure as save_figure
from .sweeps import curves_figure as curves_figure
from .sweeps import posterior_figure as posterior_figure
from .sweeps import sweep_figure as sweep_figure
from .sweeps import trace_figure as trace_figure
from .sweeps import width_figure as width_figure
from .theory import plot_curve as plot_curve
from .theory import plot_landscape as plot_landscape
from .theory import plot_phase_diagram as plot_phase_diagram
from .theory import plot_scaling as plot_scaling
from .transition import branch_figure as branch_figure
from .transition import smc_figure as smc_figure
from .transition import transition_figure as transition_figure
from .widths import reduction_width_figure as reduction_width_figure
