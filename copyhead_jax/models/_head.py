r"""Equinox attention heads with muP scaling (docs/theory.md §2).

For one sequence with one-hot rows $x^a$,
$$h^a = W^E x^a + b^a,\quad s_{ab} = \tfrac1N h^{a\top} W^G h^b,\quad
f^a = W^O \textstyle\sum_b A_{ab} h^b,\quad W^O = \hat W^O/\sqrt{\chi N}.$$
The readout is always reparametrised by $\sqrt{\chi N}$; where the prior of $W^O$ carries no
$\chi$ (``PosteriorConfig.chi_in_readout_prior=False``) the prior of $\hat W^O$ is wider by
$\sqrt\chi$ instead (``conventions.readout_prior_std``), so that a head's forward map never
depends on the reading, only its energy and its prior draw do.
One-hot structure: $h^a = U^\top\phi^a$ with $U=[W^{E\top}; b^\top]\in\mathbb R^{(V+L)\times N}$ and
$\phi^a=(x^a, e_a)$, so every logit is an entry of the $(V+L)\times(V+L)$ matrix
$M = U W^G U^\top/N$ and every output a row of $R = W^O U^\top$. Both are computed once per
parameter value (they do not depend on the data), which makes the per-step cost
$O((V+L)N^2)$ for the weights plus $O(PL^2V)$ for the data, never $O(PLN^2)$.

The batched path (``outputs``, ``squared_error_sum``) works on token indices ``t[P, L]`` and
never builds one-hot products: the logits are read out of ``M`` by selects,
$s_{ab} = M_{EE}[t_a,t_b] + M_{EP}[t_a,b] + M_{PE}[a,t_b] + M_{PP}[a,b]$, and the values are
$R_E[:,t_b] + R_P[:,b]$. The data term of U and its gradient with respect to $(M, R)$ are
computed together in one pass (``fused_sq_error``, a ``custom_jvp``): the backward of the
$P\times L\times L$ block is written out by hand so that no $P\times L\times L$ array is stored
for a second pass, and the gradient reaches the weights through the small $M$, $R$ only.
Linear attention never forms $s$: $f = c\,\Phi M (\Phi^\top \mathrm{val})$ is
reassociated into $(V{+}L)$-sized contractions (see ``linear_energy``). The batched path
lives in ``_compute.py``; this module holds the heads, their registry and their prior draw.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Mapping
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .. import conventions
from .._types import (
    AttnMatrix,
    AttnStack,
    Gram,
    LogitMatrix,
    LogitStack,
    OneHotSeq,
    Scalar,
    TokenBatch,
)
from ..config import ATTENTIONS, AdamConfig, Config, ModelConfig
from ..theory.heads import HeadTheory, LinearTheory, SigmoidTheory, SoftmaxTheory
from ._compute import (
    fused_sq_error,
    linear_causal_energy,
    linear_causal_forward,
    linear_energy,
    linear_forward,
    logits_T,
    softmax_energy,
    softmax_forward,
    targets_T,
    values,
)
from ._features import AutodiffFeatures, LinearFeatures, RowFeatures, SoftmaxFeatures
from ._mask import mask_logits, target_weights

#: The array leaves of every head (a sweep stores them as ``params/<name>``).
ARRAY_FIELDS = ("W_E", "b", "W_G", "W_O_hat")
#: What a head takes from its theory class (:mod:`copyhead_jax.theory.heads`).
THEORY_CONSTANTS = (
    "name",
    "order_names",
    "order_labels",
    "two_branches",
    "transition_key",
    "gauge_fix",
)
_REGISTRY: dict[str, type] = {}  # every head class by attention name (``__init_subclass__``)


class AbstractHead(eqx.Module):
    """Embedding, positional bias, key-query and readout; subclasses set the activation.

    A subclass names its attention kind's theory class ``theory`` (:mod:`..theory.heads`),
    from which it takes what the rest of the package needs to know about its attention:
    ``name``, ``order_names`` (its names for the projections ``(c1, cG)`` of the mean attention
    on ``(J/L, G*/sqrt L)``), ``order_labels``, ``two_branches`` (pooling and copy starts),
    ``transition_key``, ``gauge_fix`` (a Z2 gauge fixed by ``r > 0``) and ``copy_logits`` (the
    copy start); its own constants are ``warmup_default`` (the lr warm-up fraction when
    ``AdamConfig.warmup_frac`` is None) and ``plot_style`` (colour, marker, line style). A new
    attention variant is a subclass with its :meth:`activation` and its theory class; the
    batched fast paths (:meth:`_outputs_T`, :meth:`energy_fn`, :meth:`feature_activation`)
    default to autodiff of the activation, and a head may override them by hand.
    """

    # leading ``*runs`` axes: a stack of heads (the runs of a sweep, chains) is one head pytree;
    # NumPy leaves are kept as stored (float64 weights stay float64 outside ``enable_x64``)
    W_E: Float[Array | np.ndarray, "*runs N V"]  # token embedding
    b: Float[Array | np.ndarray, "*runs N L"]  # positional bias, column a is b^a
    W_G: Float[Array | np.ndarray, "*runs N N"]  # key-query matrix
    W_O_hat: Float[Array | np.ndarray, "*runs V N"]  # readout, W^O = W_O_hat / sqrt(chi N)
    chi: float = eqx.field(static=True)
    causal: bool = eqx.field(static=True, default=False)  # mask b <= a; loss drops a = 0

    theory: ClassVar[type[HeadTheory]]
    name: ClassVar[str]
    order_names: ClassVar[tuple[str, str]]
    order_labels: ClassVar[tuple[str, str]]
    two_branches: ClassVar[bool]
    transition_key: ClassVar[str]
    gauge_fix: ClassVar[bool]
    warmup_default: ClassVar[float] = 0.0
    plot_style: ClassVar[dict[str, str]]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "theory" in cls.__dict__:  # the attention's descriptors, written once in its theory
            for k in THEORY_CONSTANTS:
                setattr(cls, k, getattr(cls.theory, k))
            _REGISTRY[cls.name] = cls

    @classmethod
    def copy_logits(cls, L: int, logit, dtype=None) -> Float[Array, "L L"]:
        """The positional logits of the copy branch's start (the theory's)."""
        return cls.theory.copy_logits(L, logit, dtype)

    @classmethod
    def static_fields(cls, model: ModelConfig, *, L: int, chi: float) -> dict:
        """The non-array fields of a head of this class (``chi``, ``causal``; subclasses add
        theirs)."""
        del L
        return dict(chi=float(chi), causal=bool(model.causal))

    @classmethod
    def from_config(cls, cfg: Config, **arrays) -> AbstractHead:
        """A head with the given array leaves and the static fields of ``cfg``."""
        return cls(**arrays, **cls.static_fields(cfg.model, L=cfg.task.L, chi=cfg.posterior.chi))

    @classmethod
    def from_arrays(cls, cfg: Config, arrays: Mapping[str, ArrayLike]) -> AbstractHead:
        """A head from stored leaves: ``arrays`` maps ``W_E``, ``b``, ``W_G``, ``W_O_hat`` (or
        ``params/W_E``, ... as a sweep stores them) to arrays, kept as they are (any batch axes,
        any dtype)."""
        get = lambda k: arrays[k] if k in arrays else arrays[f"params/{k}"]
        return cls.from_config(cfg, **{k: get(k) for k in ARRAY_FIELDS})

    @classmethod
    def warmup_frac(cls, adam: AdamConfig) -> float:
        """``adam.warmup_frac``, or this attention's default when it is None."""
        return cls.warmup_default if adam.warmup_frac is None else adam.warmup_frac

    @property
    def width(self) -> int:
        return self.W_G.shape[0]

    def embeddings(self) -> Float[Array, "D N"]:
        """``U = [W^E^T; b^T]``: the V token embeddings, then the L positional biases."""
        return jnp.concatenate([self.W_E.T, self.b.T], axis=0)

    def logit_gram(self) -> Gram:
        """``M = U W^G U^T / N``: every logit ``s_ab = phi^a . M phi^b``."""
        U = self.embeddings()
        # W^G is the left factor of its product: the reverse pass then yields dW^G in W^G's own
        # layout. ``(U @ W^G) @ U.T`` gave a transposed dW^G that every Adam fusion re-read
        # column-wise (measured 4-5x slower per step at N = 1024 on this CPU).
        return U @ (self.W_G @ U.T) / self.width

    def readout_map(self) -> Float[Array, "V D"]:
        """``R = W^O U^T``: output of a unit attention weight on feature ``phi``."""
        return (self.W_O_hat @ self.embeddings().T) / math.sqrt(self.chi * self.width)

    def logits(self, x: OneHotSeq, M: Gram | None = None) -> LogitMatrix:
        """``s = X M_EE X^T + X M_EP + M_PE X^T + M_PP`` (blocks of ``M``)."""
        M = self.logit_gram() if M is None else M
        V = x.shape[-1]
        T = x @ M[:V, :V] + M[V:, :V]  # [L, V]
        return T @ x.T + x @ M[:V, V:] + M[V:, V:]

    @abc.abstractmethod
    def activation(self, s: LogitStack) -> AttnStack:
        """Attention weights from logits (row a is query position a)."""

    def attention(self, x: OneHotSeq, M: Gram | None = None) -> AttnMatrix:
        return self.activation(self.logits(x, M))

    def attention_rows(self, tokens: TokenBatch) -> Float[Array, "P L L"]:
        """``A`` of every sequence from token indices (the batched path's selects; the same
        values as ``vmap(self.attention)`` over one-hot rows)."""
        V = self.W_E.shape[1]
        return self.feature_activation().rows(logits_T(self.logit_gram().T, tokens, V))

    def __call__(self, x: OneHotSeq, M: Gram | None = None, R=None) -> OneHotSeq:
        """``f = A Phi R^T`` with ``Phi = [X, I_L]``, for one sequence ``x`` [L, V]."""
        R = self.readout_map() if R is None else R
        V = x.shape[-1]
        A = self.attention(x, M)
        return (A @ x) @ R[:, :V].T + A @ R[:, V:].T

    # ---- batched path: token indices in, one compiled pass over the whole training set ----

    def outputs(self, tokens: TokenBatch) -> Float[Array, "P L V"]:
        """``f[alpha, a]`` for every sequence (same values as ``vmap(self)``, efficient form)."""
        fT = self._outputs_T(self.logit_gram(), self.readout_map(), tokens)
        return jnp.swapaxes(fT, 1, 2)

    def squared_errors(self, tokens: TokenBatch) -> Float[Array, " P"]:
        """``||f_alpha - y_alpha||^2`` per sequence (plain autodiff; forward only in practice)."""
        V = self.W_E.shape[1]
        fT = self._outputs_T(self.logit_gram(), self.readout_map(), tokens)
        if self.causal:  # position 0 has no previous token (models._mask)
            w = target_weights(tokens.shape[1], True)[None, None, :]
            return jnp.sum(w * (fT - targets_T(tokens, V)) ** 2, axis=(1, 2))
        return jnp.sum((fT - targets_T(tokens, V)) ** 2, axis=(1, 2))

    def squared_error_sum(self, tokens: TokenBatch, mask: Float[Array, " P"]) -> Scalar:
        """``sum_alpha [mask_alpha > 0] ||f_alpha - y_alpha||^2`` with a fused, hand-written
        gradient (``custom_jvp``): padding rows contribute exactly nothing, value or gradient."""
        M, R = self.logit_gram(), self.readout_map()
        return fused_sq_error(self.energy_fn(), M, R, tokens, mask > 0)

    def _skeleton(self) -> AbstractHead:
        """This head without its arrays: its static fields only (a hashable value that plain
        functions of arrays may close over)."""
        return jax.tree.map(lambda _: None, self)

    def _outputs_T(self, M: Gram, R: Float[Array, "V D"], t: TokenBatch) -> Float[Array, "P V L"]:
        """Outputs for token batch ``t``, transposed per sequence: ``fT[alpha, v, a]`` (autodiff
        default: the activation of the key-major logits, then ``f = A val``)."""
        V = R.shape[0]
        A = self.activation(jnp.swapaxes(logits_T(M, t, V), 1, 2))  # [P, a, b]
        return jnp.einsum("pab,pbv->pva", A, values(R, t))

    def energy_fn(self) -> Callable:
        """``(M, R, t, keep) -> (masked sum of squared errors, (d/dM, d/dR))``, a plain function
        of arrays (no weights captured), so that it can be a static argument. Default: autodiff
        of :meth:`_outputs_T`."""
        head = self._skeleton()

        def energy(M, R, t, keep):
            def loss(M, R):
                e = head._outputs_T(M, R, t) - targets_T(t, R.shape[0])
                if head.causal:  # position 0 has no previous token (models._mask)
                    e = e * target_weights(t.shape[1], True)[None, None, :]
                return jnp.sum(jnp.where(keep, jnp.sum(e * e, axis=(1, 2)), 0.0))

            return jax.value_and_grad(loss, argnums=(0, 1))(M, R)

        return energy

    def feature_activation(self) -> RowFeatures:
        """The activation as the collapsed posterior's readout features use it
        (``models._features``): hashable, so that it can be a static argument. Default: the
        activation and its autodiff pullback (``AutodiffFeatures``)."""
        return AutodiffFeatures(self._skeleton().activation)


