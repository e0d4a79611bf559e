"""``--config FILE.toml`` on every command: a file of flag values, read as if typed.

Keys are a command's flag names without the dashes (``L``, ``width``, ``n-seeds`` or
``n_seeds``); TOML tables only group keys (``[model]`` ``attention = "softmax"`` is
``--attention softmax``). A boolean is ``--flag`` / ``--no-flag``, a list is the comma list the
flag takes (``P = [4, 8, 16]``, ``width = [128, "inf"]``), anything else its text. Every value
goes through the same parser as the typed flag, so it is checked the same way, and a flag typed
on the command line wins over the file. An unknown key or an unreadable file is one error naming
the file.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FLAG = "--config"
HELP = (
    "a TOML file of this command's flags (keys: flag names, e.g. L = 15, attention = "
    "'softmax', P = [4, 8, 16]); flags typed on the command line win"
)


def add_config_file_flag(parser: argparse.ArgumentParser) -> None:
    """``--config FILE.toml`` on every leaf command of ``parser`` (read before parsing by
    :func:`expand_config_file`; listed here for ``--help``)."""
    for p in _leaves(parser):
        p.add_argument(FLAG, metavar="FILE.toml", default=None, help=HELP)


def _leaves(parser: argparse.ArgumentParser):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
    for a in subs:
        for sub in dict.fromkeys(a.choices.values()):  # aliases share a parser
            yield from _leaves(sub)


def _leaf_of(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command parser ``argv`` names by its leading words."""
    p = parser
    for word in argv:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if word.startswith("-") or not subs or word not in subs[0].choices:
            break
        p = subs[0].choices[word]
    return p


def _text(value: Any, key: str, path: Path) -> str:
    if isinstance(value, list):
        return ",".join(_text(v, key, path) for v in value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise ValueError(
        f"{FLAG} {path}: key {key!r} has a {type(value).__name__}; give a number, "
        f"a string, a boolean or a list"
    )


def _flatten(doc: dict, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                if isinstance(vv, dict):
                    raise ValueError(f"{FLAG} {path}: tables nest one level ([{k}.{kk}])")
                out[kk] = vv
        else:
            out[k] = v
    return out


def _given(argv: list[str], options: list[str]) -> bool:
    return any(a == o or a.startswith(o + "=") for a in argv for o in options)


def expand_config_file(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv`` with ``--config FILE`` replaced by the file's flags (those not typed on the
    command line), appended after the typed ones; ``ValueError`` naming the file otherwise."""
    idx = [i for i, a in enumerate(argv) if a == FLAG or a.startswith(FLAG + "=")]
    if not idx:
        return argv
    if len(idx) > 1:
        raise ValueError(f"{FLAG} is given {len(idx)} times; give one file")
    i = idx[0]
    if argv[i] == FLAG:
        if i + 1 >= len(argv):
            raise ValueError(f"{FLAG} needs a FILE.toml")
        path, rest = Path(argv[i + 1]), argv[:i] + argv[i + 2 :]
    else:
        path, rest = Path(argv[i].split("=", 1)[1]), argv[:i] + argv[i + 1 :]
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"{FLAG} {path}: cannot read it ({e.strerror or e})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{FLAG} {path}: not TOML ({e})") from None
    leaf = _leaf_of(parser, rest)
    by_option = {o: a for a in leaf._actions for o in a.option_strings}
    extra: list[str] = []
    for key, value in _flatten(doc, path).items():
        name = "--" + key.replace("_", "-")
        action = by_option.get(name) or by_option.get("--" + key)
        if action is None or name == FLAG:
            raise ValueError(
                f"{FLAG} {path}: unknown key {key!r} (not a flag of '{leaf.prog}'; see its --help)"
            )
        flag = action.option_strings[0] if name not in action.option_strings else name
        if _given(rest, action.option_strings):
            continue  # typed on the command line: it wins
        if isinstance(action, argparse.BooleanOptionalAction):
            if not isinstance(value, bool):
                raise ValueError(f"{FLAG} {path}: key {key!r} is on/off: give true or false")
            pos = next(o for o in action.option_strings if not o.startswith("--no-"))
            extra.append(pos if value else "--no-" + pos[2:])
        elif isinstance(value, bool) or action.nargs == 0:
            raise ValueError(f"{FLAG} {path}: key {key!r} takes a value, got {value!r}")
        elif action.nargs in ("*", "+") or (isinstance(action.nargs, int) and action.nargs > 1):
            items = value if isinstance(value, list) else [value]
            extra += [flag, *(_text(v, key, path) for v in items)]
        else:
            extra.append(f"{flag}={_text(value, key, path)}")
    return rest + extra


__all__ = ["FLAG", "add_config_file_flag", "expand_config_file"]
