"""Exact width reduction of the joint MAP with trained embeddings (docs/theory.md §2d)."""

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.data import sample_tokens
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.fit.exact import solve_map, value_and_grad_fn
from copyhead_jax.models import (
    expand_trained,
    head_template,
    init_head,
    joint_split,
    off_span_fraction,
    reduce_head,
    scaled_objective,
)
from copyhead_jax.objective import Objective, neg_log_posterior
from copyhead_jax.observables import attention_matrices, order_parameters

N, L, V, P, P_FIT = 16, 6, 3, 48, 256
D = V + L
GTOL = 1e-11  # the full-width polish: |grad U| <= GTOL max(1, |U|)
# the reduction is an identity: float64 rounding (~1e-13 relative) is all that separates the
# two sides of an exact equation
RTOL = 1e-10


def _cfg(attention):
    return ch.preset("tiny").replace(
        model=dict(attention=attention, width=N), train=dict(train_embeddings=True)
    )


def _f64(tree):
    return jax.tree_util.tree_map(lambda x: x.astype(jnp.float64), tree)


def _full(cfg, key=0):
    p = cfg.posterior
    h = init_head(
        jax.random.key(key),
        cfg.model,
        L=L,
        V=V,
        chi=p.chi,
        chi_in_readout_prior=p.chi_in_readout_prior,
    )
    return _f64(h)


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.max(np.abs(b)), 1e-300)
    assert np.max(np.abs(a - b)) <= rtol * scale, np.max(np.abs(a - b)) / scale


def _order(head, t):
    A = jnp.mean(attention_matrices(head, t), axis=0)
    o = order_parameters(A, gauge_fix=head.gauge_fix)
    return np.array([o.c1, o.cG])


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_reduced_energy_is_the_full_energy_at_the_expanded_point(attention):
    """Identity: a random reduced point, expanded to width N with a random orthonormal basis,
    has the same U (the package's neg_log_posterior on both sides, the reduced one under the
    scaled embedding prior), the same U as the solver's joint coordinates, and a width-N
    gradient that lies in the span with the reduced gradient's norm (the map is an isometry)."""
    with jax.enable_x64(True):
        cfg = _cfg(attention)
        obj = Objective.from_config(cfg)
        full0 = _full(cfg)
        red = reduce_head(full0).head  # a width-D head; perturb every weight off the image
        k = jax.random.split(jax.random.key(3), 4)
        red = eqx.tree_at(
            lambda h: (h.W_E, h.b, h.W_G, h.W_O_hat),
            red,
            tuple(
                w + 0.3 * jax.random.normal(kk, w.shape, w.dtype)
                for kk, w in zip(k, (red.W_E, red.b, red.W_G, red.W_O_hat))
            ),
        )
        full = expand_trained(red, full0, jax.random.key(4))
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64)
        U_full = neg_log_posterior(full, t, mask, obj)
        sobj = scaled_objective(obj, width=N, head_width=D)
        _close(neg_log_posterior(red, t, mask, sobj), U_full)
        split = functools.partial(joint_split, width=N)
        _, _, vg = value_and_grad_fn(red, t, mask, obj, split=split)
        x0, _, _ = joint_split(red, obj, width=N)
        u, g = vg(x0)
        _close(u, U_full)
        gF = eqx.filter_grad(lambda h: neg_log_posterior(h, t, mask, obj))(full)
        nF = math.sqrt(sum(float(jnp.sum(w**2)) for w in (gF.W_E, gF.b, gF.W_G, gF.W_O_hat)))
        _close(jnp.linalg.norm(g), nF)
        _close(_order(red, t), _order(full, t))


def test_the_energy_at_any_width_is_the_scaled_prior_energy():
    """N enters as a number: at N = 1e12 the solver's U is the width-D head's U with embedding
    prior variances sigma^2 D / N (docs/theory.md §2d)."""
    with jax.enable_x64(True):
        cfg = _cfg("softmax")
        obj = Objective.from_config(cfg)
        red = reduce_head(_full(cfg)).head
        t = sample_tokens(jax.random.key(1), n=P, L=L, V=V)
        mask = jnp.ones(P, jnp.float64)
        for width in (1e6, 1e12):
            split = functools.partial(joint_split, width=width)
            x0, _, vg = value_and_grad_fn(red, t, mask, obj, split=split)
            sobj = scaled_objective(obj, width=width, head_width=D)
            _close(vg(x0)[0], neg_log_posterior(red, t, mask, sobj))


