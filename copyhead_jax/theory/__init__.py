r"""Bayesian copy-head theory (docs/theory.md §2b-§5): pure JAX functions, float64 entry points.

Code map, in data-flow order:

* ``params``      :class:`TheoryParams` (L, V, prior scales, sigma^2, chi, the convention
                  switches: likelihood, linear scale, chi in the readout prior / in the noise;
                  ``from_config``, ``preset``).
* ``heads``       each attention kind's theory as a class (:class:`HeadTheory`: what the head is,
                  its attention and prior, its ansatz, potential and minima) and the registry
                  :func:`theory_of`; every algorithm below dispatches through it.
* ``action``      general actions on a full ``L x L`` matrix: EK form (ii) :func:`ek_action`,
                  exact finite-P form (i) :func:`finite_action` on a token set and an embedding
                  Gram (finite-width theory); the terms ``Q, D, R_lin, R_soft, J``; basis and
                  projection on ``{B1, B2}``.
* ``potentials``  closed forms ``V_lin(c1, cG)``, ``V_soft(beta)``, ``V_soft(aG)`` (§4),
                  elementwise in every argument.
* ``minima``      every local minimum (grid, then Newton; vmappable), :func:`theory_curve`
                  versus P with metastable branches, :func:`landscape`.
* ``full``        full ``L x L`` minimisers by L-BFGS: :func:`full_minimum` (identity 7).
* ``finite``      finite-width, finite-P theory of one run (same tokens, same embedding Gram):
                  :func:`finite_minima` (every local minimum at many nested P, one compile),
                  :func:`finite_theory_minimum` (one training set, optionally full space).
* ``points``      :func:`transition_points`: ``P_c1, P_cG, P_cG_half, P_aG``, spinodals.
* ``scaling``     :func:`scaling_table`, :func:`scaling_fits`, :func:`fit_power_law`,
                  :func:`fit_law`, :func:`phase_diagram`.
* ``sensitivity`` :func:`sensitivity` (log-log slope of every ``P*`` in every parameter, factor
                  of every switch), :func:`fit` (least squares in ``log P*`` over free
                  parameters, with the invariants that forbid an exact fit).
* ``bayes/``      the Bayesian transition (§13): the entropy of the attention weights,
                  route B (variational Gaussian), route A (one loop), :func:`bayes_points`.
* ``plots``       figures (result in, ``Figure`` out); ``cli``: ``copyhead theory ...``.

Precision: the closed forms and actions follow the dtype of their inputs; the entry points
(minima, curves, points, scaling) run inside ``jax.enable_x64(True)``, a scoped context that
leaves the caller's ``jax_enable_x64`` unchanged, and return NumPy float64.
"""

from .action import (
    DatasetStats,
    basis,
    dataset_stats,
    ek_action,
    ek_terms,
    embedding_gram,
    finite_action,
    finite_terms,
    from_coefficients,
    logit_cov,
    prior_gram,
    project,
    shift_matrix,
)
from .bayes import bayes_points
from .beyond import beyond_points
from .finite import finite_minima, finite_theory_minimum, nested_stats
from .full import full_minimum
from .heads import THEORIES, HeadTheory, theory_of
from .minima import (
    copy_fraction,
    landscape,
    linear_minima,
    softmax_minima,
    theory_curve,
)
from .params import TheoryParams
from .points import (
    p_aG_estimate,
    p_c1_asymptotic,
    p_c1_closed_form,
    points_batch,
    transition_points,
)
from .potentials import (
    beta_of_aG,
    linear_potential,
    pushforward_term,
    q_bracket,
    reduced_terms,
    softmax_ansatz,
    softmax_potential,
    softmax_potential_aG,
)
from .scaling import (
    PAPER_LAWS,
    fit_law,
    fit_power_law,
    phase_diagram,
    scaling_fits,
    scaling_table,
)
from .sensitivity import fit, sensitivity

__all__ = [
    "basis",
    "bayes_points",
    "beyond_points",
    "beta_of_aG",
    "copy_fraction",
    "dataset_stats",
    "DatasetStats",
    "ek_action",
    "ek_terms",
    "embedding_gram",
    "finite_action",
    "finite_minima",
    "finite_terms",
    "finite_theory_minimum",
    "fit",
    "fit_law",
    "fit_power_law",
    "HeadTheory",
    "from_coefficients",
    "full_minimum",
    "landscape",
    "linear_minima",
    "linear_potential",
    "nested_stats",
    "logit_cov",
    "p_aG_estimate",
    "p_c1_asymptotic",
    "p_c1_closed_form",
    "PAPER_LAWS",
    "phase_diagram",
    "points_batch",
    "prior_gram",
    "project",
    "pushforward_term",
    "q_bracket",
    "reduced_terms",
    "scaling_fits",
    "scaling_table",
    "sensitivity",
    "shift_matrix",
    "softmax_ansatz",
    "softmax_minima",
    "softmax_potential",
    "softmax_potential_aG",
    "theory_curve",
    "theory_of",
    "THEORIES",
    "TheoryParams",
    "transition_points",
]
