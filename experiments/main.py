"""Artefact 1 (main): order parameters, coverage and loss versus P at the preset's L, V, for both
attentions; theory (EK and finite-width) against Adam (MAP) and SGLD (posterior); every P* of
docs/theory.md §5 located on the measurements by the same definition, refined adaptively near it.

Measured definitions (``features.py``, by ``copyhead_jax.compare.locate``):

* ``P_c1``: onset of the row sum ``r`` of the linear attention matrix (second order).
* ``P_cG``: ``argmax dpsi/dlog P`` of the measured copy fraction; ``P_cG_half``: ``psi = 1/2``.
* ``P_aG``: where ``U`` of the runs started on the pooling branch (zero logits) and on the copy
  branch (``init_copy_logit * G*``) cross, at the ``P`` where the two stayed distinct.
* ``P_aG_single``: the jump of ``a_G`` of the pooling-branch starts alone (compared with the
  theory's upper spinodal, where the weak minimum disappears).

Output: ``results/main_{preset}.json`` and ``figures/main_{preset}.png`` under ``out_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import common as C
from .analysis import run_main


def main(spec: C.Spec, out_dir: str | Path) -> dict[str, Any]:
    """Run (or reload) every measurement, compare with the theory, write JSON and PNG."""
    return run_main(spec, out_dir)
