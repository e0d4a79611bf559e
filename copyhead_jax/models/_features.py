r"""Readout features of the collapsed posterior (docs/theory.md §9.1) on token indices, with a
hand-written gradient.

Per sequence the readout sees $F = A\Phi$ ($\Phi = [X, I_L]$, $L\times D$, $D = V + L$): its
row $a$ is $\sum_b A_{ab}\phi^b$. The collapsed energy needs only the moments of $F$ over the
kept rows (weights $k_{\alpha a} \ge 0$: the run's mask times the causal target weights),
$$S_F=\sum_\alpha F_\alpha^\top K_\alpha F_\alpha,\qquad
B_F=\sum_\alpha F_\alpha^\top K_\alpha Y_\alpha .$$
For any function of $(S_F, B_F)$ with gradients $(G_S, G_B)$, the chain rule through
$F = A\Phi$, the activation and $s = \Phi M\Phi^\top$ gives
$$\delta F = K F (G_S + G_S^\top) + K Y G_B^\top,\quad
\delta A = \delta F\,\Phi^\top,\quad \delta s = \mathrm{act}^*(s, A, \delta A),\quad
\delta M = \sum_\alpha\Phi^\top\delta s\,\Phi .$$

Order of the work. The query rows are processed in blocks (:func:`query_blocks`) whose arrays
mostly stay in this CPU's 2 MB L2 cache. In a block every $L\times L$ array is stored
``[b, a, p]`` (key, query row, sequence): the sequences on the minor axis, so that every
per-entry operation is a vector operation over sequences and every sum over keys a sum of
contiguous ``[a, p]`` slices. Per block $G = \sqrt k\,[F, Y]^\top$ (``[D + V, a, p]``) is built
once and serves both passes as one flat matrix over the block's (query row, sequence) pairs:
$[S_F, B_F] = G G^\top$ and, backwards, $W = G_x G$ with $G_x = [G_S + G_S^\top, G_B]$ (so
$W = \sqrt k\,\delta F$ column by column); a flat product measured up to 1.6x faster than one
batched over rows. $\delta M = \sum \Phi^\top\delta s\,\Phi$ then takes $R = [Q; \delta s]$,
with the key histogram $Q_{u a} = \sum_b [x^b = u]\,\delta s_{ab}$: its flat product with the
query tokens' one-hot and its sum over sequences.

XLA:CPU decides what is stored by its fusion rules, and several formulations here exist only to
steer them (measured on a 2-core Xeon, L = 25, V = 5, P = 322 and 1,250, float32): a transpose
is fused into its users as a strided load, so the tokens are transposed by a product with the
identity (:func:`_transposed`); a cheap array with several users is recomputed in each, so the
logits, the row maximum and the softmax's row terms are concatenated from two halves along the
sequence axis, which XLA:CPU never fuses (:func:`_stored`), which also keeps their tangents
stored in the whitening's Hessian; a concatenation fused into its pieces branches per element,
so $G$ and $R$ are concatenated from more than 8 pieces, which XLA:CPU copies as one separate
operation, so that their flat views are free (a reshape fused into a producer indexes every
element by division). Inside a sampler's loops (a chain's iterations of leapfrog steps) XLA
hoists whatever does not change from one step to the next out of the loop body and stores it:
the tokens' comparisons, one ``[a, P]`` mask per key and token (125 at L = 25, V = 5), which the
fusions then read from memory where they would compare in registers; the tokens and row weights
are therefore offset by a zero computed from ``M`` (:func:`_loop_variant_zero`), which keeps
them in the loop (softmax, per gradient inside two nested loops, 1.4-1.5x faster at L = 25,
P = 50-1,250, float32: ``benchmarks/bench_collapsed.py --loops --against REV``).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Float

from .._types import Gram, TokenBatch
from ._copy import with_copy
from ._mask import causal_keys

#: ``[P, L]`` weight of each query row in the moments (mask times target weight), ``>= 0``
RowWeights = Float[Array, "P L"]
AttnRows = Float[Array, "P L L"]  # A[alpha, a, b], query-major
Block = Float[Array, "L a P"]  # one block of query rows: [b, a, p]

#: Floats per ``[L, a, P]`` array of one block of query rows (1 MB in float32), so that a
#: block's arrays mostly stay in a 2 MB L2 cache: at P = 1,250 4 blocks measured 1.1-1.2x
#: faster than one; at P = 322 (one block) 2 blocks were no faster. Each block is compiled
#: apart (~2.5 s): fewer, larger blocks compile faster.
BLOCK_FLOATS = 256 * 1024


#: Blocks of at most this many query rows take dM's sum over sequences in its product.
QUERY_ROWS_IN_PRODUCT = 8


def query_blocks(L: int, P: int) -> list[tuple[int, int]]:
    """``[(a0, a1), ...]``: the query rows in near-equal blocks of about ``BLOCK_FLOATS``."""
    n = -(-L // max(1, min(L, BLOCK_FLOATS // (L * max(P, 1)))))
    edges = [round(i * L / n) for i in range(n + 1)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _select(table: Array | Sequence[Array], idx: Array) -> Array:
    """``table[idx]`` for a small leading (token) axis, as a chain of selects (fuses into its
    users, unlike a gather); ``table[u]`` and ``idx`` broadcast."""
    out = jnp.where(idx == 0, table[0], 0.0)
    for u in range(1, len(table)):
        out = jnp.where(idx == u, table[u], out)
    return out


def _sum(xs: Array | Sequence[Array]) -> Array:
    """The sum over the leading axis (or the list), as adds of slices: one elementwise loop."""
    return functools.reduce(operator.add, xs)


def _stored(f: Callable[[int, int], Array], P: int) -> Array:
    """``f(0, P)`` (``f(p0, p1)``: the sequences ``p0:p1`` on the minor axis), computed in two
    halves and concatenated along the minor axis, which XLA:CPU copies instead of fusing: the
    result is computed once and stored, not recomputed in each of its users."""
    if P < 2:
        return f(0, P)
    return jnp.concatenate([f(0, P // 2), f(P // 2, P)], axis=-1)


def _pieces(n: int, k: int) -> list[tuple[int, int]]:
    """``0:n`` in ``k`` near-equal ranges (fewer if ``n < k``)."""
    k = max(1, min(n, k))
    edges = [round(i * n / k) for i in range(k + 1)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _transposed(t: TokenBatch, k: RowWeights) -> tuple[Float[Array, "L P"], Float[Array, "L P"]]:
    """``(t^T, k^T)`` in ``k``'s float type, as a product with the identity (exact): XLA:CPU
    stores a dot's output, where it fuses a transpose into every user as a strided load."""
    L = t.shape[1]
    tk = jnp.concatenate([t.astype(k.dtype), k], axis=1)
    eye = jnp.eye(2 * L, dtype=k.dtype)
    out = lax.dot_general(eye, tk, (((1,), (1,)), ((), ())), precision=lax.Precision.HIGHEST)
    return out[:L], out[L:]


