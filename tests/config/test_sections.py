"""config/sections.py: configs validate their fields and name the parameter and range in the
error; replace and the dict round trip."""

import json

import numpy as np
import pytest

import copyhead_jax as ch
from copyhead_jax.config import Config
from tests.helpers import FAKE_CFG


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ch.TaskConfig(L=1), r"TaskConfig\.L must be an int in \[2, 1000000\], got 1"),
        (lambda: ch.TaskConfig(V=0), r"TaskConfig\.V must be an int"),
        (lambda: ch.TaskConfig(L=2.5), r"TaskConfig\.L must be an int"),
        (lambda: ch.ModelConfig(width=0), r"ModelConfig\.width must be an int in \[1, 65536\]"),
        (lambda: ch.ModelConfig(attention="relu"), r"ModelConfig\.attention must be one of"),
        (lambda: ch.ModelConfig(linear_scale="L"), r"ModelConfig\.linear_scale must be one of"),
        (lambda: ch.PosteriorConfig(sigma2=-1.0), r"PosteriorConfig\.sigma2 must be a real"),
        (lambda: ch.PosteriorConfig(chi=float("nan")), r"PosteriorConfig\.chi must be a finite"),
        (lambda: ch.PosteriorConfig(likelihood="x"), r"PosteriorConfig\.likelihood must be one"),
        (lambda: ch.AdamConfig(lr=0.0), r"AdamConfig\.lr must be a real number in \(0\.0"),
        (lambda: ch.AdamConfig(lr="fast"), r"AdamConfig\.lr must be a real number"),
        (lambda: ch.AdamConfig(max_epochs=10, min_epochs=20), r"AdamConfig\.min_epochs"),
        (lambda: ch.AdamConfig(monitor="acc"), r"AdamConfig\.monitor must be one of"),
        (lambda: ch.ExactConfig(gtol=0.0), r"ExactConfig\.gtol must be a real number in"),
        (lambda: ch.ExactConfig(max_steps=0), r"ExactConfig\.max_steps must be an int in \[1,"),
        (lambda: ch.AutoConfig(adam=ch.ExactConfig()), r"AutoConfig\.adam must be an AdamConfig"),
        (lambda: ch.TrainConfig(solver="exact"), r"TrainConfig\.solver must be an AdamConfig, "),
        (lambda: ch.TrainConfig(log_every=0), r"TrainConfig\.log_every must be an int in"),
        (
            lambda: ch.TINY.replace(train=dict(log_every=500)),
            r"TrainConfig\.log_every must be an int in \[1, 200\] \(AdamConfig\.max_epochs\)",
        ),
        (
            lambda: ch.TINY.replace(train=dict(lr=1.0)),
            r"TrainConfig has no field\(s\) lr; .*solver=dict\(lr=\.\.\.\)",
        ),
        (lambda: ch.TINY.replace(solver=dict(gamma=1.0)), r"AutoConfig has no field\(s\) gamma"),
        (
            lambda: ch.TINY.replace(solver=ch.ExactConfig()),
            r"TrainConfig\.solver=ExactConfig needs ModelConfig\.engine='reduced'",
        ),
        (lambda: ch.SweepConfig(P=()), r"SweepConfig\.P must be a non-empty"),
        (lambda: ch.SweepConfig(P=(8, 4)), r"SweepConfig\.P must be strictly increasing"),
        (lambda: ch.SweepConfig(P=(0, 4)), r"SweepConfig\.P entry must be an int"),
        (
            lambda: ch.SweepConfig(n_seeds=0),
            r"SweepConfig\.n_seeds must be an int in \[1, 100000\], got 0",
        ),
        (
            lambda: ch.preset("huge"),
            r"preset must be one of 'paper', 'paper-chi-lik', 'paper-map', "
            r"'plain', 'small', 'tiny'",
        ),
    ],
)
def test_bad_config_names_parameter_and_range(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_replace_and_dict_round_trip():
    cfg = ch.SMALL.replace(model=dict(width=32), sweep=dict(P=(1, 2, 3)))
    assert cfg.model.width == 32 and cfg.sweep.P == (1, 2, 3)
    assert ch.Config.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="no section 'modle'"):
        cfg.replace(modle=dict(width=3))
    with pytest.raises(ValueError, match=r"ModelConfig has no field\(s\) depth"):
        ch.Config.from_dict({"model": {"depth": 2}})


def test_warmup_frac_is_validated_and_overrides_the_head_default():
    with pytest.raises(ValueError, match=r"AdamConfig\.warmup_frac must be a real number in"):
        ch.AdamConfig(warmup_frac=1.5)
    t = ch.AdamConfig(warmup_frac=0.25)
    assert ch.SoftmaxHead.warmup_frac(t) == ch.LinearHead.warmup_frac(t) == 0.25


# bad input


def test_numpy_numbers_become_python_numbers():
    cfg = FAKE_CFG.replace(
        task=dict(L=np.int64(4)),
        solver=dict(lr=np.float32(0.5)),
        sweep=dict(P=(np.int64(2), np.int32(4))),
    )
    assert type(cfg.task.L) is int and type(cfg.solver.lr) is float
    assert all(type(p) is int for p in cfg.sweep.P)
    text = json.dumps(cfg.to_dict())  # was: TypeError, int64 is not JSON serializable
    assert Config.from_dict(json.loads(text)) == cfg


@pytest.mark.parametrize(
    "update, match",
    [
        (dict(posterior=dict(sigma2="30")), r"PosteriorConfig\.sigma2 .*string '30'"),
        (dict(solver=dict(lr="1e-3")), r"AdamConfig\.lr .*string"),
        (dict(task=dict(L="4")), r"TaskConfig\.L must be an int"),
        (dict(model=dict(widht=8)), r"ModelConfig has no field.*widht.*valid fields: .*width"),
        (dict(modle=dict(width=8)), r"Config has no section 'modle'"),
        (dict(task=dict(L=1)), r"TaskConfig\.L must be an int in \[2, 1000000\], got 1"),
        (dict(solver=dict(lr=float("nan"))), r"AdamConfig\.lr must be a (finite|real)"),
        (dict(sweep=dict(P=(8, 4))), r"SweepConfig\.P must be strictly increasing"),
        (dict(sweep=dict(P=())), r"SweepConfig\.P must be a non-empty"),
        (dict(train=dict(train_embeddings=1)), r"train_embeddings must be a bool"),
    ],
)
def test_bad_config_values_name_the_field(update, match):
    with pytest.raises(ValueError, match=match):
        FAKE_CFG.replace(**update)


def test_from_dict_typo_lists_valid_fields():
    d = FAKE_CFG.to_dict()
    d["train"]["solver"]["adam"]["lrr"] = 1.0
    with pytest.raises(ValueError, match=r"AdamConfig has no field.*lrr.*valid fields: lr"):
        Config.from_dict(d)
