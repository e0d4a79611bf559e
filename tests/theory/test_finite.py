"""Finite-width, finite-P theory of one run (theory/finite.py, docs/theory.md §2b, §3 (i))."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax import theory as th
from copyhead_jax.fit import sweep_inputs
from copyhead_jax.theory import finite as F


@pytest.fixture(autouse=True)
def _strict():
    with jax.numpy_dtype_promotion("strict"), jax.numpy_rank_promotion("raise"):
        yield


def _inputs(L, V, N, seed, P_max):
    """A run's training set and embedding Gram ``U U^T / N``, drawn with NumPy."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, V, (P_max, L))
    U = rng.normal(size=(V + L, N))
    return tokens, U @ U.T / N


# (preset, L, V, N, seed, P, attention, minima) from the NumPy implementation this module
# replaced (experiments/common.py ``finite_theory``: grid + 24 zoom rounds, commit d597967):
# per P the value and coordinates of every local minimum, global first.
# The L=12 case has two minima at P=23 (softmax) and at every P (linear).
# fmt: off
OLD = [('plain', 6, 3, 16, 3, [2, 4, 8, 16], 'linear',
  {'value': [[4.898568696481122], [9.057796798282117], [15.331823431018904],
             [24.229059226035385]],
   'c1': [[2.8632944472618447], [3.202455810954599], [3.0931363591681635], [1.828255399420849]],
   'cG': [[0.04497718223805023], [0.27988361648148874], [1.1305743507096593],
          [2.4218515159114054]]}),
 ('plain', 6, 3, 16, 3, [2, 4, 8, 16], 'softmax',
  {'value': [[5.522242085077734], [10.771825463114023], [20.134169097155716],
             [37.464318862095865]],
   'beta': [[0.0017361516233712659], [0.006203309788723134], [0.029355160471810547],
            [0.10840895078181444]]}),
 ('paper', 6, 3, 16, 3, [4, 16, 64, 200], 'linear',
  {'value': [[2.0], [8.0], [31.999999999999996], [85.3915691170346]],
   'c1': [[3.291526870248671e-09], [6.583053740497342e-09], [2.626537490561097e-08],
          [0.645327983468326]],
   'cG': [[3.0881779670885362e-09], [6.1763559341770725e-09], [-4.866151365849141e-09],
          [0.4327308916799843]]}),
 ('paper', 6, 3, 16, 3, [4, 16, 64, 200], 'softmax',
  {'value': [[1.9649946885629659], [7.55888536710411], [27.101075125930937], [63.480257004104]],
   'beta': [[0.00026716917060846604], [0.005402625646744892], [0.11755593060374504],
            [1.9346033131754958]]}),
 ('plain', 12, 3, 256, 0, [20, 23, 24, 32], 'linear',
  {'value': [[28.659736237205305, 49.317637632148795], [29.214103769548608, 52.384951892738236],
             [29.34754563900654, 52.66646219516192], [30.266162206776308, 60.781042776257536]],
   'c1': [[0.8660799085970176, 2.7234634967283546], [0.7761973229918002, 2.720110862503296],
          [0.7611730835462268, 2.7310170290144793], [0.6054665557927702, 2.7195445195292502]],
   'cG': [[4.958051517343984, -5.2656184308576375], [5.057094732260963, -5.4178714771275125],
          [5.082578274092406, -5.452359380904497], [5.239598778842324, -5.746956179198006]]}),
 ('plain', 12, 3, 256, 0, [20, 23, 24, 32], 'softmax',
  {'value': [[87.43769430573558], [98.65258345198227, 99.27940752186822], [100.81378432882354],
             [111.9339922454909]],
   'beta': [[0.246215200230839], [1.9982167572674958, 0.43938865181635084],
            [2.1464000186662955], [2.595899900599034]]})]
# fmt: on
FAST = {("plain", 12, "softmax")}  # the coexistence case runs by default, the rest are slow


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=() if (c[0], c[1], c[6]) in FAST else pytest.mark.slow) for c in OLD],
    ids=[f"{c[0]}-L{c[1]}-{c[6]}" for c in OLD],
)
def test_same_minima_as_the_numpy_implementation_it_replaced(case):
    preset, L, V, N, seed, P, attention, ref = case
    tokens, gram = _inputs(L, V, N, seed, max(P))
    params = th.TheoryParams.preset(preset, L=L, V=V)
    out = F.finite_minima(tokens, P, gram=gram, params=params, attention=attention)
    assert out["n_min"].tolist() == [len(v) for v in ref["value"]]
    for i, n in enumerate(out["n_min"]):
        assert out["minima_valid"][i].tolist() == [True] * n + [False] * (F.N_KEEP - n)
        # the same action at the same minima: values agree to float64 rounding (S ~ 1e2)
        np.testing.assert_allclose(out["minima_value"][i][:n], ref["value"][i], rtol=1e-12)
        # the old zoom located a minimum from values only, to ~sqrt(eps) of its scale (a few
        # 1e-8); Newton converges to rounding (G = 0 exactly, where the old zoom left ~3e-9)
        for k in ref:
            if k != "value":
                np.testing.assert_allclose(
                    out[f"minima_{k}"][i][:n], ref[k][i], rtol=1e-6, atol=2e-7
                )


