r"""Each attention kind's theory as a class (docs/theory.md §3-§5), and the registry.

What the package would otherwise re-derive from an attention name is written here once, per
kind, and read by name through :func:`theory_of`:

* what the head is: ``order_names`` and ``order_labels`` (its names for the projections
  ``(c1, cG)`` of the attention on ``(B1, B2)``), ``two_branches`` (a first-order transition
  between a pooling and a copy branch, fitted from two starts; ``transition_key`` ``P_aG``) or
  one branch with a crossover (``P_cG_half``), ``gauge_fix`` (the Z2 of linear attention) and
  :meth:`copy_logits`, the logits of the copy branch's start;
* the full ``L x L`` theory (§3): :meth:`attention` of a logit matrix, :meth:`prior` of the logits;
* the two-parameter ansatz (§4): its coordinates ``coords``, the logit matrix :meth:`logits` and
  the span coefficients :meth:`span` they give, the named ``fields`` of a minimiser, the reduced
  EK potential :meth:`potential` and its local minima :meth:`minima` (grid, then Newton).

The theory's algorithms (curves, landscapes, P*, the finite-width theory, Markov and causal
minimisers) call these hooks and never compare names. ``x`` is always a coordinate vector
``[..., len(coords)]``; ``p`` a :class:`~.params.TheoryParams` (names or arrays); ``objective``
``'map'`` or ``'post'`` (adds D), ``pushforward`` adds J (§3).
"""

from __future__ import annotations

from ...config import ATTENTIONS
from .base import COPY_START as COPY_START
from .base import N_KEEP as N_KEEP
from .base import HeadTheory as HeadTheory
from .base import J_term as J_term
from .base import R_lin as R_lin
from .base import R_soft as R_soft
from .base import causal_keys as causal_keys
from .linear import LinearTheory as LinearTheory
from .linear import to_c as to_c
from .sigmoid import SigmoidTheory as SigmoidTheory
from .sigmoid import sigmoid_bias as sigmoid_bias
from .softmax import SoftmaxTheory as SoftmaxTheory

_CLASSES = (LinearTheory, SoftmaxTheory, SigmoidTheory)
#: The theory class of each attention name (``config.ATTENTIONS``, in order).
THEORIES: dict[str, type[HeadTheory]] = {c.name: c for c in _CLASSES}
assert tuple(THEORIES) == ATTENTIONS, "every attention of config.ATTENTIONS has a theory class"


def theory_of(attention: str | type[HeadTheory]) -> type[HeadTheory]:
    """The theory class of an attention name (a class passes through)."""
    if isinstance(attention, type) and issubclass(attention, HeadTheory):
        return attention
    if attention not in THEORIES:
        raise ValueError(f"attention must be one of {tuple(THEORIES)}, got {attention!r}")
    return THEORIES[attention]


__all__ = [
    "COPY_START",
    "HeadTheory",
    "J_term",
    "LinearTheory",
    "R_lin",
    "R_soft",
    "SigmoidTheory",
    "SoftmaxTheory",
    "THEORIES",
    "theory_of",
]
