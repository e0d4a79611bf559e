"""Configs validate their fields and name the parameter and range in the error."""

import json

import numpy as np
import pytest
from helpers import FAKE_CFG

import copyhead_jax as ch
from copyhead_jax.config import Config


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ch.TaskConfig(L=1), r"TaskConfig\.L must be an int in \[2, 4096\], got 1"),
        (lambda: ch.TaskConfig(V=0), r"TaskConfig\.V must be an int"),
        (lambda: ch.TaskConfig(L=2.5), r"TaskConfig\.L must be an int"),
        (lambda: ch.ModelConfig(width=0), r"ModelConfig\.width must be an int in \[1, 65536\]"),
        (lambda: ch.ModelConfig(attention="relu"), r"ModelConfig\.attention must be one of"),
        (lambda: ch.ModelConfig(linear_scale="L"), r"ModelConfig\.linear_scale must be one of"),
        (lambda: ch.PosteriorConfig(sigma2=-1.0), r"PosteriorConfig\.sigma2 must be a real"),
        (lambda: ch.PosteriorConfig(chi=float("nan")), r"PosteriorConfig\.chi must be a finite"),
        (lambda: ch.PosteriorConfig(likelihood="x"), r"PosteriorConfig\.likelihood must be one"),
        (lambda: ch.TrainConfig(lr=0.0), r"TrainConfig\.lr must be a real number in \(0\.0"),
        (lambda: ch.TrainConfig(lr="fast"), r"TrainConfig\.lr must be a real number"),
        (lambda: ch.TrainConfig(max_epochs=10, min_epochs=20), r"TrainConfig\.min_epochs"),
        (lambda: ch.SweepConfig(P=()), r"SweepConfig\.P must be a non-empty"),
        (lambda: ch.SweepConfig(P=(8, 4)), r"SweepConfig\.P must be strictly increasing"),
        (lambda: ch.SweepConfig(P=(0, 4)), r"SweepConfig\.P entry must be an int"),
        (
            lambda: ch.SweepConfig(n_seeds=0),
            r"SweepConfig\.n_seeds must be an int in \[1, 100000\], got 0",
        ),
        (lambda: ch.preset("huge"),
         r"preset must be one of 'paper', 'paper-chi-lik', 'paper-map', 'plain', 'small', 'tiny'"),
    ],
)
def test_bad_config_names_parameter_and_range(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_presets_are_one_object_under_every_import_path():
    # the presets live in copyhead_jax.presets (config sits below it); the package re-exports them
    import copyhead_jax.config as config
    import copyhead_jax.presets as presets
    from copyhead_jax.presets import PAPER, PRESETS, TINY, preset

    for name in ("PAPER", "PLAIN", "SMALL", "TINY"):
        assert getattr(presets, name) is getattr(ch, name), name
        assert not hasattr(config, name), name
    assert PRESETS is ch.PRESETS and preset("tiny") is TINY is ch.preset("tiny")
    assert PRESETS["paper"] is PAPER and isinstance(PAPER, config.Config)


def test_replace_and_dict_round_trip():
    cfg = ch.SMALL.replace(model=dict(width=32), sweep=dict(P=(1, 2, 3)))
    assert cfg.model.width == 32 and cfg.sweep.P == (1, 2, 3)
    assert ch.Config.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="no section 'modle'"):
        cfg.replace(modle=dict(width=3))
    with pytest.raises(ValueError, match=r"ModelConfig has no field\(s\) depth"):
        ch.Config.from_dict({"model": {"depth": 2}})


def test_paper_preset_is_the_papers_configuration():
    p = ch.PAPER
    assert (p.task.L, p.task.V, p.model.width) == (25, 5, 10_000)
    assert (p.posterior.sigma2, p.posterior.chi) == (30.0, 30.0)
    assert p.posterior.likelihood == "per_position" and p.model.linear_scale == "inv_L"
    assert ch.PLAIN.posterior.likelihood == "per_sequence" and ch.PLAIN.model.linear_scale == "none"
    assert p.train.lr == 1e-5 and p.train.min_epochs == 2000 and p.train.patience == 100
    assert p.train.warmup_frac is None and p.sweep.n_seeds == 10  # None: the head's default
    assert ch.SoftmaxHead.warmup_frac(p.train) == 0.1  # paper: 10% warm-up for softmax
    assert ch.LinearHead.warmup_frac(p.train) == 0.0


def test_warmup_frac_is_validated_and_overrides_the_head_default():
    with pytest.raises(ValueError, match=r"TrainConfig\.warmup_frac must be a real number in"):
        ch.TrainConfig(warmup_frac=1.5)
    t = ch.TrainConfig(warmup_frac=0.25)
    assert ch.SoftmaxHead.warmup_frac(t) == ch.LinearHead.warmup_frac(t) == 0.25


@pytest.mark.parametrize("attention, expected", [("softmax", 0.3), ("linear", 0.05)])
def test_old_warmup_fields_load_as_the_files_attention(attention, expected):
    """Files from before ``warmup_frac`` hold one field per attention: the file's own is kept."""
    d = ch.TINY.replace(model=dict(attention=attention)).to_dict()
    del d["train"]["warmup_frac"]
    d["train"].update(warmup_frac_softmax=0.3, warmup_frac_linear=0.05)
    cfg = ch.Config.from_dict(d)
    assert cfg.train.warmup_frac == expected
    assert cfg == ch.TINY.replace(model=dict(attention=attention), train=dict(warmup_frac=expected))


# bad input


def test_numpy_numbers_become_python_numbers():
    cfg = FAKE_CFG.replace(task=dict(L=np.int64(4)), train=dict(lr=np.float32(0.5)),
                      sweep=dict(P=(np.int64(2), np.int32(4))))  # fmt: skip
    assert type(cfg.task.L) is int and type(cfg.train.lr) is float
    assert all(type(p) is int for p in cfg.sweep.P)
    text = json.dumps(cfg.to_dict())  # was: TypeError, int64 is not JSON serializable
    assert Config.from_dict(json.loads(text)) == cfg


@pytest.mark.parametrize(
    "update, match",
    [
        (dict(posterior=dict(sigma2="30")), r"PosteriorConfig\.sigma2 .*string '30'"),
        (dict(train=dict(lr="1e-3")), r"TrainConfig\.lr .*string"),
        (dict(task=dict(L="4")), r"TaskConfig\.L must be an int"),
        (dict(model=dict(widht=8)), r"ModelConfig has no field.*widht.*valid fields: .*width"),
        (dict(modle=dict(width=8)), r"Config has no section 'modle'"),
        (dict(task=dict(L=1)), r"TaskConfig\.L must be an int in \[2, 4096\], got 1"),
        (dict(train=dict(lr=float("nan"))), r"TrainConfig\.lr must be a finite"),
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
    d["train"]["lrr"] = 1.0
    with pytest.raises(ValueError, match=r"TrainConfig has no field.*lrr.*valid fields: lr"):
        Config.from_dict(d)

