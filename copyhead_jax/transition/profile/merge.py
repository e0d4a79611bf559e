"""One profile transition measured in parts, a few seeds each (``copyhead transition
--only-seeds``), and the parts joined into the result the whole run gives.

A seed's probes and profiles depend only on its own data and Monte-Carlo key (the sweep seed
folded into ``seed``) and on the first probes, which no seed's measurement moves (they come from
the theory, else from the MAP switches of every seed, computed in each part). So a part's seeds
are the whole run's, and the whole result is theirs combined over seeds by the verdict's own rule
(:func:`~copyhead_jax.compare.profile_verdict.from_record`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..._checks import check_int
from ...compare.profile_verdict import from_record

#: what differs between parts of one run: their seeds and what is made of them
PER_PART = frozenset(
    {
        "seeds",
        "seeds_measured",
        "map",
        "flagged",
        "cpu_seconds",
        "verdict",
        "P_star",
        "interval",
        "summary",
        "fingerprint",
    }
)

#: settings added after parts were saved, with the value those parts ran: a part whose record
#: lacks one ran that value (probes placed on the fixed search surface before ``placement``)
SETTINGS_BEFORE = {"placement": "fixed"}


def measured_seeds(seeds, n_seeds: int) -> tuple[int, ...]:
    """``seeds`` (sweep seed indices; ``None``: all ``n_seeds``) checked: distinct integers in
    ``[0, n_seeds)``, sorted."""
    if seeds is None:
        return tuple(range(n_seeds))
    if isinstance(seeds, str) or not isinstance(seeds, Sequence):
        raise ValueError(
            f"seeds must be a list of sweep seeds in [0, {n_seeds - 1}], got {seeds!r}"
        )
    got = [check_int("seeds", s, lo=0, hi=n_seeds - 1) for s in seeds]
    if not got or len(set(got)) < len(got):
        raise ValueError(f"seeds must be distinct sweep seeds in [0, {n_seeds - 1}], got {seeds!r}")
    return tuple(sorted(got))


def merge_seed_parts(parts: Sequence[dict]) -> dict:
    """The whole run's result from its parts (results of ``profile_transition`` with
    ``seeds``): every seed of ``n_seeds`` in exactly one part, everything but the seeds equal
    (a setting a part's record predates read at :data:`SETTINGS_BEFORE`).
    The seeds, MAP rows and flags in seed order, CPU seconds summed, the verdict over seeds
    decided again; ``fingerprint`` the parts' ``whole_fingerprint`` where they carry one (the
    command's: the merged folder is then the whole command's)."""
    from ..store import json_default

    if len(parts) < 2:
        raise ValueError(f"merge: give at least two parts, got {len(parts)}")
    parts = [_as_saved_today(json.loads(json.dumps(p, default=json_default))) for p in parts]
    ref = parts[0]
    for i, p in enumerate(parts):
        if p.get("method") != "profile" or "seeds_measured" not in p:
            raise ValueError(
                f"merge: part {i + 1} is not a profile transition measured by seeds "
                f"(method {p.get('method')!r}); only `copyhead transition --method profile` "
                "results merge"
            )
        differ = sorted(
            k for k in set(p) | set(ref) if k not in PER_PART and p.get(k) != ref.get(k)
        )
        if differ:
            raise ValueError(
                f"merge: part {i + 1} is of another run than part 1 (they differ in "
                f"{', '.join(differ)}); merge parts of one command that differ only in "
                "--only-seeds"
            )
    n = ref["n_seeds"]
    got = [s for p in parts for s in p["seeds_measured"]]
    twice = sorted({s for s in got if got.count(s) > 1})
    missing = sorted(set(range(n)) - set(got))
    if twice or missing:
        raise ValueError(
            "merge: every seed of the run's "
            f"{n} must be in exactly one part; "
            + "; ".join(
                x
                for x in (
                    twice and f"seed(s) {', '.join(map(str, twice))} in more than one part",
                    missing and f"seed(s) {', '.join(map(str, missing))} in none",
                )
                if x
            )
        )
    by_seed = lambda rows: sorted(rows, key=lambda r: r["seed"])  # noqa: E731
    seed_of_line = lambda line: int(line.split()[1].rstrip(":"))  # noqa: E731  ("seed 3 P=...")
    merged = {
        **ref,
        "seeds_measured": list(range(n)),
        "seeds": by_seed([s for p in parts for s in p["seeds"]]),
        "map": by_seed([m for p in parts for m in p["map"]]),
        "flagged": sorted(
            (f for p in parts for f in p["flagged"]), key=seed_of_line
        ),  # stable: a seed's lines keep their order
        "cpu_seconds": sum(p["cpu_seconds"] for p in parts),
    }
    _, over = from_record(merged)
    merged.update(
        verdict=over["kind"], P_star=over["P_star"], interval=[over["lo"], over["hi"]], summary=over
    )
    merged.pop("fingerprint", None)
    if ref.get("whole_fingerprint"):
        merged["fingerprint"] = ref["whole_fingerprint"]
    return merged


def _as_saved_today(part: dict) -> dict:
    """``part`` with the settings of :data:`SETTINGS_BEFORE` it lacks at the value it ran."""
    if isinstance(part.get("settings"), dict):
        part["settings"] = {**SETTINGS_BEFORE, **part["settings"]}
    return part
