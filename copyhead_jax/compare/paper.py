"""What the paper reports, written once: its measured transition points, its coverage claims and
its scaling laws. Experiments and reports compare against these names only."""

from __future__ import annotations

from ..theory.scaling import PAPER_LAWS as PAPER_LAWS

#: The paper's main table, L = 25, V = 5: the reported P of each transition.
PAPER_MEASURED = {"P_c1": 23.0, "P_cG": 322.0, "P_aG": 300.0}
#: The attention kinds the paper measured (its table's P* are theirs, not another head's).
PAPER_HEADS = ("linear", "softmax")

#: The paper's coverage claims (its ablation table).
PAPER_CLAIMS = {
    "softmax": "> 99.8% (Adam and SGLD), boundary error < 2%",
    "linear, outside the crossover": "> 98.5%, boundary error < 3%",
    "linear, crossover (SGLD)": "82.4% - 91.0%",
}

# PAPER_LAWS, ``{key: (name, f(L, V))}`` (P_aG's V dependence is not stated: none), is defined
# with the theory's fits in ``copyhead_jax.theory.scaling``, which may not import this module.

__all__ = ["PAPER_CLAIMS", "PAPER_HEADS", "PAPER_LAWS", "PAPER_MEASURED"]
