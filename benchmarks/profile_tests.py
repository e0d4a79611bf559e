"""Where the test suite's time goes: JAX's tracing, lowering and XLA compilation per test file.

Runs pytest (one process, the suite's own settings from tests/conftest.py) on the files given
and, through ``jax.monitoring``'s duration events, adds up per file the seconds JAX spent
tracing to jaxprs, lowering them to MLIR and compiling them with XLA (what the persistent
compilation cache saved, too), beside each file's wall time. Subprocesses a test starts are
not seen. Prints a markdown table, heaviest file first; ``--by-test``: one row per test.

    python benchmarks/profile_tests.py tests/sampling/test_collapsed.py tests/theory/test_points.py
    python benchmarks/profile_tests.py --by-test tests/theory/test_points.py

XLA flags to compare go through ``XLA_FLAGS`` (tests/conftest.py adds its own to them).
"""

from __future__ import annotations

import collections
import sys
import time

import pytest

EVENTS = {
    "trace": "/jax/core/compile/jaxpr_trace_duration",
    "lower": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "compile": "/jax/core/compile/backend_compile_duration",
    "cache saved": "/jax/compilation_cache/compile_time_saved_sec",
}


class CompileTimes:
    """A pytest plugin: per test file (``by_test``: per test), JAX's event durations and the
    tests' wall time."""

    def __init__(self, by_test: bool = False):
        self.seconds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.file: str | None = None
        self.by_test = by_test

    def pytest_configure(self, config):
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(self._heard)

    def _heard(self, event: str, duration: float, **kw) -> None:
        if self.file is not None:
            self.seconds[self.file][event] += duration

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.file = item.nodeid if self.by_test else item.nodeid.split("::")[0]
        t0 = time.perf_counter()
        yield
        self.seconds[self.file]["wall"] += time.perf_counter() - t0
        self.file = None

    def table(self) -> str:
        def row(name: str, c: collections.Counter) -> str:
            return (
                f"| {name} | {c['wall']:.1f} | "
                + " | ".join(f"{c[e]:.1f}" for e in EVENTS.values())
                + " |"
            )

        total = collections.Counter()
        rows = [
            f"| {'test' if self.by_test else 'file'} | wall s | "
            + " | ".join(f"{k} s" for k in EVENTS)
            + " |"
        ]
        rows.append("|---" * (len(EVENTS) + 2) + "|")
        for f, c in sorted(self.seconds.items(), key=lambda fc: -fc[1]["wall"]):
            total.update(c)
            rows.append(row(f, c))
        rows.append(row("all", total))
        return "\n".join(rows)


def main(argv: list[str]) -> int:
    plugin = CompileTimes(by_test="--by-test" in argv)
    argv = [a for a in argv if a != "--by-test"]
    rc = pytest.main(["-q", "-p", "no:cacheprovider", *argv], plugins=[plugin])
    print(plugin.table())
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