def _loop_variant_zero(M: Array) -> Array:
    """0, computed from ``M`` (whether its first entry is NaN; where it is, every output is NaN
    anyway), so that it changes in a sampler's loops (module docstring)."""
    return (M[0, 0] != M[0, 0]).astype(M.dtype)


def _flat(x: Float[Array, "i a P"]) -> Float[Array, "i aP"]:
    """The block's (query row, sequence) pairs as one axis: a free view of a stored array."""
    return x.reshape(x.shape[0], -1)


def _key_logits(M: Gram, rows: dict, P: int) -> Float[Array, "V a P"]:
    """``K[v, a, p] = M_PE[a, v] + M_EE[x^a, v]``: the logit of a key holding token ``v``, less
    ``M_EP``, ``M_PP``; stored (:func:`_stored`), where fused into the logits it was recomputed
    for every key."""
    V = rows["pe"].shape[1]
    M_EE = M[:V, :V]

    def f(p0, p1):
        xa = rows["xa"][:, p0:p1]
        return jnp.stack([rows["pe"][:, v, None] + _select(M_EE[:, v], xa) for v in range(V)])

    return _stored(f, P)


def _logits(M: Gram, rows: dict, tT, K, p0: int, p1: int) -> Block:
    """``s[b, a, p] = phi^a . M phi^b`` for a block of query rows and sequences ``p0:p1``:
    ``M_EE[x^a, x^b] + M_EP[x^a, b] + M_PE[a, x^b] + M_PP[a, b]`` by selects (``K``:
    :func:`_key_logits`)."""
    V = rows["pe"].shape[1]
    M_EP = M[:V, V:]
    x, xa = tT[:, p0:p1], rows["xa"][:, p0:p1]
    return (
        _select(K[:, None, :, p0:p1], x[:, None, :])
        + _select(M_EP[:, :, None, None], xa[None])
        + rows["pp"].T[:, :, None]
    )


