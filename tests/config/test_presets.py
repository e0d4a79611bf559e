"""config/presets.py: one object under every import path, the paper's configuration, each
preset's solver and its numbers."""

import dataclasses

import pytest

import copyhead_jax as ch


def test_presets_are_one_object_under_every_import_path():
    # the presets live in config/presets.py (the sections sit below it); config/ and the package
    # re-export them
    import copyhead_jax.config.presets as presets
    import copyhead_jax.config.sections as sections
    from copyhead_jax.config import PAPER, PRESETS, TINY, preset

    for name in ("PAPER", "PLAIN", "SMALL", "TINY"):
        assert getattr(presets, name) is getattr(ch, name) is getattr(ch.config, name), name
        assert not hasattr(sections, name), name
    assert PRESETS is ch.PRESETS and preset("tiny") is TINY is ch.preset("tiny")
    assert PRESETS["paper"] is PAPER and isinstance(PAPER, sections.Config)


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


#: every preset's solver before the typed config (commit 8735280): the resolved kind and the
#: numbers that differ from the defaults (Adam: AdamConfig's; exact: ExactConfig's)
BEFORE = {
    "paper": ("adam", {}),
    "paper-chi-lik": ("adam", {}),
    "plain": ("adam", {}),
    "paper-map": ("exact", {"continuation": True}),
    "small": (
        "adam",
        {
            "lr": 1.0,
            "lr_scaling": "mup",
            "schedule": "cosine",
            "min_epochs": 1000,
            "max_epochs": 4000,
            "patience": 200,
            "rel_tol": 1e-05,
        },
    ),
    "tiny": (
        "adam",
        {
            "lr": 0.02,
            "lr_scaling": "mup",
            "schedule": "cosine",
            "min_epochs": 20,
            "max_epochs": 200,
            "patience": 20,
        },
    ),
}


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


def test_the_shorthand_presets_are_the_paper_preset_under_a_reading():
    """``paper-chi-lik`` and ``plain`` are the ``paper`` protocol under another reading, as
    docs/theory.md §2b defines them (written out here, not through the readings table)."""
    assert ch.preset("paper-chi-lik") == ch.preset("paper", reading="chi-lik")
    assert ch.preset("plain") == ch.preset("paper", reading="plain")
    chi_lik = ch.PAPER.replace(posterior=dict(chi_in_readout_prior=False))
    assert ch.preset("paper-chi-lik") == chi_lik
    assert ch.preset("plain") == ch.PAPER.replace(
        model=dict(linear_scale="none"), posterior=dict(likelihood="per_sequence")
    )
    for name, (base, reading) in ch.config.SHORTHANDS.items():
        assert ch.preset(name) == ch.preset(base, reading=reading), name
        assert ch.preset(name, reading=reading) == ch.preset(name)  # its own reading: no change


@pytest.mark.parametrize("name", sorted(ch.PRESETS))
def test_a_reading_sets_its_convention_fields_and_nothing_else(name):
    base = ch.preset(name)
    own = ch.config.reading_of(base)
    assert own is not None and ch.preset(name, reading=own) == base  # every preset has a reading
    for reading, fields in ch.READINGS.items():
        cfg = ch.preset(name, reading=reading)
        assert ch.config.reading_of(cfg) == reading
        changed = {
            (s, f.name)
            for s in ("task", "model", "posterior", "train", "sweep")
            for f in dataclasses.fields(getattr(base, s))
            if getattr(getattr(base, s), f.name) != getattr(getattr(cfg, s), f.name)
        }
        assert changed <= {(s, k) for s, kv in fields.items() for k in kv}, changed
    with pytest.raises(ValueError, match="reading must be one of"):
        ch.preset(name, reading="chi")


def test_one_run_name_per_config_and_one_config_per_run_name():
    """The default results folder of a sweep is named by ``run_name``: two readings never share
    a name (no sweep overwrites another), and one config asked for two ways gets one name."""
    from copyhead_jax.config import run_name

    by_name: dict[str, set] = {}
    for name in ch.PRESETS:
        for reading in (None, *ch.READINGS):
            cfg = ch.preset(name, reading=reading)
            by_name.setdefault(run_name(name, cfg), set()).add(repr(cfg.to_dict()))
    assert all(len(v) == 1 for v in by_name.values()), by_name.keys()
    assert run_name("paper", ch.preset("paper", reading="chi-lik")) == "paper-chi-lik"
    assert run_name("paper-chi-lik", ch.preset("paper-chi-lik", reading="paper")) == "paper"
    assert run_name("paper-map", ch.preset("paper-map", reading="chi-lik")) == "paper-map-chi-lik"
    assert run_name("small", ch.SMALL) == "small"  # small's own reading is plain
