"""Configs validate their fields and name the parameter and range in the error."""

import dataclasses
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
        (lambda: ch.AdamConfig(lr=0.0), r"AdamConfig\.lr must be a real number in \(0\.0"),
        (lambda: ch.AdamConfig(lr="fast"), r"AdamConfig\.lr must be a real number"),
        (lambda: ch.AdamConfig(max_epochs=10, min_epochs=20), r"AdamConfig\.min_epochs"),
        (lambda: ch.AdamConfig(monitor="acc"), r"AdamConfig\.monitor must be one of"),
        (lambda: ch.ExactConfig(gtol=0.0), r"ExactConfig\.gtol must be a real number in"),
        (lambda: ch.ExactConfig(max_steps=0), r"ExactConfig\.max_steps must be an int in \[1,"),
        (lambda: ch.AutoConfig(adam=ch.ExactConfig()), r"AutoConfig\.adam must be an AdamConfig"),
        (lambda: ch.TrainConfig(solver="exact"), r"TrainConfig\.solver must be an AdamConfig, "),
        (lambda: ch.TrainConfig(log_every=0), r"TrainConfig\.log_every must be an int in"),
        (lambda: ch.TINY.replace(train=dict(log_every=500)),
         r"TrainConfig\.log_every must be an int in \[1, 200\] \(AdamConfig\.max_epochs\)"),
        (lambda: ch.TINY.replace(train=dict(lr=1.0)),
         r"TrainConfig has no field\(s\) lr; .*solver=dict\(lr=\.\.\.\)"),
        (lambda: ch.TINY.replace(solver=dict(gamma=1.0)), r"AutoConfig has no field\(s\) gamma"),
        (lambda: ch.TINY.replace(solver=ch.ExactConfig()),
         r"TrainConfig\.solver=ExactConfig needs ModelConfig\.engine='reduced'"),
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
    a = p.solver  # the AdamConfig (AutoConfig under the full engine)
    assert a.kind == "adam" and a.lr == 1e-5 and a.min_epochs == 2000 and a.patience == 100
    assert a.warmup_frac is None and p.sweep.n_seeds == 10  # None: the head's default
    assert ch.SoftmaxHead.warmup_frac(a) == 0.1  # paper: 10% warm-up for softmax
    assert ch.LinearHead.warmup_frac(a) == 0.0


def test_warmup_frac_is_validated_and_overrides_the_head_default():
    with pytest.raises(ValueError, match=r"AdamConfig\.warmup_frac must be a real number in"):
        ch.AdamConfig(warmup_frac=1.5)
    t = ch.AdamConfig(warmup_frac=0.25)
    assert ch.SoftmaxHead.warmup_frac(t) == ch.LinearHead.warmup_frac(t) == 0.25


#: ``TINY.to_dict()["train"]`` as written before the typed solver (commit 8735280): flat fields
OLD_TINY_TRAIN = {
    "lr": 0.02, "lr_scaling": "mup", "b1": 0.9, "b2": 0.999, "eps": 1e-08, "schedule": "cosine",
    "final_lr_frac": 0.01, "warmup_frac": None, "min_epochs": 20, "max_epochs": 200,
    "patience": 20, "rel_tol": 1e-07, "monitor": "loss", "train_embeddings": False,
    "init_attention": "prior", "init_copy_logit": 5.0, "log_every": 5, "solver": "auto",
    "exact_gtol": 1e-09, "exact_max_steps": 5000, "exact_continuation": False,
}  # fmt: skip


@pytest.mark.parametrize("attention, expected", [("softmax", 0.3), ("linear", 0.05)])
def test_old_warmup_fields_load_as_the_files_attention(attention, expected):
    """Files from before ``warmup_frac`` hold one field per attention: the file's own is kept."""
    d = ch.TINY.replace(model=dict(attention=attention)).to_dict()
    d["train"] = {k: v for k, v in OLD_TINY_TRAIN.items() if k != "warmup_frac"}
    d["train"].update(warmup_frac_softmax=0.3, warmup_frac_linear=0.05)
    cfg = ch.Config.from_dict(d)
    assert cfg.solver.warmup_frac == expected
    want = ch.TINY.replace(model=dict(attention=attention), solver=dict(warmup_frac=expected))
    assert cfg == want


@pytest.mark.parametrize(
    "old, solver",
    [
        ({}, ch.TINY.train.solver),  # 'auto': both settings kept, the engine picks
        ({"solver": "adam", "lr": 0.5}, dataclasses.replace(ch.TINY.solver, lr=0.5)),
        ({"solver": "exact", "exact_gtol": 1e-6, "exact_continuation": True},
         ch.ExactConfig(gtol=1e-6, continuation=True)),
    ],
)  # fmt: skip
def test_old_flat_train_dicts_load_as_the_typed_solver(old, solver):
    """Files written before the typed solver (flat Adam and ``exact_*`` fields) load with the
    same solver and numbers; 'auto' becomes an AutoConfig carrying both."""
    d = ch.TINY.replace(model=dict(engine="reduced", width=64)).to_dict()
    d["train"] = {**OLD_TINY_TRAIN, **old}
    cfg = ch.Config.from_dict(d)
    assert cfg.train.solver == solver
    assert cfg.train.log_every == 5 and cfg.train.train_embeddings is False
    assert ch.Config.from_dict(cfg.to_dict()) == cfg  # and round-trips in today's form