def test_nested_stats_are_dataset_stats_of_each_prefix():
    tokens, _ = _inputs(5, 3, 8, 0, 40)
    P = [17, 3, 40, 3, 9]  # unsorted, repeated
    with jax.enable_x64(True):
        st = F.nested_stats(tokens, P, 3)
        for i, p in enumerate(P):
            ref = th.dataset_stats(jnp.asarray(tokens[:p]), 3)
            # equal integer counts; XLA may divide as a product with 1/P: one rounding apart
            np.testing.assert_allclose(st.S4[i], ref.S4, rtol=1e-15, atol=0)
            np.testing.assert_allclose(st.S2[i], ref.S2, rtol=1e-15, atol=0)
            assert float(st.P[i]) == p


@pytest.mark.parametrize("preset", ["plain", "paper"])
def test_span_action_is_the_finite_action_on_the_ansatz(preset):
    # quadratic structure (3 moment calls) = finite_action at every c, to float64 rounding
    params = th.TheoryParams.preset(preset, L=6, V=3)
    tokens, gram = _inputs(6, 3, 16, 5, 7)
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        g = jnp.asarray(gram)
        st = th.dataset_stats(jnp.asarray(tokens), 3)
        for name, kind in th.THEORIES.items():  # every kind's ansatz, at random coordinates
            sa = F.span_action(st, g, params, name)
            for x in rng.normal(0, 2, (3, len(kind.coords))):
                x = jnp.asarray(x)
                for obj in ("map", "post"):
                    kw = dict(tokens=st, gram=g, params=params, objective=obj, attention=name)
                    ref = th.finite_action(kind.logits(x, 6), **kw)
                    got = F.span_value(x, sa, params, name, obj)
                    assert float(got) == pytest.approx(float(ref), rel=1e-10), (name, obj)


def test_a_curve_over_P_compiles_once_and_matches_single_P_calls():
    params = th.TheoryParams.preset("plain", L=6, V=3)
    tokens, gram = _inputs(6, 3, 16, 1, 30)
    F.finite_core.clear_cache()
    a = F.finite_minima(tokens, [3, 5, 8, 13, 21], gram=gram, params=params, attention="softmax")
    b = F.finite_minima(tokens, [30, 2, 4], gram=gram, params=params, attention="softmax")
    assert F.finite_core._cache_size() == 1  # both grids pad to the bucket of 8
    one = F.finite_minima(tokens, [13] * 8, gram=gram, params=params, attention="softmax")
    # the same P gives the same minimum whatever else is in the curve (no coupling across P)
    assert one["beta"][0] == a["beta"][3] and b["P"].tolist() == [30, 2, 4]
    assert np.all(a["n_min"] >= 1) and np.all(np.diff(a["aG"]) > 0)  # copying grows with P


def test_bad_inputs_raise_value_errors():
    params = th.TheoryParams.preset("plain", L=6, V=3)
    tokens, gram = _inputs(6, 3, 16, 1, 10)
    with pytest.raises(ValueError, match="P_values"):
        F.finite_minima(tokens, [11], gram=gram, params=params)
    with pytest.raises(ValueError, match="P_values"):
        F.finite_minima(tokens, [2.5], gram=gram, params=params)
    with pytest.raises(ValueError, match="gram"):
        F.finite_minima(tokens, [4], gram=gram[:4], params=params)
    with pytest.raises(ValueError, match="attention"):
        F.finite_minima(tokens, [4], gram=gram, params=params, attention="relu")
    with pytest.raises(ValueError, match="tokens must lie"):
        F.finite_minima(tokens + 3, [4], gram=gram, params=params)


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_exact_map_lands_on_the_finite_width_theory(attention):
    """The exact MAP of a quenched head at width 10,000 (exact width reduction and solver) and
    the finite-width, finite-P theory (action (i)) see the same tokens and embedding Gram; the
    only approximation left between them is A1 (token-dependent logit components set to zero).
    Its effect on a copy coefficient is bounded by how far the measured mean attention leaves the
    ansatz span: the sine of the angle between them, ``sqrt(1 - coverage^2)``, measured on the
    run itself (no tuned constant)."""
    cfg = ch.PLAIN.replace(
        task=dict(L=10, V=3, n_test=64),
        model=dict(attention=attention, engine="reduced", width=10_000),
        train=dict(
            train_embeddings=False, init_attention="copy" if attention == "softmax" else "prior"
        ),
        sweep=dict(P=(64,), n_seeds=1),
    )
    # the sweep under the suite's standard promotion (tests/conftest.py); the theory stays strict
    with jax.numpy_dtype_promotion("standard"):
        res = ch.run_sweep(cfg, progress=False, keep_params=True)
    assert bool(res["converged"][0, 0]) and float(res["min_eig"][0, 0]) > 0
    tokens = np.asarray(sweep_inputs(cfg, None).train[0])[:64]
    ft = th.finite_theory_minimum(
        tokens=tokens,
        gram=res["gram"][0, 0],
        params=th.TheoryParams.from_config(cfg),
        attention=attention,
    )
    measured = float(res["cG"][0, 0])
    theory = ft["aG" if attention == "softmax" else "cG"]
    cov = float(res["coverage"][0, 0])
    bound = np.sqrt(1 - cov**2)  # off-span fraction of the mean attention
    assert cov > 0.99  # the copy regime, where A1 is meant to hold
    assert abs(measured / theory - 1) <= bound, (measured, theory, bound)
