r"""One (configuration, seed, P) of a reduced softmax head as a flat energy with an order parameter.

The collapsed energy $U_m(W^G)$ (docs/theory.md §9.1: the readout integrated out exactly) of the
width-$D$ image of the head (§2c), on the seed's first $P$ training sequences (any source, the
causal mask if the configuration has it), and the copy order parameter $a_G(W^G)$ of the mean
attention over those sequences (§4). Without the mask the rows of $\bar A$ sum to one over all
$L$ keys and $a_G=\sqrt L\,(L\bar p-1)/(L-1)$ with its gradient written out
(:mod:`.copy_order`); with the mask $a_G$ is the package's own (``order_parameters`` of
$\bar A$, by autodiff).

The data are the package's (``fit.sweep_inputs``): the rows are nested in $P$, so a problem padded
to ``P_pad`` rows with a mask serves every $P\le$ ``P_pad`` with one compiled program.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ...config import Config, exact_settings
from ...data import masked_mean, nested_mask
from ...fit import sweep_inputs
from ...models import (
    AbstractHead,
    SoftmaxHead,
    copy_start,
    head_class,
    head_template,
    init_reduced_arrays,
    reduced_head,
)
from ...objective import Objective
from ...observables import attention_matrices, order_parameters
from ...sampling.chains import batch_chains
from ...sampling.collapsed import marginal_energy, marginal_energy_and_copy, with_WG
from .copy_order import a_G_of_pbar, mean_copy_prob
from .landscape import Landscape

Flat = Float[Array, " n"]


def profile_config(cfg: Config) -> Config:
    """``cfg`` on the engine the posterior needs: reduced, quenched embeddings, exact float64
    MAP (the MAP switch beside the profile); softmax attention, any source, causal or not."""
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a copyhead_jax Config, got {type(cfg).__name__}")
    if not issubclass(head_class(cfg.model.attention), SoftmaxHead):  # a_G, windows, starts
        raise ValueError(
            f"the profile method is written for softmax attention (rows of A sum to "
            f"one), got {cfg.model.attention!r}: run --method ti"
        )
    exact = dataclasses.replace(exact_settings(cfg.train.solver), continuation=False)
    return cfg.replace(
        model=dict(engine="reduced"), train=dict(solver=exact, train_embeddings=False)
    )


class Problem(NamedTuple):
    """Everything an energy evaluation needs (a pytree: ``head`` and the arrays are leaves)."""

    head: AbstractHead  # the reduced head; its W_G is a placeholder (zeros), W_O_hat unused
    train: Array  # [P_pad, L] int32 tokens of the seed, nested
    mask: Array  # [P_pad] 1 on the first P rows

    @property
    def n(self) -> int:
        return int(self.head.W_G.size)

    @property
    def L(self) -> int:
        return int(self.train.shape[1])

    @property
    def V(self) -> int:
        return int(self.head.W_E.shape[1])


def build_problem(cfg: Config, seed: int, P: int, P_pad: int | None = None) -> Problem:
    """The head (Gram root of sweep seed ``seed``; the prior root at width infinity) and the
    first ``P`` of ``P_pad`` training rows of that seed, float32."""
    cfg = profile_config(cfg)
    P_pad = P if P_pad is None else P_pad
    if not 1 <= P <= P_pad:
        raise ValueError(f"need 1 <= P <= P_pad, got P={P}, P_pad={P_pad}")
    c = cfg.replace(sweep=dict(P=(P_pad,), n_seeds=seed + 1))
    inp = sweep_inputs(c, None, P_pad)
    with jax.enable_x64(True):
        T, _, B = init_reduced_arrays(jax.random.wrap_key_data(inp.key[seed]), c, jnp.float64)
    head = reduced_head(
        jnp.asarray(T, jnp.float32),
        jnp.zeros((T.shape[0],) * 2, jnp.float32),
        jnp.asarray(B, jnp.float32),
        head_template(c),
    )
    return Problem(head, jnp.asarray(inp.train[seed]), nested_mask(P, P_pad).astype(jnp.float32))


def energy(prob: Problem, obj: Objective, x: Flat) -> Float[Array, ""]:
    """$U_m(W^G)$ at the flat ``x``."""
    return marginal_energy(with_WG(prob.head, x), prob.train, prob.mask, obj)


def mean_attention(prob: Problem, x: Flat) -> Float[Array, "L L"]:
    """$\\bar A$ over the problem's training rows."""
    return masked_mean(attention_matrices(with_WG(prob.head, x), prob.train), prob.mask)


def order_reference(prob: Problem, x: Flat) -> Float[Array, ""]:
    """$a_G$ by the package's own path (``order_parameters`` of $\\bar A$)."""
    return order_parameters(mean_attention(prob, x)).cG


def order(prob: Problem, x: Flat) -> Float[Array, ""]:
    """The copy order parameter $a_G$ (module docstring)."""
    if prob.head.causal:
        return order_reference(prob, x)
    M = with_WG(prob.head, x).logit_gram()
    X = jax.nn.one_hot(prob.train, prob.V, dtype=M.dtype)
    return a_G_of_pbar(mean_copy_prob(M, X, prob.mask), prob.L)