class LinearHead(AbstractHead):
    """Linear attention ``A = s / L^k``: ``linear_scale`` ``'none'`` (k = 0), ``'inv_sqrt_L'``
    (k = 1/2) or ``'inv_L'`` (k = 1), docs/theory.md §2b."""

    scale: float = eqx.field(static=True, default=1.0)

    theory = LinearTheory
    warmup_default = 0.0
    plot_style = dict(color="#0072B2", marker="o", ls="-.")  # Okabe-Ito blue

    @classmethod
    def static_fields(cls, model: ModelConfig, *, L: int, chi: float) -> dict:
        scale = 1.0 / conventions.linear_scale_divisor(L, model.linear_scale)
        return dict(chi=float(chi), scale=scale, causal=bool(model.causal))

    def activation(self, s: LogitStack) -> AttnStack:
        if self.causal:
            s = mask_logits(s, 0.0)
        return s * self.scale

    def _outputs_T(self, M, R, t):
        if self.causal:
            return linear_causal_forward(M, R, t, self.scale)[0]
        return linear_forward(M, R, t, self.scale)[0]

    def energy_fn(self):
        if self.causal:
            return functools.partial(linear_causal_energy, scale=self.scale)
        return functools.partial(linear_energy, scale=self.scale)

    def feature_activation(self):
        return LinearFeatures(scale=self.scale, causal=self.causal)


