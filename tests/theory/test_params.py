"""The one parameter record (``TheoryParams``): the config's sections, their validators, and the
same record as arrays for compiled code."""

import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyhead_jax import conventions as conv
from copyhead_jax import theory as th
from copyhead_jax.config import PRESETS, ModelConfig, PosteriorConfig, TaskConfig
from copyhead_jax.theory.params import SECTION
from copyhead_jax.theory.points import p_c1_asymptotic, p_c1_closed_form


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_from_config_reads_every_field_from_its_section(name):
    cfg = PRESETS[name]
    p = th.TheoryParams.from_config(cfg)
    for f, s in SECTION.items():
        assert getattr(p, f) == getattr(getattr(cfg, s), f), (name, f)
    assert th.TheoryParams.preset(name, L=40).L == 40


@pytest.mark.parametrize(
    "field, value, section",
    [
        ("L", 1, TaskConfig),
        ("V", 1, TaskConfig),
        ("sigma_G", -1.0, ModelConfig),
        ("linear_scale", "inv_V", ModelConfig),
        ("sigma2", float("nan"), PosteriorConfig),
        ("likelihood", "per_token", PosteriorConfig),
        ("chi", 0.0, PosteriorConfig),
    ],
)
def test_refuses_exactly_what_the_section_refuses_with_its_message(field, value, section):
    with pytest.raises(ValueError) as sec_err:
        section(**{field: value})
    want = sec_err.value.args[0].replace(f"{section.__name__}.", "TheoryParams.")
    with pytest.raises(ValueError, match=re.escape(want)):
        th.TheoryParams(**{field: value})


def test_a_record_is_a_hashable_value():
    p = th.TheoryParams(L=7, V=3, sigma2=2)
    assert type(p.sigma2) is float and p == th.TheoryParams(L=7, V=3, sigma2=2.0)
    assert hash(p) == hash(th.TheoryParams(L=7, V=3, sigma2=2.0))  # static under jit


def test_array_record_gives_the_closed_forms_of_the_named_one():
    """Every switch combination: the closed forms read the switches as names (Python branches)
    or as 0/1 numbers (``jnp.where``); both compute the same float64 expression, so they agree
    to a few ulps (1e-14 relative)."""
    base = dict(L=9, V=4, sigma_e=1.3, sigma_p=0.8, sigma_G=1.7, sigma_O=0.6, sigma2=4.0, chi=7.0)
    ps = [
        th.TheoryParams(
            **base, likelihood=lk, linear_scale=ls, chi_in_readout_prior=cr, chi_in_noise=cn
        )
        for lk, ls, cr, cn in itertools.product(
            ("per_sequence", "per_position"),
            ("none", "inv_sqrt_L", "inv_L"),
            (True, False),
            (True, False),
        )
    ]
    with jax.enable_x64(True):
        stacked = th.TheoryParams.stack(ps)
        assert stacked.L.shape == (len(ps),)
        for fn in (
            p_c1_closed_form,
            p_c1_asymptotic,
            lambda q: q.sigma2_chi[0],
            lambda q: q.sigma2_chi[1],
        ):
            named = np.array([float(fn(q)) for q in ps])
            np.testing.assert_allclose(np.asarray(fn(stacked)), named, rtol=1e-14)
            one = np.array([float(fn(q.arrays())) for q in ps])
            np.testing.assert_allclose(one, named, rtol=1e-14)
        # the record is a pytree: vmap over it gives the loop
        v = jax.vmap(lambda q: th.softmax_potential(1.3, P=50.0, params=q, objective="post"))
        loop = [float(th.softmax_potential(1.3, P=50.0, params=q, objective="post")) for q in ps]
        np.testing.assert_allclose(np.asarray(v(stacked)), loop, rtol=1e-13)


def test_readout_prior_std_reads_names_and_numbers_alike():
    for on in (True, False):
        a = conv.readout_prior_std(0.6, 7.0, chi_in_readout_prior=on)
        b = float(conv.readout_prior_std(0.6, 7.0, chi_in_readout_prior=jnp.asarray(float(on))))
        assert a == pytest.approx(0.6 if on else 0.6 * 7.0**0.5, rel=1e-15)
        assert b == pytest.approx(a, rel=1e-6)  # float32 unless x64


def test_an_array_record_is_not_stacked_again():
    with jax.enable_x64(True), pytest.raises(ValueError, match="already holds arrays"):
        th.TheoryParams.stack([th.TheoryParams().arrays()])
