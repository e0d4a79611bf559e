"""A refusal on the command line names the flag as typed: the API's validators name the field
or parameter (``ModelConfig.width``, ``HMCConfig.n_iter``, ``TheoryParams.L``, ``n_chains``) and
:func:`as_typed` rewrites each such name into the flag of the command that was run (``--width``,
``--iterations``, ``--L``, ``--chains``). The one place where API names meet flag names."""

from __future__ import annotations

import argparse
import re

__all__ = ["as_typed", "command_parser"]

#: an API field whose flag is not ``--`` + its name: field (or ``Section.field``) -> the flags'
#: destinations that may carry it, the first one the command has wins
ALIASES: dict[str, tuple[str, ...]] = {
    "n_iter": ("iterations", "iters"),
    "n_warmup": ("warmup",),
    "n_adapt": ("adapt",),
    "n_leapfrog": ("leapfrog",),
    "n_chains": ("chains",),
    "n_steps": ("steps",),
    "P_grid": ("P",),
    "UmbrellaSettings.n_chains": ("window_chains",),
    "UmbrellaSettings.n_iter": ("window_iters",),
    "UmbrellaSettings.ess_target": ("window_ess_target",),
    "UmbrellaSettings.rhat_target": ("window_rhat_target",),
    "UmbrellaSettings.round_iter": ("window_round_iter",),
    "TISettings.ess_target": ("rung_ess_target",),
    "TISettings.rhat_target": ("rung_rhat_target",),
    "TISettings.round_iter": ("rung_round_iter",),
}

#: ``Section.field`` anywhere in a message (a config section, settings or parameter record)
_DOTTED = re.compile(r"\b([A-Z]\w*(?:Config|Params|Settings))\.(\w+)\b")
#: a bare parameter name opening a message (``n_chains must be ...``, ``P_grid entry ...``)
_LEADING = re.compile(r"^(\w+)(?=\s)")


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The (sub)parser of the command ``args`` came from (its ``func`` default), else
    ``parser``."""
    found = parser
    stack = [parser]
    while stack:
        p = stack.pop()
        if p._defaults.get("func") is getattr(args, "func", None):
            found = p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend(a.choices.values())
    return found


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Destination -> the flag as documented (its first long option)."""
    out = {}
    for a in parser._actions:
        long = [o for o in a.option_strings if o.startswith("--")]
        if long and a.dest not in out and a.help != argparse.SUPPRESS:
            out[a.dest] = long[0]
    return out


def _flag_of(flags: dict[str, str], section: str | None, field: str) -> str | None:
    keys = ([f"{section}.{field}"] if section else []) + [field]
    for k in keys:
        for dest in ALIASES.get(k, ()):
            if dest in flags:
                return flags[dest]
    if section == "ExactConfig" and f"exact_{field}" in flags:
        return flags[f"exact_{field}"]
    return flags.get(field)


def as_typed(message: str, parser: argparse.ArgumentParser) -> str:
    """``message`` with every API name of a value the command ``parser`` takes as a flag
    replaced by that flag (names it has no flag for are kept)."""
    flags = _flags(parser)
    message = _DOTTED.sub(lambda m: _flag_of(flags, m[1], m[2]) or m[0], message)
    return _LEADING.sub(lambda m: _flag_of(flags, None, m[1]) or m[0], message, count=1)