def _hist_row(X: Block, tT, u: int) -> Float[Array, "a P"]:
    """``[a, p] = sum_b [x^b = u] X[b, a, p]`` (``tT``: the keys' tokens, ``[b, p]``)."""
    return _sum([jnp.where(tT[b, None] == u, X[b], 0.0) for b in range(X.shape[0])])


class RowFeatures:
    """The attention activation, in the two layouts the package uses: :meth:`rows` on
    query-major stacks ``[P, a, b]`` (``AbstractHead.attention_rows``), :meth:`forward` and
    :meth:`backward` on one block of query rows ``[b, a, p]`` (the moments and their
    gradient). Subclasses are frozen dataclasses: hashable, so a static argument."""

    causal: bool
    fill: float  # the logit of a masked key

    def rows(self, s: AttnRows) -> AttnRows:
        raise NotImplementedError

    #: True: the activation sees whole ``L x L`` matrices (one block of every query row)
    whole_rows: ClassVar[bool] = False

    def forward(self, s: Callable[[int, int], Block], P: int) -> tuple[Block, Array | float, Any]:
        """``(X, c, aux)`` with ``A = X c`` (``c``: ``[a, P]`` or a scalar) from ``s(p0, p1)``,
        the block's masked logits of sequences ``p0:p1``; ``aux``: what else the backward
        needs (``None`` for the hand-written activations)."""
        raise NotImplementedError

    def backward(
        self,
        X: Block,
        c,
        Wp: Block,
        Wt: Block,
        w: Float[Array, "a P"],
        keys,
        row: Float[Array, "a P"] | None,
    ) -> Block:
        r"""$\delta s$ (for some keys) with $\sqrt k\,\delta A = $ ``Wp + Wt``
        (``Wp[b] = W[V + b]``, ``Wt[b] = W[x^b]``), ``w`` $=\sqrt k$, ``keys[b, a, 1]`` the
        causal mask and ``row`` $=\sqrt k\sum_b A\,\delta A$."""
        raise NotImplementedError

    def row(
        self, G: Float[Array, "E a P"], W: Float[Array, "D a P"], rk: Float[Array, "a P"], P: int
    ) -> Float[Array, "a P"] | None:
        r"""$\sqrt k\sum_b A\,\delta A$ where :meth:`backward` needs it (else ``None``), from
        ``G`` $=\sqrt k\,[F, Y]$ and ``W`` $=\sqrt k\,\delta F$ (``rk`` $=\sqrt k$)."""
        return None

    def backward_pieces(
        self,
        X: Block,
        c,
        aux,
        W: Float[Array, "D a P"],
        Wt: Block,
        rows: dict,
        P: int,
        pieces: list[tuple[int, int]],
        G: Float[Array, "E a P"],
        copy=None,
    ) -> list[Array]:
        r"""$k\,\delta s$ in the key ranges ``pieces`` (``W``: $\sqrt k\,\delta F$,
        ``[D, a, p]``; ``Wt[b] = W[x^b]``; ``G``: the forward's $\sqrt k\,[F, Y]$):
        :meth:`backward` on each range. ``copy``: the cotangent of :func:`~._copy.copy_sum`,
        added to $\delta A$ on the entries it reads (:func:`~._copy.with_copy`)."""
        del aux
        V = W.shape[0] - X.shape[0]
        row = self.row(G, W, rows["rk"], P)
        Wp, extra = with_copy(X, c, W[V:], rows, copy)
        if row is not None and extra is not None:
            row = row + extra
        return [
            self.backward(X[b0:b1], c, Wp[b0:b1], Wt[b0:b1], rows["rk"], rows["keys"][b0:b1], row)
            for b0, b1 in pieces
        ]

    def mask(self, s: Block, keys) -> Block:
        return jnp.where(keys, s, self.fill) if self.causal else s


