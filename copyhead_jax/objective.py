r"""The one objective that Adam and SGLD share: the negative log posterior of docs/theory.md §2,

$$U(\Theta)=\frac{\chi_n}{2\sigma^2_{\rm eff}}\sum_\alpha m_\alpha\|f_\alpha-y_\alpha\|^2
+\frac{\|W^E\|^2}{2\sigma_e^2}+\frac{\|b\|^2}{2\sigma_p^2}+\frac{\|W^G\|^2}{2\sigma_G^2}
+\frac{\chi_r\|\hat W^O\|^2}{2\chi\sigma_O^2},$$

with $\sigma^2_{\rm eff}=\sigma^2$ (``likelihood='per_sequence'``) or $L\sigma^2$
(``'per_position'``), $\chi_n=\chi$ (``chi_in_noise``) or 1, $\chi_r=\chi$
(``chi_in_readout_prior``) or 1 (docs/theory.md §2b),
$m_\alpha\in\{0,1\}$ the padding mask, and $\hat W^O=\sqrt{\chi N}\,W^O$ (constant Jacobian,
so the posterior is unchanged). L2 terms are coupled: they are part of $U$ and of its gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from . import conventions
from ._types import Mask, Scalar, TokenBatch
from .config import Config
from .conventions import readout_prior_std
from .models import AbstractHead


@dataclass(frozen=True)
class Objective:
    """Constants of U: the likelihood weight and the prior scales (hashable, static under jit).

    ``sigma_O`` is the prior std of ``W_O_hat`` (``conventions.readout_prior_std``): ``sigma_O`` of
    the model, times ``sqrt(chi)`` when the readout prior carries no chi."""

    likelihood_weight: float  # chi_n / (2 sigma2_eff)
    sigma_e: float = 1.0
    sigma_p: float = 1.0
    sigma_G: float = 1.0
    sigma_O: float = 1.0

    @classmethod
    def from_config(cls, cfg: Config) -> Objective:
        post, m = cfg.posterior, cfg.model
        noise = conventions.noise_variance(post.sigma2, L=cfg.task.L, likelihood=post.likelihood)
        chi_n = conventions.noise_chi(post.chi, chi_in_noise=post.chi_in_noise)
        s_O = readout_prior_std(m.sigma_O, post.chi, chi_in_readout_prior=post.chi_in_readout_prior)
        return cls(chi_n / (2.0 * noise), m.sigma_e, m.sigma_p, m.sigma_G, s_O)


def predictions(head: AbstractHead, tokens: TokenBatch, V: int) -> jax.Array:
    """``f[P, L, V]``; ``M`` and ``R`` are computed once and shared by all sequences."""
    return head.outputs(tokens)


def squared_errors(head: AbstractHead, tokens: TokenBatch, V: int) -> jax.Array:
    """``||f_alpha - y_alpha||^2`` per sequence, shape ``[P]``."""
    return head.squared_errors(tokens)


def log_prior_energy(head: AbstractHead, obj: Objective) -> Scalar:
    """The L2 (Gaussian prior) part of U."""
    sq = lambda w: jnp.sum(w**2)
    return (
        sq(head.W_E) / (2 * obj.sigma_e**2)
        + sq(head.b) / (2 * obj.sigma_p**2)
        + sq(head.W_G) / (2 * obj.sigma_G**2)
        + sq(head.W_O_hat) / (2 * obj.sigma_O**2)
    )


def embedding_prior_energy(head: AbstractHead, obj: Objective) -> Scalar:
    """The prior energy of the embeddings alone (a constant when they are quenched)."""
    return jnp.sum(head.W_E**2) / (2 * obj.sigma_e**2) + jnp.sum(head.b**2) / (2 * obj.sigma_p**2)


def neg_log_posterior(head: AbstractHead, tokens: TokenBatch, mask: Mask, obj: Objective) -> Scalar:
    """``U(Theta)`` on the masked training set (padding rows contribute exactly nothing).

    The data term goes through the head's fused path (value and hand-written gradient with
    respect to ``M``, ``R`` in one pass over the ``P x L x L`` block, see ``models._head``); it
    equals ``sum(where(mask > 0, squared_errors(...), 0))`` to float32 rounding."""
    data = head.squared_error_sum(tokens, mask)
    return obj.likelihood_weight * data + log_prior_energy(head, obj)
