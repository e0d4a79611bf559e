"""The config flags of ``copyhead sweep``: one flag per field of every config section
(``--width``, ``--sigma2``, ``--P 4:1000:24log``, ...) and of the solver configs (``--solver``;
Adam: ``--lr``, ``--max-epochs``, ...; exact: ``--exact-gtol``, ...), with its allowed values and
per-preset default in the help, and the ``Config`` they name (``config_from_args``)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re

import numpy as np

from ..config import (
    ADAM_FIELDS,
    ATTENTIONS,
    DEFAULT_PRESET,
    EXACT_FIELDS,
    PRESETS,
    READINGS,
    SHORTHANDS,
    SOLVERS,
    AdamConfig,
    AutoConfig,
    Config,
    exact_settings,
    preset,
)

_SECTIONS = ("task", "model", "posterior", "train", "sweep")


def finite_float(text: str) -> float:
    """The ``type`` of every real-valued flag: a finite real number (argparse names the flag in
    its one-line error; ``nan`` and ``inf`` are not numbers any command can use)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a real number, got {text!r}") from None
    if not np.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite real number, got {text!r}")
    return v


def target_flags(g, cap: str, rhat_default: float, judged: str = "U") -> None:
    """``--ess-target N`` and ``--rhat-target``, stopping when enough, on an argument group of
    every sampler command (``copyhead sample``, ``copyhead llc``): one name, one meaning, one
    default (``None``: the sampler config's, 0 = the fixed length); ``cap`` names the flags
    that set the cap, ``judged`` the energy judged beside the order parameters."""
    g.add_argument(
        "--ess-target",
        type=finite_float,
        default=None,
        metavar="N",
        help=f"stop when enough: draw in rounds until every run's ESS of {judged} "
        "and both order parameters is >= N and their split R-hat <= "
        f"--rhat-target, or the cap ({cap}, in whole rounds); a run that reaches "
        "the cap first is flagged; default 0: the fixed length",
    )
    g.add_argument(
        "--rhat-target",
        type=finite_float,
        default=None,
        help=f"the R-hat bar of --ess-target (default {rhat_default})",
    )


def parse_P_grid(text: str) -> tuple[int, ...]:
    """``"4,8,16"``, ``"4:1000:24log"`` (24 log-spaced) or ``"10:100:10lin"`` -> sorted ints."""
    text = text.strip()
    m = re.fullmatch(r"(\d+):(\d+):(\d+)(log|lin)", text)
    try:
        if m:
            lo, hi, n, kind = int(m[1]), int(m[2]), int(m[3]), m[4]
            if not (1 <= lo < hi) or n < 2:
                raise ValueError
            grid = np.geomspace(lo, hi, n) if kind == "log" else np.linspace(lo, hi, n)
            return tuple(sorted({int(round(p)) for p in grid}))
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(
            f"P grid {text!r} must be a comma list of ints >= 1 or LO:HI:Nlog / LO:HI:Nlin "
            "with 1 <= LO < HI and N >= 2"
        ) from None


