"""``transition(cfg)``: the Bayesian transition by the method asked for.

Softmax: ``method="profile"`` (default) measures the posterior's free-energy profile in a_G and
lets it decide first order or crossover (:func:`.profile.profile_transition`); ``method="ti"``
the branch free energies by constrained TI with the SMC cross-check
(:func:`.search.transition`), which assumes two branches split at a threshold. Linear attention:
the posterior crossover psi = 1/2 (:func:`.search.transition`) whatever the method.
"""

from __future__ import annotations

from ..config import Config
from ..models import head_class

METHODS = ("profile", "ti")


def transition(cfg: Config, *, method: str = "profile", **kw) -> dict:
    """The Bayesian transition of ``cfg`` (module docstring); ``kw`` go to the method's
    function. Returns its JSON-ready dict."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if (
        method == "profile"
        and getattr(cfg, "model", None) is not None
        and head_class(cfg.model.attention).two_branches
    ):
        from .profile import profile_transition

        return profile_transition(cfg, **kw)
    from .search import transition as ti_transition

    return ti_transition(cfg, **kw)
