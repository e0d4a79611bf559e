"""One preset grammar on every command: ``--preset`` (one default everywhere) and ``--reading``
(the conventions it runs under) wherever a command starts from a preset, one default chain count
on every sampler command; the reading reaches each command's config, an explicit convention
flag wins over it, and a reading never shares a sweep's default folder with another."""

import argparse

import pytest

import copyhead_jax as ch
from copyhead_jax.cli import build_parser, main
from copyhead_jax.config import DEFAULT_CHAINS, DEFAULT_PRESET
from tests.helpers import one_line_error, parser_tree


def _options(p) -> dict:
    return {o: a for a in p._actions for o in a.option_strings}


PRESET_COMMANDS = [
    (" ".join(path), _options(p))
    for path, p in parser_tree(build_parser())
    if "--preset" in _options(p)
]


def test_every_command_with_a_preset_takes_a_reading_and_the_one_default():
    names = {n for n, _ in PRESET_COMMANDS}
    assert {
        "sweep",
        "sample",
        "transition",
        "theory points",
        "theory curve",
        "theory landscape",
        "theory scaling",
        "theory sensitivity",
        "theory fit",
    } <= names, names
    for name, opts in PRESET_COMMANDS:
        assert opts["--preset"].default == DEFAULT_PRESET, name
        assert "--reading" in opts and opts["--reading"].default is None, name
        assert all(r in opts["--reading"].help for r in ch.READINGS), name
        assert DEFAULT_PRESET in ch.PRESETS


def test_every_sampler_command_has_the_one_default_chain_count():
    from copyhead_jax.sampling.llc_runs import LLCSettings
    from copyhead_jax.sampling.run import PAPER_SGLD, REDUCED_HMC, REDUCED_HMC_LINEAR

    chains = {
        " ".join(path): _options(p)["--chains"]
        for path, p in parser_tree(build_parser())
        if "--chains" in _options(p)
    }
    assert set(chains) == {"sample", "llc", "transition"}, chains
    # sample leaves --chains to the sampler it picks: every one of them has the default
    samplers = (ch.SGLDConfig(), ch.HMCConfig(), PAPER_SGLD, REDUCED_HMC, REDUCED_HMC_LINEAR)
    assert chains["sample"].default is None and {s.n_chains for s in samplers} == {DEFAULT_CHAINS}
    assert chains["llc"].default == LLCSettings().n_chains == DEFAULT_CHAINS
    assert chains["transition"].default == DEFAULT_CHAINS
    assert all(str(DEFAULT_CHAINS) in a.help for a in chains.values())


def test_the_reading_reaches_each_commands_config_and_a_convention_flag_wins():
    from copyhead_jax.cli.flags import config_from_args
    from copyhead_jax.cli.theory_options import theory_params
    from copyhead_jax.cli.transition import config_from_args as transition_config
    from copyhead_jax.theory import TheoryParams

    parse = build_parser().parse_args
    cfg = config_from_args(parse(["sweep", "--preset", "paper-map", "--reading", "chi-lik"]))
    assert cfg == ch.preset("paper-map", reading="chi-lik")
    cfg = config_from_args(parse(["sweep", "--reading", "chi-lik", "--chi-in-readout-prior"]))
    assert cfg == ch.preset(DEFAULT_PRESET)  # the flag undoes the one field chi-lik sets
    th = theory_params(parse(["theory", "points", "--preset", "paper", "--reading", "plain"]))
    assert th == TheoryParams.from_config(ch.PLAIN)
    th = theory_params(
        parse(["theory", "points", "--reading", "plain", "--likelihood", "per_position"])
    )
    assert (th.likelihood, th.linear_scale) == ("per_position", "none")
    cfg = transition_config(parse(["transition", "--preset", "paper", "--reading", "chi-lik"]))
    assert cfg.posterior == ch.preset("paper-chi-lik").posterior
    assert cfg.model.linear_scale == "inv_L"


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["theory", "points", "--reading", "chi"], "--reading must be one of"),
        (["transition", "--preset", "huge"], "--preset must be one of"),
        (["sweep", "--reading", "lik"], "--reading must be one of"),
    ],
)
def test_an_unknown_preset_or_reading_is_one_line(argv, pattern, capsys):
    one_line_error(capsys, main(argv), pattern)


def _folder(*argv: str) -> str:
    """The folder of the first file ``copyhead sweep ARGV`` declares it will write."""
    from copyhead_jax.cli.sweep import sweep_outputs

    outputs, _ = sweep_outputs(build_parser().parse_args(["sweep", "--no-plot", *argv]))
    return str(outputs[0].path.parent)


def test_a_reading_never_shares_a_sweeps_default_folder():
    chi = _folder("--preset", "paper-map", "--reading", "chi-lik")
    assert _folder("--preset", "paper-map") == "results/paper-map"
    assert chi == "results/paper-map-chi-lik"
    assert _folder("--preset", "paper-map", "--no-chi-in-readout-prior") == chi  # same config
    assert _folder("--preset", "paper-map", "--reading", "plain") == "results/paper-map-plain"
    assert (
        _folder("--preset", "paper", "--reading", "chi-lik")
        == _folder("--preset", "paper-chi-lik")
        == "results/paper-chi-lik"
    )
    more = _folder("--preset", "paper-map", "--reading", "chi-lik", "--n-seeds", "2")
    assert more.startswith(chi + "-") and len(more) == len(chi) + 9  # PRESET-READING-HASH
    assert more != _folder("--preset", "paper-map", "--n-seeds", "2")
    # a convention of no reading: the preset's name and the hash of the field
    assert _folder("--preset", "paper-map", "--no-chi-in-noise").startswith("results/paper-map-")


def test_sample_checks_the_reading_against_the_sweeps():
    from copyhead_jax.cli.sample import check_reading

    check_reading(argparse.Namespace(reading=None), ch.TINY)
    check_reading(argparse.Namespace(reading="paper"), ch.TINY)  # tiny: the paper's reading
    with pytest.raises(ValueError, match="fitted under the reading paper"):
        check_reading(argparse.Namespace(reading="plain"), ch.TINY)