def _P_arg(text: str) -> tuple[int, ...]:
    try:
        return parse_P_grid(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_preset_flags(p: argparse.ArgumentParser, what: str) -> None:
    """``--preset NAME`` (default :data:`~copyhead_jax.config.DEFAULT_PRESET`) and ``--reading
    NAME``, the two choices every command that starts from a preset takes: what runs, and
    which reading of the paper's conventions (docs/theory.md §2b) it runs under. ``what``: the
    parts of the preset the command uses. The help lists each reading's fields, read off
    :data:`~copyhead_jax.config.READINGS`; a convention flag given beside it wins."""
    short = "; ".join(f"{k} = {p} --reading {r}" for k, (p, r) in SHORTHANDS.items())
    p.add_argument(
        "--preset",
        default=DEFAULT_PRESET,
        metavar=_choices(PRESETS),
        help=f"{what}; {short}; default {DEFAULT_PRESET}",
    )
    fields = {
        r: ", ".join(f"{k}={v}" for sec in f.values() for k, v in sec.items())
        for r, f in READINGS.items()
    }
    p.add_argument(
        "--reading",
        default=None,
        metavar=_choices(READINGS),
        help="the reading of the paper's conventions the preset runs under: "
        + "; ".join(f"{r}: {f}" for r, f in fields.items())
        + "; default: the preset's own; an explicit convention flag wins",
    )


def _choices(names) -> str:
    """``{a,b,c}``: the choices of a flag checked where it is used (one ``ValueError`` line
    naming them, as every config value)."""
    return "{" + ",".join(names) + "}"


def add_config_flags(p: argparse.ArgumentParser) -> None:
    """One flag per config field (``--width``, ``--sigma2``, ``--P 4:1000:24log``, ...)."""
    for sec, get, prefix in _GROUPS:
        g = p.add_argument_group(f"{sec} config", _SOLVER_USE.get(sec))
        for f in dataclasses.fields(get(Config())):
            flag = "--" + prefix + f.name.replace("_", "-")
            if f.name == "solver":
                g.add_argument(
                    flag,
                    choices=SOLVERS,
                    default=None,
                    help="adam (either engine), exact (engine reduced) or auto (exact "
                    "under engine reduced, adam under full); a flag of the solver "
                    "not in use is an error; default by preset: "
                    + ", ".join(f"{k} {c.train.solver.kind}" for k, c in PRESETS.items()),
                )
            elif f.name == "attention":
                g.add_argument(
                    flag,
                    choices=(*ATTENTIONS, "both"),
                    default=None,
                    help="both: one sweep each; " + _flag_help(get, f.name),
                )
            elif f.name == "width":
                g.add_argument(
                    "--width",
                    type=_widths_arg,
                    default=None,
                    metavar="N[,N...]",
                    help="d_model N; a comma list runs one sweep per width (e.g. "
                    "128,1024,10000,inf); 'inf' needs --engine reduced; " + _flag_help(get, f.name),
                )
            elif f.name == "P":
                g.add_argument(
                    "--P",
                    type=_P_arg,
                    default=None,
                    help="training-set sizes: "
                    "4,8,16 or LO:HI:Nlog or LO:HI:Nlin, ints in [1, 10^7]; default "
                    "by preset: "
                    + ", ".join(f"{k} {_grid(c.sweep.P)}" for k, c in PRESETS.items()),
                )
            elif isinstance(f.default, bool):
                g.add_argument(
                    flag,
                    action=argparse.BooleanOptionalAction,
                    default=None,
                    help="on/off; " + _flag_help(get, f.name),
                )
            else:
                # a None default (warmup_frac) marks an optional number
                typ = {int: int, float: finite_float, type(None): finite_float}.get(
                    type(f.default), str
                )
                typ = _matrix_arg if f.name == "transition" else typ
                meta = flag[2:].replace("-", "_").upper()
                g.add_argument(
                    flag, type=typ, default=None, metavar=meta, help=_flag_help(get, f.name)
                )


def _grid(P) -> str:
    return ",".join(map(str, P)) if len(P) <= 8 else f"{P[0]},...,{P[-1]} ({len(P)} values)"


def _adam_settings(cfg: Config) -> AdamConfig | None:
    """The Adam numbers ``cfg`` carries (``None`` under an ``ExactConfig``)."""
    s = cfg.train.solver
    return s.adam if isinstance(s, AutoConfig) else (s if isinstance(s, AdamConfig) else None)


#: flag groups: (section or solver, the object of a config holding the fields, flag prefix)
_GROUPS = [(sec, (lambda c, s=sec: getattr(c, s)), "") for sec in _SECTIONS] + [
    ("adam solver", _adam_settings, ""),
    ("exact solver", lambda c: exact_settings(c.train.solver), "exact-"),
]
_SOLVER_USE = {
    "adam solver": "used under --solver adam, or auto with --engine full",
    "exact solver": "used under --solver exact, or auto with --engine reduced",
}


@functools.cache  # every parser asks again; the presets and validators do not change
def _flag_help(get, name: str) -> str:
    """``allowed values; default per preset``, the allowed values read off the validator."""
    base = get(Config())
    try:
        dataclasses.replace(base, **{name: "?"})
        allowed = "any"
    except (ValueError, TypeError) as e:
        m = re.search(r"must be (.*?)(?:,|;) got", str(e))
        allowed = m[1] if m else "see the config docs"
    values = {k: getattr(get(c), name) if get(c) is not None else "-" for k, c in PRESETS.items()}
    if len(set(map(str, values.values()))) == 1:
        default = f"default {next(iter(values.values()))}"
    else:
        default = "default by preset: " + ", ".join(f"{k} {v}" for k, v in values.items())
    return f"{allowed}; {default}".replace("%", "%%")


def _matrix_arg(text: str) -> tuple:
    """``--transition``: a ``.npy`` file or rows ``"0.9,0.1;0.2,0.8"`` -> tuple of rows."""
    try:
        if text.endswith(".npy"):
            T = np.load(text)
        else:
            T = np.array([[float(x) for x in row.split(",")] for row in text.split(";")])
        return tuple(tuple(float(x) for x in row) for row in np.atleast_2d(T))
    except (OSError, ValueError) as e:
        raise argparse.ArgumentTypeError(
            f"--transition must be a .npy file or rows like '0.9,0.1;0.2,0.8'; got {text!r} ({e})"
        ) from None


def _widths_arg(text: str) -> tuple:
    """``"128,1024,inf"`` -> ``(128, 1024, inf)``; a width listed twice is refused (it would run
    the same sweep twice into the same file)."""
    out = []
    for w in text.split(","):
        w = w.strip().lower()
        try:
            out.append(float("inf") if w in ("inf", "infinity") else int(w))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--width must be ints >= 1 or 'inf', comma separated; got {text!r}"
            ) from None
    twice = sorted({w for w in out if out.count(w) > 1})
    if twice:
        raise argparse.ArgumentTypeError(
            f"--width lists {', '.join(map(str, twice))} more than "
            f"once; give each width once, got {text!r}"
        )
    return tuple(out)