@dataclasses.dataclass(frozen=True)
class SoftmaxFeatures(RowFeatures):
    """Softmax over keys (``causal``: over keys ``b <= a``)."""

    causal: bool = False
    fill: float = -float("inf")

    def rows(self, s):
        if self.causal:
            s = jnp.where(causal_keys(s.shape[-1])[None], s, -jnp.inf)
        e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)

    def forward(self, s, P):
        """``X = exp(s - max_b s)``, ``c = 1 / sum_b X``. The row maximum is a reduction over
        keys in a block of every query row and a chain of ``maximum`` over key slices in a
        block of some: either form is fast in one case and up to 3x slower in the other
        (value and gradient, measured with ``benchmarks/bench_collapsed.py --against``: the
        chain in one block took 3x at L = 40, P = 56 and at L = 12, P = 50, float64; the
        reduction over a few query rows 1.1x at L = 25, P = 1,250, float32). ``A = X c`` does
        not depend on the shift, so no derivative passes through it (exact; XLA's elemental
        CPU emitters gave NaN for the reduction's)."""
        s = _stored(s, P)
        if s.shape[1] == s.shape[0]:
            m = _stored(lambda p0, p1: jnp.max(s[:, :, p0:p1], axis=0), P)
        else:
            m = _stored(lambda p0, p1: functools.reduce(jnp.maximum, s[:, :, p0:p1]), P)
        m = lax.stop_gradient(m)
        e = jnp.exp(s - m[None])
        return e, _stored(lambda p0, p1: 1.0 / _sum(e[:, :, p0:p1]), P), None

    def row(self, G, W, rk, P):
        r"""$\sum_b A\,(W_{V+b} + W_{x^b}) = \sum_{i<D} F_i W_i = \sum_{i<D} G_i W_i/\sqrt k$
        (the key-token histogram rows of ``F`` gather the ``W_{x^b}`` terms; 0 on rows of
        weight 0, where :meth:`backward` multiplies it by 0): one pass over the stored ``G`` and
        ``W``, where the product ``X (Wp + Wt)`` over every key was stored and summed again.
        In two halves along the sequences (:func:`_stored`): stored once, and so is each
        tangent of it in the whitening's Hessian (fused, it was recomputed for every key)."""
        D = W.shape[0]

        def f(p0, p1):
            r = rk[:, p0:p1]
            q = _sum([G[i, :, p0:p1] * W[i, :, p0:p1] for i in range(D)])
            return jnp.where(r > 0, q / jnp.where(r > 0, r, 1.0), 0.0)

        return _stored(f, P)

    def backward(self, X, c, Wp, Wt, w, keys, row):
        r"""$k A\odot(\delta A - \sum_b A\,\delta A)$."""
        return (X * (w * c)[None]) * ((Wp + Wt) - row[None])


@dataclasses.dataclass(frozen=True)
class LinearFeatures(RowFeatures):
    """``A = scale * s`` (``causal``: 0 for keys ``b > a``)."""

    scale: float = 1.0
    causal: bool = False
    fill: float = 0.0

    def rows(self, s):
        if self.causal:
            s = jnp.where(causal_keys(s.shape[-1])[None], s, 0.0)
        return self.scale * s

    def forward(self, s, P):
        return _stored(s, P), self.scale, None

    def backward(self, X, c, Wp, Wt, w, keys, row):
        w = (self.scale * w)[None]
        t1, t2 = Wp * w, Wt * w
        if self.causal:
            t1, t2 = jnp.where(keys, t1, 0.0), jnp.where(keys, t2, 0.0)
        return t1 + t2


def _query_major(x: Float[Array, "i a j"]) -> Float[Array, "j a i"]:
    """``[b, a, p]`` -> ``[p, a, b]`` (and back: the same transpose)."""
    return jnp.transpose(x, (2, 1, 0))


