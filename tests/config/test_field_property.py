"""Every numeric field of every config, one property: a value given as a Python number, a NumPy
scalar or 0-d array, a ``Decimal`` or a ``Fraction`` is either accepted, stored as a plain
Python number and round-tripped through JSON to an equal config, or refused with one line that
names the class; NaN and infinities are never stored where the field is finite (hypothesis
draws the values, so the classes of input are covered rather than a list of cases)."""

import dataclasses
import json
import math
from decimal import Decimal
from fractions import Fraction

import hypothesis as hyp  # a test dependency (pyproject): never skipped
import hypothesis.strategies as st
import numpy as np
import pytest

from copyhead_jax import Config
from copyhead_jax.config import (
    AdamConfig,
    ExactConfig,
    HMCConfig,
    ModelConfig,
    PosteriorConfig,
    SGLDConfig,
    SweepConfig,
    TaskConfig,
    TrainConfig,
)

SECTIONS = {
    "task": TaskConfig,
    "model": ModelConfig,
    "posterior": PosteriorConfig,
    "train": TrainConfig,
    "sweep": SweepConfig,
}
OTHERS = (SGLDConfig, HMCConfig, AdamConfig, ExactConfig)


def numeric_fields(cls):
    """(name, default) of the fields whose default is an int or a float (not a bool)."""
    out = []
    for f in dataclasses.fields(cls):
        d = f.default
        if isinstance(d, int | float) and not isinstance(d, bool):
            out.append((f.name, d))
    return out


FIELDS = [
    (cls, name, d) for cls in (*SECTIONS.values(), *OTHERS) for name, d in numeric_fields(cls)
]

finite = st.one_of(st.integers(-(10**7), 10**7), st.floats(-1e7, 1e7, allow_nan=False))
special = st.sampled_from([math.nan, math.inf, -math.inf])


@st.composite
def forms(draw):
    """A number (finite or not) in one of the forms a user may pass."""
    x = draw(st.one_of(finite, special))
    form = draw(st.sampled_from(["py", "np", "0d", "decimal", "fraction"]))
    if form == "np":
        return np.int64(x) if isinstance(x, int) else np.float64(x)
    if form == "0d":
        return np.array(x)
    if form == "decimal":
        return Decimal(x) if isinstance(x, int) else Decimal(repr(x))
    if form == "fraction" and math.isfinite(x):
        return Fraction(x)
    return x


def _equal_number(stored, given) -> bool:
    g = float(given) if not isinstance(given, np.ndarray) else float(given[()])
    return float(stored) == g


@pytest.mark.parametrize(
    "cls, name, default", FIELDS, ids=[f"{c.__name__}.{n}" for c, n, _ in FIELDS]
)
@hyp.settings(max_examples=40, deadline=None, derandomize=True)
@hyp.given(value=st.one_of(forms(), st.builds(lambda d: d, st.just(0))))
def test_a_field_is_stored_as_python_or_refused_in_one_line(cls, name, default, value):
    try:
        obj = cls(**{name: value})
    except ValueError as e:
        msg = str(e)
        assert "\n" not in msg and cls.__name__ in msg, msg
        return
    stored = getattr(obj, name)
    assert type(stored) in (int, float), (name, value, type(stored))
    assert _equal_number(stored, value)
    if isinstance(default, int):
        assert math.isfinite(stored)
    back = json.loads(json.dumps(dataclasses.asdict(obj)))
    if cls in SECTIONS.values():
        sec = next(k for k, c in SECTIONS.items() if c is cls)
        try:
            cfg = Config(**{sec: obj})
        except ValueError:
            return  # a cross-section rule (e.g. the reduced engine's width): refused, not kept
        again = Config.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert again == cfg and getattr(getattr(again, sec), name) == stored
    elif cls in (SGLDConfig, HMCConfig):
        assert cls(**back) == obj


def test_the_forms_the_issue_names_are_plain_python_after_construction():
    """``cfg.replace(posterior=dict(sigma2=np.array(30.0)))`` stores 30.0, a float: the run key
    and the JSON of a sweep see what a hand-written config gives."""
    cfg = Config().replace(
        posterior=dict(sigma2=np.array(30.0), chi=Decimal("30")), sweep=dict(n_seeds=Fraction(4, 2))
    )
    assert cfg == Config().replace(posterior=dict(sigma2=30.0, chi=30), sweep=dict(n_seeds=2))
    assert type(cfg.posterior.sigma2) is float and type(cfg.sweep.n_seeds) is int
    json.dumps(cfg.to_dict())
    for bad in (np.array(math.nan), Decimal("Infinity"), np.float32("inf")):
        with pytest.raises(ValueError, match="PosteriorConfig.sigma2"):
            PosteriorConfig(sigma2=bad)
