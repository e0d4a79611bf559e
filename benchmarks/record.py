"""The record a benchmark script writes: its rows beside when, the load, the memory and the
environment (``benchmarks/results/*.json``)."""

from __future__ import annotations

import datetime
import json
import os
import resource
from pathlib import Path

from copyhead_jax.storage import environment


def write_record(out: Path, name: str, rows: list[dict], load0) -> None:
    """Write ``rows`` of benchmark ``name`` to ``out`` with the UTC time, the load average at
    the start (``load0``) and now, the process's peak RSS and the environment."""
    record = dict(
        benchmark=name,
        measured=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        rows=rows,
        load_average={"start": list(load0), "end": list(os.getloadavg())},
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        environment=environment(),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1))
    print(f"wrote {out}")