@dataclasses.dataclass(frozen=True)
class AutodiffFeatures(RowFeatures):
    """Any row-wise activation on query-major stacks (``AbstractHead.activation``: row ``a`` of
    ``A`` a function of row ``a`` of the logits only, its own causal mask included), its
    pullback by autodiff: the default of a head without a hand-written one. The activation
    sees whole matrices (one block of every query row) and the logits are kept for the
    backward; the hand-written classes above are the fast paths, tested against this one."""

    activation: Callable[[AttnRows], AttnRows]  # hashable: a bound method of a head skeleton
    causal: bool = False  # the activation masks; the blocks pass the logits as they are
    fill: float = 0.0
    whole_rows: ClassVar[bool] = True

    def rows(self, s):
        return self.activation(s)

    def forward(self, s, P):
        s = s(0, P)
        return _query_major(self.activation(_query_major(s))), 1.0, s

    def backward_pieces(self, X, c, aux, W, Wt, rows, P, pieces, G, copy=None):
        # row-wise: k ds = act*(s, k dA), with Wp + Wt = sqrt(k) dA and sqrt(k) per row
        V = W.shape[0] - X.shape[0]
        kdA = rows["rk"][None] * (with_copy(X, c, W[V:], rows, copy)[0] + Wt)
        ds = _query_major(jax.vjp(self.activation, _query_major(aux))[1](_query_major(kdA))[0])
        return [ds[b0:b1] for b0, b1 in pieces]


def _row_blocks(M: Gram, t: TokenBatch, k: RowWeights, whole_rows: bool = False):
    """``(tT, blocks)``: the tokens ``[L, P]`` and, per block of query rows
    (:func:`query_blocks`), what the block needs. The blocks are unrolled: a ``lax.scan`` over
    them measured 1.8x slower (XLA:CPU then stores broadcasts and the scan's outputs).
    ``whole_rows``: one block of every query row."""
    P, L = t.shape
    V = M.shape[0] - L
    tT, kT = _transposed(t, k)
    zero = _loop_variant_zero(M)  # keeps the token masks inside the sampler's loops
    tT, kT = tT + zero, kT + zero
    rows = dict(
        pe=M[V:, :V],
        pp=M[V:, V:],
        xa=tT,
        ya=jnp.roll(tT, 1, axis=0),
        rk=jnp.sqrt(kT),
        keys=causal_keys(L),
        prev=(jnp.arange(L) - 1) % L,  # the key a row copies from
    )  # y^a = x^{a-1}
    blocks = []
    for a0, a1 in [(0, L)] if whole_rows else query_blocks(L, P):
        b = {name: x[a0:a1] for name, x in rows.items()}
        b["keys"] = b["keys"].T[:, :, None]  # [b, a, 1]
        # the query side over the block's (row, sequence) pairs: the tokens' one-hot, and for
        # a few rows the rows' one-hot too (one product, where the sum over sequences would be
        # a second pass over R; for many rows the product's extra columns cost more)
        n = a1 - a0
        query = [b["xa"][None] == jnp.arange(V, dtype=tT.dtype)[:, None, None]]
        if n <= QUERY_ROWS_IN_PRODUCT:
            query.append(jnp.broadcast_to(jnp.eye(n, dtype=bool)[:, :, None], (n, n, P)))
        b["query"] = _flat(jnp.concatenate(query).astype(M.dtype))
        blocks.append(b)
    return tT, blocks


def _forward(act: RowFeatures, M: Gram, t: TokenBatch, k: RowWeights):
    r"""Per block of query rows: ``(rows, X, c, aux, G)``: ``A = X c``, ``G`` $=\sqrt k\,[F, Y]$."""
    D = M.shape[0]
    P, L = t.shape
    V = D - L
    tT, blocks = _row_blocks(M, t, k, act.whole_rows)
    for rows in blocks:
        K = _key_logits(M, rows, P)
        X, c, aux = act.forward(
            lambda p0, p1: act.mask(_logits(M, rows, tT, K, p0, p1), rows["keys"]), P
        )
        w = rows["rk"] * c
        # more than 8 pieces, each its own loop: XLA:CPU copies such a concatenation as one
        # operation (a fused one branches per element, measured 2x slower), and then the
        # flat view is free; without the constant rows (their tangents are 0) still more than
        # 8, so that the tangent of G in the whitening's Hessian is stored once too
        G = jnp.concatenate(
            [(_hist_row(X, tT, u) * w)[None] for u in range(V)]
            + [X[b0:b1] * w[None] for b0, b1 in _pieces(L, 9 - V)]
            + [((rows["ya"] == v) * rows["rk"])[None] for v in range(V)]
        )
        yield rows, X, c, aux, G