def config_from_args(args: argparse.Namespace, attention: str | None = None, width=None) -> Config:
    """The preset of ``args.preset`` under ``args.reading`` with every config flag given on the
    command line applied (``attention`` and ``width``: the one sweep of a ``both`` or a width
    list)."""
    cfg = preset(args.preset, getattr(args, "reading", None))
    updates: dict[str, dict] = {}
    for sec in _SECTIONS:
        for f in dataclasses.fields(getattr(cfg, sec)):
            if f.name == "solver":
                continue
            v = getattr(args, f.name, None)
            if f.name == "attention":
                v = attention
            if f.name == "width":
                v = width if width is not None else (v[0] if v else None)
            if v is not None:
                updates.setdefault(sec, {})[f.name] = v
    engine = updates.get("model", {}).get("engine", cfg.model.engine)
    solver = solver_from_args(args, cfg.train.solver, engine)
    if solver is not cfg.train.solver:
        updates.setdefault("train", {})["solver"] = solver
    return cfg.replace(**updates)


def solver_from_args(args: argparse.Namespace, base, engine: str):
    """The solver config of ``--solver`` and the solver flags, from the preset's ``base`` (its
    numbers kept where not given); a flag of the solver not in use under ``engine`` is a
    ``ValueError``."""
    kind = getattr(args, "solver", None) or base.kind
    adam = {f: v for f in ADAM_FIELDS if (v := getattr(args, f, None)) is not None}
    exact = {f: v for f in EXACT_FIELDS if (v := getattr(args, f"exact_{f}", None)) is not None}
    if kind == base.kind and not adam and not exact:
        return base
    used = kind if kind != "auto" else ("exact" if engine == "reduced" else "adam")
    other = {f"--{f}": 1 for f in adam} if used == "exact" else {f"--exact-{f}": 1 for f in exact}
    if other:
        flag = next(iter(other)).replace("_", "-")
        raise ValueError(
            f"{flag} is a setting of the {'adam' if used == 'exact' else 'exact'} "
            f"solver; this sweep's solver is {used} (--solver {kind}, --engine "
            f"{engine})"
        )
    adam0 = (
        base.adam
        if isinstance(base, AutoConfig)
        else (base if isinstance(base, AdamConfig) else AdamConfig())
    )
    a = dataclasses.replace(adam0, **adam)
    e = dataclasses.replace(exact_settings(base), **exact)
    return {"auto": AutoConfig(a, e), "adam": a, "exact": e}[kind]