def test_solver_dict_round_trip_and_kind():
    for solver in (ch.AdamConfig(lr=0.1, monitor="U"), ch.ExactConfig(max_steps=7),
                   ch.AutoConfig(exact=ch.ExactConfig(gtol=1e-7))):  # fmt: skip
        cfg = ch.TINY.replace(model=dict(engine="reduced", width=64), solver=solver)
        d = cfg.to_dict()
        assert d["train"]["solver"]["kind"] == solver.kind
        assert ch.Config.from_dict(d) == cfg and ch.Config.from_dict(d).train.solver == solver
    with pytest.raises(ValueError, match=r"TrainConfig\.solver must be a dict with 'kind'"):
        ch.Config.from_dict({"train": {"solver": {"kind": "sgd"}}})
    with pytest.raises(ValueError, match=r"AdamConfig has no field\(s\) gtol"):
        ch.Config.from_dict({"train": {"solver": {"kind": "adam", "gtol": 1e-9}}})


def test_auto_resolves_by_engine_and_updates_route_by_field():
    auto = ch.SMALL.replace(solver=dict(max_epochs=300, min_epochs=30, gtol=1e-7))
    assert auto.solver == dataclasses.replace(ch.SMALL.solver, max_epochs=300, min_epochs=30)
    reduced = auto.replace(model=dict(engine="reduced"))
    assert reduced.solver == ch.ExactConfig(gtol=1e-7) and reduced.solver.kind == "exact"
    assert ch.TINY.replace(solver=ch.AdamConfig()).solver == ch.AdamConfig()


def test_the_solver_rules_of_the_engines():
    """Exact needs the reduced engine; continuation needs exact; trained embeddings under the
    reduced engine need exact without continuation at a finite width."""
    red = ch.TINY.replace(model=dict(engine="reduced", width=64))
    assert red.replace(solver=ch.AdamConfig()).solver.kind == "adam"  # quenched: Adam allowed
    with pytest.raises(ValueError, match="continuation=True needs the exact solver"):
        ch.TINY.replace(solver=dict(continuation=True))
    trained = red.replace(train=dict(train_embeddings=True))
    assert trained.solver.kind == "exact"
    for bad in (ch.AdamConfig(), ch.ExactConfig(continuation=True)):
        with pytest.raises(ValueError, match="trained embeddings is the exact joint MAP"):
            trained.replace(solver=bad)


#: every preset's solver before the typed config (commit 8735280): the resolved kind and the
#: numbers that differ from the defaults (Adam: AdamConfig's; exact: ExactConfig's)
BEFORE = {
    "paper": ("adam", {}), "paper-chi-lik": ("adam", {}), "plain": ("adam", {}),
    "paper-map": ("exact", {"continuation": True}),
    "small": ("adam", {"lr": 1.0, "lr_scaling": "mup", "schedule": "cosine", "min_epochs": 1000,
                       "max_epochs": 4000, "patience": 200, "rel_tol": 1e-05}),
    "tiny": ("adam", {"lr": 0.02, "lr_scaling": "mup", "schedule": "cosine", "min_epochs": 20,
                      "max_epochs": 200, "patience": 20}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ch.PRESETS))
def test_presets_keep_their_solver_and_its_numbers(name):
    cfg = ch.preset(name)
    kind, numbers = BEFORE[name]
    default = ch.AdamConfig() if kind == "adam" else ch.ExactConfig()
    assert cfg.solver == dataclasses.replace(default, **numbers)
    # 'auto' presets stay auto: the reduced engine runs them exact, with the default numbers
    if isinstance(cfg.train.solver, ch.AutoConfig):
        red = cfg.replace(model=dict(engine="reduced"), train=dict(train_embeddings=False))
        assert red.solver == ch.ExactConfig()


def test_replace_applies_the_solver_with_the_sections():
    """Sections and solver are validated together (paper-map with trained embeddings is valid
    only with its continuation off); a dict with ``kind`` is a new solver, as to_dict writes."""
    cfg = ch.preset("paper-map").replace(train=dict(train_embeddings=True),
                                         solver=dict(continuation=False))
    assert cfg.solver == ch.ExactConfig() and cfg.train.train_embeddings
    red = ch.TINY.replace(model=dict(engine="reduced", width=64))
    new = red.replace(solver=dict(kind="exact", gtol=1e-8))
    assert new.train.solver == ch.ExactConfig(gtol=1e-8)
    assert ch.TrainConfig(solver={"kind": "adam", "lr": 0.5}).solver == ch.AdamConfig(lr=0.5)


# bad input


def test_numpy_numbers_become_python_numbers():
    cfg = FAKE_CFG.replace(task=dict(L=np.int64(4)), solver=dict(lr=np.float32(0.5)),
                      sweep=dict(P=(np.int64(2), np.int32(4))))  # fmt: skip
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
        (dict(task=dict(L=1)), r"TaskConfig\.L must be an int in \[2, 4096\], got 1"),
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

