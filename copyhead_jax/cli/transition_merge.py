"""``copyhead transition --merge DIR ...``: the ``--only-seeds`` parts of one profile run joined
into the whole run's result (:func:`copyhead_jax.transition.profile.merge.merge_seed_parts`),
written to ``--out`` with the whole command's fingerprint, so that command finds it done."""

from __future__ import annotations

import json
from pathlib import Path

from .transition_folder import check_out, shaping_flags

#: flags --merge reads beside its parts (every other setting is the parts')
MERGE_FLAGS = frozenset({"out", "json", "plot", "progress"})


def cmd_merge(args) -> int:
    from ..plots.profile import profile_figure
    from ..transition.profile.merge import merge_seed_parts
    from ..transition.store import write_checkpoint
    from .transition_text import format_profile, report

    named = set(shaping_flags(args)) | {"preset", "L", "V", "attention"}
    given = sorted(k for k in named - MERGE_FLAGS if getattr(args, k) != args.flag_default(k))
    if given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise ValueError(f"--merge takes every setting from its parts; drop {flags}")
    if args.out is None:
        raise ValueError("--merge needs --out DIR, the folder of the merged result")
    parts = [_read_part(p) for p in args.merge]
    merged = merge_seed_parts(parts)
    out, kept = check_out(args, merged["fingerprint"])
    if kept is not None:
        report(args, kept, out, format_profile, profile_figure, "profile.png", kept=True)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    write_checkpoint(out / "transition.json", merged)
    report(args, merged, out, format_profile, profile_figure, "profile.png", kept=False)
    return 0


def _read_part(path: str) -> dict:
    """A part's result: ``path`` its folder (its ``transition.json``) or that file; written by
    ``copyhead transition --only-seeds`` (it names the whole run it belongs to)."""
    f = Path(path)
    f = f / "transition.json" if f.is_dir() else f
    try:
        res = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(
            f"--merge: cannot read a result from {path!r} ({type(e).__name__})"
        ) from None
    if not isinstance(res, dict) or not res.get("whole_fingerprint"):
        raise ValueError(
            f"--merge: {str(f)!r} is not a part written by `copyhead transition --only-seeds` "
            "(it names no whole run)"
        )
    return res