@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_full_width_stationary_point_is_its_reduced_image(attention):
    """A width-16 network polished to stationarity over every weight from a prior draw:
    (a) measured span property: W^G and the readout have no part off the embeddings' span;
    (b) its reduced image has the same U and order parameters and is itself stationary."""
    with jax.enable_x64(True):
        cfg = _cfg(attention)
        obj = Objective.from_config(cfg)
        # P_FIT: large enough that the joint MAP at width 16 is not the zero network
        t = sample_tokens(jax.random.key(1), n=P_FIT, L=L, V=V)
        mask = jnp.ones(P_FIT, jnp.float64)
        full = _full(cfg, key=2)
        split_N = functools.partial(joint_split, width=N)
        fit = solve_map(full, t, mask, obj, gtol=GTOL, split=split_N, n_lanczos=8)
        assert bool(fit.converged)
        head = fit.head
        U_zero = neg_log_posterior(jax.tree_util.tree_map(jnp.zeros_like, head), t, mask, obj)
        assert float(fit.U) < 0.99 * float(U_zero)  # a non-trivial fit, not the zero network
        # (a) off the span the gradient is the part itself / sigma^2 (sigma = 1 here): it is
        # bounded by |grad U| <= GTOL |U|, i.e. ~1e-9 of the weights' norm
        fG, fO = off_span_fraction(head)
        assert float(fG) < 1e-7 and float(fO) < 1e-7, (fG, fO)
        # (b) the image is exact: same U, same order parameters, stationary
        red = reduce_head(head).head
        U_red = neg_log_posterior(red, t, mask, scaled_objective(obj, width=N, head_width=D))
        _close(U_red, fit.U, 1e-9)
        _close(_order(red, t), _order(head, t), 1e-9)
        split = functools.partial(joint_split, width=N)
        x0, _, vg = value_and_grad_fn(red, t, mask, obj, split=split)
        assert float(jnp.linalg.norm(vg(x0)[1])) <= 10 * GTOL * max(1.0, abs(float(fit.U)))
        again = solve_map(red, t, mask, obj, gtol=1e-9, split=split, n_lanczos=8)
        _close(again.U, fit.U, 1e-9)


@pytest.mark.heavy  # compiles a whole sweep program (~15 s of CPU)
def test_engine_reduced_with_trained_embeddings_runs_the_joint_map():
    """The sweep path (``engine='reduced'``, ``train_embeddings=True``, width 10,000: N only a
    number) reports, for its stored weights, the width-N joint U (recomputed here from the
    sweep's own training set under the scaled embedding prior) and the fitted Gram."""
    W = 10_000
    cfg = ch.preset("tiny").replace(
        model=dict(engine="reduced", width=W, gram="wishart", attention="softmax"),
        train=dict(solver=ch.ExactConfig(), train_embeddings=True),
        sweep=dict(P=(P,), n_seeds=1),
    )
    r = ch.run_sweep(cfg, progress=False, keep_params=True)
    a = r.arrays
    assert bool(np.all(a["converged"]))
    inp = sweep_inputs(cfg, None)
    with jax.enable_x64(True):
        w = tuple(jnp.asarray(a[f"params/{k}"][0, 0]) for k in ("W_E", "b", "W_G", "W_O_hat"))
        head = eqx.tree_at(lambda h: (h.W_E, h.b, h.W_G, h.W_O_hat), head_template(cfg), w)
        E = head.embeddings()
        _close(a["gram"][0, 0], E @ E.T / D)
        sobj = scaled_objective(Objective.from_config(cfg), width=W, head_width=D)
        t, mask = jnp.asarray(inp.train[0]), jnp.asarray(inp.mask[0], jnp.float64)
        _close(a["U"][0, 0], neg_log_posterior(head, t, mask, sobj), 1e-9)


def test_bad_input():
    base = ch.preset("tiny").replace(
        model=dict(engine="reduced"), train=dict(train_embeddings=True)
    )
    with pytest.raises(ValueError, match="solver"):
        base.replace(solver=ch.AdamConfig())
    with pytest.raises(ValueError, match="without continuation"):
        base.replace(solver=dict(continuation=True))
    with pytest.raises(ValueError, match="finite"):
        base.replace(model=dict(width=math.inf))
    with jax.enable_x64(True):
        cfg = _cfg("linear")
        red = reduce_head(_full(cfg)).head
        small = init_head(jax.random.key(0), cfg.model.__class__(width=4), L=L, V=V, chi=30.0)
        with pytest.raises(ValueError, match="like.width"):
            expand_trained(red, small, jax.random.key(0))
