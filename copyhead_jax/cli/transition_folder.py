"""Where ``copyhead transition`` writes: the ``--out`` folder (by default named after the
configuration, with a hash of the flags that change the run: :func:`out_folder`), what it
holds (:func:`transition_outputs`), the fingerprint its ``transition.json`` must match to be
this run's (:func:`run_fingerprint`; of the whole run an ``--only-seeds`` part belongs to:
:func:`whole_fingerprint`), the refusal of a folder that holds another run's result
(:func:`check_out`), and the clean-up of a folder a failed run made (:func:`tidy`)."""

from __future__ import annotations

import json
from pathlib import Path

from ..models import head_class
from .transition_settings import config_from_args


def transition_outputs(args):
    """``(outputs, inputs)`` of ``copyhead transition``: the ``--out`` folder and what it holds
    at its top (the result, its lock, the figure, the TI's MAP sweeps); no inputs."""
    from .._checks import Output
    from ..results import SWEEP_KIND
    from ._common import figure_outputs

    out = out_folder(args)
    cfg = config_from_args(args)
    two = head_class(cfg.model.attention).two_branches
    outs = [
        Output("--out", out, folder=True),
        Output("--out's transition.json", out / "transition.json", suffixes=(".json",)),
        Output("--out's lock", out / "transition.json.lock"),
    ]
    if two and args.method == "ti":
        outs += [
            Output(
                f"--out's map_{b}.npz", out / f"map_{b}.npz", suffixes=(".npz",), kind=SWEEP_KIND
            )
            for b in ("pool", "copy")
        ]
    if args.plot:
        name = "profile.png" if two and args.method == "profile" else "transition.png"
        outs += figure_outputs(f"--out's {name}", out / name, (".png",))
    return outs, []


#: flags that do not change a run's numbers (nor name it: the preset, L, V and attention do)
NOT_RUN = frozenset(
    {
        "command",
        "preset",
        "reading",
        "L",
        "V",
        "attention",
        "memory_budget_gb",
        "out",
        "json",
        "plot",
        "progress",
        "cluster",
        "cluster_refused",
        "config",
        "func",
        "paths",
        "flag_default",
        "kept",
        "L_eff",
        "merge",
    }
)


#: the rungs' stopping flags, which change nothing without a target (--rung-ess-target 0)
RUNG_TARGET = frozenset({"rung_ess_target", "rung_rhat_target", "rung_round_iter"})


#: flags added after results were saved, with the value that runs as those did: at that value a
#: flag stays out of the fingerprint, so theirs still match (``only_seeds``: a whole run)
AS_BEFORE = {"only_seeds": None, "placement": "fixed"}


def run_flags(args) -> dict:
    """The flags that shape the run's numbers, as given (the rungs' stopping flags only with a
    target; a flag of :data:`AS_BEFORE` only away from its value there)."""
    return {
        k: v for k, v in shaping_flags(args).items() if not (k in AS_BEFORE and v == AS_BEFORE[k])
    }


def shaping_flags(args) -> dict:
    """Every flag that shapes the run's numbers (the rungs' stopping flags only with a target),
    :data:`AS_BEFORE`'s included."""
    skip = NOT_RUN | (frozenset() if getattr(args, "rung_ess_target", 0) else RUNG_TARGET)
    return {k: v for k, v in sorted(vars(args).items()) if k not in skip}


def out_folder(args) -> Path:
    """``--out``, else ``results/transition_ATT_LL_VV_NAME`` (``NAME``: the preset's run name,
    as ``copyhead sweep`` names its folder), ``-HASH`` added when flags other than those change
    the run (``HASH``: 8 hex digits of the flags that differ from their defaults), so that runs
    with other flags never share a folder."""
    from ..config.presets import run_name
    from ..runner import fingerprint

    if args.out is not None:
        return Path(args.out)
    cfg = config_from_args(args)
    given = getattr(args, "flag_default", None)
    diff = {k: v for k, v in shaping_flags(args).items() if given is None or v != given(k)}
    name = (
        f"transition_{cfg.model.attention}_L{cfg.task.L}_V{cfg.task.V}_{run_name(args.preset, cfg)}"
    )
    return Path("results") / (name + (f"-{fingerprint(diff, digits=8)}" if diff else ""))


def run_fingerprint(args, cfg) -> str:
    """What a folder's ``transition.json`` must match to be this run's: the config (its memory
    budget aside, which only sizes groups) and the run's flags."""
    from ..runner import fingerprint
    from ..transition.store import resume_identity

    return fingerprint({"config": resume_identity(cfg), "flags": run_flags(args)})


def whole_fingerprint(args, cfg) -> str:
    """The fingerprint of the whole run that an ``--only-seeds`` part belongs to (a whole run's
    own): what its parts share, and what their merged result carries."""
    import argparse

    return run_fingerprint(argparse.Namespace(**{**vars(args), "only_seeds": None}), cfg)


def check_out(args, fp: str) -> tuple[Path, dict | None]:
    """The output folder, checked, and the result it already holds of this run (``None``: no
    result yet). A result of another run is refused (never overwritten)."""
    from .._checks import check_output_folder

    out = check_output_folder("--out", out_folder(args))
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file; give a folder")
    f = out / "transition.json"
    if not f.is_file():
        return out, None
    try:
        old = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        old = None
    if not isinstance(old, dict) or old.get("fingerprint") != fp:
        raise ValueError(
            f"--out {str(out)!r} holds the result of another run "
            f"({str(f)!r}); give another --out or remove it"
        )
    return out, old


def tidy(out: Path, new: bool, held) -> None:
    """A run that failed before it wrote anything (a refusal, a bad input) leaves no folder it
    made behind: only its lock is in there. Checkpoints of real work stay to resume from."""
    import shutil

    if not new or not out.is_dir():
        return
    if {p.name for p in out.iterdir()} <= {"transition.json.lock"}:
        if held is not None:
            held.finish(None)
        shutil.rmtree(out, ignore_errors=True)