class SoftmaxHead(AbstractHead):
    """Softmax attention over keys (``causal``: over keys ``b <= a``)."""

    theory = SoftmaxTheory
    warmup_default = 0.1  # paper: linear lr warm-up over the first 10% of epochs (softmax only)
    plot_style = dict(color="#D55E00", marker="s", ls=":")  # Okabe-Ito vermillion

    def activation(self, s: LogitStack) -> AttnStack:
        if self.causal:
            s = mask_logits(s, -jnp.inf)
        return jax.nn.softmax(s, axis=-1)

    def _outputs_T(self, M, R, t):
        return softmax_forward(M, R, t, self.causal)[0]

    def energy_fn(self):
        if self.causal:
            return functools.partial(softmax_energy, causal=True)
        return softmax_energy

    def feature_activation(self):
        return SoftmaxFeatures(causal=self.causal)


class SigmoidHead(AbstractHead):
    """Sigmoid attention ``A_ab = sigmoid(s_ab - log L)`` entrywise, no normalisation over keys
    (``causal``: keys ``b > a`` get weight 0); the activation is its theory's. The batched fast
    paths are the autodiff defaults."""

    theory = SigmoidTheory
    warmup_default = 0.0  # the paper's warm-up is softmax's; none is assumed here
    plot_style = dict(color="#009E73", marker="^", ls="--")  # Okabe-Ito bluish green

    def activation(self, s: LogitStack) -> AttnStack:
        return self.theory.attention(s, self.causal)


