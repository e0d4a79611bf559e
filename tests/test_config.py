"""Configs validate their fields and name the parameter and range in the error."""

import pytest

import copyhead_jax as ch


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
