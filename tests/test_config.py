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
        (lambda: ch.preset("huge"), r"preset must be one of 'paper', 'plain', 'small', 'tiny'"),
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
    with pytest.raises(ValueError, match="unknown ModelConfig fields"):
        ch.Config.from_dict({"model": {"depth": 2}})


def test_paper_preset_is_the_papers_configuration():
    p = ch.PAPER
    assert (p.task.L, p.task.V, p.model.width) == (25, 5, 10_000)
    assert (p.posterior.sigma2, p.posterior.chi) == (30.0, 30.0)
    assert p.posterior.likelihood == "per_position" and p.model.linear_scale == "inv_L"
    assert ch.PLAIN.posterior.likelihood == "per_sequence" and ch.PLAIN.model.linear_scale == "none"
    assert p.train.lr == 1e-5 and p.train.min_epochs == 2000 and p.train.patience == 100
    assert p.train.warmup_frac_softmax == 0.1 and p.sweep.n_seeds == 10
