"""config/solvers.py: the typed MAP solver settings, their dict round trip, the engines' rules,
and old flat train dicts loading as the typed solver."""

import dataclasses

import pytest

import copyhead_jax as ch

#: ``TINY.to_dict()["train"]`` as written before the typed solver (commit 8735280): flat fields
OLD_TINY_TRAIN = {
    "lr": 0.02,
    "lr_scaling": "mup",
    "b1": 0.9,
    "b2": 0.999,
    "eps": 1e-08,
    "schedule": "cosine",
    "final_lr_frac": 0.01,
    "warmup_frac": None,
    "min_epochs": 20,
    "max_epochs": 200,
    "patience": 20,
    "rel_tol": 1e-07,
    "monitor": "loss",
    "train_embeddings": False,
    "init_attention": "prior",
    "init_copy_logit": 5.0,
    "log_every": 5,
    "solver": "auto",
    "exact_gtol": 1e-09,
    "exact_max_steps": 5000,
    "exact_continuation": False,
}


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
        (
            {"solver": "exact", "exact_gtol": 1e-6, "exact_continuation": True},
            ch.ExactConfig(gtol=1e-6, continuation=True),
        ),
    ],
)
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
    for solver in (
        ch.AdamConfig(lr=0.1, monitor="U"),
        ch.ExactConfig(max_steps=7),
        ch.AutoConfig(exact=ch.ExactConfig(gtol=1e-7)),
    ):
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


def test_replace_applies_the_solver_with_the_sections():
    """Sections and solver are validated together (paper-map with trained embeddings is valid
    only with its continuation off); a dict with ``kind`` is a new solver, as to_dict writes."""
    cfg = ch.preset("paper-map").replace(
        train=dict(train_embeddings=True), solver=dict(continuation=False)
    )
    assert cfg.solver == ch.ExactConfig() and cfg.train.train_embeddings
    red = ch.TINY.replace(model=dict(engine="reduced", width=64))
    new = red.replace(solver=dict(kind="exact", gtol=1e-8))
    assert new.train.solver == ch.ExactConfig(gtol=1e-8)
    assert ch.TrainConfig(solver={"kind": "adam", "lr": 0.5}).solver == ch.AdamConfig(lr=0.5)