def restrained(prob: Problem, obj: Objective, x: Flat, center, kappa) -> Float[Array, ""]:
    """$U_m+\\frac\\kappa2(a_G-c)^2$: without the mask from one pass over the data and one
    backward (``sampling.collapsed.marginal_energy_and_copy``: $\\bar p$ is the kept rows' copy
    sum over $nL$), with it :func:`energy` plus the restraint on :func:`order`."""
    if prob.head.causal:
        return energy(prob, obj, x) + 0.5 * kappa * (order(prob, x) - center) ** 2
    U, C = marginal_energy_and_copy(with_WG(prob.head, x), prob.train, prob.mask, obj)
    n = jnp.maximum(jnp.sum(prob.mask), 1.0)
    return U + 0.5 * kappa * (a_G_of_pbar(C / (n * prob.L), prob.L) - center) ** 2


def row_copy(prob: Problem, x: Flat) -> Float[Array, " L"]:
    """Per query row $a$: $p_a=\\bar A_{a,a-1}$ (row $a$ reading its previous token, averaged
    over the training rows)."""
    return _previous_of(mean_attention(prob, x))


def observe(prob: Problem, x: Flat) -> tuple[Float[Array, ""], Float[Array, " L"]]:
    """A draw's $a_G$ and :func:`row_copy` from one mean attention $\\bar A$: with the mask
    ``order_parameters`` of $\\bar A$ (:func:`order_reference`), without it $a_G$ of
    $\\bar p=\\frac1L\\sum_ap_a$ (:func:`order`, the same value)."""
    A = mean_attention(prob, x)
    p = _previous_of(A)
    if prob.head.causal:
        return order_parameters(A).cG, p
    return a_G_of_pbar(jnp.mean(p), prob.L), p


def _previous_of(A: Float[Array, "L L"]) -> Float[Array, " L"]:
    L = A.shape[0]
    return A[jnp.arange(L), (jnp.arange(L) - 1) % L]


def logit_start(prob: Problem, beta: float) -> np.ndarray:
    """$W^G$ whose logits are $\\beta G^*$ on the positional block and zero elsewhere
    ($\\beta=0$: the pooling start, large $\\beta$: the copy start; docs/theory.md §9b)."""
    with jax.enable_x64(True):
        T = jnp.asarray(prob.head.embeddings() / math.sqrt(prob.head.W_G.shape[0]), jnp.float64)
        A = copy_start(T, V=prob.V, L=prob.L, logit=float(beta), attention=prob.head.name)
    return np.asarray(A, np.float64).ravel()


def beta_of_aG(aG: float, L: int) -> float:
    r"""The logit $\beta$ of $\beta G^*$ whose (unmasked) attention has $a_G$ exactly (§4):
    $p=(1+(L-1)a_G/\sqrt L)/L$, $\beta=\log\frac{p(L-1)}{1-p}$; ``aG`` clipped into its range
    $(-\sqrt L/(L-1),\sqrt L)$."""
    lo, hi = -math.sqrt(L) / (L - 1), math.sqrt(L)
    a = min(max(aG, lo + 1e-3), hi - 1e-3)
    p = (1 + (L - 1) * a / math.sqrt(L)) / L
    return math.log(p * (L - 1) / (1 - p))


def a_bounds(L: int) -> tuple[float, float]:
    """The range of $a_G$ for a softmax head: no weight on the previous token, all of it."""
    return -math.sqrt(L) / (L - 1), math.sqrt(L)


#: Sequences whose energy Hessian whitens a window (the data part rescaled by P / n_used): a
#: preconditioner only, so a subsample serves.
PRECOND_SEQS = 64

_LANDSCAPES: dict = {}


def landscape(obj: Objective, n_precond: int = PRECOND_SEQS) -> Landscape:
    """The :class:`~.landscape.Landscape` of a reduced softmax head under ``obj``: energy
    $U_m$, order $a_G$, per-draw record the row copy probabilities $p_a$, whitening on the first
    ``n_precond`` sequences, floor $1/\\sigma_G^2$ (as ``collapsed.marginal_whitening``), the
    restrained energy in one pass (:func:`restrained`), a draw's $a_G$ and $p_a$ from one
    $\\bar A$ (:func:`observe`)."""
    key = (obj, n_precond)
    if key not in _LANDSCAPES:

        def precond(prob: Problem, x):
            m = prob.mask[:n_precond]
            scale = jnp.sum(prob.mask) / jnp.maximum(jnp.sum(m), 1.0)
            return marginal_energy(with_WG(prob.head, x), prob.train[:n_precond], m, obj, scale)

        _LANDSCAPES[key] = Landscape(
            energy=lambda prob, x: energy(prob, obj, x),
            order=order,
            record=row_copy,
            precond=precond,
            floor=obj.sigma_G**-2,
            batched=lambda prob, n: batch_chains(n, *prob.train.shape),
            restrained=lambda prob, x, c, kappa: restrained(prob, obj, x, c, kappa),
            observe=observe,
        )
    return _LANDSCAPES[key]
