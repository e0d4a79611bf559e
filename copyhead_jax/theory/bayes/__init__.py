r"""The theory of the Bayesian transition (docs/theory.md §13): the entropy of the attention
weights at fixed order parameter, and the posterior's $P^*$ it predicts.

Code map:

* ``exact``       the collapsed action $\mathcal S(W)$ of all $D^2$ attention weights with
                  token-dependent logits (identity: the engine's collapsed energy).
* ``rows``        one query row under Gaussian logit noise: the five moments the readout sees.
* ``variational`` route B: the Gaussian measure's free energy $\mathcal F_q(\beta,\rho;P)$.
* ``solve``       route B's basins and Bayesian $P^*_{a_G}$ (:func:`transition`).
* ``profile``     route B's Landau profile $F(a;P)$ in nats and the basin variance of $a_G$.
* ``loop``        route A: the one-loop profile at fixed order parameter.
* ``linear``      route B for linear attention (closed-form moments, posterior copy fraction).
* ``draws``       weights drawn from route B's measure (checks of the mean-field readout).
* ``law``         the law of the Bayesian $P^*$ in $L$ and $V$ beside the paper's.
* ``points``      :func:`bayes_points`: one configuration's Bayesian points, every head.
* ``warning``     the early warning route B predicts: the variance's growth toward ``P*``.
"""

from .exact import action, action_terms, copy_weights, mean_copy_probability
from .law import fit_law_table, scaling_table
from .loop import (
    basin_free_energies,
    ek_sample,
    first_order_root,
    full_hessian,
    one_loop_point,
    one_loop_profile,
    one_loop_transition,
    orbit_hessian,
    trusted,
)
from .points import bayes_points, linear_points, softmax_points
from .profile import basin_variance, profile
from .solve import VariationalSettings, basins, make_draws, transition
from .variational import free_energy, free_energy_terms
from .warning import predicted_growth

__all__ = [
    "action",
    "action_terms",
    "basin_free_energies",
    "basin_variance",
    "basins",
    "bayes_points",
    "copy_weights",
    "ek_sample",
    "fit_law_table",
    "full_hessian",
    "free_energy",
    "free_energy_terms",
    "linear_points",
    "make_draws",
    "mean_copy_probability",
    "one_loop_point",
    "one_loop_profile",
    "one_loop_transition",
    "orbit_hessian",
    "first_order_root",
    "predicted_growth",
    "profile",
    "scaling_table",
    "softmax_points",
    "transition",
    "trusted",
    "VariationalSettings",
]
