"""What a posterior draw records beyond the observables (``HMCConfig.keep_loglik`` and
``keep_weights``): each training sequence's log-likelihood, and the weights."""

from __future__ import annotations

import math

import jax
import numpy as np

from ..config import Config
from ..models import AbstractHead
from ..objective import Objective, squared_errors
from ..results import DRAW_FIELDS


def log_likelihood(head: AbstractHead, train, cfg: Config) -> jax.Array:
    r"""``[P]``: $\log p(y^\alpha\mid\Theta)=-w\|f^\alpha-y^\alpha\|^2+\frac{n_y}2\log\frac w\pi$
    per sequence, the normalised Gaussian likelihood whose energy is U's data term ($w$ the
    likelihood weight, $n_y$ the target entries of a sequence; docs/theory.md §9b)."""
    w = Objective.from_config(cfg).likelihood_weight
    n_y = (cfg.task.L - int(head.causal)) * cfg.task.V  # causal: position 0 has no target
    return -w * squared_errors(head, train, cfg.task.V) + 0.5 * n_y * math.log(w / math.pi)


def split_extras(got: dict, mc, mask: np.ndarray, cfg: Config) -> dict:
    """Move the extra columns of ``draws`` (:meth:`Sampler.observe_all`) to ``log_lik``
    ``[runs, C, S, P_max]`` (NaN on the rows a run does not use: padding and past the chunk's
    rows ``mask[runs, n_rows]``) and ``W_G``/``W_O_hat`` ``[runs, C, S, D, D]``/``[.., V, D]``."""
    if not (getattr(mc, "keep_loglik", False) or getattr(mc, "keep_weights", False)):
        return got
    d = got["draws"]
    got["draws"], rest = d[..., : len(DRAW_FIELDS)], d[..., len(DRAW_FIELDS) :]
    runs, n_rows = mask.shape
    if getattr(mc, "keep_loglik", False):
        ll = np.full(rest.shape[:-1] + (cfg.sweep.P_max,), np.nan, rest.dtype)
        used = (np.asarray(mask) > 0)[:, None, None, :]
        ll[..., :n_rows] = np.where(used, rest[..., :n_rows], np.nan)
        got["log_lik"], rest = ll, rest[..., n_rows:]
    if getattr(mc, "keep_weights", False):
        V, D = cfg.task.V, cfg.task.V + cfg.task.L
        got["W_G"] = rest[..., : D * D].reshape(rest.shape[:-1] + (D, D))
        got["W_O_hat"] = rest[..., D * D :].reshape(rest.shape[:-1] + (V, D))
    return got