def feature_moments(act: RowFeatures, M: Gram, t: TokenBatch, k: RowWeights):
    """``(S_F [D, D], B_F [D, V], residuals)`` for the activation ``act`` (module docstring)."""
    D, V = M.shape[0], M.shape[0] - t.shape[1]
    S = jnp.zeros((D + V, D + V), M.dtype)
    res = []
    for _, X, c, aux, G in _forward(act, M, t, k):
        S = S + _flat(G) @ _flat(G).T
        res.append((X, c, aux, G))
    return S[:D, :D], S[:D, D:], tuple(res)


def attention_sum(res, seq_weights: Float[Array, " P"]) -> Float[Array, "L L"]:
    """``sum_p seq_weights[p] A_p`` from :func:`feature_moments`' residuals (the attention of
    each block of query rows is among them): what a posterior draw records beside the moments
    (the order parameters from the mean of $A$) without another pass over the logits."""
    return jnp.concatenate(
        [
            jnp.einsum("bap,ap->ab", X, jnp.broadcast_to(c, X.shape[1:]) * seq_weights[None, :])
            for X, c, _, _ in res
        ]
    )


def moments_and_attention(
    act: RowFeatures, M: Gram, t: TokenBatch, k: RowWeights, seq_weights: Float[Array, " P"]
) -> tuple[Gram, Float[Array, "D V"], Float[Array, "L L"]]:
    r"""``(S_F, B_F, sum_p seq_weights[p] A_p)`` in one pass over the blocks: what a posterior
    draw records (the loss and U from the moments, the order parameters from the mean of $A$)
    without three more passes over the ``P x L x L`` logits."""
    SF, BF, res = feature_moments(act, M, t, k)
    return SF, BF, attention_sum(res, seq_weights)


def feature_moments_grad(
    act: RowFeatures,
    res,
    t: TokenBatch,
    k: RowWeights,
    G_S: Gram,
    G_B: Float[Array, "D V"],
    copy=None,
) -> Gram:
    r"""$\delta M$ of a function of $(S_F, B_F)$ with gradients ``(G_S, G_B)``, plus ``copy``
    times :func:`~._copy.copy_sum` where given (one pass for both)."""
    P, L = t.shape
    D = G_S.shape[0]
    V = D - L
    tT, blocks = _row_blocks(G_S, t, k, act.whole_rows)
    Gx = jnp.concatenate([G_S + G_S.T, G_B], axis=1)
    dEE, dEP, dPE, dPP = 0.0, 0.0, [], []
    for rows, (X, c, aux, G) in zip(blocks, res, strict=True):
        W = (Gx @ _flat(G)).reshape(D, *G.shape[1:])  # [D, a, p]: sqrt(k) dF
        Wt = _select(W[:V, None], tT[:, None, :])  # W[x^b, a, p]
        # ds in key ranges and Q from them, R = [Q; ds] concatenated from > 8 pieces: stored
        # once, its flat view free (a fused reshape would index every element by division)
        ds = act.backward_pieces(X, c, aux, W, Wt, rows, P, _pieces(L, 9 - V), G, copy)
        Q = [
            _sum(
                [
                    jnp.where(tT[b, None] == u, part[b - b0], 0.0)
                    for (b0, b1), part in zip(_pieces(L, 9 - V), ds, strict=True)
                    for b in range(b0, b1)
                ]
            )[None]
            for u in range(V)
        ]
        R = jnp.concatenate(Q + ds)  # [(x^b, b), a, p]
        T = _flat(R) @ rows["query"].T  # [(x^b, b), x^a (, a)]
        Ta = T[:, V:] if T.shape[1] > V else jnp.sum(R, axis=2)  # [(x^b, b), a]
        dEE, dEP = dEE + T[:V, :V].T, dEP + T[V:, :V].T
        dPE.append(Ta[:V].T)
        dPP.append(Ta[V:].T)
    return jnp.block([[dEE, dEP], [jnp.concatenate(dPE), jnp.concatenate(dPP)]])