#: The one place that maps an attention name (``ModelConfig.attention``) to its head class; the
#: names are ``config.ATTENTIONS`` (config validates them and sits below models), in order.
HEADS: dict[str, type[AbstractHead]] = {a: _REGISTRY[a] for a in ATTENTIONS}


def head_class(attention: str) -> type[AbstractHead]:
    """The head class of an attention name (a key of ``HEADS``)."""
    if attention not in HEADS:
        raise ValueError(f"attention must be one of {tuple(HEADS)}, got {attention!r}")
    return HEADS[attention]


def init_head(
    key: Array,
    model: ModelConfig,
    *,
    L: int,
    V: int,
    chi: float,
    chi_in_readout_prior: bool = True,
) -> AbstractHead:
    """Draw every weight from its prior (docs/theory.md §2 table), readout reparametrised
    (``chi_in_readout_prior``: as ``PosteriorConfig``, see ``conventions.readout_prior_std``)."""
    N = model.width
    kE, kb, kG, kO = jax.random.split(key, 4)
    normal = lambda k, shape, s: s * jax.random.normal(k, shape, dtype=jnp.float32)
    weights = dict(
        W_E=normal(kE, (N, V), model.sigma_e),
        b=normal(kb, (N, L), model.sigma_p),
        W_G=normal(kG, (N, N), model.sigma_G),
        W_O_hat=normal(
            kO,
            (V, N),
            conventions.readout_prior_std(
                model.sigma_O, chi, chi_in_readout_prior=chi_in_readout_prior
            ),
        ),
    )
    cls = head_class(model.attention)
    return cls(**weights, **cls.static_fields(model, L=L, chi=chi))


def trainable_filter(head: AbstractHead, *, train_embeddings: bool) -> AbstractHead:
    """Boolean pytree: which leaves the optimiser moves (embeddings frozen when quenched)."""
    spec = jax.tree_util.tree_map(lambda _: True, head)
    if not train_embeddings:
        spec = eqx.tree_at(lambda h: (h.W_E, h.b), spec, (False, False))
    return spec
